/**
 * The freshness keeper of one delegator (bounded consistency): a quiet type's upstream watch may
 * say nothing for good, so the keeper proves the cache fresh itself (freshness-proof.ts), two
 * requests to the apiserver each time. It proves only for a reader who would wait, and only when
 * the proof costs the apiserver no more than the reads it keeps from it:
 * - an RV-unset read finds the cache near its bound (the cache's age plus the time since the
 *   type's previous such read reaches proofDueMs(bound): the next read would find it stale):
 *   a proof starts in the background and this read is served, if the type is read often enough
 *   to pay for it (the previous read came within WORTH_PROVING_SHARE of the bound: four or more
 *   reads per bound, where one proof of two requests replaces them);
 * - a GET or LIST finds the cache past its bound: it goes to the apiserver ('stale'), one
 *   request, as without the proxy, never waiting for a proof (one starts for the reads that
 *   follow, as above, if the type is read often enough);
 * - a WatchList (an informer starting) finds it past its bound or doubted: it waits, up to
 *   PROOF_READ_WAIT_MS, for the proof running or one it starts: passed through, its watch
 *   would stay at the apiserver for its whole timeout.
 * Never on a timer, never for a bookmark (a watcher's bookmark carries the cache's RV, which the
 * upstream watch's own events and bookmarks move, as the apiserver's bookmarks carry its cacher's
 * RV), and never for a doubt nobody waits on (a doubted read of a quiet type goes to the
 * apiserver, as it would without the proxy; the next proof settles the doubt). A consistent read
 * moves only its own type's cacher in kube-apiserver v1.37 (each cacher requests its own watch's
 * progress: storage/cacher/cacher.go, progress/watch_progress.go), so one type's proof cannot
 * stand for another's.
 *
 * Invariant: at most one proof runs per cache (#proving); a failed one, or one that proved the
 * cache only as of an upstream proxy's proof too old to take it off its due time, makes the reads
 * past the bound pass through until the next attempt, at most PROOF_RETRY_MS later.
 */
import type { Clock } from '../clock/clock.ts';
import { within } from '../clock/clock.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { ReadYourWrites } from './read-your-writes.ts';
import type { ConsistencyProbe } from './consistency-probe.ts';
import type { ConsistentRead, FreshnessProof, ProofFailure, ProofResult } from './freshness-proof.ts';
import { newFreshnessProof } from './freshness-proof.ts';
import type { WatchCache } from './watch-cache.ts';

/** The lead a proof is given before the bound: time for it (about 1.2 s) and for a retry or two. */
export const PROOF_LEAD_MS = 15_000;
/** After a failed proof, the next one waits this long (at most); meanwhile reads past the bound pass through. */
export const PROOF_RETRY_MS = 5_000;
/** How long a WatchList past its bound waits for the shared proof (which takes about 1.2 s). */
export const PROOF_READ_WAIT_MS = 2_500;
/**
 * A type is worth proving when its RV-unset reads come at most this share of the bound apart:
 * four or more reads in a bound, each a request to the apiserver without the proxy, against a
 * proof's two requests once a bound at most.
 */
export const WORTH_PROVING_SHARE = 1 / 4;

/**
 * When a proof is due, in ms since the cache last proved progress: one bound minus the lead, at
 * least half the bound (75 s: after 60 s; 5 s: after 2.5 s). A read's proof is due when the
 * cache's age plus the time since the type's previous read reaches it.
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
  /** The last RV-unset read in bounded mode, and the time between it and the one before. */
  #lastReadAt = Number.NEGATIVE_INFINITY;
  #readGap = Number.POSITIVE_INFINITY;

  constructor(options: FreshnessKeeperOptions) {
    this.#options = options;
    this.#clock = options.clock;
  }

  /**
   * An RV-unset read (bounded mode): a proof in the background when the next read would find the
   * cache past its bound and the type is read often enough to pay for it.
   */
  read(): void {
    const now = this.#clock.now();
    this.#readGap = now - this.#lastReadAt;
    this.#lastReadAt = now;
    const { cache, maxStalenessMs: bound } = this.#options;
    const age = now - cache.lastProgressAt();
    if (age + this.#readGap >= proofDueMs(bound) && this.#worthProving() && !this.#retryPending(now)) void this.prove();
  }

  /**
   * Whether the cache proved progress within the bound. A GET or LIST that finds it past the
   * bound never waits: it goes to the apiserver, as it would without the proxy (read() has
   * started a proof for the reads that follow, if the type is read often enough). A WatchList
   * (`watch`: an informer starting) waits for the proof running or one it starts: passed
   * through, its watch would stay at the apiserver for its whole timeout, 5 to 10 minutes for
   * client-go.
   */
  async withinBound(watch: boolean, signal: AbortSignal | undefined): Promise<boolean> {
    const { cache, maxStalenessMs: bound } = this.#options;
    const now = this.#clock.now();
    if (now - cache.lastProgressAt() <= bound) return true;
    if (!watch || (this.#proving === undefined && this.#retryPending(now))) return false;
    await within(this.#clock, this.prove(), PROOF_READ_WAIT_MS, signal);
    return this.#clock.now() - cache.lastProgressAt() <= bound;
  }

  /** Whether a proof runs now. */
  proving(): boolean {
    return this.#proving !== undefined;
  }

  /**
   * Runs a freshness proof (from `known`, a consistent read just had), or joins the one running.
   * What it proves also settles the doubts that arose before it began.
   */
  prove(known?: ConsistentRead): Promise<ProofResult> {
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
    const seq = known?.sequence ?? writes.sequence();
    const failed = (): ProofResult => ({ kind: 'failed', reason: 'probe-failed' });
    const proving = proof
      .run(known)
      .then(undefined, failed)
      .then((result) => {
        this.#proving = undefined;
        this.#options.proved(result.kind === 'proven' ? 'proven' : result.reason);
        if (result.kind === 'proven') {
          writes.settle(group, resource, seq, result.consistentResourceVersion);
          writes.reached(group, resource, result.resourceVersion);
          // Proven only as of an upstream proxy's older proof (protocol/proof-age.ts): the cache
          // is still due, and proving again at once would only ask that proxy again (once per
          // read while it answers from its aging cache); the next proof waits as after a failure.
          const now = this.#clock.now();
          if (now - result.askedAt >= proofDueMs(this.#options.maxStalenessMs)) this.#lastProofFailedAt = now;
        } else {
          this.#lastProofFailedAt = this.#clock.now();
        }
        return result;
      });
    this.#proving = proving;
    return proving;
  }

  /** The type's RV-unset reads come often enough that a proof replaces more requests than it makes. */
  #worthProving(): boolean {
    return this.#readGap <= this.#options.maxStalenessMs * WORTH_PROVING_SHARE;
  }

  /** A proof failed lately: the next waits PROOF_RETRY_MS (a quarter of a short bound). */
  #retryPending(now: number): boolean {
    return this.#proving === undefined && now - this.#lastProofFailedAt < Math.min(PROOF_RETRY_MS, this.#options.maxStalenessMs / 4);
  }
}
