/**
 * Where a pool member reads its pool-wide types from: the decision only, no I/O. A member of a
 * node pool (src/proxy/pool-member.ts) reads them from the pool's elected leader while one is
 * known and answering, and from the apiserver otherwise: while it leads itself, while no leader
 * is known, and for a while after the leader failed to answer (so that a dead leader costs its
 * followers one failed connection per retry, not one per request).
 *
 * resourceVersions are global to the cluster, so a watch can move between the apiserver and a
 * leader from the RV it reached: listeners are told when the target changes, and end their
 * watches so that they resume on the new target.
 */
import type { Clock, Timer } from '../clock/clock.ts';

/** Why the apiserver is the target. */
export type ApiserverReason = 'leading' | 'no-leader' | 'leader-unreachable';

export type PoolTarget =
  { readonly kind: 'apiserver'; readonly reason: ApiserverReason } | { readonly kind: 'leader'; readonly url: string };

/** First wait before a leader that did not answer is tried again; doubled on each failure in a row. */
export const LEADER_RETRY_INITIAL_MS = 2_000;
/** The longest wait: a leader back from a network partition is found again within this. */
export const LEADER_RETRY_MAX_MS = 30_000;

export interface PoolRoute {
  /** The target now. */
  target(): PoolTarget;
  /** This member leads (true from onStartedLeading until its term's signal fires). */
  setLeading(leading: boolean): void;
  /** The leader the Lease names, as the URL it serves at ('' once released or unknown). Forgets past failures of another leader. */
  setLeader(url: string): void;
  /** The leader at `url` did not answer (a connection failure, a refusal): the apiserver until its retry time. */
  leaderFailed(url: string): void;
  /** The leader at `url` answered: its failures in a row are forgotten. */
  leaderAnswered(url: string): void;
  /** Called (synchronously) after each change of target; returns the unsubscribe. */
  onChange(listener: (target: PoolTarget) => void): () => void;
  /** Cancels the retry timer. */
  stop(): void;
}

export interface PoolRouteOptions {
  /** This member's own URL: a leader of that URL is this member itself, never chained to. */
  readonly self: string;
  readonly clock: Clock;
}

export function newPoolRoute(options: PoolRouteOptions): PoolRoute {
  return new Route(options);
}

/** Two targets are the same upstream. */
export function sameTarget(a: PoolTarget, b: PoolTarget): boolean {
  return a.kind === 'leader' ? b.kind === 'leader' && a.url === b.url : b.kind === 'apiserver';
}

class Route implements PoolRoute {
  readonly #self: string;
  readonly #clock: Clock;
  readonly #listeners = new Set<(target: PoolTarget) => void>();
  #leading = false;
  #leader = '';
  /** Invariant: failures and retryAt describe #leader only; both reset when it changes. */
  #failures = 0;
  #retryAt = 0;
  #timer: Timer | undefined;
  #current: PoolTarget;

  constructor(options: PoolRouteOptions) {
    this.#self = options.self;
    this.#clock = options.clock;
    this.#current = this.#decide();
  }

  target(): PoolTarget {
    return this.#current;
  }

  setLeading(leading: boolean): void {
    this.#leading = leading;
    this.#changed();
  }

  setLeader(url: string): void {
    if (url === this.#leader) return;
    this.#leader = url;
    this.#failures = 0;
    this.#retryAt = 0;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#changed();
  }

  leaderFailed(url: string): void {
    if (url !== this.#leader) return;
    const delay = Math.min(LEADER_RETRY_INITIAL_MS * 2 ** this.#failures, LEADER_RETRY_MAX_MS);
    this.#failures++;
    this.#retryAt = this.#clock.now() + delay;
    this.#timer?.cancel();
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      // The wait is over whatever the clocks' rounding: a timer may fire a hair before retryAt.
      this.#retryAt = 0;
      this.#changed();
    }, delay);
    this.#timer.unref?.();
    this.#changed();
  }

  leaderAnswered(url: string): void {
    if (url === this.#leader) this.#failures = 0;
  }

  onChange(listener: (target: PoolTarget) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #decide(): PoolTarget {
    if (this.#leading || (this.#leader !== '' && this.#leader === this.#self)) return { kind: 'apiserver', reason: 'leading' };
    if (this.#leader === '') return { kind: 'apiserver', reason: 'no-leader' };
    if (this.#clock.now() < this.#retryAt) return { kind: 'apiserver', reason: 'leader-unreachable' };
    return { kind: 'leader', url: this.#leader };
  }

  #changed(): void {
    const next = this.#decide();
    const moved = !sameTarget(next, this.#current);
    this.#current = next;
    if (!moved) return;
    for (const listener of [...this.#listeners]) listener(next);
  }
}
