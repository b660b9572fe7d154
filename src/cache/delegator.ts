/**
 * The cache delegator of one watch cache (kube-apiserver's storage/cacher/delegator.go): it
 * decides whether a read may be answered by the cache or must go to the apiserver, and owns what
 * serving needs beside the cache: the cacher (watches) and the consistency probe. The server
 * asks it before every read it would answer from the cache; nothing here writes a response.
 *
 * The rules (consistency.ts says what each mode promises):
 * - RV=N, not older than: the cache once it has reached N, waiting up to FRESHNESS_WAIT_MS;
 * - RV unset, bounded: the upstream watch is open and proved progress within the bound, the
 *   proxy's own writes of the type are in the cache (waiting up to READ_YOUR_WRITES_WAIT_MS),
 *   and what a conflict made doubtful has been caught up with (a probe, then a brief wait, while
 *   the type's changes are in flight; a quiet type's doubted read goes to the apiserver at once,
 *   as a probe could only add a request to it, and a freshness proof settles the doubt);
 * - RV unset, strong: a GET goes to the apiserver; a LIST or WatchList of a type whose changes
 *   are in flight probes and is served once the cache reaches the probe's RV; a quiet type's
 *   read goes to the apiserver at once (the cache of a quiet type trails the cluster's RV, which
 *   every write of any type moves, until its next bookmark: a probe would only add a request).
 *
 * Freshness (bounded mode): the delegator keeps its cache proven fresh itself, because a quiet
 * type's upstream watch may say nothing for good (freshness-proof.ts). While the type is read
 * RV-unset (within KEEP_FRESH_MS) or watched by clients, a proof runs whenever the cache has
 * proved no progress for proofDueMs(bound): one bound period minus a lead for the proof and a
 * retry. A read that finds its cache past the bound all the same (a proof failed, or the type was
 * not read for a while) waits for one shared proof, up to PROOF_READ_WAIT_MS: never every read of
 * the type upstream at once. The proofs also move the cache's RV, so its watchers' bookmarks
 * follow the cluster's RV as the apiserver's own do.
 */
import type { UnsentBudget } from './unsent-budget.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { Clock, Timer } from '../clock/clock.ts';
import { realClock, within } from '../clock/clock.ts';
import type { FreshnessProof, ProofFailure, ProofResult } from './freshness-proof.ts';
import { newFreshnessProof } from './freshness-proof.ts';
import type { Cacher, CacherMetrics } from './cacher.ts';
import { newCacher, noopCacherMetrics } from './cacher.ts';
import type { ConsistencyPolicy, ReadTarget, ReadYourWrites } from './consistency.ts';
import type { ConsistencyProbe } from './consistency-probe.ts';
import { newConsistencyProbe } from './consistency-probe.ts';
import type { WatchCache } from './watch-cache.ts';
import { qualifiedResource } from '../kube/group-resource.ts';
import type { ConsistencyReason, PassReason } from './pass-reason.ts';
import type { Faults } from './faults.ts';

/**
 * How long a read waits for the cache to reach an RV it needs before it is passed through. The
 * events it waits for are normally a watch delivery away (milliseconds); a cache that is behind
 * only because other types moved the global RV never gets there, so waiting longer only delays
 * the pass-through.
 */
export const FRESHNESS_WAIT_MS = 50;
/** How long a read waits for the proxy's own write to show in the cache (its event is on its way). */
export const READ_YOUR_WRITES_WAIT_MS = 3_000;
/**
 * Strong mode: a type whose last change is older than this is quiet, and its RV-unset LIST goes
 * straight to the apiserver. Under a steady stream of changes (the bench's 200 writes/s) every
 * probe is overtaken within milliseconds by the type's own next event.
 */
export const IN_FLIGHT_MS = 1_000;
/**
 * A type is kept proven fresh while it was read RV-unset this recently (or has client watches):
 * the registry's idle timeout for lazily started caches (cache-registry.ts), after which an
 * unread lazy cache is stopped anyway.
 */
export const KEEP_FRESH_MS = 10 * 60_000;
/** The lead a proof is given before the bound: time for it (about 1.2 s) and for a retry or two. */
export const PROOF_LEAD_MS = 15_000;
/** After a failed proof, the next one waits this long (at most); meanwhile reads past the bound pass through. */
export const PROOF_RETRY_MS = 5_000;
/** How long a read past its bound waits for the shared proof (which takes about 1.2 s). */
export const PROOF_READ_WAIT_MS = 2_500;
/**
 * A doubted read of a quiet type asks for a proof to settle the doubt at most this often per
 * type: a controller that deletes namespaces (kube-controller-manager's deleter doubts some 30
 * types at each deletion) costs a proof per type per half minute, not one per deletion; doubts in
 * between are settled by the keeper's proofs or the next one asked for, and their reads go to the
 * apiserver meanwhile, as they would without the proxy.
 */
export const DOUBT_PROOF_INTERVAL_MS = 30_000;
/** A bookmark due while the cache last proved progress longer ago than this asks for a proof first. */
export const BOOKMARK_FRESH_MS = 5_000;
/** Bookmarks ask for a proof at most this often per type, however many watchers they are sent to. */
export const BOOKMARK_PROOF_INTERVAL_MS = 5_000;
/** The keeper never looks again sooner than this (a bound of a few ms must not spin it). */
const MIN_KEEP_DELAY_MS = 100;

/**
 * When a proof is due, in ms since the cache last proved progress: one bound minus the lead, at
 * least half the bound (75 s: after 60 s; 5 s: after 2.5 s).
 */
export function proofDueMs(maxStalenessMs: number): number {
  return maxStalenessMs - Math.min(PROOF_LEAD_MS, maxStalenessMs / 2);
}

/** A read decision: 'cache' (the cache answers), or why the read goes to the apiserver (pass-reason.ts). */
export type Decision<Reason extends PassReason = PassReason> = 'cache' | Reason;

/** How a freshness proof ended (a metric label): proven, or why not (freshness-proof.ts). */
export type ProofOutcome = 'proven' | ProofFailure;

export interface DelegatorMetrics {
  /** One consistency probe sent upstream. */
  probe(): void;
  /** An RV-unset read answered from the cache, this many seconds after the cache last proved progress. */
  staleness(seconds: number): void;
  /** An RV-unset read passed through, and why. */
  passedThrough(reason: ConsistencyReason): void;
  /** A freshness proof ended (two requests upstream), and how. */
  proof(outcome: ProofOutcome): void;
  /** The cacher's watch metrics. */
  readonly cacher: CacherMetrics;
}

export const noopDelegatorMetrics: DelegatorMetrics = {
  probe: () => undefined,
  staleness: () => undefined,
  passedThrough: () => undefined,
  proof: () => undefined,
  cacher: noopCacherMetrics,
};

export interface CacheDelegator {
  readonly cache: WatchCache;
  /** The watches of the cache (made on first use). */
  cacher(): Cacher;
  /** RV-unset: 'cache' when the cache may answer a read of `target` as the most recent state, else why not. */
  mostRecent(target: ReadTarget, verb: 'get' | 'list' | 'watch', signal?: AbortSignal): Promise<Decision<ConsistencyReason>>;
  /** RV=N, not older than: resolves true once the cache is at `rv` or later. */
  notOlderThan(rv: bigint, signal?: AbortSignal): Promise<boolean>;
}

/** What every delegator shares: the apiserver to probe, the policy, and the proxy's writes. */
export interface DelegatorOptions {
  readonly client: UpstreamClient;
  readonly policy: ConsistencyPolicy;
  readonly writes: ReadYourWrites;
  /** The metrics of one type (several caches of a type share them). */
  readonly metrics?: (typeName: string) => DelegatorMetrics;
  readonly clock?: Clock;
  /** FRESHNESS_WAIT_MS; tests set 0. */
  readonly freshnessWaitMs?: number;
  /** The proxy-wide bound on watchers' unsent bytes, shared by every cache's watchers. */
  readonly unsentBudget?: UnsentBudget;
  /** Where watchers' failures are reported (faults.ts); default: stderr, once each. */
  readonly faults?: Faults;
}

/** Makes the delegator of each cache the registry starts. */
export type DelegatorFactory = (cache: WatchCache) => CacheDelegator;

export function delegatorFactory(options: DelegatorOptions): DelegatorFactory {
  return (cache) => new Delegator(cache, options);
}

class Delegator implements CacheDelegator {
  readonly cache: WatchCache;
  readonly #options: DelegatorOptions;
  readonly #clock: Clock;
  readonly #waitMs: number;
  readonly #metrics: DelegatorMetrics;
  #cacher: Cacher | undefined;
  #probe: ConsistencyProbe | undefined;
  #proof: FreshnessProof | undefined;
  /** The proof running now (one per cache at a time); undefined when none runs. */
  #proving: Promise<ProofResult> | undefined;
  #lastProofFailedAt = Number.NEGATIVE_INFINITY;
  #lastDoubtProofAt = Number.NEGATIVE_INFINITY;
  #lastBookmarkProofAt = Number.NEGATIVE_INFINITY;
  /** The last RV-unset read in bounded mode: the type is kept fresh while it is read. */
  #lastReadAt = Number.NEGATIVE_INFINITY;
  #keepTimer: Timer | undefined;
  #stopped = false;

  constructor(cache: WatchCache, options: DelegatorOptions) {
    this.cache = cache;
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#waitMs = options.freshnessWaitMs ?? FRESHNESS_WAIT_MS;
    const { group, resource } = cache.spec;
    this.#metrics = options.metrics?.(qualifiedResource(group, resource)) ?? noopDelegatorMetrics;
    cache.addListener({
      event: () => undefined,
      replaced: () => undefined,
      closed: () => {
        this.#stopped = true;
        this.#keepTimer?.cancel();
      },
    });
    this.#scheduleKeep(proofDueMs(options.policy.maxStalenessMs));
  }

  cacher(): Cacher {
    const { unsentBudget: budget, faults } = this.#options;
    this.#cacher ??= newCacher(this.cache, {
      clock: this.#clock,
      metrics: this.#metrics.cacher,
      freshen: (waitMs) => this.#freshen(waitMs),
      ...(budget === undefined ? {} : { budget }),
      ...(faults === undefined ? {} : { faults }),
    });
    return this.#cacher;
  }

  async notOlderThan(rv: bigint, signal?: AbortSignal): Promise<boolean> {
    return (await this.cache.waitUntilFresh(rv, this.#waitMs, signal)) !== undefined;
  }

  mostRecent(target: ReadTarget, verb: 'get' | 'list' | 'watch', signal?: AbortSignal): Promise<Decision<ConsistencyReason>> {
    const { group, resource } = this.cache.spec;
    return this.#options.policy.modeOf(group, resource) === 'strong' ? this.#strong(verb, signal) : this.#bounded(target, signal);
  }

  #pass(reason: ConsistencyReason): ConsistencyReason {
    this.#metrics.passedThrough(reason);
    return reason;
  }

  /** The cache's consistency probe (made on first use). */
  #consistencyProbe(): ConsistencyProbe {
    if (this.#probe === undefined) {
      const { group, version, resource } = this.cache.spec;
      this.#probe = newConsistencyProbe(
        this.#options.client,
        { group, version, resource, namespace: this.cache.namespace },
        {
          clock: this.#clock,
          onSend: () => {
            this.#metrics.probe();
          },
        },
      );
    }
    return this.#probe;
  }

  /** The apiserver's current RV, or undefined when it could not be had. */
  #probeNow(): Promise<bigint | undefined> {
    return this.#consistencyProbe().currentResourceVersion();
  }

  /** Runs a freshness proof, or joins the one running. What it proves also settles the doubts that arose before it began. */
  #prove(): Promise<ProofResult> {
    if (this.#proving !== undefined) return this.#proving;
    const { writes } = this.#options;
    const { group, resource } = this.cache.spec;
    this.#proof ??= newFreshnessProof({
      client: this.#options.client,
      cache: this.cache,
      probe: this.#consistencyProbe(),
      clock: this.#clock,
    });
    const proof = this.#proof;
    const seq = writes.sequence();
    const failed = (): ProofResult => ({ kind: 'failed', reason: 'probe-failed' });
    const proving = proof
      .run()
      .then(undefined, failed)
      .then((result) => {
        this.#proving = undefined;
        this.#metrics.proof(result.kind === 'proven' ? 'proven' : result.reason);
        if (result.kind === 'proven') {
          writes.settle(group, resource, seq, result.consistentResourceVersion);
          writes.reached(group, resource, result.resourceVersion);
        } else {
          this.#lastProofFailedAt = this.#clock.now();
        }
        return result;
      });
    this.#proving = proving;
    return proving;
  }

  /** Whether the cache is worth proving fresh: read RV-unset lately, or watched. */
  #worthKeeping(now: number): boolean {
    return now - this.#lastReadAt < KEEP_FRESH_MS || this.cache.inUse();
  }

  /** The keeper: checks again in `delayMs` whether a proof is due, and runs it. */
  #scheduleKeep(delayMs: number): void {
    if (this.#stopped) return;
    this.#keepTimer?.cancel();
    this.#keepTimer = this.#clock.setTimeout(
      () => {
        this.#keepTimer = undefined;
        this.#keep();
      },
      Math.max(MIN_KEEP_DELAY_MS, delayMs),
    );
    this.#keepTimer.unref?.();
  }

  #keep(): void {
    if (this.#stopped || this.cache.isClosed()) return;
    const { cache } = this;
    const bound = this.#options.policy.maxStalenessMs;
    const due = proofDueMs(bound);
    const now = this.#clock.now();
    const age = now - cache.lastProgressAt();
    if (age < due) {
      this.#scheduleKeep(due - age);
      return;
    }
    if (!cache.hasSynced() || !cache.watching() || !this.#worthKeeping(now)) {
      // Nothing to prove now; looked at again once more could be (a read, a watch, a reconnect).
      this.#scheduleKeep(Math.min(due, PROOF_RETRY_MS));
      return;
    }
    void this.#prove().then((result) => {
      if (result.kind === 'proven') this.#scheduleKeep(due - (this.#clock.now() - this.cache.lastProgressAt()));
      else this.#scheduleKeep(Math.min(PROOF_RETRY_MS, bound / 4));
    });
  }

  async #bounded(target: ReadTarget, signal: AbortSignal | undefined): Promise<Decision<ConsistencyReason>> {
    const { cache } = this;
    const { writes, policy } = this.#options;
    const { group, resource } = cache.spec;
    if (!cache.watching()) return this.#pass('not-watching');
    const now = this.#clock.now();
    this.#lastReadAt = now;
    if (now - cache.lastProgressAt() > policy.maxStalenessMs) {
      // No cliff: one shared proof, the reads waiting briefly for it; right after a failed one,
      // the reads go to the apiserver until the next attempt.
      if (this.#proving === undefined && now - this.#lastProofFailedAt < Math.min(PROOF_RETRY_MS, policy.maxStalenessMs / 4)) {
        return this.#pass('stale');
      }
      await within(this.#clock, this.#prove(), PROOF_READ_WAIT_MS, signal);
      if (this.#clock.now() - cache.lastProgressAt() > policy.maxStalenessMs) return this.#pass('stale');
    }
    const required = writes.requirement(target);
    if (required.written > (cache.resourceVersion() ?? 0n)) {
      if ((await cache.waitUntilFresh(required.written, READ_YOUR_WRITES_WAIT_MS, signal)) === undefined) {
        return this.#pass('own-write-pending');
      }
    }
    let caughtUp = required.caughtUp;
    if (required.probe || caughtUp > (cache.resourceVersion() ?? 0n)) {
      // The cache is doubted. A quiet type cannot show it caught up without waiting for a proof:
      // the read goes to the apiserver now, and a proof (in the background) settles the doubt.
      if (this.#clock.now() - cache.lastChangeAt() > IN_FLIGHT_MS) {
        this.#proveDoubts();
        return this.#pass('doubted-quiet');
      }
    }
    if (required.probe) {
      const seq = writes.sequence();
      const rv = await this.#probeNow();
      if (rv === undefined) return this.#pass('probe-failed');
      writes.settle(group, resource, seq, rv);
      if (rv > caughtUp) caughtUp = rv;
    }
    if (caughtUp > 0n) {
      const reached = await cache.waitUntilFresh(caughtUp, this.#waitMs, signal);
      if (reached === undefined) return this.#pass('doubted');
      writes.reached(group, resource, reached);
    }
    // The watch may have broken while this read waited.
    if (!cache.watching()) return this.#pass('not-watching');
    this.#metrics.staleness(Math.max(0, this.#clock.now() - cache.lastProgressAt()) / 1000);
    return 'cache';
  }

  /**
   * Before a watcher's bookmark: a proof when the cache last proved progress more than
   * BOOKMARK_FRESH_MS ago (at most one per BOOKMARK_PROOF_INTERVAL_MS, however many watchers'
   * bookmarks fall due), awaited up to `waitMs`. So a quiet type's bookmarks carry the
   * apiserver's current RV, as the apiserver's own do where others' consistent reads move its
   * cacher, at a bounded cost.
   */
  #freshen(waitMs: number): Promise<void> {
    const now = this.#clock.now();
    if (now - this.cache.lastProgressAt() < BOOKMARK_FRESH_MS || !this.cache.watching()) return Promise.resolve();
    if (this.#proving === undefined) {
      if (now - this.#lastBookmarkProofAt < BOOKMARK_PROOF_INTERVAL_MS) return Promise.resolve();
      this.#lastBookmarkProofAt = now;
      void this.#prove();
    }
    const proving = this.#proving;
    if (proving === undefined || waitMs <= 0) return Promise.resolve();
    return within(this.#clock, proving, waitMs, undefined).then(() => undefined);
  }

  /** A proof for the doubts of a quiet type, at most every DOUBT_PROOF_INTERVAL_MS. */
  #proveDoubts(): void {
    const now = this.#clock.now();
    if (this.#proving !== undefined || now - this.#lastDoubtProofAt < DOUBT_PROOF_INTERVAL_MS) return;
    this.#lastDoubtProofAt = now;
    void this.#prove();
  }

  async #strong(verb: 'get' | 'list' | 'watch', signal: AbortSignal | undefined): Promise<Decision<ConsistencyReason>> {
    const { cache } = this;
    if (verb === 'get') return this.#pass('strong-get');
    if (!cache.watching()) return this.#pass('not-watching');
    if (this.#clock.now() - cache.lastChangeAt() > IN_FLIGHT_MS) return this.#pass('strong-quiet');
    const rv = await this.#probeNow();
    if (rv === undefined) return this.#pass('probe-failed');
    if ((await cache.waitUntilFresh(rv, this.#waitMs, signal)) === undefined) return this.#pass('strong-behind');
    return 'cache';
  }
}
