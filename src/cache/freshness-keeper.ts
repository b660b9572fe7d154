/**
 * The freshness keeper of one delegator (bounded consistency): a quiet type's upstream watch may
 * say nothing for good, so the keeper proves the cache fresh itself (freshness-proof.ts). While
 * the type is read RV-unset (within KEEP_FRESH_MS) or watched by clients, a proof runs whenever
 * the cache has proved no progress for proofDueMs(bound): one bound period minus a lead for the
 * proof and a retry. A read that finds the cache past the bound all the same (a proof failed, or
 * the type was not read for a while) waits for one shared proof, up to PROOF_READ_WAIT_MS: never
 * every read of the type upstream at once. Proofs also settle the doubts a conflict raised, and
 * move the cache's RV, so its watchers' bookmarks follow the cluster's RV as the apiserver's do.
 *
 * Invariant: at most one proof runs per cache (#proving); a failed one makes the reads past the
 * bound pass through until the next attempt, at most PROOF_RETRY_MS later.
 */
import type { Clock, Timer } from '../clock/clock.ts';
import { within } from '../clock/clock.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { ReadYourWrites } from './consistency.ts';
import type { ConsistencyProbe } from './consistency-probe.ts';
import type { FreshnessProof, ProofFailure, ProofResult } from './freshness-proof.ts';
import { newFreshnessProof } from './freshness-proof.ts';
import type { WatchCache } from './watch-cache.ts';

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

/** How a freshness proof ended (a metric label): proven, or why not (freshness-proof.ts). */
export type ProofOutcome = 'proven' | ProofFailure;

export interface FreshnessKeeperOptions {
  readonly cache: WatchCache;
  readonly client: UpstreamClient;
  readonly writes: ReadYourWrites;
  /** --max-staleness: the bound the keeper proves the cache within. */
  readonly maxStalenessMs: number;
  readonly clock: Clock;
  /** The cache's consistency probe (shared with the delegator's strong reads). */
  readonly probe: () => ConsistencyProbe;
  /** A proof ended, and how (the metric). */
  readonly proved: (outcome: ProofOutcome) => void;
}

export class FreshnessKeeper {
  readonly #options: FreshnessKeeperOptions;
  readonly #clock: Clock;
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

  constructor(options: FreshnessKeeperOptions) {
    this.#options = options;
    this.#clock = options.clock;
    options.cache.addListener({
      event: () => undefined,
      replaced: () => undefined,
      closed: () => {
        this.#stopped = true;
        this.#keepTimer?.cancel();
      },
    });
    this.#scheduleKeep(proofDueMs(options.maxStalenessMs));
  }

  /** An RV-unset read (bounded mode): the type is worth keeping fresh for KEEP_FRESH_MS. */
  read(): void {
    this.#lastReadAt = this.#clock.now();
  }

  /**
   * Whether the cache proved progress within the bound, waiting for the shared proof when it has
   * not (no cliff: the reads wait briefly for one proof; right after a failed one, they go to
   * the apiserver until the next attempt).
   */
  async withinBound(signal: AbortSignal | undefined): Promise<boolean> {
    const { cache, maxStalenessMs: bound } = this.#options;
    const now = this.#clock.now();
    if (now - cache.lastProgressAt() <= bound) return true;
    if (this.#proving === undefined && now - this.#lastProofFailedAt < Math.min(PROOF_RETRY_MS, bound / 4)) return false;
    await within(this.#clock, this.prove(), PROOF_READ_WAIT_MS, signal);
    return this.#clock.now() - cache.lastProgressAt() <= bound;
  }

  /** Runs a freshness proof, or joins the one running. What it proves also settles the doubts that arose before it began. */
  prove(): Promise<ProofResult> {
    if (this.#proving !== undefined) return this.#proving;
    const { writes, cache } = this.#options;
    const { group, resource } = cache.spec;
    this.#proof ??= newFreshnessProof({
      client: this.#options.client,
      cache,
      probe: this.#options.probe(),
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
        this.#options.proved(result.kind === 'proven' ? 'proven' : result.reason);
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
    return now - this.#lastReadAt < KEEP_FRESH_MS || this.#options.cache.inUse();
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
    if (this.#stopped || this.#options.cache.isClosed()) return;
    const { cache } = this.#options;
    const bound = this.#options.maxStalenessMs;
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
    void this.prove().then((result) => {
      if (result.kind === 'proven') this.#scheduleKeep(due - (this.#clock.now() - this.#options.cache.lastProgressAt()));
      else this.#scheduleKeep(Math.min(PROOF_RETRY_MS, bound / 4));
    });
  }

  /**
   * Before a watcher's bookmark: a proof when the cache last proved progress more than
   * BOOKMARK_FRESH_MS ago (at most one per BOOKMARK_PROOF_INTERVAL_MS, however many watchers'
   * bookmarks fall due), awaited up to `waitMs`. So a quiet type's bookmarks carry the
   * apiserver's current RV, as the apiserver's own do where others' consistent reads move its
   * cacher, at a bounded cost.
   */
  freshen(waitMs: number): Promise<void> {
    const now = this.#clock.now();
    if (now - this.#options.cache.lastProgressAt() < BOOKMARK_FRESH_MS || !this.#options.cache.watching()) return Promise.resolve();
    if (this.#proving === undefined) {
      if (now - this.#lastBookmarkProofAt < BOOKMARK_PROOF_INTERVAL_MS) return Promise.resolve();
      this.#lastBookmarkProofAt = now;
      void this.prove();
    }
    const proving = this.#proving;
    if (proving === undefined || waitMs <= 0) return Promise.resolve();
    return within(this.#clock, proving, waitMs, undefined).then(() => undefined);
  }

  /** A proof for the doubts of a quiet type, at most every DOUBT_PROOF_INTERVAL_MS. */
  proveDoubts(): void {
    const now = this.#clock.now();
    if (this.#proving !== undefined || now - this.#lastDoubtProofAt < DOUBT_PROOF_INTERVAL_MS) return;
    this.#lastDoubtProofAt = now;
    void this.prove();
  }
}
