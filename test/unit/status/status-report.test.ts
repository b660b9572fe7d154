import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newProxyMetrics } from '../../../src/server/http/metrics.ts';
import type { CacheStatus } from '../../../src/cache/cache-source.ts';
import { HISTORY_SAMPLES, SAMPLE_INTERVAL_MS, newStatusReporter } from '../../../src/status/status-report.ts';
import type { StatusSources } from '../../../src/status/status-report.ts';
import { newPrometheusInformerMetricsProvider } from '../../../src/informer/prometheus-metrics.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

const MEMORY: NodeJS.MemoryUsage = { rss: 300, heapTotal: 200, heapUsed: 100, external: 50, arrayBuffers: 20 };

const watchingPods: CacheStatus = {
  name: 'cache-pods',
  type: 'pods',
  version: 'v1',
  namespace: undefined,
  phase: 'watching',
  failure: undefined,
  state: 'watching',
  objects: 7,
  resourceVersion: '120',
  heardAgoMs: 1_250,
  consistency: { result: 'failure', resourceVersion: '118', agoMs: 2_040, detail: 'cache digest 1, apiserver digest 2' },
};

function setUp(extra: Partial<StatusSources> = {}): {
  clock: FakeClock;
  metrics: ReturnType<typeof newProxyMetrics>;
  sources: StatusSources;
} {
  const clock = new FakeClock();
  const metrics = newProxyMetrics();
  // Every type named here is one discovery describes (only those get a resource label of their own).
  metrics.knowTypes((name) => name);
  const sources: StatusSources = {
    registry: metrics.registry,
    caches: () => [watchingPods],
    upstream: { server: 'https://10.0.0.1:6443', source: 'in-cluster' },
    consistency: { mode: 'bounded', strongResources: [], maxStalenessSeconds: 75 },
    version: '1.2.3',
    clock,
    memory: () => MEMORY,
    ...extra,
  };
  return { clock, metrics, sources };
}

/** Lets the sampler's registry read (a promise) settle. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test("status: the figures are the metrics registry's: reads by where they were answered, offload ratio, a type's own counters", async () => {
  const { metrics, sources } = setUp();
  const informers = newPrometheusInformerMetricsProvider(metrics.registry);
  for (let i = 0; i < 3; i++) metrics.served('list', 'pods', 'cache');
  metrics.served('get', 'pods', 'apiserver');
  metrics.passedThrough('pods', 'stale');
  metrics.served('watch', 'pods', 'cache');
  metrics.served('create', 'pods', 'apiserver');
  metrics.served('list', 'namespaces', 'apiserver');
  metrics.passedThrough('namespaces', 'uncached');
  metrics.served('get', '', 'apiserver');
  const pods = metrics.delegator('pods').cacher;
  pods.watchers(1);
  pods.events(4);
  const informer = informers.forResource('pods', { group: '', version: 'v1', resource: 'pods' });
  informer.objects(7, 9_100);
  const { reflector } = informer;
  reflector.relist('watch-expired');
  reflector.list(2, 7);
  reflector.watch();
  metrics.delegator('pods').probe();

  const report = await newStatusReporter(sources).report();
  assert.deepEqual(report.requests, { cache: 4, apiserver: 4 });
  assert.deepEqual(report.reads, { cache: 4, apiserver: 3, offloadRatio: 0.5714 });
  // 2 LIST pages + 1 WATCH + 1 probe.
  assert.equal(report.upstreamRequests.total, 4);
  assert.equal(report.caches.length, 1);
  const [row] = report.caches;
  assert.deepEqual(row, {
    name: 'cache-pods',
    type: 'pods',
    version: 'v1',
    namespace: null,
    phase: 'watching',
    objects: 7,
    bytes: 9_100,
    resourceVersion: '120',
    stalenessSeconds: 1.3,
    consistency: { result: 'failure', resourceVersion: '118', checkedSecondsAgo: 2, detail: 'cache digest 1, apiserver digest 2' },
    relists: 1,
    watchers: 1,
    eventsPerSecond: 0,
    reads: { cache: 4, apiserver: 1 },
    passReasons: [{ reason: 'stale', count: 1 }],
  });
  // Types read but not cached; a non-resource path ('') is no type.
  assert.deepEqual(report.uncached, [
    { type: 'namespaces', reads: { cache: 0, apiserver: 1 }, passReasons: [{ reason: 'uncached', count: 1 }] },
  ]);
  assert.deepEqual(report.memory, { rssBytes: 300, heapUsedBytes: 100, arrayBuffersBytes: 20 });
  assert.deepEqual(report.upstream, { server: 'https://10.0.0.1:6443', source: 'in-cluster', identity: null, fallback: null });
  // A chained proxy's fallback, as its client says it (fallback-client.ts).
  const fallback = {
    target: 'apiserver' as const,
    apiserver: 'https://10.0.0.1:6443',
    since: '2026-11-29T00:00:00.000Z',
    reason: 'ECONNREFUSED',
    fallbacks: 1,
  };
  assert.deepEqual((await newStatusReporter({ ...sources, fallback: () => fallback }).report()).upstream.fallback, fallback);
  assert.equal(report.pool, null, 'not a member of a pool');
  assert.equal(report.version, '1.2.3');
});

test('status: no reads yet: the offload ratio is null, not 0 or NaN', async () => {
  const { sources } = setUp({ caches: () => [] });
  const report = await newStatusReporter(sources).report();
  assert.equal(report.reads.offloadRatio, null);
  assert.deepEqual(report.caches, []);
  assert.equal(JSON.stringify(report).includes('NaN'), false);
});

test('status: sampling gives one chart bar per interval plus the current one, rates over the last minute, and keeps HISTORY_SAMPLES', async () => {
  const { clock, metrics, sources } = setUp();
  const reporter = newStatusReporter(sources);
  reporter.start();
  await settle();
  const pods = metrics.delegator('pods').cacher;
  // 70 s: 7 intervals, each with 2 reads from the cache, 1 passed through and 10 events.
  for (let i = 0; i < 7; i++) {
    metrics.served('list', 'pods', 'cache');
    metrics.served('list', 'pods', 'cache');
    metrics.served('get', 'secrets', 'apiserver');
    pods.events(10);
    clock.step(SAMPLE_INTERVAL_MS);
    await settle();
  }
  metrics.served('list', 'pods', 'cache');
  clock.step(SAMPLE_INTERVAL_MS / 2);
  const report = await reporter.report();
  const bars = report.history.bars;
  assert.equal(bars.length, 8);
  assert.deepEqual(
    bars.slice(0, 7).map((b) => b.requests),
    Array.from({ length: 7 }, () => ({ cache: 2, apiserver: 1 })),
  );
  assert.deepEqual(bars[7]?.requests, { cache: 1, apiserver: 0 });
  assert.equal(bars[7].seconds, 5);
  assert.equal(report.history.intervalSeconds, SAMPLE_INTERVAL_MS / 1000);
  // From the sample at 10 s (the newest at least a minute old) to 75 s: 60 events in 65 s.
  assert.equal(report.caches[0]?.eventsPerSecond, Math.round((60 / 65) * 100) / 100);
  // Answered from the cache in that minute and a bit: 6 x 2 + 1; the proxy's own upstream requests: none.
  assert.equal(report.upstreamRequests.savedLastMinute, 13);

  for (let i = 0; i < HISTORY_SAMPLES + 10; i++) {
    clock.step(SAMPLE_INTERVAL_MS);
    await settle();
  }
  const later = await reporter.report();
  assert.equal(later.history.bars.length, HISTORY_SAMPLES + 1);
  reporter.stop();
  assert.equal(clock.waiters(), 0, 'stop cancels the sampler');
});

test('status: the identity is asked on the first report (which waits for it), and again only after a failure and a minute', async () => {
  let asked = 0;
  let fail = true;
  const { clock, sources } = setUp({
    identity: () => {
      asked++;
      return fail
        ? Promise.reject(new Error('403'))
        : Promise.resolve({ username: 'system:serviceaccount:app:proxy', groups: ['system:serviceaccounts'] });
    },
  });
  const reporter = newStatusReporter(sources);
  assert.equal((await reporter.report()).upstream.identity, null);
  await reporter.report();
  assert.equal(asked, 1);
  fail = false;
  clock.step(60_000);
  // The report waits for the answer in flight: the identity is in this one already.
  assert.deepEqual((await reporter.report()).upstream.identity, {
    username: 'system:serviceaccount:app:proxy',
    groups: ['system:serviceaccounts'],
  });
  assert.equal(asked, 2);
  assert.deepEqual((await reporter.report()).upstream.identity, {
    username: 'system:serviceaccount:app:proxy',
    groups: ['system:serviceaccounts'],
  });
  clock.step(120_000);
  await reporter.report();
  assert.equal(asked, 2);
});

test('status: a SelfSubjectReview that does not answer holds a report up for a second at most', async () => {
  const { clock, sources } = setUp({ identity: () => new Promise(() => undefined) });
  const reporter = newStatusReporter(sources);
  const report = reporter.report();
  await settle();
  assert.equal(clock.waiters(), 1, 'waiting on the clock');
  clock.step(1_000);
  assert.equal((await report).upstream.identity, null);
  // The next report does not ask again, nor wait for the one in flight beyond its second.
  const next = reporter.report();
  await settle();
  clock.step(1_000);
  assert.equal((await next).upstream.identity, null);
});

test("status: a pool member's role and where its pool-wide types are read from, as its member reports them", async () => {
  let readsFrom: 'leader' | 'apiserver' = 'leader';
  const { sources } = setUp({
    pool: () => ({
      name: 'zone-a',
      lease: 'kcp/kube-cache-proxy-pool-zone-a',
      leader: 'https://10.0.0.2:8443',
      role: 'follower',
      readsFrom,
    }),
  });
  const reporter = newStatusReporter(sources);
  assert.deepEqual((await reporter.report()).pool, {
    name: 'zone-a',
    lease: 'kcp/kube-cache-proxy-pool-zone-a',
    leader: 'https://10.0.0.2:8443',
    role: 'follower',
    readsFrom: 'leader',
  });
  readsFrom = 'apiserver';
  assert.equal((await reporter.report()).pool?.readsFrom, 'apiserver', 'read at each report');
});

test('status: the limits at the door, as the proxy gives them, or null without', async () => {
  assert.equal((await newStatusReporter(setUp().sources).report()).limits, null);
  const limits = {
    flow: 'user at address',
    maxRequestsInflightPerFlow: 100,
    maxWatchesPerFlow: 128,
    maxReviewsInflightPerFlow: 64,
    tokenReviews: { qpsPerAddress: 1, burstPerAddress: 20, qps: 20, burst: 100, maxInflight: 64 },
    flows: 3,
    rejected: { watches: 2 },
  } as const;
  const report = await newStatusReporter(setUp({ limits: () => limits }).sources).report();
  assert.deepEqual(report.limits, limits);
});
