/**
 * GET and LIST served from the informers' caches, compared with the real apiserver's answers to
 * the same requests: the same status and the same bytes, but for the list's resourceVersion
 * (each cache is at its own RV), and no upstream request for what the cache serves.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import { newSharedInformerFactory } from '../../../src/informer/factory.ts';
import { newCachedReads } from '../../../src/server/cached-reads.ts';
import type { CachedReads, CachedReadsOptions } from '../../../src/server/cached-reads.ts';
import { newCacheRegistry } from '../../../src/cache/cache-registry.ts';
import { newProxyServer } from '../../../src/server/app.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { newDiscovery } from '../../../src/upstream/discovery.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { apiserverRequests, kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

interface Proxy {
  readonly url: string;
  readonly reads: CachedReads;
  /** Paths the proxy passed through to the apiserver. */
  readonly forwarded: string[];
}

async function startCachingProxy(
  t: { after(fn: () => Promise<void>): void },
  options: Pick<CachedReadsOptions, 'consistency' | 'freshnessWaitMs'> = {},
): Promise<Proxy> {
  const upstream = newUpstreamClient(await upstreamConfigFor(shared.cp));
  const forwarded: string[] = [];
  const client: UpstreamClient = {
    ...upstream,
    forward(req) {
      forwarded.push(req.path);
      return upstream.forward(req);
    },
  };
  const factory = newSharedInformerFactory({ client });
  const discovery = newDiscovery(upstream);
  await discovery.refresh();
  const source = newCacheRegistry({
    factory,
    discovery,
    resources: [
      { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, unstructured: false },
      { group: '', version: 'v1', resource: 'namespaces', kind: 'Namespace', namespaced: false, unstructured: false },
    ],
  });
  const reads = newCachedReads({ source, client: upstream, ...options });
  const app: FastifyInstance = newProxyServer({ client, cachedReads: reads });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  reads.start();
  t.after(async () => {
    await app.close();
    await reads.stop();
    await upstream.close();
  });
  await eventually('the caches to sync', () => reads.synced());
  return { url, reads, forwarded };
}

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
  const proxy = await startCachingProxy(t);

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

test(
  'cached reads: RV=0 LISTs cost the apiserver nothing; an RV-unset LIST costs a probe, and the LIST itself only if the cache cannot prove itself fresh',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'one' } });
    const proxy = await startCachingProxy(t);
    await eventually(
      'the object to be cached',
      async () => (await getText(`${proxy.url}/api/v1/namespaces/${ns}/configmaps/one?resourceVersion=0`)).status === 200,
    );

    const before = await apiserverRequests(shared.admin, 'LIST', 'configmaps');
    for (let i = 0; i < 50; i++) {
      const res = await getText(`${proxy.url}/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`);
      assert.equal(res.status, 200);
    }
    assert.equal(await apiserverRequests(shared.admin, 'LIST', 'configmaps'), before, '50 RV=0 LISTs, no upstream LIST');

    proxy.forwarded.length = 0;
    const consistent = await getText(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`);
    assert.equal(consistent.status, 200);
    // The probe (a one-item LIST), plus the LIST itself when the cache was not at the probe's RV
    // within the wait (other writes in the cluster move the RV; see consistency.test.ts).
    const passedThrough = proxy.forwarded.filter((path) => path.startsWith(`/api/v1/namespaces/${ns}/configmaps`)).length;
    assert.equal(
      await apiserverRequests(shared.admin, 'LIST', 'configmaps'),
      before + 1 + passedThrough,
      'a probe, and the LIST only if passed through',
    );
  },
);
