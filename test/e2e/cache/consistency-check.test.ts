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
import { CONFIGMAPS, PODTEMPLATES } from '../../helpers/resource-specs.ts';

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
    // Repaired once the cache itself answers with the apiserver's object (a read passed through
    // while the cache relists would answer it too).
    await eventually('the relist to repair it', async () => {
      const passed = proxy.forwarded.length;
      const answer = await body(`${proxy.url}${path}`);
      return (
        proxy.forwarded.length === passed &&
        answer.statusCode === 200 &&
        (JSON.parse(answer.text) as typeof expected).metadata.resourceVersion === expected.metadata.resourceVersion
      );
    });
    const failures = await proxyCounter(proxy.metrics, CHECKS, { result: 'failure' });
    const passed = await proxyCounter(proxy.metrics, CHECKS, { result: 'success' });
    await eventually('the next check to pass', async () => (await proxyCounter(proxy.metrics, CHECKS, { result: 'success' })) > passed);
    assert.equal(failures, 1, 'one check failed (and relisted)');
    assert.equal(await proxyCounter(proxy.metrics, CHECKS, { result: 'failure' }), failures, 'repaired: no further failure');
    const check = proxy.reads.checks().find((c) => c.type === 'configmaps')?.consistency;
    assert.equal(check?.result, 'success', 'the status page shows the last check');
  },
);

test(
  'consistency check: one upstream event dropped on purpose is found by the first check after it, repaired by a relist of that cache alone, counted; the other cache and its watcher are not disturbed',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    for (let i = 0; i < 5; i++)
      await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `cm-${String(i)}` } });
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, {
      metadata: { name: 'tpl' },
      template: { spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } },
    });
    let source: WatchCacheSource | undefined;
    const periodMs = 2000;
    // The test's watch ends before the proxy's teardown, which waits for its open responses (hooks run in order).
    const watching = new AbortController();
    t.after(() => {
      watching.abort();
    });
    const proxy = await startCachingProxy(t, shared.cp, {
      specs: [CONFIGMAPS, PODTEMPLATES],
      namespace: ns,
      consistencyCheckPeriodMs: periodMs,
      onSource: (s) => {
        source = s;
      },
    });
    const configmaps = source?.cacheFor('', 'v1', 'configmaps', ns);
    const templates = source?.cacheFor('', 'v1', 'podtemplates', ns);
    assert.ok(configmaps !== undefined && templates !== undefined);
    // A watcher of the other cache: it must see its next change, on the same connection.
    const watch = await request(
      `${proxy.url}/api/v1/namespaces/${ns}/podtemplates?watch=true&resourceVersion=${String(templates.cache.resourceVersion())}`,
      { signal: watching.signal },
    );
    let watched = '';
    let watchEnded = false;
    watch.body.on('data', (chunk: Buffer) => (watched += chunk.toString()));
    watch.body.on('error', () => undefined);
    watch.body.on('end', () => (watchEnded = true));

    // The fault: the cache's store skips the next update of cm-2, as if the watch had lost it.
    const { store } = configmaps.cache;
    const update = store.update.bind(store);
    let dropped: number | undefined;
    store.update = (obj) => {
      if (dropped === undefined && obj.key === `${ns}/cm-2`) {
        dropped = Date.now();
        return;
      }
      update(obj);
    };
    const successesBefore = await proxyCounter(proxy.metrics, CHECKS, { resource: 'configmaps', result: 'success' });
    await kube(shared.admin, 'PATCH', `/api/v1/namespaces/${ns}/configmaps/cm-2`, { data: { k: 'v' } }, 200);
    await eventually('the event to be dropped', () => dropped !== undefined);
    const path = `/api/v1/namespaces/${ns}/configmaps/cm-2`;
    assert.ok(!(await body(`${proxy.url}${path}`)).text.includes('"k":"v"'), 'the cache misses the change');

    await eventually(
      'a check to find it',
      async () => (await proxyCounter(proxy.metrics, CHECKS, { resource: 'configmaps', result: 'failure' })) === 1,
      3 * periodMs + 10_000,
    );
    const detectedMs = Date.now() - (dropped ?? 0);
    t.diagnostic(`detected ${String(detectedMs)} ms after the drop (period ${String(periodMs)} ms, up to 1.5 periods with jitter)`);
    // At most one check passed after the drop: one that had already read its pages before it.
    const successesSince = (await proxyCounter(proxy.metrics, CHECKS, { resource: 'configmaps', result: 'success' })) - successesBefore;
    assert.ok(successesSince <= 1, `found by the first check that read after the drop (${String(successesSince)} passed since)`);
    await eventually('the relist to repair it', async () => {
      const passed = proxy.forwarded.length;
      return (await body(`${proxy.url}${path}`)).text.includes('"k":"v"') && proxy.forwarded.length === passed;
    });

    // The other cache: checked, never failed, its watcher still on its first connection.
    await kube(shared.admin, 'PATCH', `/api/v1/namespaces/${ns}/podtemplates/tpl`, { metadata: { labels: { after: 'drop' } } }, 200);
    await eventually('the podtemplates watcher to see its change', () => watched.includes('"after":"drop"'));
    assert.equal(watchEnded, false, 'its watch was never ended: that cache was not relisted');
    await eventually(
      'the other cache to be checked',
      async () => (await proxyCounter(proxy.metrics, CHECKS, { resource: 'podtemplates', result: 'success' })) >= 1,
      3 * periodMs + 10_000,
    );
    assert.equal(await proxyCounter(proxy.metrics, CHECKS, { resource: 'podtemplates', result: 'failure' }), 0);
    assert.equal(await proxyCounter(proxy.metrics, CHECKS, { resource: 'configmaps', result: 'failure' }), 1, 'one failure, repaired');
  },
);
