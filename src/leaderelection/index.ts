/**
 * Leader election: client-go's tools/leaderelection in TypeScript (see README.md). Imports only
 * the upstream client (for the Lease lock) and the injected clock (src/clock/clock.ts).
 */
export {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  JITTER_FACTOR,
  newLeaderElector,
  validateLeaderElectionConfig,
  validateLeaderElectionTiming,
} from './leader-elector.ts';
export type { LeaderCallbacks, LeaderElectionConfig, LeaderElectionLog, LeaderElector } from './leader-elector.ts';
export { formatMicroTime, recordBytes } from './resource-lock.ts';
export type { LeaderElectionRecord, MicroTime, ObservedRecord, ResourceLock } from './resource-lock.ts';
export { leaderElectionRecordToLeaseSpec, leaseSpecToLeaderElectionRecord, newLeaseLock } from './lease-lock.ts';
export type { LeaseLockOptions, LeaseSpec } from './lease-lock.ts';
export { newLeaderHealthzAdaptor } from './healthz.ts';
export type { HealthzAdaptor } from './healthz.ts';
export { noopLeaderMetric } from './metrics.ts';
export { newPrometheusLeaderMetricsProvider } from './prometheus-metrics.ts';
export type { LeaderMetric, LeaderMetricsProvider } from './metrics.ts';
