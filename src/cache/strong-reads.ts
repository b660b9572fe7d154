/**
 * Strong consistency's RV-unset reads of one cache (consistency.ts says what the mode promises):
 * linearizable, as the apiserver's own consistent reads from its cache (KEP-2340: it reads etcd's
 * current revision, waits for its watch cache to reach it and serves from memory), and never
 * dearer than no proxy.
 *
 * - A GET, LIST or WatchList probes (batched: consistency-probe.ts; a probe reads one key, so it
 *   costs the apiserver about what one GET does, and a burst of reads of any size costs two) and
 *   is served once the cache has reached the probe's RV R: waiting up to the freshness wait while
 *   the type's changes are in flight (they are a watch delivery away), not at all when it is
 *   quiet. (The apiserver sends a consistent GET to etcd, storage/cacher/delegator.go; here the
 *   probe is the one request either way, and it serves every read that waited on it.)
 * - A quiet type's cache at C < R (RVs are the cluster's: any write of any type moves them, and
 *   a quiet type's watch says so only with its next bookmark) is proven current instead: a
 *   freshness proof from R (freshness-proof.ts: a watch from C shows that nothing of the type
 *   changed in (C, R]) moves the cache to the apiserver's RV, and the reads after it that probe
 *   the same RV are the cache's. While the cache is known behind (a probe showed C < R and
 *   nothing has moved C since), a GET or LIST goes to the apiserver without probing: one request,
 *   as without the proxy. A WatchList (an informer starting) probes and waits for a proof
 *   instead, up to PROOF_READ_WAIT_MS, whatever the gap below and whether the type is quiet or
 *   not: passed through, its watch would stay at the apiserver for its whole timeout.
 *
 * What a proof costs is paid back or backed off. A proof for GETs and LISTs (a watch from C,
 * which ends in about a second) starts as soon as a read finds the cache behind while the proofs
 * pay: a read was served from the cache since the last one ended, or only that one served none
 * (a write elsewhere while it ran, as the apiserver's own lease and identity writes come in
 * pairs). Each further proof in a row that serves no read (the cluster's RV outruns the reads: a
 * busy cluster) waits a gap after the last one ended, MIN_PROOF_GAP_MS doubled each time, up to
 * the staleness bound. In a cluster whose RV moves faster than its reads come,
 * strong reads cost a probe and a short watch per bound beside what they would cost without the
 * proxy.
 */
import type { Clock } from '../clock/clock.ts';
import { within } from '../clock/clock.ts';
import type { ConsistencyProbe } from './consistency-probe.ts';
import type { ReadYourWrites } from './read-your-writes.ts';
import { IN_FLIGHT_MS } from './consistency.ts';
import type { FreshnessKeeper } from './freshness-keeper.ts';
import type { ConsistentRead } from './freshness-proof.ts';
import { PROOF_READ_WAIT_MS } from './freshness-keeper.ts';
import type { ConsistencyReason } from './pass-reason.ts';
import type { WatchCache } from './watch-cache.ts';

/** The gap after the second proof in a row that served no read; doubled by each one after it. */
export const MIN_PROOF_GAP_MS = 1_000;

export interface StrongReadsOptions {
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly keeper: FreshnessKeeper;
  readonly probe: () => ConsistencyProbe;
  readonly writes: ReadYourWrites;
  /** How long a read of a type with changes in flight waits for the cache to reach the probe's RV. */
  readonly freshnessWaitMs: number;
  /** The staleness bound: the longest gap between proofs that serve no read. */
  readonly maxStalenessMs: number;
}

export type StrongDecision = 'cache' | ConsistencyReason;

export class StrongReads {
  readonly #options: StrongReadsOptions;
  /** The cache's RV when a probe last showed it behind the apiserver; while it is still there, LISTs pass without probing. */
  #behindAt: bigint | undefined;
  /** When the last proof ended (+∞ while one runs). */
  #lastProofEnd = Number.NEGATIVE_INFINITY;
  /** Proofs ended in a row with no read served from the cache after them. */
  #unpaid = 0;

  constructor(options: StrongReadsOptions) {
    this.#options = options;
  }

  async decide(verb: 'get' | 'list' | 'watch', signal: AbortSignal | undefined): Promise<StrongDecision> {
    const { cache, clock } = this.#options;
    if (!cache.watching()) return 'not-watching';
    const quiet = clock.now() - cache.lastChangeAt() > IN_FLIGHT_MS;
    if (quiet && this.#behindAt !== undefined && this.#behindAt === cache.resourceVersion() && verb !== 'watch') {
      if (this.#proofDue()) void this.#prove(undefined);
      return verb === 'get' ? 'strong-get' : 'strong-quiet';
    }
    const askedAt = clock.now();
    const sequence = this.#options.writes.sequence();
    const answer = await this.#options.probe().current();
    if (answer === undefined) return 'probe-failed';
    const rv = answer.resourceVersion;
    if (
      quiet ? (cache.resourceVersion() ?? 0n) >= rv : (await cache.waitUntilFresh(rv, this.#options.freshnessWaitMs, signal)) !== undefined
    )
      return this.#served();
    // An upstream proxy's answer was current only as of its proof (protocol/proof-age.ts).
    const known = { resourceVersion: rv, askedAt: askedAt - answer.proofAgeMs, sequence };
    if (verb !== 'watch') {
      if (!quiet) return 'strong-behind';
      this.#behindAt = cache.resourceVersion();
      if (this.#proofDue()) void this.#prove(known);
      return verb === 'get' ? 'strong-get' : 'strong-quiet';
    }
    await within(clock, this.#prove(known), PROOF_READ_WAIT_MS, signal);
    if (!cache.watching() || (cache.resourceVersion() ?? 0n) < rv) return 'strong-quiet';
    return this.#served();
  }

  #served(): 'cache' {
    this.#unpaid = 0;
    return 'cache';
  }

  #proofDue(): boolean {
    const gap = this.#unpaid <= 1 ? 0 : Math.min(MIN_PROOF_GAP_MS * 2 ** (this.#unpaid - 2), this.#options.maxStalenessMs);
    return !this.#options.keeper.proving() && this.#options.clock.now() >= this.#lastProofEnd + gap;
  }

  /** Runs a proof (from `known`, a probe just had), or joins the one running; schedules the next. */
  #prove(known: ConsistentRead | undefined): Promise<unknown> {
    const { keeper, clock } = this.#options;
    if (keeper.proving()) return keeper.prove();
    this.#lastProofEnd = Number.POSITIVE_INFINITY;
    return keeper.prove(known).then(() => {
      this.#lastProofEnd = clock.now();
      this.#unpaid++;
    });
  }
}
