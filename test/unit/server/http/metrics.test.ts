import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newMemoryBudget } from '../../../../src/memory/memory-budget.ts';
import { newProxyMetrics } from '../../../../src/server/http/metrics.ts';
import { newFlowLimits } from '../../../../src/server/pass-through/flow-limits.ts';
import { newTokenReviewLimits } from '../../../../src/server/pass-through/token-review-limits.ts';
import { FakeClock } from '../../../helpers/fake-clock.ts';
import { metricSum } from '../../../helpers/metrics-text.ts';

/** The value of a series without labels. */
function single(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line !== undefined, `${name} is served`);
  return Number(line.slice(name.length + 1));
}

test('metrics: prom-client’s default process_* and nodejs_* series, as every Node service serves them', async () => {
  const metrics = newProxyMetrics();
  const text = await metrics.registry.metrics();
  for (const name of [
    'process_resident_memory_bytes',
    'process_cpu_seconds_total',
    'process_open_fds',
    'nodejs_heap_size_used_bytes',
    'nodejs_heap_space_size_used_bytes',
    'nodejs_external_memory_bytes',
    'nodejs_eventloop_lag_p99_seconds',
    'nodejs_gc_duration_seconds',
    'nodejs_version_info',
  ]) {
    assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
  }
  assert.ok(single(text, 'process_resident_memory_bytes') > 0);
  assert.ok(single(text, 'process_open_fds') > 0, 'counted off the event loop, still counted');
  // Series whose collection walks every handle on the event loop (one per connection) are not served.
  assert.doesNotMatch(text, /^nodejs_active_(handles|resources)/m);
});

test('metrics: the limits at the door, refusals by reason, seats and flows held, TokenReviews in flight, reviews sent', async () => {
  const metrics = newProxyMetrics();
  const flows = newFlowLimits({ maxRequestsInflight: 1, maxWatches: 1, maxReviewsInflight: 0 });
  const tokenReviews = newTokenReviewLimits({
    qpsPerAddress: 0,
    burstPerAddress: 0,
    qps: 0,
    burst: 0,
    maxInflight: 1,
    clock: new FakeClock(),
  });
  const sent = { tokenReviews: 4, subjectAccessReviews: 7 };
  metrics.fairness({ flows, tokenReviews }, () => sent);
  flows.take('a', 'request');
  flows.take('a', 'request');
  flows.take('a', 'request');
  flows.take('a', 'watch');
  flows.take('b', 'watch');
  tokenReviews.take('10.0.0.1', 'a');
  tokenReviews.take('10.0.0.1', 'b');
  let text = await metrics.registry.metrics();
  assert.equal(metricSum(text, 'kube_cache_proxy_rejected_requests_total', { reason: 'requests-in-flight' }), 2);
  assert.equal(metricSum(text, 'kube_cache_proxy_rejected_requests_total', { reason: 'watches' }), 0);
  assert.equal(metricSum(text, 'kube_cache_proxy_rejected_requests_total', { reason: 'token-reviews-in-flight' }), 1);
  assert.equal(single(text, 'kube_cache_proxy_flows'), 2);
  assert.equal(metricSum(text, 'kube_cache_proxy_flow_seats', { kind: 'watch' }), 2);
  assert.equal(single(text, 'kube_cache_proxy_token_reviews_in_flight'), 1);
  assert.equal(metricSum(text, 'kube_cache_proxy_reviews_total', { kind: 'token' }), 4);
  // Counters follow the limits' own counts from scrape to scrape.
  flows.take('b', 'watch');
  sent.subjectAccessReviews = 9;
  text = await metrics.registry.metrics();
  assert.equal(metricSum(text, 'kube_cache_proxy_rejected_requests_total', { reason: 'watches' }), 1);
  assert.equal(metricSum(text, 'kube_cache_proxy_rejected_requests_total', { reason: 'requests-in-flight' }), 2);
  assert.equal(metricSum(text, 'kube_cache_proxy_reviews_total', { kind: 'subject_access' }), 9);
});

test('metrics: the memory budget’s limit, sizes and use, pressure, refusals and collections', async () => {
  const metrics = newProxyMetrics();
  const budget = newMemoryBudget({ limit: { bytes: 160 * 2 ** 20, source: 'cgroup v1 memory.limit_in_bytes' } });
  budget.countObjectsOf(() => ({ objects: 100, bytes: 170_000, windowEvents: 0 }));
  budget.countDecisionCachesOf(() => 12_345);
  metrics.memory(budget, { collections: () => 3, stop: () => undefined });
  budget.bodies.force(4096);
  budget.notePassedThrough();
  const text = await metrics.registry.metrics();
  assert.equal(metricSum(text, 'kube_cache_proxy_memory_limit_bytes', { source: 'cgroup v1 memory.limit_in_bytes' }), 160 * 2 ** 20);
  assert.equal(metricSum(text, 'kube_cache_proxy_memory_budget_bytes', { use: 'bodies' }), budget.sizes.bodiesBytes);
  assert.equal(metricSum(text, 'kube_cache_proxy_memory_budget_bytes', { use: 'objects' }), budget.sizes.objectsBytes);
  assert.equal(metricSum(text, 'kube_cache_proxy_memory_used_bytes', { use: 'bodies' }), 4096);
  assert.equal(metricSum(text, 'kube_cache_proxy_memory_used_bytes', { use: 'objects' }), 100 * (1_700 + 300));
  // Shared mode's kept reviews.
  assert.equal(metricSum(text, 'kube_cache_proxy_memory_budget_bytes', { use: 'decision_caches' }), budget.sizes.decisionCachesBytes);
  assert.equal(metricSum(text, 'kube_cache_proxy_memory_used_bytes', { use: 'decision_caches' }), 12_345);
  assert.equal(single(text, 'kube_cache_proxy_memory_pressure'), 0);
  assert.equal(metricSum(text, 'kube_cache_proxy_memory_refused_total', { what: 'body' }), 1);
  assert.equal(single(text, 'kube_cache_proxy_memory_collections_total'), 3);
  // No limit: no limit series, no bounds where there are none.
  const open = newProxyMetrics();
  open.memory(newMemoryBudget({ limit: undefined }));
  const openText = await open.registry.metrics();
  assert.doesNotMatch(openText, /^kube_cache_proxy_memory_limit_bytes\{/m);
  assert.doesNotMatch(openText, /^kube_cache_proxy_memory_budget_bytes\{use="bodies"\}/m);
  assert.match(openText, /^kube_cache_proxy_memory_budget_bytes\{use="unsent_watch"\} 134217728$/m);
});

test('metrics: only types the proxy knows get a resource label of their own; junk paths are all `other` and take no slot', async () => {
  const metrics = newProxyMetrics();
  const known = new Map(['pods', 'deployments.apps'].map((n) => [n, n]));
  metrics.served('get', 'pods', 'cache');
  // Until the proxy knows its types, none gets a label.
  assert.equal(metricSum(await metrics.registry.metrics(), 'kube_cache_proxy_requests_total', { resource: 'other' }), 1);
  metrics.knowTypes((name) => known.get(name));
  // One client's invented types, shaped as type names: as many as there are label slots, and more.
  for (let i = 0; i < 300; i++) {
    metrics.served('get', `junk${String(i)}`, 'apiserver');
    metrics.passedThrough(`junk${String(i)}.example.com`, 'uncached');
    metrics.answeredIn(`junk${String(i)}`, 'application/json');
  }
  metrics.served('list', 'pods', 'cache');
  metrics.served('list', 'deployments.apps', 'apiserver');
  metrics.served('get', '', 'apiserver');
  const text = await metrics.registry.metrics();
  assert.equal(metricSum(text, 'kube_cache_proxy_requests_total', { resource: 'pods' }), 1);
  assert.equal(metricSum(text, 'kube_cache_proxy_requests_total', { resource: 'deployments.apps' }), 1);
  assert.equal(metricSum(text, 'kube_cache_proxy_requests_total', { resource: 'other' }), 301);
  assert.equal(metricSum(text, 'kube_cache_proxy_requests_total', { resource: '' }), 1, 'non-resource requests keep their empty label');
  assert.equal(metricSum(text, 'kube_cache_proxy_pass_through_total', { resource: 'other' }), 300);
  assert.equal(metricSum(text, 'kube_cache_proxy_cache_answers_total', { resource: 'other' }), 300);
  assert.doesNotMatch(text, /resource="junk/);
});
