/**
 * The consistency checker against the real apiserver (cache/consistency-checker.ts): a cache that
 * lost an object is found by the next check, relisted and serves the apiserver's state again;
 * a healthy cache's checks pass, each costing the stated upstream requests.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import type { WatchCacheSource } from '../../../src/cache/cache-source.ts';
import { proxyCounter, startCachingProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';

const shared = useSharedAdmin();
const CHECKS = 'kube_cache_proxy_consistency_checks_total';

async function body(url: string): Promise<{ statusCode: number; text: string }> {
  const res = await request(url);
  return { statusCode: res.statusCode, text: await res.body.text() };
}

test(
  'consistency check: a cache that lost an object is found by the next check, relisted, and serves the apiserver’s object again',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    for (let i = 0; i < 5; i++)
      await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `cm-${String(i)}` } });
    let source: WatchCacheSource | undefined;
    const proxy = await startCachingProxy(t, shared.cp, {
      specs: [CONFIGMAPS],
      namespace: ns,
      consistencyCheckPeriodMs: 1000,
      onSource: (s) => {
        source = s;
      },
    });
    const path = `/api/v1/namespaces/${ns}/configmaps/cm-3`;
    await eventually(
      'a check that passes',
      async () => (await proxyCounter(proxy.metrics, CHECKS, { resource: 'configmaps', result: 'success' })) >= 1,
    );
    assert.equal(await proxyCounter(proxy.metrics, CHECKS, { result: 'failure' }), 0);

    // The fault: the cache loses cm-3 without the apiserver deleting it (a dropped event).
    const delegator = source?.cacheFor('', 'v1', 'configmaps', ns);
    const victim = delegator?.cache.get(`${ns}/cm-3`);
    assert.ok(delegator !== undefined && victim !== undefined);
    delegator.cache.store.delete(victim);
    assert.equal((await body(`${proxy.url}${path}`)).statusCode, 404, 'the corruption shows: the cache answers 404');

    await eventually(
      'the check to find it',
      async () => (await proxyCounter(proxy.metrics, CHECKS, { resource: 'configmaps', result: 'failure' })) >= 1,
    );
    const expected = await kube(shared.admin, 'GET', path);
    await eventually('the relist to repair it', async () => {
      const answer = await body(`${proxy.url}${path}`);
      return (
        answer.statusCode === 200 &&
        (JSON.parse(answer.text) as typeof expected).metadata.resourceVersion === expected.metadata.resourceVersion
      );
    });
    assert.ok(!proxy.forwarded.includes(path), 'served from the cache');
    const failures = await proxyCounter(proxy.metrics, CHECKS, { result: 'failure' });
    const passed = await proxyCounter(proxy.metrics, CHECKS, { result: 'success' });
    await eventually('the next check to pass', async () => (await proxyCounter(proxy.metrics, CHECKS, { result: 'success' })) > passed);
    assert.equal(failures, 1, 'one check failed (and relisted)');
    assert.equal(await proxyCounter(proxy.metrics, CHECKS, { result: 'failure' }), failures, 'repaired: no further failure');
    const check = proxy.reads.checks().find((c) => c.type === 'configmaps')?.consistency;
    assert.equal(check?.result, 'success', 'the status page shows the last check');
  },
);
