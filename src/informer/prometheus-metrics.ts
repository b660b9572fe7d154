/**
 * The proxy's informer metrics (`kube_cache_proxy_reflector_*`, `kube_cache_proxy_informer_*`),
 * per resource, through prom-client: the InformerMetricsProvider of metrics.ts that the proxy
 * registers in its /metrics registry. Only the proxy imports this file.
 */
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { noopFifoMetrics } from './delta-fifo.ts';
import type { InformerMetricsProvider } from './metrics.ts';

/** Metrics registered in `registry` (one set per registry; call once). */
export function newPrometheusInformerMetricsProvider(registry: Registry): InformerMetricsProvider {
  const registers = [registry];
  const lists = new Counter({
    name: 'kube_cache_proxy_reflector_lists_total',
    help: 'Completed LISTs (or WatchList initial streams) by resource.',
    labelNames: ['resource'],
    registers,
  });
  const listPages = new Counter({
    name: 'kube_cache_proxy_reflector_list_pages_total',
    help: 'LIST requests (pages) by resource.',
    labelNames: ['resource'],
    registers,
  });
  const listItems = new Counter({
    name: 'kube_cache_proxy_reflector_list_items_total',
    help: 'Objects received by LISTs, by resource.',
    labelNames: ['resource'],
    registers,
  });
  const watches = new Counter({
    name: 'kube_cache_proxy_reflector_watches_total',
    help: 'WATCH requests opened, by resource.',
    labelNames: ['resource'],
    registers,
  });
  const relists = new Counter({
    name: 'kube_cache_proxy_reflector_relists_total',
    help: 'Relists, by resource and reason.',
    labelNames: ['resource', 'reason'],
    registers,
  });
  const events = new Counter({
    name: 'kube_cache_proxy_reflector_events_total',
    help: 'Watch events received, by resource and type.',
    labelNames: ['resource', 'type'],
    registers,
  });
  const lastRv = new Gauge({
    name: 'kube_cache_proxy_reflector_last_resource_version',
    help: 'The last resourceVersion synced, by resource.',
    labelNames: ['resource'],
    registers,
  });
  const watching = new Gauge({
    name: 'kube_cache_proxy_reflector_watching',
    help: 'Whether the upstream watch is open (1) or not (0: listing, backing off, or relisting), by resource.',
    labelNames: ['resource'],
    registers,
  });
  const objects = new Gauge({
    name: 'kube_cache_proxy_informer_objects',
    help: 'Objects held, by resource.',
    labelNames: ['resource'],
    registers,
  });
  const bytes = new Gauge({
    name: 'kube_cache_proxy_informer_object_bytes',
    help: 'JSON bytes of the objects held, by resource.',
    labelNames: ['resource'],
    registers,
  });
  const pending = new Gauge({
    name: 'kube_cache_proxy_informer_pending_notifications',
    help: 'Notifications waiting for event handlers, by resource.',
    labelNames: ['resource'],
    registers,
  });
  return {
    forResource(resource) {
      const labels = { resource };
      return {
        reflector: {
          list(pageCount, items) {
            lists.inc(labels);
            listPages.inc(labels, pageCount);
            listItems.inc(labels, items);
          },
          watch: () => {
            watches.inc(labels);
          },
          relist: (reason) => {
            relists.inc({ resource, reason });
          },
          event: (type) => {
            events.inc({ resource, type });
          },
          resourceVersion: (rv) => {
            lastRv.set(labels, Number(rv));
          },
          watching: (open) => {
            watching.set(labels, open ? 1 : 0);
          },
        },
        // Not exported by the proxy (its /metrics as documented in docs/metrics.md).
        fifo: noopFifoMetrics,
        objects(count, byteCount) {
          objects.set(labels, count);
          bytes.set(labels, byteCount);
        },
        pendingNotifications: (count) => {
          pending.set(labels, count);
        },
      };
    },
  };
}
