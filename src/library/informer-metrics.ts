/**
 * The informers' metrics as client-go 1.37 has them (tools/cache/informer_metrics.go): an
 * `InformerMetricsProvider` makes, for each informer of a named factory, the gauge of the items
 * queued in its FIFO, the histogram of the time its handlers took per item, and the gauge of its
 * store's resourceVersion. The application backs it with its metrics library;
 * `@kube-cache-proxy/client/prometheus` has component-base's Prometheus one
 * (`informer_queued_items`, `informer_processing_latency_seconds`, `informer_store_resource_version`).
 * Nothing here loads a metrics library.
 *
 * As in client-go, only informers with a name are measured (InformerNameAndResource.Reserved(): a
 * factory created WithInformerName); the provider is given per factory, where client-go sets it
 * once per process (SetInformerMetricsProvider).
 */
import type { FifoMetrics } from '../informer/delta-fifo.ts';
import type { ResourceScope } from '../informer/lister-watcher.ts';
import type { InformerMetricsProvider as PortMetricsProvider } from '../informer/metrics.ts';
import { noopInformerMetrics } from '../informer/metrics.ts';

/** A value that is set (client-go cache.GaugeMetric). */
export interface GaugeMetric {
  /** The value now. */
  set(value: number): void;
}

/** Observations (client-go cache.HistogramMetric), in seconds. */
export interface HistogramMetric {
  /** One observation, in seconds. */
  observe(value: number): void;
}

/** client-go cache.InformerNameAndResource: which informer a metric is of, its labels in component-base. */
export interface InformerNameAndResource {
  /** The factory's informer name (client-go InformerName). */
  readonly name: string;
  /** The API group, '' for the core group. */
  readonly group: string;
  /** The API version, e.g. `v1`. */
  readonly version: string;
  /** The resource's plural name. */
  readonly resource: string;
}

/** client-go cache.InformerMetricsProvider. */
export interface InformerMetricsProvider {
  /** Items queued in the informer's FIFO, waiting for the handlers (keys with pending changes). */
  newQueuedItemMetric(id: InformerNameAndResource): GaugeMetric;
  /** Seconds the informer took to process one item popped from its FIFO: the Indexer's update and the handlers' notification. */
  newProcessingLatencyMetric(id: InformerNameAndResource): HistogramMetric;
  /** The resourceVersion the informer's store has reached, its 15 least significant digits. */
  newStoreResourceVersionMetric(id: InformerNameAndResource): GaugeMetric;
}

/**
 * thread_safe_store.go parseRVForMetricsWithTruncation: "Truncate to last 15 digits to ensure
 * metrics are always less than 2^53-1"; '' is 0; undefined for what is not a number.
 */
export function resourceVersionForMetric(rv: string): number | undefined {
  if (rv === '') return 0;
  const digits = rv.length > 15 ? rv.slice(-15) : rv;
  return /^\d+$/.test(digits) ? Number(digits) : undefined;
}

/**
 * The port's metrics for the informers of the factory named `name`, reported to `provider`: the
 * FIFO's two metrics as the FIFO reports them, the store's resourceVersion as the reflector
 * records it (after handing the change over: the store has it once the FIFO drains).
 */
export function informerMetricsProvider(provider: InformerMetricsProvider, name: string): PortMetricsProvider {
  if (name === '') return { forResource: () => noopInformerMetrics };
  return {
    forResource(_description: string, scope: ResourceScope) {
      const id: InformerNameAndResource = { name, group: scope.group, version: scope.version, resource: scope.resource };
      const queued = provider.newQueuedItemMetric(id);
      const latency = provider.newProcessingLatencyMetric(id);
      const storeRv = provider.newStoreResourceVersionMetric(id);
      const fifo: FifoMetrics = {
        queuedItems: (count) => {
          queued.set(count);
        },
        processingLatency: (seconds) => {
          latency.observe(seconds);
        },
      };
      return {
        ...noopInformerMetrics,
        reflector: {
          ...noopInformerMetrics.reflector,
          resourceVersion: (rv) => {
            const value = resourceVersionForMetric(rv);
            if (value !== undefined) storeRv.set(value);
          },
        },
        fifo,
      };
    },
  };
}
