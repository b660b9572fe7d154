/**
 * The watch cache of one resource scope (kube-apiserver's cacher/watch_cache.go): the informer's
 * only store (its direct mode: `store` below), written by the reflector in the order the apiserver
 * sent the changes (a DeltaFIFO would batch each object's changes and so reorder them across
 * objects), and read by the informer's handlers and by the server. One copy of each object. It holds the objects in key order at its resourceVersion, keeps
 * snapshots of that order for paging (ListFromCacheSnapshot), lets readers wait until it reaches
 * an RV, appends every change (with its previous state, as watchCacheEvent) to its event window,
 * and tells its listeners (the cacher and its watchers) of it.
 *
 * Invariants: everything read in one synchronous turn (resourceVersion(), get(), current())
 * is the state the apiserver held at resourceVersion(); #tree holds exactly the objects, in key
 * order; a view handed out by current() or snapshot() never changes (a persistent B-tree,
 * ordered-map.ts: O(log n) per change, O(1) per snapshot, so a LIST at an RV and the pages
 * after it never copy the cache, however busy the type).
 */
import { indexedFieldOf, newFieldIndex } from './field-index.ts';
import type { FieldIndex } from './field-index.ts';
import { LRUCache } from 'lru-cache';
import type { KubeObject } from '../informer/object.ts';
import { objectByteLength, parseResourceVersionNumber } from '../informer/object.ts';
import type { InformerStore } from '../informer/store.ts';
import type { Clock } from '../clock/clock.ts';
import { realClock } from '../clock/clock.ts';
import type { BookmarkFrames } from './bookmark.ts';
import type { EventWindow, Interval, WindowContents } from './event-window.ts';
import { newEventWindow } from './event-window.ts';
import { WindowEvent } from './window-event.ts';
import { newBookmarkFrames } from './bookmark.ts';
import type { ResourceSelectableFields } from './selectable-fields.ts';
import type { OrderedMap, OrderedView } from './ordered-map.ts';
import { newOrderedMap } from './ordered-map.ts';
import type { CachedResourceSpec } from './cached-resources.ts';
import { groupVersionString, qualifiedResource } from '../kube/group-resource.ts';
import { stderrFaults } from './faults.ts';
import type { Faults } from './faults.ts';
import type { SelectorScope } from './selector-scope.ts';

/** What the event window and the watchers are told, synchronously, in RV order. */
export interface WatchCacheListener {
  /** A change applied at event.resourceVersion (already in the window). */
  event(event: WindowEvent): void;
  /** The whole state was replaced (a relist) at `resourceVersion`: what came before is not a history of it. */
  replaced(resourceVersion: bigint): void;
  /** The RV moved without a change to this type (a bookmark). */
  progressed?(resourceVersion: bigint): void;
  /** The upstream watch closed (watching() turned false): what follows may come late. */
  disconnected?(): void;
  /** The cache is closed (its informer is stopped): nothing will follow. */
  closed?(): void;
  /** True while the listener serves someone (open watches): the cache is in use even if not read. */
  active?(): boolean;
}

export interface WatchCache {
  readonly spec: CachedResourceSpec;
  readonly fields: ResourceSelectableFields;
  /** The namespace the cache is limited to; undefined when it holds all namespaces. */
  readonly namespace: string | undefined;
  /** The selectors the cache is limited to (its upstream LIST and WATCH carry them); undefined: the whole type. */
  readonly selectors: SelectorScope | undefined;
  /** What the informer's reflector writes into and its handlers read: give it to the informer (InformerRequest.store). */
  readonly store: InformerStore;
  /** True once the first list is held (the informer's readiness). */
  hasSynced(): boolean;
  /** The RV the contents are exactly the state of; undefined before the first list. */
  resourceVersion(): bigint | undefined;
  /**
   * Resolves with the cache's RV once it is at `rv` or later, or with undefined after
   * `timeoutMs` (or when `signal` aborts).
   */
  waitUntilFresh(rv: bigint, timeoutMs: number, signal?: AbortSignal): Promise<bigint | undefined>;
  get(key: string): KubeObject | undefined;
  /**
   * Every object at resourceVersion(), in key order (namespace/name, as etcd orders them); kept
   * for the next pages. Its weight() is the objects' bytes as LIST items (listItemBytes).
   */
  current(): OrderedView<KubeObject>;
  /** The key-ordered objects at exactly `rv`, if that state was listed recently (a kept snapshot); weighed as current(). */
  snapshot(rv: bigint): OrderedView<KubeObject> | undefined;
  /**
   * The objects whose `field` is `value`, at resourceVersion(), in key order, when the cache is
   * indexed by that field (pods by spec.nodeName, field-index.ts); undefined otherwise.
   */
  indexed(field: string, value: string): OrderedView<KubeObject> | undefined;
  /**
   * When the cache last proved progress, on the cache's clock: its watch said anything (an event,
   * a bookmark, a list: as of its arrival, or, from an upstream proxy's cache, as of that cache's
   * proof: store.provenAt), or a freshness proof showed its state current (as of the moment the
   * proof asked the apiserver, proven()). Never moves backwards once the first list is held
   * (before it, the cache's creation: nothing is served then).
   */
  lastProgressAt(): number;
  /**
   * A freshness proof (freshness-proof.ts): the apiserver's state of this scope at `rv` is the
   * cache's state, as of `at` (when the proof asked). Moves the cache's RV to `rv` when that is
   * later (nothing of this scope changed in between: the watchers' bookmarks may say so) and its
   * progress time to `at` when that is later. The caller has proven that no change of this scope
   * lies between the cache's RV when the proof began and `rv`.
   */
  proven(rv: bigint, at: number): void;
  /**
   * A consistency probe's answer (freshness-proof.ts): the upstream was at `rv` as of `at`. While
   * the cache is behind `rv`, what its watch brings is late (a link that stalled delivers what it
   * held) and proves no progress; the change or bookmark that reaches `rv` proves it as of `at`,
   * not of its arrival.
   */
  upstreamAt(rv: bigint, at: number): void;
  /** When the cache last received a change of its own type (an event, not a bookmark), on the cache's clock. */
  lastChangeAt(): number;
  /**
   * True while the upstream watch is open and the cache holds the state it continues from; false
   * before the first list, while the reflector relists or backs off, and after the watch broke.
   */
  watching(): boolean;
  /** Adds a listener of every later change; returns the function that removes it. */
  addListener(listener: WatchCacheListener): () => void;
  /** A BOOKMARK watch frame at `rv` in the apiserver's shape for this type (bookmark.ts), with `rv`'s proof age if given. */
  bookmarkFrame(rv: bigint, initialEventsEnd: boolean, proofAgeMs?: number): Buffer;
  /** True while a listener is active (open watches): a cache in use is not stopped for idleness. */
  inUse(): boolean;
  /** Tells the listeners the cache is done (its informer is being stopped); watches end. */
  close(): void;
  /** True once closed: nothing it holds may be served any more (its informer no longer runs). */
  isClosed(): boolean;
  /** The window's events after `rv`, or why a watch cannot start there (410). */
  since(rv: bigint): Interval;
  /** The event window's capacity, size and oldest RV (metrics). */
  windowStats(): { readonly capacity: number; readonly size: number; readonly oldest: bigint | undefined };
  /** What the cache holds: its objects and their bytes as LIST items (O(log n)), for the memory budget. */
  held(): { readonly objects: number; readonly bytes: number };
  /** The state to save (cache-state.ts), one consistent moment of it; undefined before the first list. */
  savedState(): CacheState | undefined;
  /**
   * Holds a saved state, before the first list (the informer then resumes its watch from the
   * state's RV). The state is served as synced, but proves no freshness: the events that resume
   * it replay a past the cache cannot date, so its progress time stays unset until a bookmark, a
   * freshness proof or a relist shows it current, and RV-unset reads wait for that proof.
   */
  restore(state: CacheState): void;
}

/** A watch cache's state at one RV: its objects in key order and its event window. */
export interface CacheState {
  readonly resourceVersion: bigint;
  readonly objects: Iterable<KubeObject>;
  readonly window: WindowContents;
}

/**
 * How long a snapshot is kept for the pages that follow: the apiserver keeps its snapshots for
 * the event window's freshness (eventFreshDuration, 75 s), after which a continue falls back to
 * etcd, as ours falls back to the apiserver.
 */
const SNAPSHOT_TTL_MS = 75_000;
/**
 * Distinct RVs kept: each is a root of the persistent tree, sharing every node not changed since,
 * and pinning the versions of objects changed since (memory-budget.ts lowers it under a small limit).
 */
export const MAX_SNAPSHOTS = 16;

export interface WatchCacheOptions {
  readonly spec: CachedResourceSpec;
  readonly fields: ResourceSelectableFields;
  readonly namespace?: string | undefined;
  readonly selectors?: SelectorScope | undefined;
  readonly clock?: Clock;
  /** Snapshots kept for paging; default MAX_SNAPSHOTS. */
  readonly maxSnapshots?: number;
  /** Where a listener's failure is reported (faults.ts); default: stderr, once. */
  readonly faults?: Faults;
}

export function newWatchCache(options: WatchCacheOptions): WatchCache {
  return new WatchCacheImpl(options);
}

/** An object's RV as a number; 0 when it has none (never from the apiserver). */
function rvOf(obj: KubeObject): bigint {
  return parseResourceVersionNumber(obj.resourceVersion) ?? 0n;
}

interface Waiter {
  readonly rv: bigint;
  resolve(rv: bigint): void;
}

/**
 * An object's bytes as an item of its LIST: a typed list's items (built-in types) carry no kind
 * and apiVersion, so `{` and the stored bytes after the TypeMeta; an unstructured list's items
 * (custom resources) are whole. The store weighs each object by it, so a LIST's length is known
 * in O(log n) (ordered-map.ts weight()).
 */
export function listItemBytes(spec: CachedResourceSpec): (obj: KubeObject) => number {
  return spec.unstructured ? objectByteLength : (obj) => 1 + obj.rest.length;
}

class WatchCacheImpl implements WatchCache {
  readonly spec: CachedResourceSpec;
  readonly fields: ResourceSelectableFields;
  readonly namespace: string | undefined;
  readonly selectors: SelectorScope | undefined;
  readonly store: InformerStore;
  readonly #clock: Clock;
  readonly #snapshots: LRUCache<bigint, OrderedView<KubeObject>>;
  readonly #tree: OrderedMap<KubeObject>;
  /** The type's secondary index (pods by spec.nodeName), kept in step with #tree. */
  readonly #index: FieldIndex | undefined;
  #rv: bigint | undefined;
  #lastProgressAt: number;
  /** When what the reflector applies now was proven upstream (store.provenAt); undefined: as of its arrival. */
  #provenAt: number | undefined;
  /** The upstream's RV as of a time (upstreamAt), while the cache is behind it; undefined once it has reached it. */
  #ahead: { readonly rv: bigint; readonly at: number } | undefined;
  #lastChangeAt = Number.NEGATIVE_INFINITY;
  #watching = false;
  #synced = false;
  /** Restored from a saved state and not shown current since (restore()): events are no proof of progress. */
  #unproven = false;
  /** The reflector's next updateResourceVersion is a bookmark's (observeBookmark comes first). */
  #bookmarkNext = false;
  readonly #waiters = new Set<Waiter>();
  readonly #listeners = new Set<WatchCacheListener>();
  readonly #faults: Faults;
  #closed = false;
  readonly #bookmarks: BookmarkFrames;
  readonly #window: EventWindow;

  constructor(options: WatchCacheOptions) {
    this.spec = options.spec;
    this.fields = options.fields;
    this.namespace = options.namespace;
    this.selectors = options.selectors;
    this.#clock = options.clock ?? realClock;
    this.#faults = options.faults ?? stderrFaults;
    this.#snapshots = new LRUCache({
      max: Math.max(1, options.maxSnapshots ?? MAX_SNAPSHOTS),
      ttl: SNAPSHOT_TTL_MS,
      perf: { now: () => this.#clock.now() },
    });
    this.#lastProgressAt = this.#clock.now();
    this.#window = newEventWindow(this.#clock);
    this.#tree = newOrderedMap(listItemBytes(this.spec));
    const indexed = indexedFieldOf(this.spec);
    this.#index = indexed === undefined ? undefined : newFieldIndex(indexed);
    const { group, version, kind, unstructured } = this.spec;
    this.#bookmarks = newBookmarkFrames(kind, groupVersionString(group, version), unstructured);
    this.store = {
      getByKey: (key) => this.#tree.get(key),
      listKeys: () => Array.from(this.#tree.values(), (o) => o.key),
      list: () => this.#tree.values(),
      size: () => this.#tree.size,
      hasSynced: () => this.hasSynced(),
      observeBookmark: (object) => {
        this.#bookmarks.learn(object);
        this.#bookmarkNext = true;
      },
      add: (obj) => {
        this.#apply(obj, false);
      },
      update: (obj) => {
        this.#apply(obj, false);
      },
      delete: (obj) => {
        this.#apply(obj, true);
      },
      replace: (list, rv) => {
        this.#replace(list, rv);
      },
      updateResourceVersion: (text) => {
        const bookmark = this.#bookmarkNext;
        this.#bookmarkNext = false;
        const rv = parseResourceVersionNumber(text);
        if (rv === undefined || this.#rv === undefined || rv < this.#rv) return;
        // A bookmark comes after every event up to the apiserver's cacher's RV: it shows a
        // restored cache current; a replayed event does not.
        if (bookmark) this.#unproven = false;
        // A bookmark at the cache's own RV still proves the watch alive and the scope unchanged
        // up to the apiserver's cacher (a freshness proof may have moved the cache there first).
        this.#advance(rv, this.#progressAt(rv));
      },
      provenAt: (at) => {
        this.#provenAt = at;
      },
      watchConnected: (connected) => {
        const was = this.#watching;
        this.#watching = connected;
        if (was && !connected) this.#notify((listener) => listener.disconnected?.());
      },
    };
  }

  hasSynced(): boolean {
    return this.#synced;
  }

  resourceVersion(): bigint | undefined {
    return this.#rv;
  }

  lastProgressAt(): number {
    return this.#lastProgressAt;
  }

  lastChangeAt(): number {
    return this.#lastChangeAt;
  }

  proven(rv: bigint, at: number): void {
    if (this.#rv === undefined || this.#closed) return;
    this.#unproven = false;
    this.#advance(rv, at);
    if (this.#ahead !== undefined && rv >= this.#ahead.rv) this.#ahead = undefined;
  }

  upstreamAt(rv: bigint, at: number): void {
    if (this.#rv === undefined || this.#closed || rv <= this.#rv) return;
    if (this.#ahead === undefined || rv > this.#ahead.rv) this.#ahead = { rv, at };
  }

  savedState(): CacheState | undefined {
    const rv = this.#rv;
    if (rv === undefined || !this.#synced) return undefined;
    return { resourceVersion: rv, objects: this.#tree.snapshot().values(), window: this.#window.contents() };
  }

  restore(state: CacheState): void {
    if (this.#synced || this.#closed) throw new Error('a watch cache is restored only before its first list');
    const entries = Array.from(state.objects, (obj) => [obj.key, obj] as const);
    this.#tree.replace(entries);
    this.#index?.replace(entries.map(([, obj]) => obj));
    this.#rv = state.resourceVersion;
    this.#window.restore(state.window);
    this.#synced = true;
    this.#unproven = true;
    this.#lastProgressAt = Number.NEGATIVE_INFINITY;
    this.#release();
  }

  watching(): boolean {
    return this.#watching && !this.#closed;
  }

  bookmarkFrame(rv: bigint, initialEventsEnd: boolean, proofAgeMs?: number): Buffer {
    return this.#bookmarks.frame(rv, initialEventsEnd, proofAgeMs);
  }

  since(rv: bigint): Interval {
    return this.#window.since(rv);
  }

  inUse(): boolean {
    for (const listener of this.#listeners) if (listener.active?.() === true) return true;
    return false;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#notify((listener) => listener.closed?.());
    this.#listeners.clear();
  }

  isClosed(): boolean {
    return this.#closed;
  }

  windowStats(): { readonly capacity: number; readonly size: number; readonly oldest: bigint | undefined } {
    return { capacity: this.#window.capacity(), size: this.#window.size(), oldest: this.#window.oldestResourceVersion() };
  }

  held(): { readonly objects: number; readonly bytes: number } {
    return { objects: this.#tree.size, bytes: this.#tree.weight() };
  }

  addListener(listener: WatchCacheListener): () => void {
    if (this.#closed) {
      listener.closed?.();
      return () => undefined;
    }
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Tells every listener, each guarded: a listener's failure (a watcher's bug) must not reach the
   * reflector, which would end its watch and relist. The failure is reported (counted, logged once).
   */
  #notify(call: (listener: WatchCacheListener) => void): void {
    for (const listener of [...this.#listeners]) {
      try {
        call(listener);
      } catch (error) {
        // The listener's own failure; the others and the cache go on.
        this.#faults.report('watch-cache-listener', qualifiedResource(this.spec.group, this.spec.resource), error);
      }
    }
  }

  waitUntilFresh(rv: bigint, timeoutMs: number, signal?: AbortSignal): Promise<bigint | undefined> {
    if (this.#rv !== undefined && this.#rv >= rv) return Promise.resolve(this.#rv);
    if (timeoutMs <= 0 || signal?.aborted === true) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const finish = (result: bigint | undefined): void => {
        this.#waiters.delete(waiter);
        timer.cancel();
        signal?.removeEventListener('abort', onAbort);
        resolve(result);
      };
      const waiter: Waiter = { rv, resolve: finish };
      const onAbort = (): void => {
        finish(undefined);
      };
      const timer = this.#clock.setTimeout(() => {
        finish(undefined);
      }, timeoutMs);
      this.#waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  get(key: string): KubeObject | undefined {
    return this.#tree.get(key);
  }

  current(): OrderedView<KubeObject> {
    const view = this.#tree.snapshot();
    if (this.#rv !== undefined && !this.#snapshots.has(this.#rv)) this.#snapshots.set(this.#rv, view);
    return view;
  }

  snapshot(rv: bigint): OrderedView<KubeObject> | undefined {
    if (rv === this.#rv) return this.current();
    return this.#snapshots.get(rv);
  }

  indexed(field: string, value: string): OrderedView<KubeObject> | undefined {
    return this.#index?.field === field ? this.#index.view(value) : undefined;
  }

  /** One change from the watch, in order. Synchronous. */
  #apply(obj: KubeObject, deleted: boolean): void {
    this.#bookmarkNext = false;
    const prev = deleted ? this.#tree.delete(obj.key) : this.#tree.set(obj.key, obj);
    this.#index?.change(prev, deleted ? undefined : obj);
    const rv = rvOf(obj);
    if (this.#rv === undefined || rv > this.#rv) this.#rv = rv;
    const event = new WindowEvent({
      type: deleted ? 'DELETED' : prev === undefined ? 'ADDED' : 'MODIFIED',
      key: obj.key,
      object: obj,
      prevObject: prev,
      resourceVersion: rv,
    });
    this.#window.append(event);
    this.#lastChangeAt = this.#clock.now();
    this.#progressed();
    this.#notify((listener) => {
      listener.event(event);
    });
  }

  #replace(list: readonly KubeObject[], rv: string): void {
    this.#tree.replace(list.map((obj) => [obj.key, obj] as const));
    this.#index?.replace(list);
    this.#snapshots.clear();
    this.#rv = parseResourceVersionNumber(rv) ?? 0n;
    // The first list's proof is the cache's first: its creation time proved nothing (an upstream
    // proxy's list may be older than it).
    if (!this.#synced) this.#lastProgressAt = Number.NEGATIVE_INFINITY;
    this.#synced = true;
    this.#unproven = false;
    this.#window.reset(this.#rv);
    this.#progressed();
    const listRv = this.#rv;
    this.#notify((listener) => {
      listener.replaced(listRv);
    });
  }

  /** The scope is unchanged up to `rv` (a bookmark, a proof), as of `at`. */
  #advance(rv: bigint, at: number): void {
    const current = this.#rv;
    if (current === undefined) return;
    if (rv > current) this.#rv = rv;
    if (at > this.#lastProgressAt && !this.#unproven) this.#lastProgressAt = at;
    this.#release();
    if (rv > current) this.#notify((listener) => listener.progressed?.(rv));
  }

  /** The RV may have moved: note the time (a max) and release the readers waiting for it. */
  #progressed(): void {
    if (!this.#unproven) {
      const at = this.#progressAt(this.#rv ?? 0n);
      if (at > this.#lastProgressAt) this.#lastProgressAt = at;
    }
    this.#release();
  }

  /**
   * As of when what the reflector applies now, reaching `reached`, proves progress: its arrival,
   * or its upstream proxy's proof (never later); nothing (-Infinity) while behind what a probe
   * showed the upstream held, and no later than that probe once it is reached (upstreamAt).
   */
  #progressAt(reached: bigint): number {
    const now = this.#clock.now();
    let at = this.#provenAt === undefined ? now : Math.min(this.#provenAt, now);
    const ahead = this.#ahead;
    if (ahead !== undefined) {
      if (reached < ahead.rv) return Number.NEGATIVE_INFINITY;
      this.#ahead = undefined;
      at = Math.min(at, ahead.at);
    }
    return at;
  }

  /** Releases the readers waiting for an RV the cache has reached. */
  #release(): void {
    const rv = this.#rv;
    if (rv === undefined) return;
    for (const waiter of this.#waiters) if (rv >= waiter.rv) waiter.resolve(rv);
  }
}
