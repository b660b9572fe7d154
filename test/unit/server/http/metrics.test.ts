import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newMemoryBudget } from '../../../../src/cache/memory-budget.ts';
import { newProxyMetrics } from '../../../../src/server/http/metrics.ts';
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
