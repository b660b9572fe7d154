/**
 * A MetricsProvider that exports workqueue metrics through prom-client, with the names, help texts,
 * label and buckets of Kubernetes' provider (k8s.io/component-base/metrics/prometheus/workqueue/
 * metrics.go), so that dashboards and alerts written for controllers work unchanged.
 */
import { Counter, Gauge, Histogram, exponentialBuckets } from 'prom-client';
import type { Registry } from 'prom-client';
import type { MetricsProvider } from './metrics.ts';

/** The one label: the queue's name. */
const LABELS = ['name'] as const;
type Label = (typeof LABELS)[number];

/** component-base: ExponentialBuckets(10e-9, 10, 10), 10 ns to 10 s (seconds). */
const DURATION_BUCKETS_SECONDS = exponentialBuckets(10e-9, 10, 10);

/**
 * Registers the seven workqueue metrics in `registry` and returns a provider that hands out their
 * series for each queue name. Creating a second provider on the same registry reuses the metrics
 * already registered there (component-base registers them once, `registerOnce`).
 */
export function newPrometheusMetricsProvider(registry: Registry): MetricsProvider {
  const gauge = (name: string, help: string): Gauge<Label> =>
    existing(registry, name, Gauge) ?? new Gauge({ name, help, labelNames: LABELS, registers: [registry] });
  const counter = (name: string, help: string): Counter<Label> =>
    existing(registry, name, Counter) ?? new Counter({ name, help, labelNames: LABELS, registers: [registry] });
  const histogram = (name: string, help: string): Histogram<Label> =>
    existing(registry, name, Histogram) ??
    new Histogram({ name, help, labelNames: LABELS, buckets: DURATION_BUCKETS_SECONDS, registers: [registry] });

  const depth = gauge('workqueue_depth', 'Current depth of workqueue');
  const adds = counter('workqueue_adds_total', 'Total number of adds handled by workqueue');
  const latency = histogram('workqueue_queue_duration_seconds', 'How long in seconds an item stays in workqueue before being requested.');
  const workDuration = histogram('workqueue_work_duration_seconds', 'How long in seconds processing an item from workqueue takes.');
  const unfinished = gauge(
    'workqueue_unfinished_work_seconds',
    "How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
  );
  const longestRunningProcessor = gauge(
    'workqueue_longest_running_processor_seconds',
    'How many seconds has the longest running processor for workqueue been running.',
  );
  const retries = counter('workqueue_retries_total', 'Total number of retries handled by workqueue');

  return {
    newDepthMetric: (name) => depth.labels(name),
    newAddsMetric: (name) => adds.labels(name),
    newLatencyMetric: (name) => latency.labels(name),
    newWorkDurationMetric: (name) => workDuration.labels(name),
    newUnfinishedWorkSecondsMetric: (name) => unfinished.labels(name),
    newLongestRunningProcessorSecondsMetric: (name) => longestRunningProcessor.labels(name),
    newRetriesMetric: (name) => retries.labels(name),
  };
}

/** The metric `name` already in `registry`, if it is of the wanted kind. */
function existing<M>(registry: Registry, name: string, kind: abstract new (...args: never[]) => M): M | undefined {
  const metric: unknown = registry.getSingleMetric(name);
  if (metric === undefined) return undefined;
  if (!(metric instanceof kind)) throw new Error(`metric ${name} is already registered with another type`);
  return metric;
}
