/**
 * `@kube-cache-proxy/client/leaderelection`: client-go's leader election
 * (k8s.io/client-go/tools/leaderelection) on a coordination.k8s.io/v1 Lease: candidates compete
 * for the Lease, the winner renews it while it leads, the others take over once it expires.
 * AbortSignals where client-go takes contexts. See docs/leaderelection.md for what it mirrors,
 * the API and an example.
 *
 * @example
 * ```ts
 * import { hostname } from 'node:os';
 * import { KubeConfig } from '@kubernetes/client-node';
 * import { newLeaderElector, newLeaseLock } from '@kube-cache-proxy/client/leaderelection';
 *
 * const kubeConfig = new KubeConfig();
 * kubeConfig.loadFromDefault();
 * const lock = newLeaseLock({ kubeConfig, namespace: 'default', name: 'my-controller', identity: `${hostname()}_${process.pid}` });
 * const elector = newLeaderElector({
 *   lock,
 *   releaseOnCancel: true,
 *   callbacks: {
 *     onStartedLeading: (signal) => void runController(signal), // stop when `signal` aborts
 *     onStoppedLeading: () => console.log('not leading'),
 *   },
 * });
 * const stop = new AbortController();
 * process.once('SIGTERM', () => stop.abort());
 * await elector.run(stop.signal);
 * await lock.close();
 * ```
 *
 * @module @kube-cache-proxy/client/leaderelection
 * @document ../../docs/leaderelection.md
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { newLeaseLock as newCachedLeaseLock } from '../leaderelection/lease-lock.ts';
import type { ResourceLock } from '../leaderelection/resource-lock.ts';
import { newKubeClient } from './kube-client.ts';

export {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  JITTER_FACTOR,
  newLeaderElector,
  validateLeaderElectionConfig,
} from '../leaderelection/leader-elector.ts';
export type { LeaderCallbacks, LeaderElectionConfig, LeaderElectionLog, LeaderElector } from '../leaderelection/leader-elector.ts';
export { formatMicroTime, recordBytes } from '../leaderelection/resource-lock.ts';
export type { LeaderElectionRecord, MicroTime, ObservedRecord, ResourceLock } from '../leaderelection/resource-lock.ts';
export { newLeaderHealthzAdaptor } from '../leaderelection/healthz.ts';
export type { HealthzAdaptor } from '../leaderelection/healthz.ts';
export type { LeaderMetric, LeaderMetricsProvider } from '../leaderelection/metrics.ts';
export { ApiStatusError } from '../upstream/api-error.ts';
export type { ApiStatus, StatusCause } from '../upstream/api-error.ts';
export { realClock } from '../clock/clock.ts';
export type { Clock, Timer } from '../clock/clock.ts';

/** Options of newLeaseLock. */
export interface LeaseLockOptions {
  /** Where the apiserver is, as client-node loads it; its current context at the first request. */
  readonly kubeConfig: KubeConfig;
  /** The Lease's namespace. */
  readonly namespace: string;
  /** The Lease's name: the candidates of one election name the same Lease. */
  readonly name: string;
  /** This candidate's identity, written as holderIdentity: unique among the candidates (e.g. the pod's name). */
  readonly identity: string;
  /**
   * Each request is abandoned after this long (client-go sets its client's timeout to
   * max(1 s, renewDeadline / 2) "to keep a single hung request from forcing a leader loss").
   * Default 5 s, for the default renewDeadline of 10 s.
   */
  readonly requestTimeoutMs?: number;
}

/** A Lease lock with its own connection to the apiserver, which close() ends. */
export interface LeaseLock extends ResourceLock {
  /** Closes the lock's connections (after the elector's run() has resolved); requests after it fail. */
  close(): Promise<void>;
}

/**
 * client-go resourcelock.LeaseLock: the election record in the spec of the Lease
 * `namespace/name` (created at the first attempt when missing); every write is a
 * compare-and-swap on the version last read, so of candidates that read one version at most one
 * wins.
 */
export function newLeaseLock(options: LeaseLockOptions): LeaseLock {
  const client = newKubeClient(options.kubeConfig);
  const lock = newCachedLeaseLock({
    client,
    namespace: options.namespace,
    name: options.name,
    identity: options.identity,
    ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
  });
  return {
    get: (signal) => lock.get(signal),
    create: (record, signal) => lock.create(record, signal),
    update: (record, signal) => lock.update(record, signal),
    identity: () => lock.identity(),
    describe: () => lock.describe(),
    close: () => client.close(),
  };
}
