/**
 * LeaderElector (client-go tools/leaderelection/leaderelection.go): candidates compete for one
 * lock; the winner renews it while it leads, the others watch it and take over once it expires.
 *
 * What keeps two processes from both leading (leaderelection.go's package comment):
 * - A candidate judges expiry only by its own clock: `observedTime` is the local time at which it
 *   last saw the record *change*, and the holder's claim lasts until observedTime +
 *   leaseDurationSeconds. The record's renewTime/acquireTime come from another node's clock and
 *   are never compared with ours, so any clock offset between nodes is harmless (what is not
 *   tolerated is clocks running at very different *rates*).
 * - The leader gives up when it has not renewed within renewDeadline, which is shorter than
 *   leaseDuration: it stops (the AbortSignal given to onStartedLeading fires) before any other
 *   candidate may consider the lease expired, provided retryPeriod + renewDeadline < leaseDuration
 *   (client-go's defaults 2 + 10 < 15).
 * - Every write is a compare-and-swap on the version read (ResourceLock.update), so two candidates
 *   that both judge the lease expired cannot both win that round.
 * Like client-go, this is not fencing: work guarded by the lease must stop when the signal fires.
 *
 * No locks in Node: the election loop is one async chain (acquire, then renew), so at most one
 * tryAcquireOrRenew is in flight per elector; the observed state changes only inside it.
 */
import { ApiStatusError, isNotFound } from '../upstream/api-error.ts';
import type { Clock, Timer } from '../clock/clock.ts';
import { realClock, sleep } from '../clock/clock.ts';
import type { LeaderMetric, LeaderMetricsProvider } from './metrics.ts';
import { noopLeaderMetric } from './metrics.ts';
import type { LeaderElectionRecord, ObservedRecord, ResourceLock } from './resource-lock.ts';
import { formatMicroTime } from './resource-lock.ts';

/** leaderelection.go JitterFactor: the acquire loop waits retryPeriod × (1 + random × 1.2). */
export const JITTER_FACTOR = 1.2;
/** "Core clients default this value to 15 seconds." (leaderelection.go LeaderElectionConfig) */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
/** "Core clients default this value to 10 seconds." */
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
/** "Core clients default this value to 2 seconds." */
export const DEFAULT_RETRY_PERIOD_MS = 2_000;

/**
 * leaderelection.go LeaderCallbacks. Called synchronously from the election loop, in this order:
 * onNewLeader(self), onStartedLeading, ..., onStoppedLeading. They must return quickly (start
 * work, do not await it here). If one throws, run() cleans up (the signal fires, the lease is
 * released if asked, onStoppedLeading runs) and then rejects with that error.
 */
export interface LeaderCallbacks {
  /**
   * This process now leads. `signal` fires when it stops leading, for whatever reason (renewal
   * failed for renewDeadline, run's signal aborted, a callback threw); its reason is an Error
   * saying why. Work guarded by the lease must stop when it fires.
   */
  onStartedLeading(signal: AbortSignal): void;
  /**
   * run() is returning. Always called, even if this process never led (client-go: "Users should
   * not assume that OnStoppedLeading is only called after OnStartedLeading"); after the release
   * when releaseOnCancel is set.
   */
  onStoppedLeading(): void;
  /** A leader other than the last reported one was observed, including the first and this process itself; '' once released. */
  onNewLeader?(identity: string): void;
}

/** Where the elector's log lines go: attempts, acquisitions, renewals (debug), losses. */
export type LeaderElectionLog = (level: 'debug' | 'info' | 'warn', message: string) => void;

/** leaderelection.go LeaderElectionConfig; durations in milliseconds. */
export interface LeaderElectionConfig {
  /** The lock the candidates compete for (newLeaseLock). */
  readonly lock: ResourceLock;
  /**
   * How long non-leaders wait, from the last time they saw the record change, before they may take
   * over; written to the record in whole seconds, so it must be a whole number of seconds.
   * Default 15 s.
   */
  readonly leaseDurationMs?: number;
  /** How long the leader keeps retrying to renew before it gives up leading. Default 10 s. */
  readonly renewDeadlineMs?: number;
  /** Between attempts (jittered ×(1..2.2) while acquiring). Default 2 s. */
  readonly retryPeriodMs?: number;
  /** What to do when this process starts and stops leading. */
  readonly callbacks: LeaderCallbacks;
  /**
   * When run() ends while leading, clear the record (holderIdentity '', leaseDurationSeconds 1,
   * leaderTransitions kept) so another candidate takes over at its next attempt instead of after
   * leaseDuration. client-go's warning applies: work guarded by the lease must have stopped before
   * run's signal is aborted, or two processes may act at once.
   */
  readonly releaseOnCancel?: boolean;
  /**
   * A candidate that does not hold the lock reads it from the apiserver's watch cache instead of
   * etcd (client-go always reads from etcd). Safe because a stale read can only make a takeover
   * late or make its write lose: the write carries the version read, and the apiserver refuses it
   * (409) if the Lease moved on. Worth it where many candidates poll one Lease (node pools: a
   * quorum read per candidate per retryPeriod). Default false.
   */
  readonly followersReadFromCache?: boolean;
  /** For metrics, health checks and logs. Default: the lock's description. */
  readonly name?: string;
  /** Makes the `leader_election_*` metrics; none without it. */
  readonly metrics?: LeaderMetricsProvider;
  /** Default: the real clock. Tests pass a fake one. */
  readonly clock?: Clock;
  /** Returns [0, 1); jitters the acquire loop. Default Math.random. */
  readonly random?: () => number;
  /** Where log lines go. Default: nowhere. */
  readonly log?: LeaderElectionLog;
}

/** A candidate of an election (leaderelection.go LeaderElector): newLeaderElector makes one. */
export interface LeaderElector {
  /**
   * leaderelection.go Run: tries to acquire the lock every retryPeriod (jittered) until it does or
   * `signal` aborts; then calls onStartedLeading and renews until renewal fails for renewDeadline
   * or `signal` aborts; then releases the lock if asked, calls onStoppedLeading and resolves.
   * May be called again once it has resolved (to compete again); not while it runs.
   */
  run(signal?: AbortSignal): Promise<void>;
  /**
   * The last observed record names this process (client-go IsLeader). It stays true after run()
   * ends for a failed renewal, until another holder is observed: for "may I act as the leader
   * now", use the signal given to onStartedLeading.
   */
  isLeader(): boolean;
  /** The holder in the last observed record ('' if none yet, or released). For information only. */
  getLeader(): string;
  /**
   * leaderelection.go Check: an error if this process believes it leads (isLeader) but has not
   * renewed for leaseDuration + `maxTolerableExpiredLeaseMs`; it should have stopped by then (a
   * stuck loop). Undefined otherwise. See healthz.ts.
   */
  check(maxTolerableExpiredLeaseMs: number): Error | undefined;
  /** The configured name (metrics, health checks). */
  readonly name: string;
}

/**
 * leaderelection.go NewLeaderElector: validates the configuration (throws an Error saying which
 * rule it breaks) and returns an elector that has not started.
 */
export function newLeaderElector(config: LeaderElectionConfig): LeaderElector {
  return new Elector(config);
}

/** Checks the rules of leaderelection.go NewLeaderElector (timing, identity); throws an Error with the values in its message. */
export function validateLeaderElectionConfig(config: LeaderElectionConfig): void {
  validateLeaderElectionTiming(config);
  if (config.lock.identity() === '') throw new Error('leader election: the lock identity is empty');
}

/** The timing rules alone (absent values are client-go's defaults), for callers that check before building a lock. */
export function validateLeaderElectionTiming(
  timing: Pick<LeaderElectionConfig, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'>,
): void {
  const leaseDuration = timing.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS;
  const renewDeadline = timing.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
  const retryPeriod = timing.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS;
  const ms = (value: number): string => `${String(value)} ms`;
  for (const [name, value] of [
    ['leaseDuration', leaseDuration],
    ['renewDeadline', renewDeadline],
    ['retryPeriod', retryPeriod],
  ] as const) {
    if (!Number.isFinite(value) || value <= 0) throw new Error(`leader election: ${name} must be greater than zero (got ${ms(value)})`);
  }
  if (leaseDuration <= renewDeadline) {
    throw new Error(`leader election: leaseDuration (${ms(leaseDuration)}) must be greater than renewDeadline (${ms(renewDeadline)})`);
  }
  if (renewDeadline <= JITTER_FACTOR * retryPeriod) {
    throw new Error(
      `leader election: renewDeadline (${ms(renewDeadline)}) must be greater than retryPeriod × ${String(JITTER_FACTOR)} (${ms(JITTER_FACTOR * retryPeriod)})`,
    );
  }
  // Not in client-go, which truncates silently: the record holds whole seconds, and other
  // candidates judge expiry by the record's value, not by our configuration.
  if (leaseDuration % 1000 !== 0) {
    throw new Error(
      `leader election: leaseDuration (${ms(leaseDuration)}) must be a whole number of seconds: a Lease stores whole seconds`,
    );
  }
}

/** What a candidate knows before it has read the lock (client-go's zero LeaderElectionRecord). */
const NO_RECORD: LeaderElectionRecord = {
  holderIdentity: '',
  leaseDurationSeconds: 0,
  acquireTime: null,
  renewTime: null,
  leaderTransitions: 0,
};

const NEVER: AbortSignal = new AbortController().signal;

class Elector implements LeaderElector {
  readonly name: string;
  readonly #lock: ResourceLock;
  readonly #identity: string;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #callbacks: LeaderCallbacks;
  readonly #releaseOnCancel: boolean;
  readonly #followersReadFromCache: boolean;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #log: LeaderElectionLog;
  readonly #metric: LeaderMetric;

  /** The record as last read from the lock or successfully written by us. */
  #observedRecord: LeaderElectionRecord = NO_RECORD;
  /** The serialized record as last read (not as written): a change of it moves observedTime. */
  #observedRawRecord: string | undefined;
  /**
   * Local time (this process's clock) at which #observedRecord was last set, i.e. when we last saw
   * the record change or wrote it. Expiry is judged against it, never against renewTime from
   * another node's clock.
   */
  #observedTime = Number.NEGATIVE_INFINITY;
  /** The holder last passed to onNewLeader; may lag #observedRecord until maybeReportTransition. */
  #reportedLeader = '';
  #running = false;

  constructor(config: LeaderElectionConfig) {
    validateLeaderElectionConfig(config);
    if (typeof config.callbacks.onStartedLeading !== 'function') throw new Error('leader election: onStartedLeading callback must be set');
    if (typeof config.callbacks.onStoppedLeading !== 'function') throw new Error('leader election: onStoppedLeading callback must be set');
    this.#lock = config.lock;
    this.#identity = config.lock.identity();
    this.#leaseDurationMs = config.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS;
    this.#renewDeadlineMs = config.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
    this.#retryPeriodMs = config.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS;
    this.#callbacks = config.callbacks;
    this.#releaseOnCancel = config.releaseOnCancel ?? false;
    this.#followersReadFromCache = config.followersReadFromCache ?? false;
    this.#clock = config.clock ?? realClock;
    this.#random = config.random ?? Math.random;
    this.#log = config.log ?? (() => undefined);
    this.name = config.name ?? config.lock.describe();
    this.#metric = config.metrics?.newLeaderMetric() ?? noopLeaderMetric;
    this.#metric.off(this.name);
  }

  isLeader(): boolean {
    return this.#observedRecord.holderIdentity === this.#identity;
  }

  getLeader(): string {
    return this.#observedRecord.holderIdentity;
  }

  check(maxTolerableExpiredLeaseMs: number): Error | undefined {
    // "Currently not concerned with the case that we are hot standby."
    if (!this.isLeader()) return undefined;
    // leaderelection.go Check: "We should have died but conditions like deadlock can prevent this."
    if (this.#clock.now() - this.#observedTime > this.#leaseDurationMs + maxTolerableExpiredLeaseMs) {
      return new Error(`failed election to renew leadership on lease ${this.name}`);
    }
    return undefined;
  }

  async run(signal: AbortSignal = NEVER): Promise<void> {
    if (this.#running) throw new Error(`leader election ${this.name}: run() is already running`);
    this.#running = true;
    let leading: AbortController | undefined;
    try {
      if (!(await this.#acquire(signal))) return;
      leading = new AbortController();
      this.#callbacks.onStartedLeading(leading.signal);
      const lost = await this.#renew(signal);
      leading.abort(lost);
    } finally {
      try {
        if (leading !== undefined) {
          // The signal first: guarded work stops before the lease is given away.
          if (!leading.signal.aborted) leading.abort(new Error('leader election ended'));
          this.#metric.off(this.name);
          if (this.#releaseOnCancel) await this.#release();
        }
      } finally {
        this.#running = false;
        this.#callbacks.onStoppedLeading();
      }
    }
  }

  /**
   * leaderelection.go acquire: tryAcquireOrRenew at once, then after retryPeriod × (1 + random ×
   * JitterFactor) from the end of each failed attempt (wait.JitterUntil, sliding), until one
   * succeeds (true) or `signal` aborts (false).
   */
  async #acquire(signal: AbortSignal): Promise<boolean> {
    const desc = this.#lock.describe();
    this.#log('info', `attempting to acquire leader lease ${desc}...`);
    while (!signal.aborted) {
      const succeeded = await this.#tryAcquireOrRenew(signal);
      this.#maybeReportTransition();
      if (succeeded) {
        this.#metric.on(this.name);
        this.#log('info', `successfully acquired lease ${desc}`);
        return true;
      }
      await sleep(this.#clock, this.#retryPeriodMs * (1 + this.#random() * JITTER_FACTOR), signal);
    }
    return false;
  }

  /**
   * leaderelection.go renew: rounds, one at once and then retryPeriod after each successful one
   * (wait.Until). A round tries at once and then every retryPeriod (wait.PollImmediateUntil)
   * until an attempt succeeds or renewDeadline has passed since the round began; at the deadline
   * the attempt in flight is aborted and leading ends. Resolves with why it ended.
   */
  async #renew(signal: AbortSignal): Promise<Error> {
    const desc = this.#lock.describe();
    for (;;) {
      if (signal.aborted) return new Error('leader election stopped');
      const round = linkedController(signal);
      const deadline: Timer = this.#clock.setTimeout(() => {
        round.controller.abort();
      }, this.#renewDeadlineMs);
      let renewed: boolean;
      try {
        renewed = await this.#renewRound(round.controller.signal);
      } finally {
        deadline.cancel();
        round.dispose();
      }
      this.#maybeReportTransition();
      if (!renewed) {
        if (isAborted(signal)) return new Error('leader election stopped');
        const lost = new Error(`failed to renew lease ${desc} within renewDeadline (${String(this.#renewDeadlineMs)} ms)`);
        this.#log('info', lost.message);
        return lost;
      }
      this.#log('debug', `successfully renewed lease ${desc}`);
      await sleep(this.#clock, this.#retryPeriodMs, signal);
    }
  }

  /** One renew round (wait.PollImmediateUntil): true once an attempt succeeds before `roundSignal` aborts. */
  async #renewRound(roundSignal: AbortSignal): Promise<boolean> {
    while (!isAborted(roundSignal)) {
      // An attempt that completes after the deadline does not count: leading has already ended.
      if ((await this.#tryAcquireOrRenew(roundSignal)) && !isAborted(roundSignal)) return true;
      await sleep(this.#clock, this.#retryPeriodMs, roundSignal);
    }
    return false;
  }

  /**
   * leaderelection.go release (tryRelease): reads the record, and if it still names us, writes it
   * with holderIdentity '', leaseDurationSeconds 1 and leaderTransitions kept, so that the next
   * candidate acquires it at once. Retries on conflict (a renewal aborted on our side may still
   * have been applied by the apiserver, moving the version); gives up after renewDeadline.
   */
  async #release(): Promise<boolean> {
    if (!this.isLeader()) return true;
    const desc = this.#lock.describe();
    const deadline = new AbortController();
    const timer = this.#clock.setTimeout(() => {
      deadline.abort();
    }, this.#renewDeadlineMs);
    try {
      while (!deadline.signal.aborted) {
        let current: LeaderElectionRecord;
        try {
          current = (await this.#lock.get(deadline.signal)).record;
        } catch (error) {
          this.#log('warn', `failed to release lease ${desc}: ${describe(error)}`);
          return false;
        }
        // Decide from the record just read, not the last observed one.
        if (current.holderIdentity !== this.#identity) return true;
        const now = formatMicroTime(this.#clock.wallNow());
        const released: LeaderElectionRecord = {
          holderIdentity: '',
          leaseDurationSeconds: 1,
          acquireTime: now,
          renewTime: now,
          leaderTransitions: current.leaderTransitions,
        };
        try {
          await this.#lock.update(released, deadline.signal);
        } catch (error) {
          if (isConflict(error)) {
            this.#log('debug', `conflict when releasing lease ${desc}, retrying`);
            continue;
          }
          this.#log('warn', `failed to release lease ${desc}: ${describe(error)}`);
          return false;
        }
        this.#setObservedRecord(released);
        this.#log('info', `released lease ${desc}`);
        return true;
      }
      return false;
    } finally {
      timer.cancel();
    }
  }

  /**
   * leaderelection.go tryAcquireOrRenew: one attempt to acquire the lock or, if we hold it, to
   * renew it. True if we hold it afterwards.
   */
  async #tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const desc = this.#lock.describe();
    const now = this.#clock.now();
    const nowTime = formatMicroTime(this.#clock.wallNow());
    let record: LeaderElectionRecord = {
      holderIdentity: this.#identity,
      leaseDurationSeconds: this.#leaseDurationMs / 1000,
      acquireTime: nowTime,
      renewTime: nowTime,
      leaderTransitions: 0,
    };

    // 1. Fast path: the leader updates optimistically, assuming the record it last observed (and
    // the version its lock last saw) is still current. A conflict falls through to the slow path.
    if (this.isLeader() && this.#isLeaseValid(now)) {
      record = { ...record, acquireTime: this.#observedRecord.acquireTime, leaderTransitions: this.#observedRecord.leaderTransitions };
      try {
        await this.#lock.update(record, signal);
        this.#setObservedRecord(record);
        return true;
      } catch (error) {
        this.#log('debug', `failed to update lease ${desc} optimistically, falling back to slow path: ${describe(error)}`);
      }
    }

    // 2. Obtain or create the record.
    let observed: ObservedRecord;
    try {
      observed = await this.#lock.get(signal, this.#followersReadFromCache && !this.isLeader());
    } catch (error) {
      if (!isNotFound(error)) {
        this.#log('warn', `error retrieving lease ${desc}: ${describe(error)}`);
        return false;
      }
      try {
        await this.#lock.create(record, signal);
      } catch (createError) {
        this.#log('warn', `error initially creating lease ${desc}: ${describe(createError)}`);
        return false;
      }
      this.#setObservedRecord(record);
      return true;
    }

    // 3. Record obtained: any change restarts the holder's lease on our clock; then check the
    // identity and the time.
    if (this.#observedRawRecord !== observed.raw) {
      this.#setObservedRecord(observed.record);
      this.#observedRawRecord = observed.raw;
    }
    if (observed.record.holderIdentity !== '' && this.#isLeaseValid(now) && !this.isLeader()) {
      this.#log('debug', `lease ${desc} is held by ${observed.record.holderIdentity} and has not yet expired`);
      return false;
    }

    // 4. Write it: a renewal keeps acquireTime and leaderTransitions; a takeover counts one more
    // transition.
    if (this.isLeader()) {
      record = { ...record, acquireTime: observed.record.acquireTime, leaderTransitions: observed.record.leaderTransitions };
      this.#metric.slowpathExercised(this.name);
    } else {
      record = { ...record, leaderTransitions: observed.record.leaderTransitions + 1 };
    }
    try {
      await this.#lock.update(record, signal);
    } catch (error) {
      this.#log('warn', `failed to update lease ${desc}: ${describe(error)}`);
      return false;
    }
    this.#setObservedRecord(record);
    return true;
  }

  /** leaderelection.go isLeaseValid: the holder's claim, measured on our clock from when we saw it. */
  #isLeaseValid(now: number): boolean {
    return this.#observedTime + this.#observedRecord.leaseDurationSeconds * 1000 > now;
  }

  /** Sets the observed record and stamps it with our clock (leaderelection.go setObservedRecord). */
  #setObservedRecord(record: LeaderElectionRecord): void {
    this.#observedRecord = record;
    this.#observedTime = this.#clock.now();
  }

  /** leaderelection.go maybeReportTransition. */
  #maybeReportTransition(): void {
    const holder = this.#observedRecord.holderIdentity;
    if (holder === this.#reportedLeader) return;
    this.#reportedLeader = holder;
    this.#callbacks.onNewLeader?.(holder);
  }
}

/** 409: another writer moved the version since we read it (apimachinery errors.IsConflict). */
function isConflict(error: unknown): boolean {
  return error instanceof ApiStatusError && error.code === 409;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Reads `signal.aborted` afresh (past an await, the compiler would assume it unchanged). */
function isAborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

/** A controller that also aborts when `parent` does; dispose() detaches it from the parent. */
function linkedController(parent: AbortSignal): { controller: AbortController; dispose(): void } {
  const controller = new AbortController();
  if (parent.aborted) controller.abort();
  const onAbort = (): void => {
    controller.abort();
  };
  parent.addEventListener('abort', onAbort, { once: true });
  return {
    controller,
    dispose: () => {
      parent.removeEventListener('abort', onAbort);
    },
  };
}
