/**
 * WATCH answered from a watch cache (kube-apiserver's endpoints/handlers/watch.go in front of
 * cacher.Watch): the stream's head, the watch's timeout, and its framing. Whether it starts from
 * the cache is the delegator's decision (cache/delegator.ts decideWatch), what it selects the
 * cacher's (selectionOf), and how it starts the cacher's too (cache/cacher.ts watch):
 * - sendInitialEvents=true (a WatchList, and what the apiserver's defaulting makes of a watch
 *   from RV "" or "0"): the state as ADDED events, then a BOOKMARK annotated
 *   k8s.io/initial-events-end when bookmarks are allowed, then changes.
 * - RV=N otherwise: the window's events after N, then changes; an N older than the window is one
 *   ERROR event (410 Expired) on a 200 stream; an N the cache has not reached yet simply waits.
 * Returns why, before writing anything, when the request must go to the apiserver.
 *
 * A watch that asks for cached answers only (a pool follower's, protocol/pool-protocol.ts) starts
 * only while the cache's upstream watch is open, ends when it closes, and gets heartbeats.
 *
 * The head tells a proxy in front how old the cache's proof is, and at which RV the watch
 * opened (protocol/proof-age.ts: the events up to it are as old as that proof); a watch that asks
 * gets its bookmarks' proof ages too.
 */
import type { ServerResponse } from 'node:http';
import type { CacheDelegator, Decision } from '../../cache/delegator.ts';
import { selectionOf } from '../../cache/cacher.ts';
import { representedWatchFrame, watchFrame } from '../../cache/window-event.ts';
import type { WatchRepresentation } from '../../cache/window-event.ts';
import { HTTP_CHUNKED } from './http-chunked.ts';
import type { ListOptions } from '../../request/list-options.ts';
import { tooOldResourceVersion } from '../../kube/status.ts';
import { LEADER_HEARTBEAT_MS } from '../../protocol/pool-protocol.ts';
import { PROOF_AGE_HEADER, PROOF_RESOURCE_VERSION_HEADER, formatProofAge } from '../../protocol/proof-age.ts';

/**
 * --min-request-timeout (1800 s): the apiserver times a watch without timeoutSeconds out after
 * a random duration in [1800, 3600) s, spreading the re-watches of many clients.
 */
export const MIN_REQUEST_TIMEOUT_MS = 1_800_000;

/** The stream's head (observed on v1.37.2; Audit-Id and the flow-control UIDs are the apiserver's own). */
const WATCH_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-cache, private' } as const;

export interface WatchContext {
  readonly delegator: CacheDelegator;
  /** The request's namespace ('' for all). */
  readonly namespace: string;
  readonly options: ListOptions;
  readonly res: ServerResponse;
  /** The connection `res` is written to (request/http2-streams.ts connectionOf): its streams share one bound. */
  readonly connection?: object;
  /** Aborted when the client goes away while the watch waits to start. */
  readonly signal?: AbortSignal;
  readonly random?: () => number;
  /** Objects rendered otherwise than as stored (a Table watch); none: as stored. */
  readonly representation?: WatchRepresentation;
  /** `Cache-Control: only-if-cached`: from a cache whose upstream watch is open, and for no longer. */
  readonly onlyIfCached?: boolean;
  /** The request asked for its bookmarks' proof ages (protocol/proof-age.ts asksProofAges). */
  readonly proofAges?: boolean;
}

/** serveWatch's timeout: timeoutSeconds, or the random default when it is absent or 0. */
export function watchTimeoutMs(timeoutSeconds: number | undefined, random: () => number = Math.random): number {
  if (timeoutSeconds === undefined || timeoutSeconds === 0) return MIN_REQUEST_TIMEOUT_MS * (random() + 1);
  return Math.max(0, timeoutSeconds * 1000);
}

export async function serveWatch(ctx: WatchContext): Promise<Decision> {
  const { delegator, options, res } = ctx;
  const { cache } = delegator;
  const filter = selectionOf(cache, ctx.namespace, options);
  if (typeof filter === 'string') return filter;
  const decision = await delegator.decideWatch(ctx.namespace, options, ctx.signal);
  if (decision !== 'cache') return decision;
  if (res.destroyed) return 'cache';
  // The cache may have been stopped while this request waited: the apiserver answers then.
  if (cache.isClosed()) return 'cache-closed';
  const onlyIfCached = ctx.onlyIfCached === true;
  if (onlyIfCached && !cache.watching()) return 'not-watching';
  const contentType = ctx.representation?.contentType;
  // Set, not given to writeHead, so that res.getHeader reads them (the answers' metric counts by Content-Type).
  for (const [name, value] of Object.entries(WATCH_HEADERS)) res.setHeader(name, value);
  if (contentType !== undefined) res.setHeader('content-type', contentType);
  // Read in the turn the watch starts in (below): the state its initial events are taken from.
  res.setHeader(PROOF_AGE_HEADER, formatProofAge(delegator.proofAgeMs()));
  res.setHeader(PROOF_RESOURCE_VERSION_HEADER, String(cache.resourceVersion() ?? 0n));
  res.writeHead(200);
  res.flushHeaders();
  // HOT PATH: the stream stays chunked, as the apiserver's, but the chunks are built once per
  // event by the cache (window-event.ts) instead of once per watcher by Node.
  const chunked = res.chunkedEncoding;
  res.chunkedEncoding = false;
  // From here on synchronous: the initial state or replay is read and the watcher registered in one turn.
  const start = delegator.cacher().watch({
    sink: res,
    ...(ctx.connection === undefined ? {} : { connection: ctx.connection }),
    filter,
    resourceVersion: options.resourceVersion,
    sendInitialEvents: options.sendInitialEvents,
    allowWatchBookmarks: options.allowWatchBookmarks,
    timeoutMs: watchTimeoutMs(options.timeoutSeconds, ctx.random),
    ...(chunked ? { encoding: HTTP_CHUNKED } : {}),
    ...(ctx.representation === undefined ? {} : { representation: ctx.representation }),
    ...(onlyIfCached ? { endsWithUpstream: true, heartbeatMs: LEADER_HEARTBEAT_MS } : {}),
    ...(ctx.proofAges === true ? { proofAges: true } : {}),
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
