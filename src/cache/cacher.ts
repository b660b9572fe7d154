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
import { fieldValue } from '../informer/object.ts';
import { indexedFieldOf } from './field-index.ts';
import type { UnsentBudget } from './unsent-budget.ts';
import type { Writable } from 'node:stream';
import type { Clock } from '../clock/clock.ts';
import { realClock } from '../clock/clock.ts';
import type { CloseReason, WatcherFilter } from './cache-watcher.ts';
import { CacheWatcher } from './cache-watcher.ts';
import type { WatchCache } from './watch-cache.ts';
import type { WatchRepresentation, WatchEncoding, WindowEvent } from './window-event.ts';
import { stderrFaults } from './faults.ts';
import type { Faults } from './faults.ts';
import { qualifiedResource } from '../kube/group-resource.ts';

export interface CacherMetrics {
  /** +1 when a watcher starts, -1 when it ends (several caches of one type share the series). */
  watchers(delta: number): void;
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
  /** The connection's framing, written by the watcher (CacheWatcherOptions.encoding). */
  readonly encoding?: WatchEncoding;
  /** Objects rendered otherwise than as stored (CacheWatcherOptions.representation). */
  readonly representation?: WatchRepresentation;
}

/**
 * How a watch starts: a watcher; or an RV older than the window (the server answers it with one
 * ERROR event on a 200 stream, newErrWatcher); or a cache already closed (the request goes to
 * the apiserver).
 */
export type WatchStart =
  | { readonly kind: 'started'; readonly watcher: CacheWatcher }
  | { readonly kind: 'too-old'; readonly requested: bigint; readonly oldest: bigint }
  | { readonly kind: 'closed' };

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
  /** The proxy-wide bound on watchers' unsent bytes (shared by every cacher). */
  readonly budget?: UnsentBudget;
  /** The cache proven fresh before a bookmark (CacheWatcherOptions.freshen); none: as it is. */
  readonly freshen?: (waitMs: number) => Promise<void>;
  /** Where a watcher's failure to take an event is reported (faults.ts); default: stderr, once. */
  readonly faults?: Faults;
}

/** Bucket key separators: no name or value contains a NUL or a SOH. */
const NO_TRIGGER = '\u0001';
const TRIGGER = '\u0000';

export function newCacher(cache: WatchCache, options: CacherOptions = {}): Cacher {
  const clock = options.clock ?? realClock;
  const metrics = options.metrics ?? noopCacherMetrics;
  const faults = options.faults ?? stderrFaults;
  const resource = qualifiedResource(cache.spec.group, cache.spec.resource);
  /**
   * Watchers by bucket: namespace ('' for all namespaces and cluster-scoped types), then the
   * trigger field's value when the watcher selects one exactly (pods by spec.nodeName: a
   * kubelet's watch costs nothing for the other nodes' pods), else no trigger.
   */
  const buckets = new Map<string, Set<CacheWatcher>>();
  // The watchers' trigger is the cache's index field (the apiserver's indexedTrigger).
  const trigger = indexedFieldOf(cache.spec);
  const bucketOf = (filter: WatcherFilter): string => {
    const value = trigger === undefined ? undefined : filter.fields.requiresExactMatch(trigger);
    return value === undefined ? `${filter.namespace}${NO_TRIGGER}` : `${filter.namespace}${TRIGGER}${value}`;
  };
  let count = 0;

  const reportWindow = (): void => {
    const stats = cache.windowStats();
    metrics.window(stats.capacity, stats.size, stats.oldest);
  };
  const remove = (watcher: CacheWatcher, reason: CloseReason): void => {
    const bucket = bucketOf(watcher.filter);
    const set = buckets.get(bucket);
    if (set?.delete(watcher) === true) {
      count--;
      if (set.size === 0) buckets.delete(bucket);
      metrics.watchers(-1);
    }
    if (reason === 'slow') metrics.closedSlow();
  };
  const dispatch = (bucket: string, event: WindowEvent): void => {
    const set = buckets.get(bucket);
    if (set === undefined) return;
    for (const watcher of set) {
      try {
        watcher.deliver(event);
      } catch (error) {
        // This watcher's failure ends it alone; the others, and the cache, go on.
        faults.report('watcher', resource, error);
        watcher.terminate();
      }
    }
  };
  /** Offers the event to every bucket whose watchers could see its new or its previous state. */
  const dispatchAll = (event: WindowEvent): void => {
    const namespaces = event.object.namespace === '' ? [''] : [event.object.namespace, ''];
    for (const ns of namespaces) {
      dispatch(`${ns}${NO_TRIGGER}`, event);
      if (trigger === undefined) continue;
      const current = fieldValue(event.object, trigger) ?? '';
      dispatch(`${ns}${TRIGGER}${current}`, event);
      const previous = event.prevObject === undefined ? undefined : fieldValue(event.prevObject, trigger);
      if (previous !== undefined && previous !== current) dispatch(`${ns}${TRIGGER}${previous}`, event);
    }
  };
  const terminateAll = (): void => {
    for (const set of [...buckets.values()]) for (const watcher of [...set]) watcher.terminate();
  };

  const stopListening = cache.addListener({
    event(event) {
      metrics.events(1);
      reportWindow();
      dispatchAll(event);
    },
    replaced() {
      // startCaching after a relist: every watcher is ended (the window restarts at the list).
      reportWindow();
      terminateAll();
    },
    closed() {
      // The cache stops (idle, gone from discovery, forbidden): its watches end; clients re-watch.
      terminateAll();
    },
    active: () => count > 0,
  });

  return {
    watch(request) {
      if (cache.isClosed()) return { kind: 'closed' };
      const current = cache.resourceVersion() ?? 0n;
      let initial: ConstructorParameters<typeof CacheWatcher>[0]['initial'];
      // getAllEventsSinceLocked: initial events for a WatchList, and for the legacy watch from
      // RV ""/"0" that the defaulting left alone (a /watch/ path).
      const legacyFromAny = request.sendInitialEvents === undefined && (request.resourceVersion === '' || request.resourceVersion === '0');
      if (request.sendInitialEvents === true || legacyFromAny) {
        initial = {
          kind: 'state',
          objects: cache.current(),
          resourceVersion: current,
          endBookmark: request.sendInitialEvents === true && request.allowWatchBookmarks,
        };
      } else if (request.resourceVersion === '' || request.resourceVersion === '0') {
        // sendInitialEvents=false: from now on (from the caller's fresh RV, or any).
        initial = { kind: 'replay', events: [], resourceVersion: current };
      } else {
        const from = BigInt(request.resourceVersion);
        const interval = cache.since(from);
        if (interval.kind === 'too-old') return interval;
        initial = { kind: 'replay', events: interval.events, resourceVersion: from };
      }
      const watcher = new CacheWatcher({
        sink: request.sink,
        filter: request.filter,
        initial,
        allowWatchBookmarks: request.allowWatchBookmarks,
        deadline: clock.now() + request.timeoutMs,
        currentResourceVersion: () => cache.resourceVersion() ?? 0n,
        ...(options.freshen === undefined ? {} : { freshen: options.freshen }),
        bookmark: (rv, end) => cache.bookmarkFrame(rv, end),
        clock,
        ...(request.encoding === undefined ? {} : { encoding: request.encoding }),
        ...(options.budget === undefined ? {} : { budget: options.budget }),
        ...(request.representation === undefined ? {} : { representation: request.representation }),
        onClose: remove,
        onSent: (bytes) => {
          metrics.sent(bytes);
        },
      });
      // The watcher writes its first initial events as it is made, and may be closed by then (the
      // unsent budget, a client already gone): registered, it would never be removed again.
      if (watcher.closed) return { kind: 'started', watcher };
      const bucket = bucketOf(request.filter);
      let set = buckets.get(bucket);
      if (set === undefined) buckets.set(bucket, (set = new Set()));
      set.add(watcher);
      count++;
      metrics.watchers(1);
      return { kind: 'started', watcher };
    },
    watcherCount: () => count,
    stop() {
      stopListening();
      terminateAll();
    },
  };
}
