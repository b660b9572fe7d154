/**
 * A watch client that behaves as client-go's reflector (tools/cache/reflector.go), for the chaos
 * run (`npm run chaos`) and its e2e scenario: LIST (RV=0 the first time, then the last synced RV,
 * unset after a 410 on the LIST itself), then WATCH from the list's RV with bookmarks; a watch that
 * ends cleanly or whose connection breaks is resumed from the last RV; a 410 (an ERROR event, or
 * the watch refused with 410) or any other error relists, after the reflector's backoff.
 *
 * It records what it was told so that watch-audit.ts can say what was lost: every event (type,
 * key, RV, arrival), every LIST, and every watch request as a segment with the RVs it proved
 * delivered (events and bookmarks). What needs no write log is counted as it arrives: an event
 * seen twice is a duplicate; an event, bookmark or LIST whose RV is below one seen before is
 * reordered (RVs are etcd revisions: one order across a type).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import type { Dispatcher } from 'undici';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface ObservedEvent {
  readonly type: WatchEventType;
  /** namespace/name */
  readonly key: string;
  readonly rv: number;
  /** Arrival, on the watcher's clock. */
  readonly at: number;
}

export interface ObservedList {
  readonly rv: number;
  readonly at: number;
  readonly items: number;
}

/** How a watch request ended: timeout (ended cleanly by the server), broken (connection lost), expired (410), error (another ERROR or status), stopped (by us). */
export type SegmentEnd = 'timeout' | 'broken' | 'expired' | 'error' | 'stopped';

/**
 * One watch request. Invariant of a correct server: every change of the watched scope with an RV
 * in (from, to] was delivered by this request, in RV order.
 */
export interface WatchSegment {
  readonly from: number;
  /** The highest RV the request proved: its last event's or bookmark's. */
  readonly to: number;
  readonly startedAt: number;
  readonly endedAt: number | undefined;
  readonly end: SegmentEnd | undefined;
}

export interface ReflectorCounts {
  /** Events delivered twice (same key and RV). */
  readonly duplicated: number;
  /** Events, bookmarks or LISTs with an RV below one already seen. */
  readonly reordered: number;
  /** 410s: ERROR events with code 410, watches refused with 410, LISTs answered 410. */
  readonly expired: number;
  /** LISTs after the first. */
  readonly relists: number;
  /** Watches resumed from the last RV after a clean end or a broken connection. */
  readonly rewatches: number;
  /** Requests that failed otherwise (refused, 5xx, unreadable), each followed by a backoff. */
  readonly failures: number;
  readonly bookmarks: number;
}

/** What a watcher saw: all watch-audit.ts needs. */
export interface WatchRecord {
  readonly events: readonly ObservedEvent[];
  readonly lists: readonly ObservedList[];
  readonly segments: readonly WatchSegment[];
  /** What the client believes now: key → RV. */
  readonly store: ReadonlyMap<string, number>;
  readonly counts: ReflectorCounts;
  /** The first few duplicates and reorderings, described. */
  readonly problems: readonly string[];
}

export interface ReflectorWatcher extends WatchRecord {
  readonly name: string;
  /** Resolves when the first LIST is done and the first WATCH answered; rejects if stopped before. */
  readonly synced: Promise<void>;
  /** Ends the current request and the loop. */
  stop(): Promise<void>;
  /**
   * Ends a backoff wait now and starts the backoff over, as a newly started reflector's: for a
   * harness that restarted the server on purpose, whose restarts are not what it measures (the
   * backoff otherwise grows across restarts less than 2 minutes apart, to a minute's wait).
   */
  wake(): void;
}

export interface ReflectorWatcherOptions {
  readonly name: string;
  /** Base URL of the server, no trailing slash (the proxy). */
  readonly url: string;
  /** The collection, e.g. /api/v1/namespaces/ns/pods. */
  readonly path: string;
  readonly dispatcher: Dispatcher;
  readonly headers?: Readonly<Record<string, string>>;
  /** Seeded: watch timeouts and backoff jitter. */
  readonly random: () => number;
  /**
   * timeoutSeconds of each watch, picked in [min, max). client-go picks 5 to 10 minutes; shorter
   * here, so that clean ends and re-watches happen within a run.
   */
  readonly watchTimeoutSeconds?: readonly [number, number];
  /** A slow reader: asked after each chunk it reads, waits that long (the server's buffers fill meanwhile). */
  readonly readDelayMs?: () => number;
  /** Milliseconds; default performance.now. */
  readonly now?: () => number;
  /** Told each request's outcome (LIST at RV, watch ended how), for diagnosing a run. */
  readonly trace?: (line: string) => void;
}

/** client-go's pager page size (tools/pager). */
const PAGE_SIZE = 500;
/**
 * client-go's reflector backoff (NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)): 0.8 s
 * doubling to 30 s, each wait up to twice that (jitter 1.0), back to 0.8 s after 2 quiet minutes.
 */
const BACKOFF_INITIAL_MS = 800;
const BACKOFF_CAP_MS = 30_000;
const BACKOFF_RESET_MS = 120_000;
/** client-go: a watch that ends within a second with no event is an error ("very short watch"), and relists. */
const VERY_SHORT_WATCH_MS = 1_000;
const DEFAULT_WATCH_TIMEOUT_SECONDS: readonly [number, number] = [30, 60];
/** How long a LIST or the headers of a WATCH may take on a busy 2-core machine. */
const REQUEST_TIMEOUT_MS = 60_000;
const MAX_PROBLEMS = 10;

class Expired extends Error {}

interface MutableSegment {
  from: number;
  to: number;
  startedAt: number;
  endedAt: number | undefined;
  end: SegmentEnd | undefined;
}

type Counts = { -readonly [K in keyof ReflectorCounts]: ReflectorCounts[K] };

export function startReflectorWatcher(options: ReflectorWatcherOptions): ReflectorWatcher {
  const now = options.now ?? (() => performance.now());
  const [minTimeout, maxTimeout] = options.watchTimeoutSeconds ?? DEFAULT_WATCH_TIMEOUT_SECONDS;
  const events: ObservedEvent[] = [];
  const lists: ObservedList[] = [];
  const segments: MutableSegment[] = [];
  let store = new Map<string, number>();
  const counts: Counts = { duplicated: 0, reordered: 0, expired: 0, relists: 0, rewatches: 0, failures: 0, bookmarks: 0 };
  const problems: string[] = [];
  /** key@rv of every event delivered. */
  const seen = new Set<string>();
  /** The highest RV seen from any source: nothing after may go below it. */
  let high = 0;
  /** client-go's lastSyncResourceVersion: the last list's RV, then each event's and bookmark's. */
  let lastSyncRv = '';
  const stopper = new AbortController();
  const stopped = stopper.signal;
  /** A function, not `stopped.aborted` inline: the value changes across awaits, which narrowing does not see. */
  const isStopped = (): boolean => stopped.aborted;
  let backoffMs = 0;
  let lastBackoffAt = -Infinity;
  /** Aborted by wake(): ends the backoff wait in progress. */
  let waking = new AbortController();

  let markSynced: () => void = () => undefined;
  let failSync: (error: Error) => void = () => undefined;
  const synced = new Promise<void>((resolve, reject) => {
    markSynced = resolve;
    failSync = reject;
  });
  synced.catch(() => undefined);

  const problem = (text: string): void => {
    if (problems.length < MAX_PROBLEMS) problems.push(`${options.name}: ${text}`);
  };
  const headers = { ...options.headers, accept: 'application/json' };

  const backoff = async (): Promise<void> => {
    const t = now();
    backoffMs = t - lastBackoffAt > BACKOFF_RESET_MS ? BACKOFF_INITIAL_MS : Math.min(backoffMs * 2, BACKOFF_CAP_MS);
    lastBackoffAt = t;
    const woken = waking.signal;
    try {
      await sleep(backoffMs * (1 + options.random()), undefined, { signal: AbortSignal.any([stopped, woken]) });
    } catch (error) {
      if (stopped.aborted || !woken.aborted) throw error;
    }
  };

  /** LIST, page by page; `from` is '0', an RV (not older than), or '' (most recent). */
  const list = async (from: string): Promise<void> => {
    const items = new Map<string, number>();
    let listRv: number | undefined;
    let continueToken = '';
    do {
      const query = new URLSearchParams();
      if (continueToken !== '') {
        query.set('limit', String(PAGE_SIZE));
        query.set('continue', continueToken);
      } else {
        if (from !== '') query.set('resourceVersion', from);
        // client-go: paged from '' (and '0', which the watch cache serves whole anyway); unpaged
        // from an RV, so that the apiserver serves it from its watch cache, never from etcd.
        if (from === '' || from === '0') query.set('limit', String(PAGE_SIZE));
      }
      const res = await request(`${options.url}${options.path}?${query.toString()}`, {
        dispatcher: options.dispatcher,
        headers,
        signal: AbortSignal.any([stopped, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
      });
      const text = await res.body.text();
      if (res.statusCode === 410) {
        options.trace?.(`LIST from RV "${from}": HTTP 410`);
        throw new Expired(text);
      }
      if (res.statusCode !== 200) throw new Error(`LIST ${String(res.statusCode)}: ${text.slice(0, 200)}`);
      const body = JSON.parse(text) as KubeList;
      listRv ??= Number(body.metadata.resourceVersion);
      for (const item of body.items) items.set(keyOf(item.metadata), Number(item.metadata.resourceVersion));
      continueToken = body.metadata.continue ?? '';
    } while (continueToken !== '');
    const rv = listRv;
    if (rv < high) {
      counts.reordered++;
      problem(`LIST at RV ${String(rv)} after RV ${String(high)} was seen (back in time)`);
    }
    high = Math.max(high, rv);
    if (lists.length > 0) counts.relists++;
    lists.push({ rv, at: now(), items: items.size });
    options.trace?.(`LIST from RV "${from}": RV ${String(rv)}, ${String(items.size)} items`);
    store = items;
    lastSyncRv = String(rv);
  };

  /** One WATCH from lastSyncRv, until it ends; returns how it ended. */
  const watch = async (): Promise<SegmentEnd | 'refused'> => {
    const from = Number(lastSyncRv);
    const timeout = Math.floor(minTimeout + options.random() * (maxTimeout - minTimeout));
    const query = `watch=true&resourceVersion=${lastSyncRv}&allowWatchBookmarks=true&timeoutSeconds=${String(timeout)}`;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${options.url}${options.path}?${query}`, {
        dispatcher: options.dispatcher,
        headers,
        signal: stopped,
        headersTimeout: REQUEST_TIMEOUT_MS,
        bodyTimeout: 0,
      });
    } catch {
      return stopped.aborted ? 'stopped' : 'refused';
    }
    if (res.statusCode !== 200) {
      options.trace?.(`WATCH from RV ${lastSyncRv}: HTTP ${String(res.statusCode)}`);
      await res.body.dump().catch(() => undefined);
      if (res.statusCode === 410) return 'expired';
      // client-go retries the watch itself only after connection refused and 429; anything else relists.
      return res.statusCode === 429 ? 'refused' : 'error';
    }
    const segment: MutableSegment = { from, to: from, startedAt: now(), endedAt: undefined, end: undefined };
    segments.push(segment);
    markSynced();
    let end: SegmentEnd = 'timeout';
    let rest = '';
    res.body.setEncoding('utf8');
    try {
      reading: for await (const chunk of res.body as AsyncIterable<string>) {
        const at = now();
        let text = rest + chunk;
        let newline = text.indexOf('\n');
        while (newline !== -1) {
          const outcome = handle(text.slice(0, newline), at, segment);
          if (outcome !== undefined) {
            end = outcome;
            break reading;
          }
          text = text.slice(newline + 1);
          newline = text.indexOf('\n');
        }
        rest = text;
        const delay = options.readDelayMs?.() ?? 0;
        if (delay > 0) await sleep(delay, undefined, { signal: stopped });
      }
    } catch {
      end = stopped.aborted ? 'stopped' : 'broken';
    } finally {
      res.body.destroy();
    }
    segment.endedAt = now();
    segment.end = end;
    options.trace?.(
      `WATCH from RV ${String(from)}: ${end} at RV ${String(segment.to)} after ${((segment.endedAt - segment.startedAt) / 1000).toFixed(1)} s`,
    );
    return end;
  };

  /** One line of a watch stream; returns how the watch ends if the line ends it. */
  const handle = (line: string, at: number, segment: MutableSegment): SegmentEnd | undefined => {
    if (line.trim() === '') return undefined;
    const event = JSON.parse(line) as WireEvent;
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED': {
        const meta = (event.object as KubeObject).metadata;
        const key = keyOf(meta);
        const rv = Number(meta.resourceVersion);
        const id = `${key}@${String(rv)}`;
        if (seen.has(id)) {
          counts.duplicated++;
          problem(`${event.type} ${id} delivered again (watch from RV ${String(segment.from)})`);
        } else if (rv <= high) {
          counts.reordered++;
          problem(`${event.type} ${id} after RV ${String(high)} (watch from RV ${String(segment.from)})`);
        }
        seen.add(id);
        events.push({ type: event.type, key, rv, at });
        if (event.type === 'DELETED') store.delete(key);
        else store.set(key, rv);
        high = Math.max(high, rv);
        segment.to = Math.max(segment.to, rv);
        lastSyncRv = String(rv);
        return undefined;
      }
      case 'BOOKMARK': {
        const rv = Number((event.object as KubeObject).metadata.resourceVersion);
        counts.bookmarks++;
        if (rv < high) {
          counts.reordered++;
          problem(`BOOKMARK at RV ${String(rv)} after RV ${String(high)}`);
        }
        high = Math.max(high, rv);
        segment.to = Math.max(segment.to, rv);
        lastSyncRv = String(rv);
        return undefined;
      }
      case 'ERROR':
        return (event.object as { code?: number }).code === 410 ? 'expired' : 'error';
    }
  };

  const run = async (): Promise<void> => {
    /** What the next LIST asks for: client-go's relistResourceVersion(). */
    let listFrom = '0';
    while (!stopped.aborted) {
      try {
        await list(listFrom);
      } catch (error) {
        if (isStopped()) return;
        if (error instanceof Expired) {
          // isLastSyncResourceVersionUnavailable: the next LIST asks for the most recent state, at once.
          counts.expired++;
          listFrom = '';
          continue;
        }
        counts.failures++;
        await backoff();
        continue;
      }
      watching: for (;;) {
        const started = now();
        const eventsBefore = events.length;
        const end = await watch();
        switch (end) {
          case 'stopped':
            return;
          case 'timeout':
          case 'broken':
            if (now() - started < VERY_SHORT_WATCH_MS && events.length === eventsBefore) {
              counts.failures++;
              break watching;
            }
            counts.rewatches++;
            continue;
          case 'refused':
            counts.failures++;
            await backoff();
            continue;
          case 'expired':
            counts.expired++;
            break watching;
          case 'error':
            counts.failures++;
            break watching;
        }
      }
      // ListAndWatch returned: wait.BackoffUntil runs it again after the backoff, from the last synced RV.
      await backoff();
      listFrom = lastSyncRv;
    }
  };

  const running = run()
    .catch((error: unknown) => {
      // sleeps end with AbortError when stopped; anything else is a bug of this client.
      if (!stopped.aborted) throw error;
    })
    .finally(() => {
      failSync(new Error(`${options.name} stopped before it synced`));
    });

  return {
    name: options.name,
    events,
    lists,
    segments,
    get store() {
      return store;
    },
    counts,
    problems,
    synced,
    async stop() {
      stopper.abort();
      await running;
    },
    wake() {
      backoffMs = 0;
      lastBackoffAt = -Infinity;
      waking.abort();
      waking = new AbortController();
    },
  };
}

interface KubeMeta {
  readonly name: string;
  readonly namespace?: string;
  readonly resourceVersion: string;
}

interface KubeObject {
  readonly metadata: KubeMeta;
}

interface KubeList {
  readonly metadata: { readonly resourceVersion: string; readonly continue?: string };
  readonly items: readonly KubeObject[];
}

type WireEvent = { readonly type: WatchEventType | 'BOOKMARK' | 'ERROR'; readonly object: unknown };

function keyOf(meta: KubeMeta): string {
  return meta.namespace === undefined ? meta.name : `${meta.namespace}/${meta.name}`;
}
