/**
 * The watch cache of one resource scope (kube-apiserver's cacher/watch_cache.go, as a view over
 * a SharedIndexInformer): the objects in key order at a known resourceVersion, snapshots of that
 * order kept for paging (ListFromCacheSnapshot), and waiting until the cache reaches an RV.
 *
 * Invariant: everything a caller reads in one synchronous turn (resourceVersion(), get(),
 * orderedList()) is the same state, the state the apiserver held at resourceVersion().
 */
import { LRUCache } from 'lru-cache';
import type { KubeObject } from '../informer/object.ts';
import type { SharedIndexInformer } from '../informer/shared-informer.ts';
import type { Clock } from '../workqueue/clock.ts';
import { realClock } from '../workqueue/clock.ts';
import type { ResourceSelectableFields } from './selectable-fields.ts';

/** A resource type served from a cache: what discovery says of it. */
export interface CachedResourceSpec {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /**
   * Served by the apiserver as unstructured objects (custom resources): lists have their keys
   * sorted and their items keep kind and apiVersion. Built-in types have typed lists.
   */
  readonly unstructured: boolean;
}

/** What a watch cache is asked for by the server: the cache of one type, for one request. */
export interface WatchCacheSource {
  /**
   * The cache that can answer reads of this type in `namespace` ('' for all namespaces or a
   * cluster-scoped type), or undefined to pass the request through (not cached, not synced yet,
   * not allowed to the proxy). Synchronous; may start a cache for later requests.
   */
  cacheFor(group: string, version: string, resource: string, namespace: string): WatchCache | undefined;
  start(): void;
  /** True when the caches the proxy was told to hold have synced (readiness). */
  synced(): boolean;
  stop(): Promise<void>;
}

export interface WatchCache {
  readonly spec: CachedResourceSpec;
  readonly fields: ResourceSelectableFields;
  /** The namespace the cache is limited to; undefined when it holds all namespaces. */
  readonly namespace: string | undefined;
  readonly informer: SharedIndexInformer;
  /** The RV the contents are exactly the state of; undefined while changes are still queued or before the first sync. */
  resourceVersion(): bigint | undefined;
  /**
   * Resolves with the cache's RV once it is at `rv` or later, or with undefined after
   * `timeoutMs` (or when `signal` aborts). Resolves in the turn the cache reaches it, so the
   * caller reads the contents at that RV.
   */
  waitUntilFresh(rv: bigint, timeoutMs: number, signal?: AbortSignal): Promise<bigint | undefined>;
  get(key: string): KubeObject | undefined;
  /** Every object at resourceVersion(), in key order (namespace/name, as etcd orders them). */
  orderedList(): readonly KubeObject[];
  /** The key-ordered objects at exactly `rv`, if that state was listed recently (a kept snapshot). */
  snapshot(rv: bigint): readonly KubeObject[] | undefined;
  /** When the cache's watch last said anything (an event, a bookmark, a list), on the cache's clock. */
  lastProgressAt(): number;
}

/**
 * How long a snapshot is kept for the pages that follow: the apiserver keeps its snapshots for
 * the event window's freshness (eventFreshDuration, 75 s), after which a continue falls back to
 * etcd, as ours falls back to the apiserver.
 */
const SNAPSHOT_TTL_MS = 75_000;
/** Distinct RVs kept: each is one array of references (8 bytes per object), not copies. */
const MAX_SNAPSHOTS = 16;

export interface WatchCacheOptions {
  readonly spec: CachedResourceSpec;
  readonly fields: ResourceSelectableFields;
  readonly informer: SharedIndexInformer;
  readonly namespace?: string | undefined;
  readonly clock?: Clock;
}

export function newWatchCache(options: WatchCacheOptions): WatchCache {
  return new WatchCacheImpl(options);
}

/** Byte order of ASCII keys (Kubernetes names and namespaces are ASCII). */
function compareKeys(a: KubeObject, b: KubeObject): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

class WatchCacheImpl implements WatchCache {
  readonly spec: CachedResourceSpec;
  readonly fields: ResourceSelectableFields;
  readonly namespace: string | undefined;
  readonly informer: SharedIndexInformer;
  readonly #clock: Clock;
  readonly #snapshots: LRUCache<bigint, readonly KubeObject[]>;
  #lastProgressAt: number;

  constructor(options: WatchCacheOptions) {
    this.spec = options.spec;
    this.fields = options.fields;
    this.namespace = options.namespace;
    this.informer = options.informer;
    this.#clock = options.clock ?? realClock;
    this.#snapshots = new LRUCache({ max: MAX_SNAPSHOTS, ttl: SNAPSHOT_TTL_MS, perf: { now: () => this.#clock.now() } });
    this.#lastProgressAt = this.#clock.now();
    this.informer.onProgress(() => {
      this.#lastProgressAt = this.#clock.now();
    });
  }

  lastProgressAt(): number {
    return this.#lastProgressAt;
  }

  resourceVersion(): bigint | undefined {
    const rv = this.informer.snapshotResourceVersion();
    return rv === undefined || !/^[0-9]+$/.test(rv) ? undefined : BigInt(rv);
  }

  waitUntilFresh(rv: bigint, timeoutMs: number, signal?: AbortSignal): Promise<bigint | undefined> {
    const now = this.resourceVersion();
    if (now !== undefined && now >= rv) return Promise.resolve(now);
    if (timeoutMs <= 0 || signal?.aborted === true) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const finish = (result: bigint | undefined): void => {
        unsubscribe();
        timer.cancel();
        signal?.removeEventListener('abort', onAbort);
        resolve(result);
      };
      const onAbort = (): void => {
        finish(undefined);
      };
      const unsubscribe = this.informer.onProgress(() => {
        const current = this.resourceVersion();
        if (current !== undefined && current >= rv) finish(current);
      });
      const timer = this.#clock.setTimeout(() => {
        finish(undefined);
      }, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  get(key: string): KubeObject | undefined {
    return this.informer.getIndexer().getByKey(key);
  }

  orderedList(): readonly KubeObject[] {
    const rv = this.resourceVersion();
    const kept = rv === undefined ? undefined : this.#snapshots.get(rv);
    if (kept !== undefined) return kept;
    // Sorted once per RV and kept: the next LIST at the same RV, and the pages of this one, reuse it.
    const ordered = this.informer.getIndexer().list().sort(compareKeys);
    if (rv !== undefined) this.#snapshots.set(rv, ordered);
    return ordered;
  }

  snapshot(rv: bigint): readonly KubeObject[] | undefined {
    if (rv === this.resourceVersion()) return this.orderedList();
    return this.#snapshots.get(rv);
  }
}
