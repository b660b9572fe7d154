/** parseRequestInfo against the cases of apiserver's requestinfo_test.go. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RequestInfoError, parseRequestInfo } from '../../../src/request/request-info.ts';
import type * as RequestInfoModule from '../../../src/request/request-info.ts';
import { runsInLinearTime } from '../../helpers/linear-work.ts';

type Case = readonly [
  method: string,
  url: string,
  verb: string,
  prefix: string,
  group: string,
  version: string,
  ns: string,
  resource: string,
  sub: string,
  name: string,
  parts: readonly string[],
];

// requestinfo_test.go TestGetAPIRequestInfo
const CASES: readonly Case[] = [
  ['GET', '/api/v1/namespaces', 'list', 'api', '', 'v1', '', 'namespaces', '', '', ['namespaces']],
  ['GET', '/api/v1/namespaces/other', 'get', 'api', '', 'v1', 'other', 'namespaces', '', 'other', ['namespaces', 'other']],
  ['GET', '/api/v1/namespaces/other/pods', 'list', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/namespaces/other/pods/foo', 'get', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  ['HEAD', '/api/v1/namespaces/other/pods/foo', 'get', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  ['GET', '/api/v1/pods', 'list', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
  ['HEAD', '/api/v1/pods', 'list', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/proxy/namespaces/other/pods/foo', 'proxy', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  [
    'GET',
    '/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource',
    'proxy',
    'api',
    '',
    'v1',
    'other',
    'pods',
    '',
    'foo',
    ['pods', 'foo', 'subpath', 'not', 'a', 'subresource'],
  ],
  ['GET', '/api/v1/watch/pods', 'watch', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/pods?watch=true', 'watch', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/pods?watch=false', 'list', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/pods?watch=FALSE', 'list', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/pods?watch=', 'watch', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/pods?watch=0&watch=1', 'list', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/watch/namespaces/other/pods', 'watch', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/namespaces/other/pods?watch=1', 'watch', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/namespaces/other/pods?watch=0', 'list', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/namespaces/other/pods/foo?watch=1', 'get', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  ['GET', '/api/v1/watch/namespaces/other/pods/foo', 'watch', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  ['GET', '/api/v1/namespaces/other/pods/foo/status', 'get', 'api', '', 'v1', 'other', 'pods', 'status', 'foo', ['pods', 'foo', 'status']],
  [
    'GET',
    '/api/v1/namespaces/other/pods/foo/proxy/subpath',
    'get',
    'api',
    '',
    'v1',
    'other',
    'pods',
    'proxy',
    'foo',
    ['pods', 'foo', 'proxy', 'subpath'],
  ],
  [
    'PUT',
    '/api/v1/namespaces/other/finalize',
    'update',
    'api',
    '',
    'v1',
    'other',
    'namespaces',
    'finalize',
    'other',
    ['namespaces', 'other', 'finalize'],
  ],
  [
    'PUT',
    '/api/v1/namespaces/other/status',
    'update',
    'api',
    '',
    'v1',
    'other',
    'namespaces',
    'status',
    'other',
    ['namespaces', 'other', 'status'],
  ],
  ['PATCH', '/api/v1/namespaces/other/pods/foo', 'patch', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  ['DELETE', '/api/v1/namespaces/other/pods/foo', 'delete', 'api', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  ['POST', '/api/v1/namespaces/other/pods', 'create', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
  ['DELETE', '/api/v1/nodes', 'deletecollection', 'api', '', 'v1', '', 'nodes', '', '', ['nodes']],
  ['DELETE', '/api/v1/namespaces', 'deletecollection', 'api', '', 'v1', '', 'namespaces', '', '', ['namespaces']],
  ['DELETE', '/api/v1/namespaces/other/pods', 'deletecollection', 'api', '', 'v1', 'other', 'pods', '', '', ['pods']],
  [
    'DELETE',
    '/apis/extensions/v1/namespaces/other/pods',
    'deletecollection',
    'apis',
    'extensions',
    'v1',
    'other',
    'pods',
    '',
    '',
    ['pods'],
  ],
  ['POST', '/apis/extensions/v1/namespaces/other/pods', 'create', 'apis', 'extensions', 'v1', 'other', 'pods', '', '', ['pods']],
  ['POST', '/apis/extensions/v1beta3/namespaces/other/pods', 'create', 'apis', 'extensions', 'v1beta3', 'other', 'pods', '', '', ['pods']],
  [
    'GET',
    '/apis/apps/v1/watch/namespaces/other/deployments',
    'watch',
    'apis',
    'apps',
    'v1',
    'other',
    'deployments',
    '',
    '',
    ['deployments'],
  ],
  ['GET', '/apis/apps/v1/deployments?watch=true', 'watch', 'apis', 'apps', 'v1', '', 'deployments', '', '', ['deployments']],
  [
    'GET',
    '/apis/rbac.authorization.k8s.io/v1/clusterroles/admin',
    'get',
    'apis',
    'rbac.authorization.k8s.io',
    'v1',
    '',
    'clusterroles',
    '',
    'admin',
    ['clusterroles', 'admin'],
  ],
  ['GET', '/api/v1/nodes/n1/proxy/metrics', 'get', 'api', '', 'v1', '', 'nodes', 'proxy', 'n1', ['nodes', 'n1', 'proxy', 'metrics']],
  ['OPTIONS', '/api/v1/pods', '', 'api', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/namespaces/other/configmaps/a%2Fb', 'get', 'api', '', 'v1', 'other', 'configmaps', 'b', 'a', ['configmaps', 'a', 'b']],
];

for (const [method, url, verb, apiPrefix, apiGroup, apiVersion, namespace, resource, subresource, name, parts] of CASES) {
  test(`RequestInfo: ${method} ${url} is ${verb || '(no verb)'} ${resource}${subresource === '' ? '' : `/${subresource}`}`, () => {
    const info = parseRequestInfo(method, url);
    assert.equal(info.isResourceRequest, true);
    assert.deepEqual(
      { verb: info.verb, apiPrefix: info.apiPrefix, apiGroup: info.apiGroup, apiVersion: info.apiVersion, namespace: info.namespace },
      { verb, apiPrefix, apiGroup, apiVersion, namespace },
    );
    assert.deepEqual(
      { resource: info.resource, subresource: info.subresource, name: info.name, parts: info.parts },
      { resource, subresource, name, parts },
    );
  });
}

test('RequestInfo: legacy /watch/ paths are flagged, ?watch ones are not', () => {
  assert.equal(parseRequestInfo('GET', '/api/v1/watch/pods').legacyWatch, true);
  assert.equal(parseRequestInfo('GET', '/api/v1/pods?watch=1').legacyWatch, false);
});

// requestinfo_test.go TestGetNonAPIRequestInfo, plus the paths the proxy passes through.
for (const url of [
  '/',
  '/healthz',
  '/version',
  '/openapi/v2',
  '/openapi/v3/apis/apps/v1',
  '/api',
  '/api/v1',
  '/apis',
  '/apis/apps',
  '/apis/apps/v1',
  '/metrics',
  '/livez?verbose',
  '/other/v1/pods/foo',
]) {
  test(`RequestInfo: ${url} is a non-resource request`, () => {
    const info = parseRequestInfo('GET', url);
    assert.equal(info.isResourceRequest, false);
    assert.equal(info.verb, 'get');
    assert.equal(info.path, url.split('?')[0]);
  });
}

test('RequestInfo: a special verb with nothing after it is an error (requestinfo_test.go TestGetAPIRequestInfo errorCases)', () => {
  for (const url of ['/api/v1/watch', '/api/v1/proxy', '/apis/apps/v1/watch']) {
    assert.throws(
      () => parseRequestInfo('GET', url),
      (e: unknown) => e instanceof RequestInfoError && e.partial.isResourceRequest,
    );
  }
});

test('RequestInfo: a 1 MiB path of slashes is split in linear time', async () => {
  // splitPath's `\/+$` retried at every slash of the run: 11 s at 64 KiB.
  const result = await runsInLinearTime(
    new URL('../../../src/request/request-info.ts', import.meta.url),
    (m: typeof RequestInfoModule) => m.parseRequestInfo('GET', `/api${'/'.repeat(2 ** 20)}x`).parts.length,
  );
  assert.equal(result, String(2 ** 20 - 1), "every empty part between the slashes kept, as Go's strings.Split keeps them");
  assert.deepEqual(parseRequestInfo('GET', '///api/v1/pods///').parts, ['pods'], 'slashes trimmed at both ends, as splitPath');
});
