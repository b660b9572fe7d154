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
 *   and what a conflict made doubtful has been caught up with (a probe, then a brief wait);
 * - RV unset, strong: a GET goes to the apiserver; a LIST or WatchList of a type whose changes
 *   are in flight probes and is served once the cache reaches the probe's RV; a quiet type's
 *   read goes to the apiserver at once (the cache of a quiet type trails the cluster's RV, which
 *   every write of any type moves, until its next bookmark: a probe would only add a request).
 */
import type { UnsentBudget } from './unsent-budget.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { collectionPath } from '../informer/lister-watcher.ts';
import type { Clock } from '../clock/clock.ts';
import { realClock } from '../clock/clock.ts';
import type { Cacher, CacherMetrics } from './cacher.ts';
import { newCacher, noopCacherMetrics } from './cacher.ts';
import type { ConsistencyPolicy, ReadTarget, ReadYourWrites } from './consistency.ts';
import type { ConsistencyProbe } from './consistency-probe.ts';
import { newConsistencyProbe } from './consistency-probe.ts';
import type { WatchCache } from './watch-cache.ts';

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

/** Why an RV-unset read went to the apiserver (a metric label). */
export type PassReason =
  'not-watching' | 'stale' | 'own-write-pending' | 'doubted' | 'probe-failed' | 'strong-get' | 'strong-quiet' | 'strong-behind';

export interface DelegatorMetrics {
  /** One consistency probe sent upstream. */
  probe(): void;
  /** An RV-unset read answered from the cache, this many seconds after the cache last proved progress. */
  staleness(seconds: number): void;
  /** An RV-unset read passed through, and why. */
  passedThrough(reason: PassReason): void;
  /** The cacher's watch metrics. */
  readonly cacher: CacherMetrics;
}

export const noopDelegatorMetrics: DelegatorMetrics = {
  probe: () => undefined,
  staleness: () => undefined,
  passedThrough: () => undefined,
  cacher: noopCacherMetrics,
};

export interface CacheDelegator {
  readonly cache: WatchCache;
  /** The watches of the cache (made on first use). */
  cacher(): Cacher;
  /** RV-unset: resolves true when the cache may answer a read of `target` as the most recent state. */
  mostRecent(target: ReadTarget, verb: 'get' | 'list' | 'watch', signal?: AbortSignal): Promise<boolean>;
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

  constructor(cache: WatchCache, options: DelegatorOptions) {
    this.cache = cache;
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#waitMs = options.freshnessWaitMs ?? FRESHNESS_WAIT_MS;
    const { group, resource } = cache.spec;
    this.#metrics = options.metrics?.(group === '' ? resource : `${resource}.${group}`) ?? noopDelegatorMetrics;
  }

  cacher(): Cacher {
    const budget = this.#options.unsentBudget;
    this.#cacher ??= newCacher(this.cache, {
      clock: this.#clock,
      metrics: this.#metrics.cacher,
      ...(budget === undefined ? {} : { budget }),
    });
    return this.#cacher;
  }

  async notOlderThan(rv: bigint, signal?: AbortSignal): Promise<boolean> {
    return (await this.cache.waitUntilFresh(rv, this.#waitMs, signal)) !== undefined;
  }

  mostRecent(target: ReadTarget, verb: 'get' | 'list' | 'watch', signal?: AbortSignal): Promise<boolean> {
    const { group, resource } = this.cache.spec;
    return this.#options.policy.modeOf(group, resource) === 'strong' ? this.#strong(verb, signal) : this.#bounded(target, signal);
  }

  #pass(reason: PassReason): false {
    this.#metrics.passedThrough(reason);
    return false;
  }

  /** The apiserver's current RV, or undefined when it could not be had. */
  #probeNow(): Promise<bigint | undefined> {
    if (this.#probe === undefined) {
      const { group, version, resource } = this.cache.spec;
      const path = collectionPath({ group, version, resource, namespace: this.cache.namespace });
      this.#probe = newConsistencyProbe(this.#options.client, path, () => {
        this.#metrics.probe();
      });
    }
    return this.#probe.currentResourceVersion();
  }

  async #bounded(target: ReadTarget, signal: AbortSignal | undefined): Promise<boolean> {
    const { cache } = this;
    const { writes, policy } = this.#options;
    const { group, resource } = cache.spec;
    if (!cache.watching()) return this.#pass('not-watching');
    if (this.#clock.now() - cache.lastProgressAt() > policy.maxStalenessMs) return this.#pass('stale');
    const required = writes.requirement(target);
    if (required.written > (cache.resourceVersion() ?? 0n)) {
      if ((await cache.waitUntilFresh(required.written, READ_YOUR_WRITES_WAIT_MS, signal)) === undefined) {
        return this.#pass('own-write-pending');
      }
    }
    let caughtUp = required.caughtUp;
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
    return true;
  }

  async #strong(verb: 'get' | 'list' | 'watch', signal: AbortSignal | undefined): Promise<boolean> {
    const { cache } = this;
    if (verb === 'get') return this.#pass('strong-get');
    if (!cache.watching()) return this.#pass('not-watching');
    if (this.#clock.now() - cache.lastChangeAt() > IN_FLIGHT_MS) return this.#pass('strong-quiet');
    const rv = await this.#probeNow();
    if (rv === undefined) return this.#pass('probe-failed');
    if ((await cache.waitUntilFresh(rv, this.#waitMs, signal)) === undefined) return this.#pass('strong-behind');
    return true;
  }
}
