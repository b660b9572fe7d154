/**
 * GET and LIST served from the informers' caches, compared with the real apiserver's answers to
 * the same requests: the same status and the same bytes, but for the list's resourceVersion
 * (each cache is at its own RV), and no upstream request for what the cache serves.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import type { CachedResourceSpec } from '../../../src/cache/cached-resources.ts';
import { startCachingProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { apiserverRequests, kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

const SPECS: readonly CachedResourceSpec[] = [
  { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, unstructured: false },
  { group: '', version: 'v1', resource: 'namespaces', kind: 'Namespace', namespaced: false, unstructured: false },
];

/** The list's own resourceVersion differs between two caches; everything else must not. */
function withoutListResourceVersion(body: string): string {
  return body.replace(/^(\{"kind":"\w+List","apiVersion":"[^"]+","metadata":\{"resourceVersion":")\d+"/, '$1"');
}

async function getText(url: string): Promise<{ status: number; body: string }> {
  const res = await request(url);
  return { status: res.statusCode, body: await res.body.text() };
}

test("cached reads: RV=0 GETs and LISTs equal the apiserver's answers, selectors included", { timeout: 120_000 }, async (t) => {
  const ns1 = await testNamespace(t, shared.admin);
  const ns2 = await testNamespace(t, shared.admin);
  for (const [ns, name, labels] of [
    [ns1, 'cm-1', { app: 'a', tier: 'web' }],
    [ns1, 'cm-2', { app: 'b' }],
    [ns1, 'cm-3', {}],
    [ns2, 'cm-1', { app: 'a', tier: 'db' }],
  ] as const) {
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      metadata: { name, labels },
      data: { text: '<escaped & kept>' },
    });
  }
  const proxy = await startCachingProxy(t, shared.cp, { specs: SPECS });

  const paths = [
    `/api/v1/namespaces/${ns1}/configmaps?resourceVersion=0`,
    `/api/v1/namespaces/${ns1}/configmaps?resourceVersion=0&labelSelector=app%3Da`,
    `/api/v1/namespaces/${ns1}/configmaps?resourceVersion=0&labelSelector=app+in+(a,b),tier!%3Dx`,
    `/api/v1/namespaces/${ns1}/configmaps?resourceVersion=0&labelSelector=!app`,
    `/api/v1/namespaces/${ns1}/configmaps?resourceVersion=0&fieldSelector=metadata.name%3Dcm-2`,
    `/api/v1/configmaps?resourceVersion=0&labelSelector=app%3Da`,
    `/api/v1/configmaps?resourceVersion=0&fieldSelector=metadata.namespace%3D${ns2}`,
    `/api/v1/namespaces/${ns1}/configmaps/cm-1?resourceVersion=0`,
    `/api/v1/namespaces/${ns1}/configmaps/missing?resourceVersion=0`,
    `/api/v1/namespaces/${ns2}?resourceVersion=0`,
    `/api/v1/namespaces/${ns1}/configmaps?resourceVersion=0&limit=1`,
  ];
  for (const path of paths) {
    await eventually(`the proxy to answer ${path} as the apiserver does`, async () => {
      const [viaProxy, direct] = await Promise.all([getText(`${proxy.url}${path}`), shared.admin.request({ method: 'GET', path })]);
      return (
        viaProxy.status === direct.statusCode &&
        withoutListResourceVersion(viaProxy.body) === withoutListResourceVersion(direct.body.toString())
      );
    });
  }
  // Once caught up, every one of them is answered by the cache.
  proxy.forwarded.length = 0;
  for (const path of paths) await getText(`${proxy.url}${path}`);
  assert.deepEqual(proxy.forwarded, [], 'nothing was passed through');
  const list = await getText(`${proxy.url}/api/v1/namespaces/${ns1}/configmaps?resourceVersion=0`);
  assert.match(list.body, /\\u003cescaped \\u0026 kept\\u003e/, "the apiserver's bytes, not a re-serialization");
});

test('cached reads: RV=0 and RV-unset LISTs (the default mode) cost the apiserver nothing', { timeout: 120_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'one' } });
  const proxy = await startCachingProxy(t, shared.cp, { specs: SPECS });
  await eventually(
    'the object to be cached',
    async () => (await getText(`${proxy.url}/api/v1/namespaces/${ns}/configmaps/one?resourceVersion=0`)).status === 200,
  );
  const before = await apiserverRequests(shared.admin, 'LIST', 'configmaps');
  for (let i = 0; i < 50; i++) {
    const any = await getText(`${proxy.url}/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`);
    assert.equal(any.status, 200);
    const recent = await getText(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`);
    assert.equal(recent.status, 200);
  }
  assert.equal(await apiserverRequests(shared.admin, 'LIST', 'configmaps'), before, '100 LISTs, no upstream LIST');
  assert.deepEqual(proxy.forwarded, [], 'nothing was passed through');
});
