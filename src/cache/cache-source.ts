/**
 * What the rest of the proxy sees of the set of watch caches (cache-registry.ts implements it):
 * the delegator of the cache that answers a type's reads, readiness, and each cache's state for
 * /readyz and the status page. The apiserver's counterpart is the storage each resource's REST
 * store is given (one cacher per type, made at start); the proxy's are made lazily.
 */
import type { CachedKind } from './read-your-writes.ts';
import type { CacheDelegator } from './delegator.ts';
import type { HeldObjects } from '../memory/memory-budget.ts';
import type { RequestSelectors } from './selector-scope.ts';
import type { CheckResult } from './consistency-checker.ts';

/** One cache's state as /readyz reports it (the apiserver's healthz checks: name, pass or fail). */
export interface CacheCheck {
  /** `cache-<resource>[.<group>]`, plus `-<version>` or `-in-<namespace>` for a cache besides a type's own. */
  readonly name: string;
  /** Why readiness fails (a named cache not synced yet); undefined: the check passes. */
  readonly failure: string | undefined;
  /** The cache's state in words, for the verbose answer. */
  readonly state: string;
}

/** One cache's state, structured (the status page); its check is derived from it. */
export interface CacheStatus extends CacheCheck {
  /** `resource[.group]`: the `resource` label of the proxy's metrics. */
  readonly type: string;
  readonly version: string;
  /** The namespace the cache is limited to; undefined: all namespaces (or cluster-scoped). */
  readonly namespace: string | undefined;
  /** listing (not synced yet), watching, down (its reads pass through), or not cached (a named type that cannot be). */
  readonly phase: 'listing' | 'watching' | 'down' | 'not cached';
  /** Objects held (0 while listing). */
  readonly objects: number;
  /** The RV the contents are the state of; undefined before the first list. */
  readonly resourceVersion: string | undefined;
  /** Milliseconds since the upstream watch last said anything (an event, a bookmark, a list); undefined before the first list. */
  readonly heardAgoMs: number | undefined;
  /** The last consistency check (consistency-checker.ts); undefined before the first, or with checks off. */
  readonly consistency?: ConsistencyCheckStatus | undefined;
}

export interface ConsistencyCheckStatus {
  readonly result: CheckResult;
  /** The RV compared, when the check got that far. */
  readonly resourceVersion: string | undefined;
  readonly agoMs: number;
  /** The digests, the first difference, or the error. */
  readonly detail: string;
}

export interface WatchCacheSource {
  /**
   * The delegator of the cache that can answer reads of this type in `namespace` ('' for all
   * namespaces or a cluster-scoped type), or undefined to pass the request through (not cached,
   * not synced yet, not allowed to the proxy). Synchronous; may start a cache for later requests.
   * A LIST's or WATCH's `selectors` may let a selector-scoped cache answer it (the narrowest
   * that covers them, selector-scope.ts); without them (a GET), only a cache of the whole type.
   */
  cacheFor(group: string, version: string, resource: string, namespace: string, selectors?: RequestSelectors): CacheDelegator | undefined;
  /**
   * As cacheFor, but a cache that is starting (or that this call starts) is waited for until it
   * has synced, at most `waitMs` (or until `signal` aborts): a cold cache serves its first readers.
   */
  cacheWhenSynced(
    group: string,
    version: string,
    resource: string,
    namespace: string,
    waitMs: number,
    signal?: AbortSignal,
    selectors?: RequestSelectors,
  ): Promise<CacheDelegator | undefined>;
  start(): void;
  /** True when the caches the proxy was told to hold have synced (readiness). */
  synced(): boolean;
  /** One check per named type and per running cache, in name order, with each cache's state. */
  checks(): CacheStatus[];
  /** What the running caches hold together (memory-budget.ts estimates their memory from it). */
  held(): HeldObjects;
  /**
   * The kind and scope of the type when a cache of it runs (any version, namespace or selector
   * scope; listing or watching), else undefined: a write of a type no cache holds changes no read
   * the caches answer (read-your-writes learns nothing from it), and a cache started later lists
   * after the write. Never starts a cache.
   */
  cachedKind(group: string, resource: string): CachedKind | undefined;
  stop(): Promise<void>;
}
