/**
 * The cache delegator of one watch cache (kube-apiserver's storage/cacher/delegator.go): it
 * decides whether a read may be answered by the cache or must go to the apiserver, and owns what
 * serving needs beside the cache: the cacher (watches) and the consistency probe. The server
 * asks it before every read it would answer from the cache (decideRead, decideWatch); the answer
 * is the state to read (ReadPlan, served by the cacher) or the reason to pass the read through
 * (pass-reason.ts). Nothing here writes a response.
 *
 * The resourceVersion rules (delegator.go shouldDelegateList, watch_cache.go waitUntilFreshAndList):
 * - "0" (any): the cache as it is; LIST ignores `limit` and returns everything.
 * - N, NotOlderThan (or a LIST without limit, or a GET): once the cache is at N or later. The
 *   cache waits briefly; past that the apiserver decides (it can see newer state than the
 *   cache's watch has reported, and answers 200 or its own 504 ResourceVersionTooLarge).
 * - N with limit and no match, Exact N, and `continue` (Exact at the token's RV): from the
 *   snapshot kept of the cache at exactly N, else passed through (etcd serves it, or says 410).
 *   Once the apiserver has said 410 for N, the cache gives its 410 (etcd3/errors.go, the same
 *   bytes) for N and every older RV it keeps no snapshot of: etcd's compaction and the
 *   apiserver's watch-cache window only move forward, so the answer could not change, and a
 *   client repeating such a read (an expired continue token, in a loop) costs the apiserver
 *   nothing more. With several apiservers behind one address, one may still keep a snapshot
 *   another has let go of; the 410 is one of the answers the client could have had.
 * - unset (most recent): as the type's consistency mode says (below).
 * - a WATCH from "" with sendInitialEvents: the most recent state, as a read; from N with
 *   sendInitialEvents=true: the cache at N or later; from N older than the cache's event window,
 *   even one the cache began after (a proxy restarted): the cache's 410, as the apiserver answers
 *   after its own restart (its watch cache starts at its first list, cacher.go), and the
 *   client's relist is the cache's to serve. Passed through instead, such a watch would stay at
 *   the apiserver for its whole timeout (5 to 10 min for client-go), beside the cache's own.
 *
 * The consistency rules for RV-unset reads (consistency.ts says what each mode promises):
 * - RV=N, not older than: the cache once it has reached N, waiting up to FRESHNESS_WAIT_MS;
 * - RV unset, bounded: the upstream watch is open and proved progress within the bound, the
 *   proxy's own writes of the type are in the cache (waiting up to READ_YOUR_WRITES_WAIT_MS; a
 *   selector-scoped cache, whose scope may not hold the write, waits SCOPED_WRITE_WAIT_MS and
 *   then for a freshness proof; a written RV still not reached is checked against a probe of the
 *   apiserver's RV, and forgotten when past it),
 *   and what a conflict made doubtful has been caught up with (a probe, then a brief wait, while
 *   the type's changes are in flight; a quiet type's doubted GET or LIST goes to the apiserver
 *   at once, as a probe could only add a request to it, and the next freshness proof settles the
 *   doubt; its doubted WatchList waits for that proof). A doubted LIST of at most
 *   SMALL_LIST_OBJECTS goes to the apiserver at once, busy type or quiet, and its answer's RV
 *   settles the doubt as a probe's would: the LIST is its own probe; so is a GET of an object
 *   whose doubts all name it (a conflict on it), settled by the object's RV in the answer;
 * - RV unset, strong (strong-reads.ts): a GET goes to the apiserver; a LIST or WatchList probes
 *   and is served once the cache reaches the probe's RV; a quiet type's cache behind it is
 *   proven current by a freshness proof from that RV (its LISTs go to the apiserver meanwhile,
 *   its WatchLists wait for the proof).
 *
 * Freshness (bounded mode): the delegator's freshness keeper (freshness-keeper.ts) proves a quiet
 * cache fresh for its RV-unset readers, before the bound when they read often enough to pay for
 * the proof, and makes the reads that find it past the bound wait for one shared proof, never all
 * go upstream at once; a type read more rarely has such a read passed through. Watchers'
 * bookmarks carry the cache's RV as it is.
 */
import type { UnsentBudget } from '../memory/unsent-budget.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { Clock } from '../clock/clock.ts';
import { realClock, within } from '../clock/clock.ts';
import { FreshnessKeeper, PROOF_READ_WAIT_MS } from './freshness-keeper.ts';
import type { ProofOutcome } from './freshness-keeper.ts';
import type { Cacher, CacherMetrics, ReadPlan } from './cacher.ts';
import { listKeyOf, namespaceRange, newCacher, noopCacherMetrics, selectionOf } from './cacher.ts';
import type { ListOptions } from '../request/list-options.ts';
import type { DecodedContinue } from '../request/continue-token.ts';
import { ContinueTokenError, decodeContinue, encodeContinue } from '../request/continue-token.ts';
import type { StatusError } from '../kube/status.ts';
import { EXPIRED_LIST_MESSAGE, expired, expiredContinue } from '../kube/status.ts';
import type { ConsistencyPolicy } from './consistency.ts';
import type { ReadTarget, ReadYourWrites } from './read-your-writes.ts';
import { IN_FLIGHT_MS, proofAgeMs } from './consistency.ts';
import { StrongReads } from './strong-reads.ts';
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
 * A selector-scoped cache's wait for the proxy's own write before it asks for a freshness proof
 * instead: the write may be outside the scope (another node's pod), and then no event of it ever
 * comes; an in-scope write's event is a watch delivery away.
 */
export const SCOPED_WRITE_WAIT_MS = 250;
/**
 * A doubted LIST of at most this many objects goes to the apiserver rather than probing: a
 * consistent LIST of a few hundred objects costs the apiserver little more than the probe (both
 * read etcd's revision and wait for its cache; client-go pages at 500), and it waits for nothing.
 * A larger one probes, and the cache answers it.
 */
export const SMALL_LIST_OBJECTS = 500;
/** A read decision: 'cache' (the cache answers), or why the read goes to the apiserver (pass-reason.ts). */
export type Decision<Reason extends PassReason = PassReason> = 'cache' | Reason;

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

/** A GET or LIST as the delegator decides it: the request's scope and its decoded options. */
export interface ReadRequest {
  readonly verb: 'get' | 'list';
  /** '' for all namespaces (or a cluster-scoped type). */
  readonly namespace: string;
  /** '' for a LIST. */
  readonly name: string;
  readonly options: ListOptions;
}

export interface CacheDelegator {
  readonly cache: WatchCache;
  /** The watches of the cache (made on first use). */
  cacher(): Cacher;
  /**
   * Which state a GET or LIST reads (waiting as the rules say), why it goes to the apiserver, or
   * the apiserver's own answer when the cache knows it (an exact RV the apiserver has already
   * said it no longer keeps: observeExactList).
   */
  decideRead(read: ReadRequest, signal?: AbortSignal): Promise<ReadPlan | PassReason | StatusError>;
  /**
   * For a LIST about to be passed through: when it reads an exact RV (Exact, a limit with an RV,
   * a continue token), what to tell its answer's status code; else undefined. A 410 says the
   * apiserver keeps no state at that RV, nor (compaction and its watch cache's window only move
   * forward) at any older one: the cache answers such reads itself from then on.
   */
  observeExactList(read: ReadRequest): ((statusCode: number) => void) | undefined;
  /** Whether a WATCH (its selectors already parsed) starts from the cache: 'cache', or why not. */
  decideWatch(namespace: string, options: ListOptions, signal?: AbortSignal): Promise<Decision>;
  /** RV-unset: 'cache' when the cache may answer a read of `target` as the most recent state, else why not. */
  mostRecent(target: ReadTarget, verb: 'get' | 'list' | 'watch', signal?: AbortSignal): Promise<Decision<ConsistencyReason>>;
  /** RV=N, not older than: resolves true once the cache is at `rv` or later. */
  notOlderThan(rv: bigint, signal?: AbortSignal): Promise<boolean>;
  /** Runs a freshness proof (or joins the one running): a quiet cache moves to the apiserver's RV. */
  proveCurrent(): Promise<unknown>;
  /** How old the cache's proof of freshness is now (consistency.ts proofAgeMs): what its answers tell a proxy in front. */
  proofAgeMs(): number;
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
  readonly #keeper: FreshnessKeeper;
  readonly #strongReads: StrongReads;
  /** The highest exact RV of a LIST the apiserver answered 410 (0: none yet). */
  #expiredThrough = 0n;

  constructor(cache: WatchCache, options: DelegatorOptions) {
    this.cache = cache;
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#waitMs = options.freshnessWaitMs ?? FRESHNESS_WAIT_MS;
    const { group, resource } = cache.spec;
    this.#metrics = options.metrics?.(qualifiedResource(group, resource)) ?? noopDelegatorMetrics;
    this.#keeper = new FreshnessKeeper({
      cache,
      client: options.client,
      writes: options.writes,
      maxStalenessMs: options.policy.maxStalenessMs,
      clock: this.#clock,
      probe: () => this.#consistencyProbe(),
      proved: (outcome) => {
        this.#metrics.proof(outcome);
      },
    });
    this.#strongReads = new StrongReads({
      cache,
      clock: this.#clock,
      keeper: this.#keeper,
      probe: () => this.#consistencyProbe(),
      writes: options.writes,
      freshnessWaitMs: this.#waitMs,
      maxStalenessMs: options.policy.maxStalenessMs,
    });
  }

  cacher(): Cacher {
    const { unsentBudget: budget, faults } = this.#options;
    this.#cacher ??= newCacher(this.cache, {
      clock: this.#clock,
      metrics: this.#metrics.cacher,
      ...(budget === undefined ? {} : { budget }),
      ...(faults === undefined ? {} : { faults }),
    });
    return this.#cacher;
  }

  proofAgeMs(): number {
    return proofAgeMs(this.cache, this.#clock.now());
  }

  async decideRead(read: ReadRequest, signal?: AbortSignal): Promise<ReadPlan | PassReason | StatusError> {
    const plan = readPlan(read, this.cache);
    if (typeof plan === 'string') return plan;
    if (plan.kind === 'exact') {
      // A state the cache no longer keeps is never kept again (its snapshots only move forward).
      // The apiserver parses the selectors first: a bad one is its 400, never this 410.
      if (plan.rv <= this.#expiredThrough && this.cache.snapshot(plan.rv) === undefined) {
        const selection = selectionOf(this.cache, read.namespace, read.options);
        return typeof selection === 'string' ? selection : expiredList(read, plan, this.cache);
      }
    } else if (plan.kind === 'consistent') {
      const decision = await this.mostRecent(readTarget(this.cache, read.namespace, read.name), read.verb, signal);
      if (decision !== 'cache') return decision;
    } else if (!(await this.notOlderThan(plan.minRv, signal))) return 'rv-not-reached';
    return plan;
  }

  observeExactList(read: ReadRequest): ((statusCode: number) => void) | undefined {
    if (read.verb !== 'list') return undefined;
    const plan = readPlan(read, this.cache);
    if (typeof plan === 'string' || plan.kind !== 'exact') return undefined;
    return (statusCode) => {
      if (statusCode === 410 && plan.rv > this.#expiredThrough) this.#expiredThrough = plan.rv;
    };
  }

  async decideWatch(namespace: string, options: ListOptions, signal?: AbortSignal): Promise<Decision> {
    const rv = options.resourceVersion;
    if (rv === '') {
      // Most recent state, except for the legacy watch the defaulting left alone: from any state
      // (getWatchCacheResourceVersion's "legacy case").
      if (options.sendInitialEvents !== undefined) return this.mostRecent(readTarget(this.cache, namespace, ''), 'watch', signal);
      return 'cache';
    }
    if (rv === '0') return 'cache';
    if (!DECIMAL_RV.test(rv)) return 'bad-resource-version';
    const from = BigInt(rv);
    // A WatchList from N needs the state at N or later; a plain watch from N waits for it itself.
    if (options.sendInitialEvents === true && !(await this.notOlderThan(from))) return 'rv-not-reached';
    return 'cache';
  }

  proveCurrent(): Promise<unknown> {
    return this.#keeper.prove();
  }

  async notOlderThan(rv: bigint, signal?: AbortSignal): Promise<boolean> {
    return (await this.cache.waitUntilFresh(rv, this.#waitMs, signal)) !== undefined;
  }

  mostRecent(target: ReadTarget, verb: 'get' | 'list' | 'watch', signal?: AbortSignal): Promise<Decision<ConsistencyReason>> {
    const { group, resource } = this.cache.spec;
    return this.#options.policy.modeOf(group, resource) === 'strong' ? this.#strong(verb, signal) : this.#bounded(target, verb, signal);
  }

  #pass(reason: ConsistencyReason): ConsistencyReason {
    this.#metrics.passedThrough(reason);
    return reason;
  }

  /** The cache's consistency probe (made on first use). */
  #consistencyProbe(): ConsistencyProbe {
    if (this.#probe === undefined) {
      const { group, version, resource, namespaced } = this.cache.spec;
      this.#probe = newConsistencyProbe(
        this.#options.client,
        { group, version, resource, namespace: this.cache.namespace, namespaced },
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

  async #bounded(
    target: ReadTarget,
    verb: 'get' | 'list' | 'watch',
    signal: AbortSignal | undefined,
  ): Promise<Decision<ConsistencyReason>> {
    const { cache } = this;
    const { writes } = this.#options;
    const { group, resource } = cache.spec;
    if (!cache.watching()) return this.#pass('not-watching');
    this.#keeper.read();
    if (!(await this.#keeper.withinBound(verb === 'watch', signal))) return this.#pass('stale');
    const required = writes.requirement(target);
    if (required.written > (cache.resourceVersion() ?? 0n) && !(await this.#ownWriteSeen(required.written, signal))) {
      // Never wait on an RV the upstream cannot have: past the apiserver's current RV (a probe,
      // batched with any other of the type's), the written RV is forgotten and the next reads
      // do not wait for it.
      const upstream = await this.#probeNow();
      if (upstream !== undefined && required.written > upstream) writes.unreachable(group, resource, upstream);
      return this.#pass('own-write-pending');
    }
    let { caughtUp, probe } = required;
    if ((probe || caughtUp > (cache.resourceVersion() ?? 0n)) && this.#clock.now() - cache.lastChangeAt() > IN_FLIGHT_MS) {
      // The cache is doubted, and its type quiet: it cannot show it caught up without a proof.
      // A GET or LIST goes to the apiserver now, as it would without the proxy (the next proof a
      // reader asks for settles the doubt). A WatchList waits for one: passed through, an
      // informer's watch would stay at the apiserver for its whole timeout.
      if (verb !== 'watch') return this.#pass('doubted-quiet');
      await within(this.#clock, this.#keeper.prove(), PROOF_READ_WAIT_MS, signal);
      ({ caughtUp, probe } = writes.requirement(target));
      if (probe || caughtUp > (cache.resourceVersion() ?? 0n)) return this.#pass('doubted-quiet');
    }
    if (probe) {
      // A small doubted LIST is its own probe: passed through at once, its answer's RV settles
      // the doubt (the server's observeRead), for the one request a probe would cost, and no wait.
      // So is a GET of an object doubted alone: its answer is the object at its RV. A read whose
      // answer could not settle the doubt (a 404, a custom resource's list in JSON) leaves it to a probe.
      if (!required.probeOnly) {
        if (verb === 'list' && this.#listSize(target.namespace) <= SMALL_LIST_OBJECTS) return this.#pass('doubted');
        if (verb === 'get' && required.objectOnly) return this.#pass('doubted');
      }
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
    // Never infinite here (a cache with no proof yet is not served as most recent), but a +Inf
    // observation would stay in the histogram's sum for good.
    const heard = cache.lastProgressAt();
    if (Number.isFinite(heard)) this.#metrics.staleness(Math.max(0, this.#clock.now() - heard) / 1000);
    return 'cache';
  }

  /** How many objects a LIST of `namespace` ('' for all) reads from the cache, before selectors. */
  #listSize(namespace: string): number {
    const { start, end } = namespaceRange(this.cache.current(), this.cache, namespace);
    return end - start;
  }

  /**
   * Whether the cache has reached the proxy's own write at `written`, waiting for its event. A
   * selector-scoped cache waits briefly, then for a freshness proof (shared with every read that
   * waits): proven, the cache holds the scope's state at the apiserver's RV after the write,
   * whether or not the write was in the scope; its RV moves past the write, so the next reads do
   * not wait again.
   */
  async #ownWriteSeen(written: bigint, signal: AbortSignal | undefined): Promise<boolean> {
    const { cache } = this;
    if (cache.selectors === undefined) return (await cache.waitUntilFresh(written, READ_YOUR_WRITES_WAIT_MS, signal)) !== undefined;
    if ((await cache.waitUntilFresh(written, SCOPED_WRITE_WAIT_MS, signal)) !== undefined) return true;
    await within(this.#clock, this.#keeper.prove(), PROOF_READ_WAIT_MS, signal);
    return (cache.resourceVersion() ?? 0n) >= written;
  }

  async #strong(verb: 'get' | 'list' | 'watch', signal: AbortSignal | undefined): Promise<Decision<ConsistencyReason>> {
    const decision = await this.#strongReads.decide(verb, signal);
    return decision === 'cache' ? decision : this.#pass(decision);
  }
}

/** A resourceVersion the apiserver parses as an RV (APIObjectVersioner: a uint64 in decimal, no sign, no leading zero). */
const DECIMAL_RV = /^[1-9][0-9]{0,18}$/;

/**
 * The apiserver's 410 for an exact-RV LIST at a compacted revision (etcd3/errors.go
 * interpretListError): a continue token's carries a token at rv -1 that goes on from the same key
 * at the latest RV (handleCompactedErrorForPaging); an Exact RV's says the list is too old.
 */
function expiredList(read: ReadRequest, plan: ReadPlan & { kind: 'exact' }, cache: WatchCache): StatusError {
  if (plan.from === undefined) return expired(EXPIRED_LIST_MESSAGE);
  return expiredContinue(encodeContinue(plan.from.fromKey, `${listKeyOf(cache, read.namespace)}/`, -1));
}

/** What a read covers, for read-your-writes. */
function readTarget(cache: WatchCache, namespace: string, name: string): ReadTarget {
  return { group: cache.spec.group, resource: cache.spec.resource, namespace: cache.spec.namespaced ? namespace : '', name };
}

/** Which state the request reads, or why it is passed through (see the file comment). */
function readPlan(read: ReadRequest, cache: WatchCache): ReadPlan | PassReason {
  const { options } = read;
  const rv = options.resourceVersion;
  if (rv !== '' && rv !== '0' && !DECIMAL_RV.test(rv)) return 'bad-resource-version';
  if (read.verb === 'get') {
    if (rv === '') return { kind: 'consistent' };
    return { kind: 'latest', minRv: BigInt(rv) };
  }
  if (options.continue !== '') {
    let from: DecodedContinue;
    try {
      from = decodeContinue(options.continue, `${listKeyOf(cache, read.namespace)}/`);
    } catch (error) {
      if (error instanceof ContinueTokenError) return 'bad-continue';
      throw error;
    }
    if ((rv !== '' && rv !== '0') || from.resourceVersion <= 0) return 'continue-with-resource-version';
    return { kind: 'exact', rv: BigInt(from.resourceVersion), from };
  }
  if (rv === '') return { kind: 'consistent' };
  if (rv === '0') return { kind: 'latest', minRv: 0n };
  const exact = options.resourceVersionMatch === 'Exact' || (options.resourceVersionMatch === '' && options.limit > 0);
  return exact ? { kind: 'exact', rv: BigInt(rv), from: undefined } : { kind: 'latest', minRv: BigInt(rv) };
}
