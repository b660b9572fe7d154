/**
 * Informer and reflector metrics, per resource: what an informer reports, behind a provider the
 * application supplies. Without one, everything is a no-op (no cost). The proxy's provider, through
 * prom-client, is prometheus-metrics.ts: this file loads no metrics library, so neither does an
 * informer.
 */
import type { FifoMetrics } from './delta-fifo.ts';
import { noopFifoMetrics } from './delta-fifo.ts';
import type { ResourceScope } from './lister-watcher.ts';
import type { ReflectorMetrics } from './reflector.ts';
import { noopReflectorMetrics } from './reflector.ts';

export interface InformerMetrics {
  readonly reflector: ReflectorMetrics;
  /** The DeltaFIFO's (client-go fifoMetrics); unused in direct mode, which has none. */
  readonly fifo: FifoMetrics;
  /** Objects held and the sum of their JSON bytes. */
  objects(count: number, bytes: number): void;
  /** Notifications waiting in handler buffers (sum over handlers). */
  pendingNotifications(count: number): void;
}

export interface InformerMetricsProvider {
  /** The metrics of the informer named `resource` (its scope described), which lists and watches `scope`. */
  forResource(resource: string, scope: ResourceScope): InformerMetrics;
}

export const noopInformerMetrics: InformerMetrics = {
  reflector: noopReflectorMetrics,
  fifo: noopFifoMetrics,
  objects: () => undefined,
  pendingNotifications: () => undefined,
};

export const noopInformerMetricsProvider: InformerMetricsProvider = { forResource: () => noopInformerMetrics };
