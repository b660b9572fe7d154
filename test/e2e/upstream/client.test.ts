/**
 * The upstream client against the run's shared real control plane.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KUBERNETES_VERSION } from '../../../src/cli/dev-cluster/versions.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import { testControlPlane, testNamespace, upstreamConfigFor } from '../../helpers/control-plane.ts';

let admin: UpstreamClient;
let bob: UpstreamClient;

before(async () => {
  const cp = await testControlPlane();
  admin = newUpstreamClient(await upstreamConfigFor(cp));
  bob = newUpstreamClient(await upstreamConfigFor(cp, 'bob'));
});
after(async () => {
  await admin.close();
  await bob.close();
});

test('upstream: the apiserver reports the pinned Kubernetes version', async () => {
  const res = await admin.request({ method: 'GET', path: '/version' });
  assert.equal(res.statusCode, 200);
  assert.equal((JSON.parse(res.body.toString()) as { gitVersion: string }).gitVersion, KUBERNETES_VERSION);
});

test("upstream: a missing object is the apiserver's 404 Status", async (t) => {
  const ns = await testNamespace(t, admin);
  const res = await admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps/nope` });
  assert.equal(res.statusCode, 404);
  assert.deepEqual(JSON.parse(res.body.toString()), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'configmaps "nope" not found',
    reason: 'NotFound',
    details: { name: 'nope', kind: 'configmaps' },
    code: 404,
  });
});

test('upstream: bob, with no RBAC binding, may not list pods', async (t) => {
  const ns = await testNamespace(t, admin);
  const res = await bob.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/pods` });
  assert.equal(res.statusCode, 403);
  const status = JSON.parse(res.body.toString()) as { reason: string; message: string };
  assert.equal(status.reason, 'Forbidden');
  assert.equal(status.message, `pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "${ns}"`);
});

test('upstream: the control plane serves WatchList (etcd is new enough for RequestWatchProgress)', async (t) => {
  const ns = await testNamespace(t, admin);
  const created = await admin.request({
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/configmaps`,
    body: JSON.stringify({ metadata: { name: 'one' } }),
  });
  assert.equal(created.statusCode, 201);
  const abort = new AbortController();
  const res = await admin.stream({
    method: 'GET',
    path: `/api/v1/namespaces/${ns}/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=30`,
    signal: abort.signal,
  });
  assert.equal(res.statusCode, 200);
  const events: { type: string; object: { metadata: { name?: string; annotations?: Record<string, string> } } }[] = [];
  let buffered = '';
  for await (const chunk of res.body) {
    buffered += (chunk as Buffer).toString('utf8');
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      events.push(JSON.parse(buffered.slice(0, newline)) as (typeof events)[number]);
      buffered = buffered.slice(newline + 1);
    }
    if (events.some((e) => e.type === 'BOOKMARK')) break;
  }
  abort.abort();
  assert.deepEqual(
    events.map((e) => e.type),
    ['ADDED', 'BOOKMARK'],
  );
  assert.equal(events[0]?.object.metadata.name, 'one');
  assert.equal(events[1]?.object.metadata.annotations?.['k8s.io/initial-events-end'], 'true');
});
