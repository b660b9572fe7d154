/**
 * The status page's figures (GET /kube-cache-proxy/status, JSON): per cache, what it holds and
 * how fresh it is; for the whole proxy, how much of the read load it took off the apiserver.
 *
 * Counters come from the metrics registry (proxy-totals.ts), states from the caches' own checks
 * (the /readyz ones). Rates and the request chart need a history: the totals are sampled every
 * SAMPLE_INTERVAL_MS (one registry read, nothing on the request path) and kept for HISTORY_SAMPLES.
 */
import type { Registry } from 'prom-client';
import { realClock } from '../clock/clock.ts';
import type { Clock, Timer } from '../clock/clock.ts';
import type { CacheStatus } from '../cache/cache-source.ts';
import type { UpstreamIdentity } from '../upstream/identity.ts';
import { readProxyTotals } from './proxy-totals.ts';
import type { ProxyTotals, Served } from './proxy-totals.ts';

/** The chart's bar width. */
export const SAMPLE_INTERVAL_MS = 10_000;
/** Ten minutes of bars. */
export const HISTORY_SAMPLES = 60;
/** Rates (events/s) and the requests saved are over this much of the history. */
const RATE_WINDOW_MS = 60_000;
/** A failed SelfSubjectReview is asked again after this long (each asks the apiserver once). */
const IDENTITY_RETRY_MS = 60_000;
/** How long a report waits for a SelfSubjectReview in flight before answering without it. */
const IDENTITY_WAIT_MS = 1_000;

/** A chained proxy's fallback: where its requests go now, and since when. */
export interface FallbackStatus {
  /** `upstream` (the --server proxy) or `apiserver` (while that proxy cannot be reached). */
  readonly target: 'upstream' | 'apiserver';
  readonly apiserver: string;
  readonly since: string;
  /** Why the upstream proxy was left, while on the apiserver. */
  readonly reason: string | null;
  /** Times it was left since start. */
  readonly fallbacks: number;
}

export interface StatusSources {
  readonly registry: Registry;
  /** The caches' states; none when the proxy caches nothing. */
  readonly caches: () => readonly CacheStatus[];
  readonly upstream: { readonly server: string; readonly source: string };
  /** With --server and its fallback: whether requests go to the apiserver now (fallback-client.ts); none: no fallback. */
  readonly fallback?: (() => FallbackStatus) | undefined;
  readonly consistency: { readonly mode: string; readonly strongResources: readonly string[]; readonly maxStalenessSeconds: number };
  /** Who the proxy is upstream (a SelfSubjectReview); asked on the first report. */
  readonly identity?: (() => Promise<UpstreamIdentity>) | undefined;
  readonly version: string;
  readonly clock?: Clock;
  readonly memory?: () => NodeJS.MemoryUsage;
  /** The node pool this proxy is a member of (--pool); none: not in a pool. */
  readonly pool?: (() => PoolStatus) | undefined;
  /** The limits at the door and their refusals so far (server/pass-through/shared-gate.ts); none: no limits. */
  readonly limits?: (() => LimitsStatus) | undefined;
}

/** The per-flow limits (0: none) and the limits on TokenReviews of unknown tokens, with the requests refused so far. */
export interface LimitsStatus {
  /** What a flow is: a user at a source address (shared mode), or a connection (sidecar mode). */
  readonly flow: 'user at address' | 'connection';
  readonly maxRequestsInflightPerFlow: number;
  readonly maxWatchesPerFlow: number;
  /** Shared mode only; null in sidecar mode (no reviews). */
  readonly maxReviewsInflightPerFlow: number | null;
  /** Shared mode only; null in sidecar mode. */
  readonly tokenReviews: {
    readonly qpsPerAddress: number;
    readonly burstPerAddress: number;
    readonly qps: number;
    readonly burst: number;
    readonly maxInflight: number;
  } | null;
  /** Flows holding a seat now. */
  readonly flows: number;
  /** Requests answered 429 since start, by reason (kube_cache_proxy_rejected_requests_total). */
  readonly rejected: Readonly<Record<string, number>>;
}

/** A node pool member's state: its role, and where the pool-wide types are read from. */
export interface PoolStatus {
  readonly name: string;
  /** The Lease, `namespace/name`. */
  readonly lease: string;
  /** The leader's advertised URL as the Lease last named it ('' while none). */
  readonly leader: string;
  readonly role: 'leader' | 'follower';
  /** Where the types cached whole are listed and watched from now. */
  readonly readsFrom: 'leader' | 'apiserver';
}

export interface CacheReport {
  /** The cache's /readyz check name: cache-pods, cache-deployments.apps, ... */
  readonly name: string;
  readonly type: string;
  readonly version: string;
  readonly namespace: string | null;
  readonly phase: CacheStatus['phase'];
  readonly objects: number;
  /** JSON bytes of the objects held (the type's, over its caches). */
  readonly bytes: number;
  readonly resourceVersion: string | null;
  /** Seconds since the upstream watch last said anything (event, bookmark, list). */
  readonly stalenessSeconds: number | null;
  /** The last consistency check (cache/consistency-checker.ts); null before the first or with checks off. */
  readonly consistency: {
    readonly result: 'success' | 'failure' | 'error';
    readonly resourceVersion: string | null;
    readonly checkedSecondsAgo: number;
    readonly detail: string;
  } | null;
  readonly relists: number;
  readonly watchers: number;
  readonly eventsPerSecond: number;
  /** get, list and watch requests of the type since start, by where they were answered. */
  readonly reads: Served;
  /** Why its reads went to the apiserver: the TOP_PASS_REASONS most frequent reasons since start, most first. */
  readonly passReasons: readonly PassReasonCount[];
}

/** A pass-through reason (cache/pass-reason.ts) and how many reads it sent to the apiserver. */
export interface PassReasonCount {
  readonly reason: string;
  readonly count: number;
}

export interface HistoryBar {
  /** The end of the bar's interval (ISO time). */
  readonly end: string;
  readonly seconds: number;
  /** Requests answered in the interval, by where. */
  readonly requests: Served;
}

export interface StatusReport {
  readonly generatedAt: string;
  readonly version: string;
  readonly uptimeSeconds: number;
  readonly upstream: {
    readonly server: string;
    readonly source: string;
    /** The proxy's user upstream; null until known (or when the apiserver does not say). */
    readonly identity: UpstreamIdentity | null;
    /** A chained proxy's fallback to the apiserver; null without one. */
    readonly fallback: FallbackStatus | null;
  };
  readonly consistency: StatusSources['consistency'];
  /** The node pool, if the proxy is a member of one; null otherwise. */
  readonly pool: PoolStatus | null;
  /** The limits at the door, null when there are none. */
  readonly limits: LimitsStatus | null;
  readonly memory: { readonly rssBytes: number; readonly heapUsedBytes: number; readonly arrayBuffersBytes: number };
  /** Requests since start: all, and the reads (get, list, watch); offloadRatio = reads from the cache / all reads (null before any). */
  readonly requests: Served;
  readonly reads: Served & { readonly offloadRatio: number | null };
  /**
   * The proxy's own list and watch requests upstream since start; and over the last minute (since
   * start while younger), requests answered from the cache minus those: what the apiserver was spared.
   */
  readonly upstreamRequests: { readonly total: number; readonly savedLastMinute: number };
  readonly caches: readonly CacheReport[];
  /** Types read through the proxy that no cache holds: their reads went to the apiserver, and why. */
  readonly uncached: readonly { readonly type: string; readonly reads: Served; readonly passReasons: readonly PassReasonCount[] }[];
  readonly history: { readonly intervalSeconds: number; readonly bars: readonly HistoryBar[] };
}

export interface StatusReporter {
  report(): Promise<StatusReport>;
  /** Begins sampling (the chart and the rates); idempotent. */
  start(): void;
  stop(): void;
}

const round = (n: number, digits: number): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** How many pass-through reasons a type shows: the few that explain most of its pass-throughs. */
export const TOP_PASS_REASONS = 3;

/** The most frequent reasons, most first (ties by name). */
function topReasons(counts: ReadonlyMap<string, number> | undefined): PassReasonCount[] {
  return [...(counts ?? [])]
    .map(([reason, count]) => ({ reason, count }))
    .sort((a, b) => b.count - a.count || (a.reason < b.reason ? -1 : 1))
    .slice(0, TOP_PASS_REASONS);
}

export function newStatusReporter(sources: StatusSources): StatusReporter {
  const clock = sources.clock ?? realClock;
  const memory = sources.memory ?? (() => process.memoryUsage());
  const startedAt = clock.now();
  const startedWall = clock.wallNow();
  /** Oldest first; the first is taken at start. */
  const samples: ProxyTotals[] = [];
  let timer: Timer | undefined;
  let running = false;
  let identity: UpstreamIdentity | undefined;
  let identityAskedAt = Number.NEGATIVE_INFINITY;
  /** The SelfSubjectReview in flight, if one is. */
  let identityAsked: Promise<void> | undefined;

  const sample = async (): Promise<void> => {
    const totals = await readProxyTotals(sources.registry, clock.now());
    samples.push(totals);
    if (samples.length > HISTORY_SAMPLES + 1) samples.shift();
  };
  const arm = (): void => {
    timer = clock.setTimeout(() => {
      if (!running) return;
      void sample().finally(() => {
        if (running) arm();
      });
    }, SAMPLE_INTERVAL_MS);
  };
  /** Asks the apiserver who the proxy is, at most once per IDENTITY_RETRY_MS until it answers; resolves when the answer is in. */
  const askIdentity = (): Promise<void> | undefined => {
    const ask = sources.identity;
    if (ask === undefined || identity !== undefined) return undefined;
    if (identityAsked !== undefined || clock.now() - identityAskedAt < IDENTITY_RETRY_MS) return identityAsked;
    identityAskedAt = clock.now();
    identityAsked = ask().then(
      (who) => {
        identity = who;
      },
      () => undefined,
    );
    void identityAsked.finally(() => {
      identityAsked = undefined;
    });
    return identityAsked;
  };
  /** The newest sample at least RATE_WINDOW_MS old, else the oldest: rates over about a minute. */
  const rateBase = (now: number): ProxyTotals | undefined => {
    let base = samples[0];
    for (const s of samples) {
      if (now - s.at >= RATE_WINDOW_MS) base = s;
      else break;
    }
    return base;
  };

  return {
    start() {
      if (running) return;
      running = true;
      void sample();
      arm();
    },
    stop() {
      running = false;
      timer?.cancel();
    },
    async report() {
      // The first report waits a moment for the answer, so the page does not open on "unknown".
      const asked = askIdentity();
      if (asked !== undefined) {
        let waited: Timer | undefined;
        await Promise.race([asked, new Promise<void>((resolve) => (waited = clock.setTimeout(resolve, IDENTITY_WAIT_MS)))]);
        waited?.cancel();
      }
      const now = clock.now();
      const totals = await readProxyTotals(sources.registry, now);
      const base = rateBase(now);
      const elapsedS = base === undefined ? 0 : (now - base.at) / 1000;
      const rate = (current: number, before: number | undefined): number =>
        elapsedS <= 0 ? 0 : Math.max(0, current - (before ?? 0)) / elapsedS;
      const caches: CacheReport[] = sources.caches().map((c) => {
        const t = totals.types.get(c.type);
        return {
          name: c.name,
          type: c.type,
          version: c.version,
          namespace: c.namespace ?? null,
          phase: c.phase,
          objects: c.objects,
          bytes: t?.bytes ?? 0,
          resourceVersion: c.resourceVersion ?? null,
          stalenessSeconds: c.heardAgoMs === undefined ? null : round(c.heardAgoMs / 1000, 1),
          consistency:
            c.consistency === undefined
              ? null
              : {
                  result: c.consistency.result,
                  resourceVersion: c.consistency.resourceVersion ?? null,
                  checkedSecondsAgo: round(c.consistency.agoMs / 1000, 1),
                  detail: c.consistency.detail,
                },
          relists: t?.relists ?? 0,
          watchers: t?.watchers ?? 0,
          eventsPerSecond: round(rate(t?.events ?? 0, base?.types.get(c.type)?.events), 2),
          reads: t?.reads ?? { cache: 0, apiserver: 0 },
          passReasons: topReasons(t?.passReasons),
        };
      });
      const cachedTypes = new Set(caches.map((c) => c.type));
      const uncached = [...totals.types]
        .filter(([type, t]) => !cachedTypes.has(type) && t.reads.cache + t.reads.apiserver > 0)
        .map(([type, t]) => ({ type, reads: t.reads, passReasons: topReasons(t.passReasons) }))
        .sort((a, b) => b.reads.apiserver - a.reads.apiserver || (a.type < b.type ? -1 : 1));
      const allReads = totals.reads.cache + totals.reads.apiserver;
      const saved = totals.requests.cache - (base?.requests.cache ?? 0) - (totals.upstream - (base?.upstream ?? 0));
      const bars: HistoryBar[] = [];
      const points = [...samples, totals];
      for (let i = 1; i < points.length; i++) {
        const from = points[i - 1];
        const to = points[i];
        if (from === undefined || to === undefined) continue;
        bars.push({
          end: new Date(startedWall + (to.at - startedAt)).toISOString(),
          seconds: round((to.at - from.at) / 1000, 1),
          requests: {
            cache: Math.max(0, to.requests.cache - from.requests.cache),
            apiserver: Math.max(0, to.requests.apiserver - from.requests.apiserver),
          },
        });
      }
      const mem = memory();
      return {
        generatedAt: new Date(clock.wallNow()).toISOString(),
        version: sources.version,
        uptimeSeconds: Math.round((now - startedAt) / 1000),
        upstream: {
          server: sources.upstream.server,
          source: sources.upstream.source,
          identity: identity ?? null,
          fallback: sources.fallback?.() ?? null,
        },
        consistency: sources.consistency,
        pool: sources.pool?.() ?? null,
        limits: sources.limits?.() ?? null,
        memory: { rssBytes: mem.rss, heapUsedBytes: mem.heapUsed, arrayBuffersBytes: mem.arrayBuffers },
        requests: totals.requests,
        reads: { ...totals.reads, offloadRatio: allReads === 0 ? null : round(totals.reads.cache / allReads, 4) },
        upstreamRequests: { total: totals.upstream, savedLastMinute: saved },
        caches,
        uncached,
        history: { intervalSeconds: SAMPLE_INTERVAL_MS / 1000, bars },
      };
    },
  };
}
