/**
 * HealthzAdaptor (client-go tools/leaderelection/healthzadaptor.go): a health check for /healthz
 * that fails when this process believes it leads but has not renewed its lease for leaseDuration +
 * a tolerance. By then it should have stopped leading; if it has not (a stuck event loop, a
 * deadlock in client-go's words), reporting unhealthy lets the kubelet restart it.
 *
 * It can be registered before the elector exists: until setLeaderElection, it passes.
 */
import type { LeaderElector } from './leader-elector.ts';

/** A /healthz check of a leader's renewals (healthzadaptor.go HealthzAdaptor). */
export interface HealthzAdaptor {
  /** The check's name: `leaderElection`. */
  name(): string;
  /** An error when the check fails, undefined when it passes. */
  check(): Error | undefined;
  /** Ties the check to an elector. */
  setLeaderElection(elector: LeaderElector): void;
}

/**
 * `timeoutMs`: how long past the lease's expiry (on our clock) a leader that has not renewed is
 * still reported healthy.
 */
export function newLeaderHealthzAdaptor(timeoutMs: number): HealthzAdaptor {
  let elector: LeaderElector | undefined;
  return {
    name: () => 'leaderElection',
    check: () => elector?.check(timeoutMs),
    setLeaderElection(value) {
      elector = value;
    },
  };
}
