/**
 * An InformerMetricsProvider (informer-metrics.ts) through prom-client, with the names, help
 * texts, labels and buckets of Kubernetes' own (k8s.io/component-base/metrics/prometheus/clientgo/
 * fifo/metrics.go), so that dashboards written for client-go's informers work unchanged. Imported
 * by the optional `prometheus` entry point only.
 */
import { Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import type { InformerMetricsProvider, InformerNameAndResource } from './informer-metrics.ts';

const LABELS = ['name', 'group', 'version', 'resource'] as const;
type Label = (typeof LABELS)[number];

/** component-base fifo/metrics.go: processing latency buckets, in seconds. */
const PROCESSING_LATENCY_BUCKETS_SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Registers `informer_queued_items`, `informer_processing_latency_seconds` and
 * `informer_store_resource_version` in `registry` (a second provider on the same registry reuses
 * them, as component-base registers them once) and returns a provider of their series.
 */
export function newPrometheusInformerMetricsProvider(registry: Registry): InformerMetricsProvider {
  const queued =
    existing(registry, 'informer_queued_items', Gauge) ??
    new Gauge<Label>({
      name: 'informer_queued_items',
      help: 'Number of items currently queued in the FIFO.',
      labelNames: LABELS,
      registers: [registry],
    });
  const latency =
    existing(registry, 'informer_processing_latency_seconds', Histogram) ??
    new Histogram<Label>({
      name: 'informer_processing_latency_seconds',
      help: 'Time taken to process events after popping from the queue.',
      labelNames: LABELS,
      buckets: PROCESSING_LATENCY_BUCKETS_SECONDS,
      registers: [registry],
    });
  const storeRv =
    existing(registry, 'informer_store_resource_version', Gauge) ??
    new Gauge<Label>({
      name: 'informer_store_resource_version',
      help: 'The 15 least significant digits of the resource version of the store.',
      labelNames: LABELS,
      registers: [registry],
    });
  const labels = (id: InformerNameAndResource): Record<Label, string> => ({
    name: id.name,
    group: id.group,
    version: id.version,
    resource: id.resource,
  });
  return {
    newQueuedItemMetric: (id) => queued.labels(labels(id)),
    newProcessingLatencyMetric: (id) => latency.labels(labels(id)),
    newStoreResourceVersionMetric: (id) => storeRv.labels(labels(id)),
  };
}

/** The metric `name` already in `registry`, if it is of the wanted kind. */
function existing<M>(registry: Registry, name: string, kind: abstract new (...args: never[]) => M): M | undefined {
  const metric: unknown = registry.getSingleMetric(name);
  if (metric === undefined) return undefined;
  if (!(metric instanceof kind)) throw new Error(`metric ${name} is already registered with another type`);
  return metric;
}
