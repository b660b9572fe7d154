/**
 * WATCH answered from a watch cache (kube-apiserver's endpoints/handlers/watch.go in front of
 * cacher.Watch): the stream's head, the watch's timeout, and the start rules.
 * - sendInitialEvents=true (a WatchList, and what the apiserver's defaulting makes of a watch
 *   from RV "" or "0"): the state as ADDED events, then a BOOKMARK annotated
 *   k8s.io/initial-events-end when bookmarks are allowed, then changes. From RV "" the state must
 *   be the most recent (the caller's consistency check); from N the cache must have reached N.
 * - RV=N otherwise: the window's events after N, then changes; an N older than the window is one
 *   ERROR event (410 Expired) on a 200 stream, unless the cache is young and N predates its first
 *   list (then the apiserver answers); an N the cache has not reached yet simply waits.
 * Returns why, before writing anything, when the request must go to the apiserver.
 */
import type { ServerResponse } from 'node:http';
import type { WatcherFilter } from '../../cache/cache-watcher.ts';
import type { CacheDelegator, Decision } from '../../cache/delegator.ts';
import { SelectorParseError } from '../../cache/selector-error.ts';
import { parseFieldSelector } from '../../cache/field-selector.ts';
import { parseLabelSelector } from '../../cache/label-selector.ts';
import type { WatchCache } from '../../cache/watch-cache.ts';
import { representedWatchFrame, watchFrame } from '../../cache/window-event.ts';
import type { WatchRepresentation } from '../../cache/window-event.ts';
import { HTTP_CHUNKED } from './http-chunked.ts';
import type { ListOptions } from '../../request/list-options.ts';
import { tooOldResourceVersion } from '../../kube/status.ts';
import type { RequestInfo } from '../../request/request-info.ts';

/**
 * --min-request-timeout (1800 s): the apiserver times a watch without timeoutSeconds out after
 * a random duration in [1800, 3600) s, spreading the re-watches of many clients.
 */
export const MIN_REQUEST_TIMEOUT_MS = 1_800_000;

/** The stream's head (observed on v1.37.2; Audit-Id and the flow-control UIDs are the apiserver's own). */
const WATCH_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-cache, private' } as const;

export interface WatchContext {
  readonly delegator: CacheDelegator;
  readonly info: RequestInfo;
  readonly options: ListOptions;
  readonly res: ServerResponse;
  /** Resolves 'cache' once an RV-unset read may be served from this cache, or why not (the delegator's decision). */
  readonly consistentReady: () => Promise<Decision>;
  readonly random?: () => number;
  /** Objects rendered otherwise than as stored (a Table watch); none: as stored. */
  readonly representation?: WatchRepresentation;
}

/** serveWatch's timeout: timeoutSeconds, or the random default when it is absent or 0. */
export function watchTimeoutMs(timeoutSeconds: number | undefined, random: () => number = Math.random): number {
  if (timeoutSeconds === undefined || timeoutSeconds === 0) return MIN_REQUEST_TIMEOUT_MS * (random() + 1);
  return Math.max(0, timeoutSeconds * 1000);
}

/**
 * What a LIST or WATCH selects in this cache: its namespace and its parsed selectors; or
 * 'bad-selector' for a selector the apiserver rejects (its words, so the request goes to it).
 */
export function selectionOf(cache: WatchCache, info: RequestInfo, options: ListOptions): WatcherFilter | 'bad-selector' {
  try {
    return {
      namespace: cache.spec.namespaced ? info.namespace : '',
      labels: parseLabelSelector(options.labelSelector),
      fields: parseFieldSelector(options.fieldSelector, cache.fields.conversion),
    };
  } catch (error) {
    if (error instanceof SelectorParseError) return 'bad-selector';
    throw error;
  }
}

export async function serveWatch(ctx: WatchContext): Promise<Decision> {
  const { delegator, info, options, res } = ctx;
  const { cache } = delegator;
  const filter = selectionOf(cache, info, options);
  if (typeof filter === 'string') return filter;
  const rv = options.resourceVersion;
  if (rv === '') {
    // Most recent state, except for the legacy watch the defaulting left alone: from any state
    // (getWatchCacheResourceVersion's "legacy case").
    if (options.sendInitialEvents !== undefined) {
      const decision = await ctx.consistentReady();
      if (decision !== 'cache') return decision;
    }
  } else if (rv !== '0') {
    if (!/^[1-9][0-9]{0,18}$/.test(rv)) return 'bad-resource-version';
    const from = BigInt(rv);
    // A WatchList from N needs the state at N or later; a plain watch from N waits for it itself.
    if (options.sendInitialEvents === true && !(await delegator.notOlderThan(from))) return 'rv-not-reached';
    // A watch from before a young cache's first list asks for changes the cache never saw; the
    // apiserver may still have them (a client that listed there, or on another proxy, before
    // this cache began), so its answer is the apiserver's, not a 410 of the cache's making.
    if (options.sendInitialEvents !== true && cache.startedAfter(from) && cache.since(from).kind === 'too-old') return 'young-cache';
  }
  if (res.destroyed) return 'cache';
  // The cache may have been stopped while this request waited: the apiserver answers then.
  if (cache.isClosed()) return 'cache-closed';
  const contentType = ctx.representation?.contentType;
  res.writeHead(200, contentType === undefined ? WATCH_HEADERS : { ...WATCH_HEADERS, 'content-type': contentType });
  res.flushHeaders();
  // HOT PATH: the stream stays chunked, as the apiserver's, but the chunks are built once per
  // event by the cache (window-event.ts) instead of once per watcher by Node.
  const chunked = res.chunkedEncoding;
  res.chunkedEncoding = false;
  // From here on synchronous: the initial state or replay is read and the watcher registered in one turn.
  const start = delegator.cacher().watch({
    sink: res,
    filter,
    resourceVersion: rv,
    sendInitialEvents: options.sendInitialEvents,
    allowWatchBookmarks: options.allowWatchBookmarks,
    timeoutMs: watchTimeoutMs(options.timeoutSeconds, ctx.random),
    ...(chunked ? { encoding: HTTP_CHUNKED } : {}),
    ...(ctx.representation === undefined ? {} : { representation: ctx.representation }),
  });
  if (start.kind === 'too-old') {
    // The Status without its trailing newline is the event's object.
    const status = tooOldResourceVersion(start.requested, start.oldest).body();
    const json = status.subarray(0, status.length - 1);
    const representation = ctx.representation;
    const frame =
      representation?.status === undefined
        ? watchFrame('ERROR', json)
        : representedWatchFrame(representation, 'ERROR', representation.status(json));
    res.end(chunked ? Buffer.concat([...HTTP_CHUNKED.wrap([frame]), HTTP_CHUNKED.end ?? Buffer.alloc(0)]) : frame);
  } else if (start.kind === 'closed') {
    res.end(chunked ? HTTP_CHUNKED.end : undefined);
  }
  return 'cache';
}
