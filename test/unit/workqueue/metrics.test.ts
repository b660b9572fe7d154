import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { newDelayingQueue } from '../../../src/workqueue/delaying-queue.ts';
import type { MetricsProvider } from '../../../src/workqueue/metrics.ts';
import { newPrometheusMetricsProvider } from '../../../src/workqueue/prometheus-metrics.ts';
import { newQueue } from '../../../src/workqueue/queue.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

/** One metric of every kind at once (metrics_test.go testMetric). */
class TestMetric {
  value = 0;
  observations: number[] = [];
  inc(): void {
    this.value++;
  }
  dec(): void {
    this.value--;
  }
  set(value: number): void {
    this.value = value;
  }
  observe(value: number): void {
    this.observations.push(value);
  }
}

/** A provider that records, for one queue; `names` lists the queue names it was asked for. */
function newTestProvider() {
  const m = {
    depth: new TestMetric(),
    adds: new TestMetric(),
    latency: new TestMetric(),
    duration: new TestMetric(),
    unfinished: new TestMetric(),
    longest: new TestMetric(),
    retries: new TestMetric(),
    names: new Set<string>(),
  };
  const provider: MetricsProvider = {
    newDepthMetric: (name) => (m.names.add(name), m.depth),
    newAddsMetric: () => m.adds,
    newLatencyMetric: () => m.latency,
    newWorkDurationMetric: () => m.duration,
    newUnfinishedWorkSecondsMetric: () => m.unfinished,
    newLongestRunningProcessorSecondsMetric: () => m.longest,
    newRetriesMetric: (name) => (m.names.add(name), m.retries),
  };
  return { m, provider };
}

test('Metrics: depth, adds, queue latency and work duration follow client-go', async () => {
  // metrics_test.go TestMetrics, in milliseconds
  const clock = new FakeClock();
  const { m, provider } = newTestProvider();
  const q = newQueue<string>({ name: 'test', metricsProvider: provider, clock });
  assert.deepEqual([...m.names], ['test']);

  q.add('foo');
  assert.equal(m.adds.value, 1);
  assert.equal(m.depth.value, 1);
  clock.step(50);
  const first = await q.get();
  assert.deepEqual(first, { shutdown: false, item: 'foo' });
  assert.deepEqual(m.latency.observations, [0.05]);
  assert.equal(m.depth.value, 0);

  // Added back while processing; repeated adds are de-duplicated.
  for (let i = 0; i < 5; i++) q.add('foo');
  assert.equal(m.adds.value, 2);
  assert.equal(m.depth.value, 1);
  clock.step(25);
  q.done('foo');
  assert.deepEqual(m.duration.observations, [0.025]);
  assert.equal(m.depth.value, 1);

  // Its queue time counts from the add made while it was processing.
  await q.get();
  assert.deepEqual(m.latency.observations, [0.05, 0.025]);
  assert.equal(m.depth.value, 0);
  q.shutDown();
});

test('Metrics: unfinished work and the longest running processor are set every 500 ms', async () => {
  const clock = new FakeClock();
  const { m, provider } = newTestProvider();
  const q = newQueue<string>({ name: 'test', metricsProvider: provider, clock });
  assert.equal(clock.waiters(), 1);
  q.add('a');
  q.add('b');
  await q.get();
  clock.step(200);
  await q.get();
  clock.step(299);
  assert.equal(m.unfinished.value, 0);
  clock.step(1);
  // a: 500 ms, b: 300 ms.
  assert.equal(m.unfinished.value, 0.8);
  assert.equal(m.longest.value, 0.5);
  q.done('a');
  clock.step(500);
  assert.equal(m.unfinished.value, 0.8);
  assert.equal(m.longest.value, 0.8);
  q.done('b');
  clock.step(500);
  assert.equal(m.unfinished.value, 0);
  assert.equal(m.longest.value, 0);
});

test('Metrics: the update loop stops on shutdown', () => {
  // metrics_test.go TestMetricShutdown
  const clock = new FakeClock();
  const { m, provider } = newTestProvider();
  const q = newQueue<string>({ name: 'test', metricsProvider: provider, clock });
  q.add('a');
  void q.get();
  clock.step(500);
  assert.equal(m.unfinished.value, 0.5);
  q.shutDown();
  assert.equal(clock.waiters(), 0);
  clock.step(3_600_000);
  assert.equal(m.unfinished.value, 0.5);

  const drained = newQueue<string>({ name: 'drained', metricsProvider: provider, clock });
  assert.equal(clock.waiters(), 1);
  void drained.shutDownWithDrain();
  assert.equal(clock.waiters(), 0);
});

test('Metrics: without a provider or a name, no metrics and no timer', () => {
  const clock = new FakeClock();
  const { m, provider } = newTestProvider();
  newQueue<string>({ clock });
  newQueue<string>({ name: 'unobserved', clock });
  const unnamed = newQueue<string>({ metricsProvider: provider, clock });
  unnamed.add('a');
  assert.equal(clock.waiters(), 0);
  assert.equal(m.adds.value, 0);
  assert.equal(m.names.size, 0);
});

test('Metrics: addAfter counts retries, also for no delay, not after shutdown', () => {
  const clock = new FakeClock();
  const { m, provider } = newTestProvider();
  const q = newDelayingQueue<string>({ name: 'test', metricsProvider: provider, clock });
  q.addAfter('a', 10);
  q.addAfter('b', 0);
  q.add('c');
  assert.equal(m.retries.value, 2);
  q.shutDown();
  q.addAfter('d', 10);
  assert.equal(m.retries.value, 2);
});

test('Metrics: the Prometheus provider exports client-go names with the queue name as label', async () => {
  const clock = new FakeClock();
  const registry = new Registry();
  const q = newDelayingQueue<string>({ name: 'pods', metricsProvider: newPrometheusMetricsProvider(registry), clock });
  q.add('a');
  q.add('b');
  q.addAfter('c', 100);
  clock.step(20);
  const got = await q.get();
  assert.ok(!got.shutdown);
  clock.step(480);
  const text = await registry.metrics();
  const line = (re: RegExp): string | undefined => text.split('\n').find((l) => re.test(l));
  assert.equal(line(/^workqueue_depth\{/), 'workqueue_depth{name="pods"} 2');
  assert.equal(line(/^workqueue_adds_total\{/), 'workqueue_adds_total{name="pods"} 3');
  assert.equal(line(/^workqueue_retries_total\{/), 'workqueue_retries_total{name="pods"} 1');
  assert.equal(line(/^workqueue_queue_duration_seconds_count\{/), 'workqueue_queue_duration_seconds_count{name="pods"} 1');
  assert.equal(line(/^workqueue_queue_duration_seconds_sum\{/), 'workqueue_queue_duration_seconds_sum{name="pods"} 0.02');
  assert.equal(
    line(/^workqueue_queue_duration_seconds_bucket\{le="1e-8"/),
    'workqueue_queue_duration_seconds_bucket{le="1e-8",name="pods"} 0',
  );
  assert.equal(line(/^workqueue_unfinished_work_seconds\{/), 'workqueue_unfinished_work_seconds{name="pods"} 0.48');
  assert.equal(line(/^workqueue_longest_running_processor_seconds\{/), 'workqueue_longest_running_processor_seconds{name="pods"} 0.48');
  q.done(got.item);
  const work = await registry.getSingleMetricAsString('workqueue_work_duration_seconds');
  assert.match(work, /^workqueue_work_duration_seconds_sum\{name="pods"\} 0\.48$/m);
  // A second provider on the same registry reuses the metrics: another queue is another label.
  const other = newQueue<string>({ name: 'nodes', metricsProvider: newPrometheusMetricsProvider(registry), clock });
  other.add('n');
  assert.match(await registry.getSingleMetricAsString('workqueue_adds_total'), /^workqueue_adds_total\{name="nodes"\} 1$/m);
  q.shutDown();
  other.shutDown();
});
