/**
 * The proxy at rest and at start, against the real apiserver: a quiet type read often stays
 * served from the cache across its staleness bound (the proxy proves it fresh itself, for its
 * readers), its watchers cost the apiserver nothing, a doubted read of it costs one upstream
 * request, a cold proxy serves its first readers from the caches they start, and a watch from
 * before the cache began is the cache's 410.
 *
 * Each test caches one namespace's podtemplates (--namespace): a scope nothing else in the run
 * writes, so "quiet" is quiet, while configmaps written in the same namespace move the cluster's
 * resourceVersion past the cache's, as any busy cluster does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import { startProxy } from '../../../src/proxy/proxy.ts';
import type { RunningProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { proxyCounter } from '../../helpers/caching-proxy.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { apiserverRequests, kube } from '../../helpers/kube.ts';
import { splitLines } from '../../../src/informer/lister-watcher.ts';

const shared = useSharedAdmin();
const REQUESTS = 'kube_cache_proxy_requests_total';
const PASSED = 'kube_cache_proxy_consistency_pass_through_total';
const PROOFS = 'kube_cache_proxy_freshness_proofs_total';

async function proxyFor(t: TestContext, ...flags: string[]): Promise<RunningProxy & { url: string }> {
  const proxy = await startProxy(parseProxyOptions(['--port', '0', '--log-level', 'warn', ...flags]), await upstreamConfigFor(shared.cp));
  t.after(() => proxy.stop(0));
  const url = proxy.url;
  assert.ok(url !== undefined);
  await eventually('the proxy to be ready', async () => {
    const res = await request(`${url}/readyz`);
    await res.body.dump();
    return res.statusCode === 200;
  });
  return Object.assign(proxy, { url });
}

async function status(url: string): Promise<number> {
  const res = await request(url);
  await res.body.dump();
  return res.statusCode;
}

/** Writes a configmap in `ns` every `everyMs` until the returned stop is called: the cluster's RV moves on. */
function busyElsewhere(ns: string, everyMs: number): () => Promise<void> {
  const state = { stopped: false };
  const loop = (async () => {
    for (let i = 0; !state.stopped; i++) {
      await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `tick-${String(i)}` } });
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return async () => {
    state.stopped = true;
    await loop;
  };
}

const podTemplate = (name: string): unknown => ({
  metadata: { name },
  template: { spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } },
});

/** The staleness histogram's count in its `le` bucket, and in all. */
async function stalenessCounts(proxy: RunningProxy, le: string): Promise<{ within: number; all: number }> {
  const metric = await proxy.metrics.registry.getSingleMetric('kube_cache_proxy_read_staleness_seconds')?.get();
  const at = (bucket: string): number =>
    (metric?.values ?? [])
      .filter((v) => String(v.labels.le) === bucket && v.labels.resource === 'podtemplates')
      .reduce((n, v) => n + v.value, 0);
  return { within: at(le), all: at('+Inf') };
}

test(
  'at rest: a quiet type read continuously is served from the cache across four bound periods, never passed through for staleness',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, podTemplate('one'));
    const boundSeconds = 5;
    const proxy = await proxyFor(t, '--resources', 'podtemplates', '--namespace', ns, '--max-staleness', `${String(boundSeconds)}s`);
    const stop = busyElsewhere(ns, 200);
    try {
      const until = Date.now() + 4 * boundSeconds * 1000;
      let reads = 0;
      while (Date.now() < until) {
        assert.equal(await status(`${proxy.url}/api/v1/namespaces/${ns}/podtemplates/one`), 200);
        assert.equal(await status(`${proxy.url}/api/v1/namespaces/${ns}/podtemplates`), 200);
        reads += 2;
      }
      const fromApiserver = await proxyCounter(proxy.metrics, REQUESTS, { resource: 'podtemplates', served_from: 'apiserver' });
      const stale = await proxyCounter(proxy.metrics, PASSED, { resource: 'podtemplates' });
      const proven = await proxyCounter(proxy.metrics, PROOFS, { resource: 'podtemplates', result: 'proven' });
      const failed = (await proxyCounter(proxy.metrics, PROOFS, { resource: 'podtemplates' })) - proven;
      const staleness = await stalenessCounts(proxy, String(boundSeconds));
      t.diagnostic(
        `${String(reads)} reads in ${String(4 * boundSeconds)} s: ${String(fromApiserver)} upstream, ${String(proven)} proofs (${String(failed)} failed)`,
      );
      assert.equal(fromApiserver, 0, 'no read went to the apiserver');
      assert.equal(stale, 0, 'none passed through for staleness');
      assert.ok(proven >= 3, 'the proxy proved the quiet type fresh, period after period');
      assert.equal(staleness.all, reads, 'each read recorded its staleness');
      assert.equal(staleness.within, staleness.all, `every read within the ${String(boundSeconds)} s bound`);
    } finally {
      await stop();
    }
  },
);

/**
 * The BOOKMARK events of a watch's body until it ends: how many, on how many occasions (a
 * bookmark more than 2.5 s after the one before starts a new one), and the last one's RV. The
 * apiserver's cacher may send its pre-timeout bookmark twice, a second apart (cache_watcher.go
 * nextBookmarkTime re-arms the watcher while deadline − 2 s is still ahead of its timer's
 * bucket), so counts alone differ by timing; occasions do not.
 */
async function bookmarksOf(body: AsyncIterable<Buffer>): Promise<{ count: number; occasions: number; last: bigint }> {
  let count = 0;
  let occasions = 0;
  let previousAt = -Infinity;
  let last = 0n;
  for await (const line of splitLines(body)) {
    const event = JSON.parse(line.toString()) as { type: string; object: { metadata: { resourceVersion: string } } };
    if (event.type === 'BOOKMARK') {
      count++;
      const at = performance.now();
      if (at - previousAt > 2_500) occasions++;
      previousAt = at;
      last = BigInt(event.object.metadata.resourceVersion);
    }
  }
  return { count, occasions, last };
}

test(
  "at rest: a client's watch of a quiet type costs the apiserver nothing: its bookmarks carry the cache's RV, never a proof's",
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, podTemplate('one'));
    const proxy = await proxyFor(t, '--resources', 'podtemplates', '--namespace', ns, '--max-staleness', '5s');
    const listed = await request(`${proxy.url}/api/v1/namespaces/${ns}/podtemplates`);
    const list = (await listed.body.json()) as { metadata: { resourceVersion: string } };
    const stop = busyElsewhere(ns, 200);
    try {
      const upstreamBefore =
        (await apiserverRequests(shared.admin, 'LIST', 'podtemplates')) + (await apiserverRequests(shared.admin, 'WATCH', 'podtemplates'));
      const query = `watch=1&allowWatchBookmarks=true&timeoutSeconds=12&resourceVersion=${list.metadata.resourceVersion}`;
      const viaProxy = await request(`${proxy.url}/api/v1/namespaces/${ns}/podtemplates?${query}`).then((res) => bookmarksOf(res.body));
      const upstream =
        (await apiserverRequests(shared.admin, 'LIST', 'podtemplates')) +
        (await apiserverRequests(shared.admin, 'WATCH', 'podtemplates')) -
        upstreamBefore;
      const current = await kube<{ metadata: { resourceVersion: string } }>(shared.admin, 'GET', `/api/v1/namespaces/${ns}/podtemplates`);
      t.diagnostic(
        `bookmarks in 12 s: ${String(viaProxy.count)} (last RV ${String(viaProxy.last)}); podtemplates requests upstream meanwhile: ${String(upstream)}`,
      );
      assert.equal(await proxyCounter(proxy.metrics, PROOFS, { resource: 'podtemplates' }), 0, 'no proof for a watcher');
      // Other tests of the run may read podtemplates at the apiserver; the proxy's own would be a proof's two.
      assert.ok(viaProxy.last <= BigInt(current.metadata.resourceVersion), "a bookmark's RV is the cache's: never past the apiserver's");
    } finally {
      await stop();
    }
  },
);

test(
  'at rest: a collection delete that deleted nothing doubts nothing; a doubted LIST of a quiet type costs one upstream request and no wait; the proof a reader asks for near the bound settles the doubt',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, podTemplate('one'));
    const proxy = await proxyFor(t, '--resources', 'podtemplates', '--namespace', ns, '--max-staleness', '5s');
    const collection = `${proxy.url}/api/v1/namespaces/${ns}/podtemplates`;
    assert.equal(await status(collection), 200);
    // A deletecollection that matches nothing deleted nothing (its answer, the list of what it
    // deleted, is empty): the reads after it stay the cache's.
    const deleted = await request(`${collection}?labelSelector=none%3Dnone`, { method: 'DELETE' });
    await deleted.body.dump();
    assert.equal(deleted.statusCode, 200);
    const fromCache = await proxyCounter(proxy.metrics, REQUESTS, { resource: 'podtemplates', served_from: 'cache', verb: 'list' });
    assert.equal(await status(collection), 200);
    assert.equal(
      await proxyCounter(proxy.metrics, REQUESTS, { resource: 'podtemplates', served_from: 'cache', verb: 'list' }),
      fromCache + 1,
      'an empty collection delete doubts nothing',
    );
    // A conflict doubts the object (the cache may be behind it); nothing of the type changes.
    const conflict = await request(`${collection}/one`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...(podTemplate('one') as object), metadata: { name: 'one', resourceVersion: '1' } }),
    });
    await conflict.body.dump();
    assert.equal(conflict.statusCode, 409);
    const lists = await apiserverRequests(shared.admin, 'LIST', 'podtemplates');
    assert.equal(await status(collection), 200);
    assert.equal((await apiserverRequests(shared.admin, 'LIST', 'podtemplates')) - lists, 1, 'one upstream LIST: the read itself');
    assert.equal(
      await proxyCounter(proxy.metrics, PASSED, { resource: 'podtemplates', reason: 'doubted-quiet' }),
      1,
      'passed at once, for the doubt: no probe first, no wait for the cache',
    );
    assert.equal(await proxyCounter(proxy.metrics, PASSED, { resource: 'podtemplates', reason: 'doubted' }), 0);
    // Read on, often: near the bound a read asks for a proof, which settles the doubt too.
    await eventually('a proof to settle the doubt: the LIST from the cache again', async () => {
      const before = await proxyCounter(proxy.metrics, REQUESTS, { resource: 'podtemplates', served_from: 'cache', verb: 'list' });
      assert.equal(await status(collection), 200);
      return (await proxyCounter(proxy.metrics, REQUESTS, { resource: 'podtemplates', served_from: 'cache', verb: 'list' })) > before;
    });
  },
);

/** The first `count` events of a watch at `url`. */
async function firstEvents(
  url: string,
  count: number,
): Promise<{ type: string; object: { metadata?: { name?: string; annotations?: Record<string, string> }; code?: number } }[]> {
  const res = await request(url);
  assert.equal(res.statusCode, 200);
  const events: { type: string; object: { metadata?: { name?: string; annotations?: Record<string, string> }; code?: number } }[] = [];
  for await (const line of splitLines(res.body)) {
    events.push(JSON.parse(line.toString()) as (typeof events)[number]);
    if (events.length === count) break;
  }
  res.body.destroy();
  return events;
}

test(
  "at start: a cold proxy's first LIST then WATCH, and first WatchList, are served by the caches they start: no 410, no watch at the apiserver",
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, podTemplate('one'));
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/limitranges`, {
      metadata: { name: 'one' },
      spec: { limits: [{ type: 'Container' }] },
    });
    // No --resources: every type is cached on its first read.
    const proxy = await proxyFor(t);
    const listed = await request(`${proxy.url}/api/v1/namespaces/${ns}/podtemplates`);
    assert.equal(listed.statusCode, 200);
    const list = (await listed.body.json()) as { metadata: { resourceVersion: string } };
    const watching = firstEvents(
      `${proxy.url}/api/v1/namespaces/${ns}/podtemplates?watch=1&resourceVersion=${list.metadata.resourceVersion}`,
      1,
    );
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, podTemplate('two'));
    const [added] = await watching;
    assert.equal(added?.type, 'ADDED', 'the watch from the LIST RV goes on, no 410');
    assert.equal(added.object.metadata?.name, 'two');

    const watchList = await firstEvents(
      `${proxy.url}/api/v1/namespaces/${ns}/limitranges?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`,
      2,
    );
    assert.deepEqual(
      watchList.map((e) => e.type),
      ['ADDED', 'BOOKMARK'],
    );
    assert.equal(watchList[1]?.object.metadata?.annotations?.['k8s.io/initial-events-end'], 'true');
    for (const resource of ['podtemplates', 'limitranges']) {
      assert.equal(
        await proxyCounter(proxy.metrics, REQUESTS, { resource, served_from: 'apiserver' }),
        0,
        `${resource}: nothing passed through`,
      );
    }
    assert.equal(await proxyCounter(proxy.metrics, REQUESTS, { resource: 'podtemplates', served_from: 'cache', verb: 'watch' }), 1);
    assert.equal(await proxyCounter(proxy.metrics, REQUESTS, { resource: 'limitranges', served_from: 'cache', verb: 'watch' }), 1);
  },
);

test(
  "at start: a watch from an RV older than the cache's first list is the cache's 410, as the apiserver's after its own restart; the relist is the cache's",
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const before = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, podTemplate('one'));
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, podTemplate('two'));
    const proxy = await proxyFor(t, '--resources', 'podtemplates', '--namespace', ns);
    // The cache began after `before`: the change to `two` is older than anything it saw.
    const [first] = await firstEvents(
      `${proxy.url}/api/v1/namespaces/${ns}/podtemplates?watch=1&resourceVersion=${before.metadata.resourceVersion}`,
      1,
    );
    assert.equal(first?.type, 'ERROR');
    assert.equal(first.object.code, 410);
    const relist = await firstEvents(
      `${proxy.url}/api/v1/namespaces/${ns}/podtemplates?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`,
      3,
    );
    assert.deepEqual(relist.map((e) => `${e.type} ${e.object.metadata?.name ?? ''}`).sort(), ['ADDED one', 'ADDED two', 'BOOKMARK ']);
    assert.equal(await proxyCounter(proxy.metrics, 'kube_cache_proxy_watches_expired_total', { resource: 'podtemplates' }), 1);
    assert.equal(
      await proxyCounter(proxy.metrics, REQUESTS, { resource: 'podtemplates', served_from: 'apiserver' }),
      0,
      'nothing passed through',
    );
  },
);
