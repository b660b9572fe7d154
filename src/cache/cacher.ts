/**
 * The watches of one watch cache (kube-apiserver's cacher/cacher.go): the event window, the
 * watchers, and the dispatch of each change to the watchers that can see it. One upstream watch
 * (the informer's) feeds any number of client watches.
 *
 * Dispatch is indexed by namespace: a change in namespace A is offered to A's watchers and to
 * the all-namespaces ones only, so watchers of namespace B cost it nothing. Each event's bytes
 * are built once (WindowEvent) and the same Buffer is written to every watcher.
 *
 * LIST (cacher.go GetList, watch_cache.go listItems): getList selects a page of one state of the
 * cache, the current one or a kept snapshot at an exact RV, by namespace (a contiguous run of
 * keys), by the cache's field index, and by the selectors, and writes the continue token of the
 * next page. What state a read gets is the delegator's decision (ReadPlan); this serves it.
 *
 * Invariants: a watcher is registered in the same synchronous turn its initial state or replay
 * is read, so it misses no change and sees none twice; watchers receive changes in RV order.
 * A page is read from one immutable view of the cache, in one synchronous turn.
 */
import { fieldValue } from '../informer/object.ts';
import { indexedFieldOf } from './field-index.ts';
import type { UnsentBudget } from '../memory/unsent-budget.ts';
import type { Writable } from 'node:stream';
import type { Clock } from '../clock/clock.ts';
import { realClock } from '../clock/clock.ts';
import type { CloseReason, WatcherFilter } from './cache-watcher.ts';
import { CacheWatcher, convert } from './cache-watcher.ts';
import type { WatchCache } from './watch-cache.ts';
import type { WatchRepresentation, WatchEncoding, WindowEvent } from './window-event.ts';
import { stderrFaults } from './faults.ts';
import type { Faults } from './faults.ts';
import { qualifiedResource } from '../kube/group-resource.ts';
import { proofAgeMs } from './consistency.ts';
import type { KubeObject } from '../informer/object.ts';
import type { OrderedView } from './ordered-map.ts';
import type { ListOptions } from '../request/list-options.ts';
import type { DecodedContinue } from '../request/continue-token.ts';
import { encodeContinue } from '../request/continue-token.ts';
import { parseFieldSelector } from '../selector/field-selector.ts';
import { parseLabelSelector } from '../selector/label-selector.ts';
import { SelectorParseError } from '../selector/selector-error.ts';
import { MAX_SELECTOR_TERMS, selectionTerms, selectorTooLong } from '../selector/selector-bounds.ts';
import type { PassReason } from './pass-reason.ts';
import { WriteTurn } from './write-turn.ts';
import { objectMatchesFields } from './selectable-fields.ts';

export interface CacherMetrics {
  /** +1 when a watcher starts, -1 when it ends (several caches of one type share the series). */
  watchers(delta: number): void;
  sent(bytes: number): void;
  events(count: number): void;
  closedSlow(): void;
  /** A watch answered 410 at its start: its RV is older than the window (after a restart, every client's re-watch). */
  expired(): void;
  window(capacity: number, size: number, oldest: bigint | undefined): void;
  /** A distinct selection came (+1) or went (-1), holding about `bytes` (filterBytes). */
  filters(delta: number, bytes: number): void;
}

export const noopCacherMetrics: CacherMetrics = {
  watchers: () => undefined,
  sent: () => undefined,
  events: () => undefined,
  closedSlow: () => undefined,
  expired: () => undefined,
  window: () => undefined,
  filters: () => undefined,
};

/**
 * What a distinct selection holds: the key (the JSON of its requirements) and the parsed
 * requirements it was made from, per key character and beside them. Measured on 2,000 distinct
 * filters of each shape at the bounds of selector-bounds.ts: 2.4 to 3.3 bytes per key character
 * (3 to 6 KiB keys: 9 to 16 KiB a filter); a one-requirement filter 0.7 KiB.
 */
const FILTER_BYTES_PER_KEY_CHARACTER = 4;
const FILTER_OVERHEAD_BYTES = 512;

function filterBytes(key: string): number {
  return FILTER_OVERHEAD_BYTES + key.length * FILTER_BYTES_PER_KEY_CHARACTER;
}

export interface WatchRequest {
  readonly sink: Writable;
  /** The connection `sink` writes to (CacheWatcherOptions.connection). */
  readonly connection?: object;
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
  /**
   * The watch ends (cleanly) when the cache's upstream watch closes: for a client that would
   * rather read elsewhere than wait on a cache that may fall behind (a pool follower's,
   * protocol/pool-protocol.ts). Default: the watch stays open and carries the changes once the
   * upstream watch resumes, as the apiserver's watchers wait out its etcd client's retries.
   */
  readonly endsWithUpstream?: boolean;
  /** A heartbeat bookmark after this long without a frame (CacheWatcherOptions.heartbeatMs). */
  readonly heartbeatMs?: number;
  /**
   * Each BOOKMARK carries the proof age of its RV when it is written (a proxy in front of this
   * one asked: protocol/proof-age.ts). A bookmark is the watcher's own frame, so this costs the
   * events nothing; a watch that did not ask gets the apiserver's bytes.
   */
  readonly proofAges?: boolean;
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
  /** Where a watcher's failure to take an event is reported (faults.ts); default: stderr, once. */
  readonly faults?: Faults;
}

/**
 * The longest the watchers' writes of a burst of events are held back: a burst handled in one
 * turn is written out every this often (cacher.go's dispatch gives blocked watchers a time budget
 * too; here nothing blocks, but nothing waits for the burst's end either).
 */
const TURN_BUDGET_MS = 1;

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
   * kubelet's watch costs nothing for the other nodes' pods), else no trigger. Within a bucket,
   * by filter: watchers with the same selectors share one filter object (filters), so that each
   * event is converted once per filter, not once per watcher.
   */
  const buckets = new Map<string, Map<WatcherFilter, Set<CacheWatcher>>>();
  /** One filter object per distinct selection, with the number of watchers holding it. */
  const filters = new Map<string, { readonly filter: WatcherFilter; watchers: number }>();
  // The parsed requirements, not the selectors' String(): those print values unescaped, so two
  // different selections could print alike.
  const filterKey = (filter: WatcherFilter): string =>
    JSON.stringify([filter.namespace, filter.labels.requirements, filter.fields.requirements]);
  const sharedFilter = (filter: WatcherFilter): WatcherFilter => {
    const key = filterKey(filter);
    let shared = filters.get(key);
    if (shared === undefined) {
      filters.set(key, (shared = { filter, watchers: 0 }));
      metrics.filters(1, filterBytes(key));
    }
    shared.watchers++;
    return shared.filter;
  };
  const releaseFilter = (filter: WatcherFilter): void => {
    const key = filterKey(filter);
    const shared = filters.get(key);
    if (shared !== undefined && --shared.watchers === 0) {
      filters.delete(key);
      metrics.filters(-1, -filterBytes(key));
    }
  };
  // The watchers' trigger is the cache's index field (the apiserver's indexedTrigger).
  const trigger = indexedFieldOf(cache.spec);
  const bucketOf = (filter: WatcherFilter): string => {
    const value = trigger === undefined ? undefined : filter.fields.requiresExactMatch(trigger);
    return value === undefined ? `${filter.namespace}${NO_TRIGGER}` : `${filter.namespace}${TRIGGER}${value}`;
  };
  let count = 0;
  /** Every watcher's live writes of a turn, flushed together (write-turn.ts). */
  const turn = new WriteTurn();
  /** Bytes written this turn, told to the metrics once at its end rather than per write. */
  let sentBytes = 0;
  const flushSent = (): void => {
    metrics.sent(sentBytes);
    sentBytes = 0;
  };
  const onSent = (bytes: number): void => {
    if (sentBytes === 0) process.nextTick(flushSent);
    sentBytes += bytes;
  };

  const reportWindow = (): void => {
    const stats = cache.windowStats();
    metrics.window(stats.capacity, stats.size, stats.oldest);
  };
  const remove = (watcher: CacheWatcher, reason: CloseReason): void => {
    const bucket = bucketOf(watcher.filter);
    const groups = buckets.get(bucket);
    const set = groups?.get(watcher.filter);
    if (groups !== undefined && set?.delete(watcher) === true) {
      count--;
      releaseFilter(watcher.filter);
      if (set.size === 0) groups.delete(watcher.filter);
      if (groups.size === 0) buckets.delete(bucket);
      metrics.watchers(-1);
    }
    if (reason === 'slow') metrics.closedSlow();
  };
  const dispatch = (bucket: string, event: WindowEvent): void => {
    const groups = buckets.get(bucket);
    if (groups === undefined) return;
    for (const [filter, set] of groups) {
      // convertToWatchEvent once for every watcher with this selection.
      const type = convert(filter, event);
      if (type === undefined) continue;
      for (const watcher of set) {
        try {
          watcher.deliverAs(event, type);
        } catch (error) {
          // This watcher's failure ends it alone; the others, and the cache, go on.
          faults.report('watcher', resource, error);
          watcher.terminate();
        }
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
    for (const groups of [...buckets.values()]) for (const set of [...groups.values()]) for (const watcher of [...set]) watcher.terminate();
  };
  /** The watchers that end when the upstream watch closes (WatchRequest.endsWithUpstream); each also in its bucket. */
  const endingWithUpstream = new Set<CacheWatcher>();

  const stopListening = cache.addListener({
    event(event) {
      metrics.events(1);
      reportWindow();
      dispatchAll(event);
      turn.flushIfOlderThan(TURN_BUDGET_MS);
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
    disconnected() {
      for (const watcher of [...endingWithUpstream]) watcher.terminate();
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
        if (interval.kind === 'too-old') {
          metrics.expired();
          return interval;
        }
        initial = { kind: 'replay', events: interval.events, resourceVersion: from };
      }
      const filter = sharedFilter(request.filter);
      const watcher = new CacheWatcher({
        sink: request.sink,
        filter,
        initial,
        allowWatchBookmarks: request.allowWatchBookmarks,
        deadline: clock.now() + request.timeoutMs,
        currentResourceVersion: () => cache.resourceVersion() ?? 0n,
        // The watcher's bookmarks carry the cache's RV (or, a heartbeat, one the watcher reached,
        // whose state is the cache's for what it selects): their proof is the cache's own.
        bookmark:
          request.proofAges === true
            ? (rv, end) => cache.bookmarkFrame(rv, end, proofAgeMs(cache, clock.now()))
            : (rv, end) => cache.bookmarkFrame(rv, end),
        clock,
        ...(request.encoding === undefined ? {} : { encoding: request.encoding }),
        ...(options.budget === undefined ? {} : { budget: options.budget }),
        ...(request.connection === undefined ? {} : { connection: request.connection }),
        ...(request.representation === undefined ? {} : { representation: request.representation }),
        onClose: (closing, reason) => {
          endingWithUpstream.delete(closing);
          remove(closing, reason);
        },
        onSent,
        turn,
        ...(request.heartbeatMs === undefined ? {} : { heartbeatMs: request.heartbeatMs }),
      });
      // The watcher writes its first initial events as it is made, and may be closed by then (the
      // unsent budget, a client already gone): registered, it would never be removed again.
      if (watcher.closed) {
        releaseFilter(filter);
        return { kind: 'started', watcher };
      }
      const bucket = bucketOf(filter);
      let groups = buckets.get(bucket);
      if (groups === undefined) buckets.set(bucket, (groups = new Map<WatcherFilter, Set<CacheWatcher>>()));
      let set = groups.get(filter);
      if (set === undefined) groups.set(filter, (set = new Set()));
      set.add(watcher);
      if (request.endsWithUpstream === true) endingWithUpstream.add(watcher);
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

/** Which state a GET or LIST reads, as the delegator decided it (delegator.ts decideRead). */
export type ReadPlan =
  /** The cache as it is, once at `minRv` or later (RV=0, RV=N not older than). */
  | { readonly kind: 'latest'; readonly minRv: bigint }
  /** The cache as it is, proven the most recent state (RV unset). */
  | { readonly kind: 'consistent' }
  /** The state at exactly `rv` (Exact, a limit with an RV, a continue token: `from`), from a kept snapshot. */
  | { readonly kind: 'exact'; readonly rv: bigint; readonly from: DecodedContinue | undefined };

/** A LIST as the cacher serves it: its namespace ('' for all, or a cluster-scoped type) and its options. */
export interface ListRequest {
  readonly namespace: string;
  readonly options: ListOptions;
}

/** The objects a LIST answers, at one RV, with the next page's token and (when known) what remains. */
export interface Page {
  readonly items: KubeObject[];
  readonly resourceVersion: bigint;
  readonly continue: string;
  readonly remainingItemCount: bigint | undefined;
}

/**
 * The storage key of an object, as continue tokens see it: a root standing for the apiserver's
 * `/registry/<resource>`, then the cache key (`namespace/name` or `name`). A token's start key
 * is relative to the list's key without its trailing slash (`/name\0` in a namespace,
 * `/namespace/name\0` across namespaces), as the apiserver's (cacher.go PrepareContinueToken).
 */
const KEY_ROOT = '/r';

/** The list's key: the namespace's keys, or all keys. Tokens are encoded against it and decoded against it plus `/`. */
export function listKeyOf(cache: WatchCache, namespace: string): string {
  return cache.spec.namespaced && namespace !== '' ? `${KEY_ROOT}/${namespace}` : KEY_ROOT;
}

/** The cache key of one object of the request's scope. */
export function objectKey(cache: WatchCache, namespace: string, name: string): string {
  return cache.spec.namespaced ? `${namespace}/${name}` : name;
}

function namespacePrefix(cache: WatchCache, namespace: string): string {
  return cache.spec.namespaced && namespace !== '' ? `${namespace}/` : '';
}

/** The ranks [start, end) of the request's objects in `view`: one namespace's keys (a contiguous run in key order), or all. O(log n). */
export function namespaceRange(view: OrderedView<KubeObject>, cache: WatchCache, namespace: string): { start: number; end: number } {
  const prefix = namespacePrefix(cache, namespace);
  if (prefix === '') return { start: 0, end: view.size };
  return { start: view.lowerBound(prefix), end: view.lowerBound(`${prefix.slice(0, -1)}0`) }; // '0' follows '/'
}

/**
 * The scope of a whole LIST of the cache's current state ('' for all, else the namespace), or
 * undefined for any other LIST: the LISTs whose bodies are the same for every request at an RV.
 */
export function wholeListScope(list: ListRequest, plan: ReadPlan): string | undefined {
  const { options } = list;
  if (plan.kind === 'exact' || options.labelSelector !== '' || options.fieldSelector !== '' || options.continue !== '') return undefined;
  // computeListLimit (cacher.go): RV=0 ignores the limit.
  if (options.limit > 0 && options.resourceVersion !== '0') return undefined;
  return list.namespace;
}

/**
 * What a LIST or WATCH selects in this cache: its namespace and its parsed selectors; or
 * 'bad-selector' for a selector the apiserver rejects (its words, so the request goes to it), or
 * 'selector-too-large' past the bounds of selector-bounds.ts (a text too long is not parsed).
 */
export function selectionOf(
  cache: WatchCache,
  namespace: string,
  options: ListOptions,
): WatcherFilter | 'bad-selector' | 'selector-too-large' {
  if (selectorTooLong(options)) return 'selector-too-large';
  let selection: WatcherFilter;
  try {
    selection = {
      namespace: cache.spec.namespaced ? namespace : '',
      labels: parseLabelSelector(options.labelSelector),
      fields: parseFieldSelector(options.fieldSelector, cache.fields.conversion),
    };
  } catch (error) {
    if (error instanceof SelectorParseError) return 'bad-selector';
    throw error;
  }
  return selectionTerms(selection.labels, selection.fields) > MAX_SELECTOR_TERMS ? 'selector-too-large' : selection;
}

/** GetList: the objects a LIST answers, at the plan's RV, with its continue token and remaining count; or why the apiserver answers. */
export function getList(cache: WatchCache, list: ListRequest, plan: ReadPlan): Page | PassReason {
  const { namespace, options } = list;
  const selection = selectionOf(cache, namespace, options);
  if (typeof selection === 'string') return selection; // the apiserver words the error
  const { labels, fields } = selection;
  const rv = plan.kind === 'exact' ? plan.rv : cache.resourceVersion();
  if (rv === undefined) return 'not-synced';
  const snapshot = cache.snapshot(rv);
  if (snapshot === undefined) return 'no-snapshot';
  // A LIST of the current state selecting one value of the cache's index field (pods on one
  // node) reads that value's objects only (watch_cache.go listItems: store.ByIndex); the other
  // requirements still filter them. Same key order, so ranges and continue keys are the same.
  const indexField = indexedFieldOf(cache.spec);
  const indexValue = indexField === undefined || rv !== cache.resourceVersion() ? undefined : fields.requiresExactMatch(indexField);
  const ordered = (indexField !== undefined && indexValue !== undefined ? cache.indexed(indexField, indexValue) : undefined) ?? snapshot;
  // HOT PATH: the view is immutable (a persistent tree's root): ranks and ranges in O(log n).
  const prefix = namespacePrefix(cache, namespace);
  const listKey = listKeyOf(cache, namespace);
  const fromKey = plan.kind === 'exact' && plan.from !== undefined ? plan.from.fromKey.slice(KEY_ROOT.length + 1) : prefix;
  let start = ordered.lowerBound(fromKey < prefix ? prefix : fromKey);
  // A continue key outside this request's range yields nothing, as the apiserver's range read.
  if (!fromKey.startsWith(prefix)) start = ordered.size;
  const { end } = namespaceRange(ordered, cache, namespace);
  // computeListLimit (cacher.go): RV=0 ignores the limit.
  const limit = options.resourceVersion === '0' ? 0 : Math.max(0, options.limit);
  const everything = labels.empty() && fields.empty();
  const items: KubeObject[] = [];
  let hasMore = false;
  let last = '';
  let i = start;
  for (const obj of ordered.values(start, end)) {
    i++;
    if (everything || (labels.matches(obj.labels) && objectMatchesFields(fields, obj))) {
      items.push(obj);
      last = obj.key;
    }
    if (limit > 0 && items.length >= limit) {
      hasMore = i < end;
      break;
    }
  }
  // PrepareContinueToken (storage/continue.go): resume just after the last key; a count of what
  // remains only when nothing was filtered out.
  return {
    items,
    resourceVersion: rv,
    continue: hasMore ? encodeContinue(`${KEY_ROOT}/${last}\u0000`, listKey, rv) : '',
    remainingItemCount: hasMore && everything ? BigInt(end - start - limit) : undefined,
  };
}

/** A GET (a name) or a LIST as the cacher selects it. */
export interface ReadSelectionRequest extends ListRequest {
  readonly verb: 'get' | 'list';
  /** '' for a LIST. */
  readonly name: string;
}

/** A whole LIST's items: a lazy range of the current state, and their JSON list-item bytes (the store's weights). */
export interface WholeList {
  readonly items: Iterable<KubeObject>;
  readonly count: number;
  readonly itemBytes: number;
}

/**
 * What a GET or LIST reads, selected once for every encoding (the apiserver's GetList returns one
 * selection that each serializer encodes): the object (undefined: the cache holds none of that
 * name), the whole list of a scope at the cache's RV (the same for every request at that RV:
 * its bodies are shared; `list` reads it only when no body is kept), or a page.
 */
export type ReadSelection =
  | { readonly kind: 'object'; readonly object: KubeObject | undefined }
  | { readonly kind: 'whole'; readonly scope: string; readonly resourceVersion: bigint; readonly list: () => WholeList }
  | { readonly kind: 'page'; readonly page: Page };

export function selectRead(cache: WatchCache, read: ReadSelectionRequest, plan: ReadPlan): ReadSelection | PassReason {
  if (read.verb === 'get') return { kind: 'object', object: cache.get(objectKey(cache, read.namespace, read.name)) };
  const scope = wholeListScope(read, plan);
  const rv = cache.resourceVersion();
  if (scope !== undefined && rv !== undefined) {
    return {
      kind: 'whole',
      scope,
      resourceVersion: rv,
      // HOT PATH: the whole range of the current state, read lazily as the body is written; its
      // bytes from the store's weights, so a 100,000-object LIST holds the loop for no walk of it.
      list: () => {
        const view = cache.current();
        const { start, end } = namespaceRange(view, cache, read.namespace);
        return { items: view.values(start, end), count: end - start, itemBytes: view.weight(start, end) };
      },
    };
  }
  const page = getList(cache, read, plan);
  return typeof page === 'string' ? page : { kind: 'page', page };
}
