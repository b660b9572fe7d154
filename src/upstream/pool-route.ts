/**
 * Where a pool member reads its pool-wide types from: the decision only, no I/O. A member of a
 * node pool (src/proxy/pool-member.ts) reads them from the pool's elected leader while one is
 * known, usable and answering, and from the apiserver otherwise: while it leads itself, while no
 * leader is known, while the Lease names a leader no follower may contact (../protocol/pool-protocol.ts
 * leaderIdentityProblem), and for a while after the leader failed (so that a bad leader costs
 * its followers one failed request per retry, not one per request).
 *
 * Failures come in two sizes. The leader failed (it could not be reached or verified, did not
 * answer in time, refused our credentials, went silent): every type moves. The leader refused one
 * scope (it answered, with an error about that type: its upstream watch for it is not open, it
 * does not cache it, it forbids it): that scope moves alone (ScopeRoute), the others stay.
 *
 * resourceVersions are global to the cluster, so a watch can move between the apiserver and a
 * leader from the RV it reached: listeners are told when the target changes, and end their
 * watches so that they resume on the new target.
 */
import type { Clock, Timer } from '../clock/clock.ts';
import { leaderIdentityProblem } from '../protocol/pool-protocol.ts';

/** Why the apiserver is the target. */
export type ApiserverReason = 'leading' | 'no-leader' | 'unusable-leader' | 'leader-unreachable' | 'leader-refused';

export type PoolTarget =
  | {
      readonly kind: 'apiserver';
      readonly reason: ApiserverReason;
      /** What the leader did, or why its identity is unusable (logs). */
      readonly detail?: string;
    }
  | { readonly kind: 'leader'; readonly url: string };

/** First wait before a leader that failed is tried again; doubled on each failure in a row. */
export const LEADER_RETRY_INITIAL_MS = 2_000;
/** The longest wait: a leader back from a network partition is found again within this. */
export const LEADER_RETRY_MAX_MS = 30_000;

/** Where one pool-wide scope (a type cached whole) reads from: the pool's target, unless the leader refused this scope. */
export interface ScopeRoute {
  /** The target of this scope now. */
  target(): PoolTarget;
  /** The leader at `url` answered a request of this scope with a refusal: the apiserver for this scope until its retry time. */
  refused(url: string, detail: string): void;
  /** The leader at `url` answered this scope: its failures and this scope's refusals in a row are forgotten. */
  answered(url: string): void;
  /** Called (synchronously) after each change of this scope's target; returns the unsubscribe. */
  onChange(listener: (target: PoolTarget) => void): () => void;
}

export interface PoolRoute {
  /** The pool's target now (a scope's may be the apiserver while the leader refuses it). */
  target(): PoolTarget;
  /** This member leads (true from onStartedLeading until its term's signal fires). */
  setLeading(leading: boolean): void;
  /**
   * The leader the Lease names (its holderIdentity, the URL it serves at; '' once released or
   * unknown). An identity that is no https URL of a host is no usable leader. Forgets past
   * failures of another leader.
   */
  setLeader(identity: string): void;
  /** The leader at `url` could not be used (unreachable, unverifiable, silent, refusing us): the apiserver until its retry time. */
  leaderFailed(url: string, detail?: string): void;
  /** The leader at `url` answered: its failures in a row are forgotten. */
  leaderAnswered(url: string): void;
  /** The route of one pool-wide scope, by name (made on first use, the same object after). */
  scope(name: string): ScopeRoute;
  /** Called (synchronously) after each change of the pool's target; returns the unsubscribe. */
  onChange(listener: (target: PoolTarget) => void): () => void;
  /** Cancels the retry timers. */
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

/** The wait after `failures` failures in a row (the first failure: failures = 0). */
function retryDelay(failures: number): number {
  return Math.min(LEADER_RETRY_INITIAL_MS * 2 ** failures, LEADER_RETRY_MAX_MS);
}

/** A failure backoff: after each failure in a row, no use until the retry time. */
class Backoff {
  failures = 0;
  retryAt = 0;
  detail = '';
  #timer: Timer | undefined;

  /** Starts the next wait; `expired` runs once it is over. */
  fail(clock: Clock, detail: string, expired: () => void): void {
    const delay = retryDelay(this.failures);
    this.failures++;
    this.retryAt = clock.now() + delay;
    this.detail = detail;
    this.#timer?.cancel();
    this.#timer = clock.setTimeout(() => {
      this.#timer = undefined;
      // The wait is over whatever the clocks' rounding: a timer may fire a hair before retryAt.
      this.retryAt = 0;
      expired();
    }, delay);
    this.#timer.unref?.();
  }

  waiting(clock: Clock): boolean {
    return clock.now() < this.retryAt;
  }

  reset(): void {
    this.failures = 0;
    this.retryAt = 0;
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}

class Scope implements ScopeRoute {
  readonly #route: Route;
  readonly backoff = new Backoff();
  readonly listeners = new Set<(target: PoolTarget) => void>();
  current: PoolTarget;

  constructor(route: Route) {
    this.#route = route;
    this.current = this.decide();
  }

  target(): PoolTarget {
    return this.current;
  }

  refused(url: string, detail: string): void {
    if (!this.#route.isLeader(url)) return;
    this.backoff.fail(this.#route.clock, detail, () => {
      this.changed();
    });
    this.changed();
  }

  answered(url: string): void {
    if (!this.#route.isLeader(url)) return;
    this.backoff.failures = 0;
    this.#route.leaderAnswered(url);
  }

  onChange(listener: (target: PoolTarget) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  decide(): PoolTarget {
    const pool = this.#route.target();
    if (pool.kind === 'leader' && this.backoff.waiting(this.#route.clock)) {
      return { kind: 'apiserver', reason: 'leader-refused', detail: this.backoff.detail };
    }
    return pool;
  }

  changed(): void {
    const next = this.decide();
    const moved = !sameTarget(next, this.current);
    this.current = next;
    if (!moved) return;
    for (const listener of [...this.listeners]) listener(next);
  }
}

class Route implements PoolRoute {
  readonly clock: Clock;
  readonly #self: string;
  readonly #listeners = new Set<(target: PoolTarget) => void>();
  readonly #scopes = new Map<string, Scope>();
  #leading = false;
  /** The Lease's holderIdentity ('' for none). */
  #leader = '';
  /** Why #leader may not be contacted; undefined when it may (or there is none). */
  #unusable: string | undefined;
  /** Invariant: the backoffs (this one and every scope's) describe #leader only; all reset when it changes. */
  readonly #backoff = new Backoff();
  #current: PoolTarget;

  constructor(options: PoolRouteOptions) {
    this.#self = options.self;
    this.clock = options.clock;
    this.#current = this.#decide();
  }

  target(): PoolTarget {
    return this.#current;
  }

  /** `url` is the leader followed now (a late report about another one changes nothing). */
  isLeader(url: string): boolean {
    return url === this.#leader && this.#unusable === undefined;
  }

  setLeading(leading: boolean): void {
    this.#leading = leading;
    this.#changed();
  }

  setLeader(identity: string): void {
    if (identity === this.#leader) return;
    this.#leader = identity;
    this.#unusable = identity === '' || identity === this.#self ? undefined : leaderIdentityProblem(identity);
    this.#backoff.reset();
    for (const scope of this.#scopes.values()) scope.backoff.reset();
    this.#changed();
  }

  leaderFailed(url: string, detail = 'the leader failed'): void {
    if (!this.isLeader(url)) return;
    this.#backoff.fail(this.clock, detail, () => {
      this.#changed();
    });
    this.#changed();
  }

  leaderAnswered(url: string): void {
    if (this.isLeader(url)) this.#backoff.failures = 0;
  }

  scope(name: string): ScopeRoute {
    let scope = this.#scopes.get(name);
    if (scope === undefined) this.#scopes.set(name, (scope = new Scope(this)));
    return scope;
  }

  onChange(listener: (target: PoolTarget) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  stop(): void {
    this.#backoff.reset();
    for (const scope of this.#scopes.values()) scope.backoff.reset();
  }

  #decide(): PoolTarget {
    if (this.#leading || (this.#leader !== '' && this.#leader === this.#self)) return { kind: 'apiserver', reason: 'leading' };
    if (this.#leader === '') return { kind: 'apiserver', reason: 'no-leader' };
    if (this.#unusable !== undefined) return { kind: 'apiserver', reason: 'unusable-leader', detail: this.#unusable };
    if (this.#backoff.waiting(this.clock)) return { kind: 'apiserver', reason: 'leader-unreachable', detail: this.#backoff.detail };
    return { kind: 'leader', url: this.#leader };
  }

  #changed(): void {
    const next = this.#decide();
    const moved = !sameTarget(next, this.#current);
    this.#current = next;
    // Every scope follows the pool's target (a scope the leader refused stays on the apiserver).
    for (const scope of [...this.#scopes.values()]) scope.changed();
    if (!moved) return;
    for (const listener of [...this.#listeners]) listener(next);
  }
}
