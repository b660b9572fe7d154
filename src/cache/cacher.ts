/**
 * The watches of one watch cache (kube-apiserver's cacher/cacher.go): the event window, the
 * watchers, and the dispatch of each change to the watchers that can see it. One upstream watch
 * (the informer's) feeds any number of client watches.
 *
 * Dispatch is indexed by namespace: a change in namespace A is offered to A's watchers and to
 * the all-namespaces ones only, so watchers of namespace B cost it nothing. Each event's bytes
 * are built once (WindowEvent) and the same Buffer is written to every watcher.
 *
 * Invariants: a watcher is registered in the same synchronous turn its initial state or replay
 * is read, so it misses no change and sees none twice; watchers receive changes in RV order.
 */
import type { Writable } from 'node:stream';
import type { Clock } from '../workqueue/clock.ts';
import { realClock } from '../workqueue/clock.ts';
import type { CloseReason, WatcherFilter } from './cache-watcher.ts';
import { CacheWatcher } from './cache-watcher.ts';
import type { WatchCache } from './watch-cache.ts';
import type { WindowEvent } from './window-event.ts';
import { watchFrame } from './window-event.ts';

export interface CacherMetrics {
  watchers(count: number): void;
  sent(bytes: number): void;
  events(count: number): void;
  closedSlow(): void;
  window(capacity: number, size: number, oldest: bigint | undefined): void;
}

export const noopCacherMetrics: CacherMetrics = {
  watchers: () => undefined,
  sent: () => undefined,
  events: () => undefined,
  closedSlow: () => undefined,
  window: () => undefined,
};

export interface WatchRequest {
  readonly sink: Writable;
  readonly filter: WatcherFilter;
  /** As sent: '' (most recent, already made fresh by the caller), '0' (any) or N. */
  readonly resourceVersion: string;
  /** After the apiserver's defaulting: true for a WatchList (and for RV ''/'0' without it). */
  readonly sendInitialEvents: boolean | undefined;
  readonly allowWatchBookmarks: boolean;
  /** How long the watch lasts (timeoutSeconds, or the apiserver's random default). */
  readonly timeoutMs: number;
}

/** How a watch starts: a watcher, or one ERROR event on a 200 stream (newErrWatcher). */
export type WatchStart = { readonly kind: 'started'; readonly watcher: CacheWatcher } | { readonly kind: 'error'; readonly frame: Buffer };

export interface Cacher {
  /** Registers a watcher, synchronously with reading its initial events. */
  watch(request: WatchRequest): WatchStart;
  watcherCount(): number;
  /** Ends every watch (their clients re-watch) and stops listening to the cache. */
  stop(): void;
}

export interface CacherOptions {
  readonly clock?: Clock;
  readonly metrics?: CacherMetrics;
}

/** errors.NewResourceExpired("too old resource version: %d (%d)") as an ERROR event's object. */
export function tooOldFrame(requested: bigint, oldest: bigint): Buffer {
  const message = `too old resource version: ${String(requested)} (${String(oldest)})`;
  const status = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":${JSON.stringify(message)},"reason":"Expired","code":410}`;
  return watchFrame('ERROR', Buffer.from(status));
}

export function newCacher(cache: WatchCache, options: CacherOptions = {}): Cacher {
  const clock = options.clock ?? realClock;
  const metrics = options.metrics ?? noopCacherMetrics;
  /** Watchers by namespace; '' holds the all-namespaces (and cluster-scoped) ones. */
  const byNamespace = new Map<string, Set<CacheWatcher>>();
  let count = 0;

  const reportWindow = (): void => {
    const stats = cache.windowStats();
    metrics.window(stats.capacity, stats.size, stats.oldest);
  };
  const remove = (watcher: CacheWatcher, reason: CloseReason): void => {
    const set = byNamespace.get(watcher.filter.namespace);
    if (set?.delete(watcher) === true) {
      count--;
      if (set.size === 0) byNamespace.delete(watcher.filter.namespace);
      metrics.watchers(count);
    }
    if (reason === 'slow') metrics.closedSlow();
  };
  const dispatch = (set: Set<CacheWatcher> | undefined, event: WindowEvent): void => {
    if (set === undefined) return;
    for (const watcher of set) watcher.deliver(event);
  };
  const terminateAll = (): void => {
    for (const set of [...byNamespace.values()]) for (const watcher of [...set]) watcher.terminate();
  };

  const stopListening = cache.addListener({
    event(event) {
      metrics.events(1);
      reportWindow();
      const namespace = event.object.namespace;
      if (namespace !== '') dispatch(byNamespace.get(namespace), event);
      dispatch(byNamespace.get(''), event);
    },
    replaced() {
      // startCaching after a relist: every watcher is ended (the window restarts at the list).
      reportWindow();
      terminateAll();
    },
    progressed() {
      // Bookmarks read the cache's RV when they are due (cache-watcher.ts).
    },
  });

  return {
    watch(request) {
      const current = cache.resourceVersion() ?? 0n;
      let initial: ConstructorParameters<typeof CacheWatcher>[0]['initial'];
      // getAllEventsSinceLocked: initial events for a WatchList, and for the legacy watch from
      // RV ""/"0" that the defaulting left alone (a /watch/ path).
      const legacyFromAny = request.sendInitialEvents === undefined && (request.resourceVersion === '' || request.resourceVersion === '0');
      if (request.sendInitialEvents === true || legacyFromAny) {
        initial = {
          kind: 'state',
          objects: cache.orderedList(),
          resourceVersion: current,
          endBookmark: request.sendInitialEvents === true && request.allowWatchBookmarks,
        };
      } else if (request.resourceVersion === '' || request.resourceVersion === '0') {
        // sendInitialEvents=false: from now on (from the caller's fresh RV, or any).
        initial = { kind: 'replay', events: [], resourceVersion: current };
      } else {
        const from = BigInt(request.resourceVersion);
        const interval = cache.since(from);
        if (interval.kind === 'too-old') return { kind: 'error', frame: tooOldFrame(interval.requested, interval.oldest) };
        initial = { kind: 'replay', events: interval.events, resourceVersion: from };
      }
      const watcher = new CacheWatcher({
        sink: request.sink,
        filter: request.filter,
        initial,
        allowWatchBookmarks: request.allowWatchBookmarks,
        deadline: clock.now() + request.timeoutMs,
        currentResourceVersion: () => cache.resourceVersion() ?? 0n,
        bookmark: (rv, end) => cache.bookmarkFrame(rv, end),
        clock,
        onClose: remove,
        onSent: (bytes) => {
          metrics.sent(bytes);
        },
      });
      if (watcher.closed) return { kind: 'started', watcher };
      let set = byNamespace.get(request.filter.namespace);
      if (set === undefined) byNamespace.set(request.filter.namespace, (set = new Set()));
      set.add(watcher);
      count++;
      metrics.watchers(count);
      return { kind: 'started', watcher };
    },
    watcherCount: () => count,
    stop() {
      stopListening();
      terminateAll();
    },
  };
}
