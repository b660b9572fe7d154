/**
 * RV-unset ("most recent") reads through the proxy against the real apiserver: what they cost
 * upstream (the apiserver's own apiserver_request_total, against the proxy's count of its probes
 * and pass-throughs), and read-your-writes in both consistency modes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import { startProxy } from '../../../src/cli/proxy-command.ts';
import type { RunningProxy } from '../../../src/cli/proxy-command.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { apiserverRequests, forEachConcurrently } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

async function startConfigMapProxy(consistency: 'strong' | 'bounded'): Promise<RunningProxy & { url: string }> {
  const options = parseProxyOptions(['--port', '0', '--resources', 'configmaps', '--read-consistency', consistency, '--log-level', 'warn']);
  const proxy = await startProxy(options, await upstreamConfigFor(shared.cp));
  const url = proxy.url;
  assert.ok(url !== undefined);
  await eventually('the configmaps cache to sync', async () => (await request(`${url}/readyz`)).statusCode === 200);
  return Object.assign(proxy, { url });
}

/** A counter's value from the proxy's registry, summed over the series matching `labels`. */
async function proxyCounter(proxy: RunningProxy, name: string, labels: Record<string, string>): Promise<number> {
  const metric = await proxy.metrics.registry.getSingleMetric(name)?.get();
  let total = 0;
  for (const value of metric?.values ?? []) {
    if (Object.entries(labels).every(([k, v]) => value.labels[k] === v)) total += value.value;
  }
  return total;
}

async function listStatus(url: string): Promise<number> {
  const res = await request(url);
  await res.body.dump();
  return res.statusCode;
}

async function loadOfLists(t: TestContext, consistency: 'strong' | 'bounded'): Promise<void> {
  const ns = await testNamespace(t, shared.admin);
  const proxy = await startConfigMapProxy(consistency);
  try {
    const before = await apiserverRequests(shared.admin, 'LIST', 'configmaps');
    // 100 clients at once, half reading any state (RV=0), half the most recent (RV unset).
    const statuses = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        listStatus(`${proxy.url}/api/v1/namespaces/${ns}/configmaps${i % 2 === 0 ? '?resourceVersion=0' : ''}`),
      ),
    );
    assert.deepEqual(new Set(statuses), new Set([200]));
    const upstream = (await apiserverRequests(shared.admin, 'LIST', 'configmaps')) - before;
    const probes = await proxyCounter(proxy, 'kube_cache_proxy_consistency_probes_total', { resource: 'configmaps' });
    const passed = await proxyCounter(proxy, 'kube_cache_proxy_requests_total', {
      verb: 'list',
      resource: 'configmaps',
      served_from: 'apiserver',
    });
    const cached = await proxyCounter(proxy, 'kube_cache_proxy_requests_total', {
      verb: 'list',
      resource: 'configmaps',
      served_from: 'cache',
    });
    t.diagnostic(
      `${consistency}: 100 LISTs → ${String(upstream)} upstream LISTs (${String(probes)} probes, ${String(passed)} passed through)`,
    );
    // The cache's own sync happened before `before` (readiness); what the load cost is exactly
    // the probes and the reads the cache could not prove fresh.
    assert.equal(upstream, probes + passed, 'every upstream LIST is a probe or a counted pass-through');
    assert.equal(cached + passed, 100);
    assert.ok(cached >= 50, 'every RV=0 LIST came from the cache');
    // How many probes the RV-unset reads shared depends on how their arrivals overlapped (the unit
    // tests show the sharing); what matters here is that each costs a one-item LIST at most.
    if (consistency === 'bounded') assert.equal(upstream, 0, 'bounded reads cost the apiserver nothing');
    else assert.ok(probes <= 50, 'at most one probe per RV-unset read');
  } finally {
    await proxy.stop(0);
  }
}

test('consistency: 100 concurrent LISTs cost one-item probes, never full LISTs (strong)', { timeout: 60_000 }, async (t) => {
  await loadOfLists(t, 'strong');
});

test('consistency: 100 concurrent LISTs cost the apiserver nothing (bounded)', { timeout: 60_000 }, async (t) => {
  await loadOfLists(t, 'bounded');
});

async function readYourWrites(t: TestContext, consistency: 'strong' | 'bounded', iterations: number): Promise<number> {
  const ns = await testNamespace(t, shared.admin);
  const proxy = await startConfigMapProxy(consistency);
  try {
    let notFound = 0;
    for (let i = 0; i < iterations; i++) {
      const name = `ryw-${String(i)}`;
      const created = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { name }, data: { i: String(i) } }),
      });
      await created.body.dump();
      assert.equal(created.statusCode, 201);
      const read = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps/${name}`);
      await read.body.dump();
      if (read.statusCode === 404) notFound++;
      else assert.equal(read.statusCode, 200);
    }
    const cached = await proxyCounter(proxy, 'kube_cache_proxy_requests_total', {
      verb: 'get',
      resource: 'configmaps',
      served_from: 'cache',
    });
    t.diagnostic(`${consistency}: ${String(iterations)} create+GET, ${String(cached)} GETs from the cache`);
    return notFound;
  } finally {
    await proxy.stop(0);
  }
}

test(
  'consistency: read-your-writes, 500 creates through the proxy each read back at once (both modes)',
  { timeout: 180_000 },
  async (t) => {
    const [strong, bounded] = await Promise.all([readYourWrites(t, 'strong', 500), readYourWrites(t, 'bounded', 500)]);
    assert.equal(strong, 0, 'strong: no GET after a create answered 404');
    assert.equal(bounded, 0, 'bounded: no GET after a create answered 404');
  },
);

test('consistency: a bounded read sees a change made through the proxy, even one the probe cannot name', { timeout: 60_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const proxy = await startConfigMapProxy('bounded');
  try {
    await forEachConcurrently([0, 1, 2], 3, async (i) => {
      const res = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { name: `cm-${String(i)}` } }),
      });
      await res.body.dump();
      assert.equal(res.statusCode, 201);
    });
    // A collection delete answers with the deleted list: its RV is the list's, not an object's.
    const deleted = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`, { method: 'DELETE' });
    await deleted.body.dump();
    assert.equal(deleted.statusCode, 200);
    const list = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`);
    const body = (await list.body.json()) as { items: unknown[] };
    assert.deepEqual(body.items, [], 'the deletes are visible to the next read');
  } finally {
    await proxy.stop(0);
  }
});
