import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forbiddenFor } from '../../../../src/auth/forbidden.ts';
import { statusBody } from '../../../../src/kube/status.ts';
import { negotiatedStatus } from '../../../../src/server/serving/negotiated-status.ts';
import { protobufStatusBody } from '../../../../src/server/serving/cached-protobuf.ts';

const refused = forbiddenFor(
  {
    user: { username: 'system:node:n1', uid: '', groups: ['system:nodes'], extra: {} },
    verb: 'list',
    resourceRequest: true,
    namespace: '',
    apiGroup: '',
    apiVersion: 'v1',
    resource: 'pods',
    subresource: '',
    name: '',
    path: '/api/v1/pods',
  },
  'node: can only list/watch pods with spec.nodeName field selector',
);
const compact = statusBody(refused.status, 'compact').toString();
const indented = statusBody(refused.status, 'indent').toString();
const none = new URLSearchParams();

function answer(accept: string | undefined, query = none, userAgent?: string): [string, string] {
  const { contentType, body } = negotiatedStatus(refused, accept, query, userAgent);
  return [contentType, body.toString('latin1')];
}

test('negotiated status: the Status in the encoding ErrorNegotiated picks, with DefaultEndpointRestrictions', () => {
  const protobuf = ['application/vnd.kubernetes.protobuf', protobufStatusBody(Buffer.from(compact)).toString('latin1')];
  assert.deepEqual(answer(undefined), ['application/json', compact]);
  assert.deepEqual(answer('application/json'), ['application/json', compact]);
  // A kubelet's (client-go's protobuf content type first).
  assert.deepEqual(answer('application/vnd.kubernetes.protobuf,application/json'), protobuf);
  assert.deepEqual(answer('application/vnd.kubernetes.protobuf;stream=watch'), protobuf);
  assert.deepEqual(answer('application/json;q=0.5, application/vnd.kubernetes.protobuf'), protobuf);
  // No conversion for an error: kubectl's Table clause is skipped for its JSON fallback.
  assert.deepEqual(answer('application/json;as=Table;v=v1;g=meta.k8s.io,application/json'), ['application/json', compact]);
  assert.deepEqual(answer('application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json'), [
    'application/json',
    compact,
  ]);
  // Pretty: the clause's pretty=1, the query's pretty, or curl; never protobuf.
  assert.deepEqual(answer('application/json;pretty=1'), ['application/json', indented]);
  assert.deepEqual(answer('application/json', new URLSearchParams('pretty=true')), ['application/json', indented]);
  assert.deepEqual(answer('*/*', none, 'curl/8.5.0'), ['application/json', indented]);
  assert.deepEqual(answer('application/json', new URLSearchParams('pretty=0'), 'curl/8.5.0'), ['application/json', compact]);
  assert.deepEqual(answer('application/vnd.kubernetes.protobuf', none, 'curl/8.5.0'), protobuf);
  // Nothing acceptable: WriteRawJSON of the error itself, indented.
  assert.deepEqual(answer('text/html'), ['application/json', indented]);
  assert.deepEqual(answer('application/json;as=Table;v=v1;g=meta.k8s.io'), ['application/json', indented]);
  assert.deepEqual(answer('application/json;sv=v1'), ['application/json', indented]);
});
