/**
 * GET and LIST answered from the watch caches, for the requests whose answer the cache can give
 * exactly as the apiserver would; everything else is passed through (the answer is undefined).
 * The resourceVersion rules (storage/cacher/delegator.go, watch_cache.go waitUntilFreshAndList):
 * - "0" (any): the cache as it is; LIST ignores `limit` and returns everything.
 * - N, NotOlderThan (or a LIST without limit, or a GET): once the cache is at N or later. The
 *   cache waits briefly; past that the apiserver decides (it can see newer state than the
 *   cache's watch has reported, and answers 200 or its own 504 ResourceVersionTooLarge).
 * - N with limit and no match, Exact N, and `continue` (Exact at the token's RV): from the
 *   snapshot kept of the cache at exactly N, else passed through (etcd serves it, or says 410).
 * - unset (most recent): see ReadConsistency.
 * Invalid queries, tables and other media types are passed through: the apiserver words them.
 *
 * HOT PATH: a LIST body is the concatenation of a head, each item's stored bytes, and a tail; no
 * object is parsed or serialized per request, and the key order is sorted once per RV.
 */
import type { KubeObject } from '../informer/object.ts';
import { collectionPath } from '../informer/lister-watcher.ts';
import type { ConsistencyProbe } from '../cache/consistency-probe.ts';
import { newConsistencyProbe } from '../cache/consistency-probe.ts';
import type { CachedResourceSpec, WatchCache, WatchCacheSource } from '../cache/watch-cache.ts';
import { lowerBound } from '../cache/watch-cache.ts';
import { typeName } from '../cache/cached-resources.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Cacher } from '../cache/cacher.ts';
import { newCacher } from '../cache/cacher.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { Clock } from '../workqueue/clock.ts';
import type { ProxyMetrics } from './metrics.ts';
import { noopProxyMetrics } from './metrics.ts';
import { realClock } from '../workqueue/clock.ts';
import type { ListOptions } from './list-options.ts';
import { parseListOptions } from './list-options.ts';
import type { DecodedContinue } from './continue-token.ts';
import { decodeContinue, encodeContinue } from './continue-token.ts';
import type { RequestInfo } from './request-info.ts';
import { parseRequestInfo } from './request-info.ts';
import { notFound } from './status.ts';
import { selectionOf, serveWatch } from './cached-watch.ts';

/**
 * How RV-unset ("most recent") reads are answered:
 * - `strong` (default): from the cache only once it is at least as fresh as the apiserver was
 *   when the request arrived (a consistency probe, then a brief wait); otherwise passed through.
 *   Linearizable, as the apiserver's own consistent reads.
 * - `bounded`: from the cache while its upstream watch is alive (an event or bookmark within
 *   WATCH_ALIVE_MS), waiting for the proxy's own writes to arrive (read-your-writes). Stale by
 *   at most the watch's delivery delay; maximum offload.
 */
export type ReadConsistency = 'strong' | 'bounded';

export interface CachedResponse {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Chunks to write in order. */
  readonly body: readonly Buffer[];
}

export interface CachedReads {
  /** Starts the caches. */
  start(): void;
  /** True once the caches the proxy was told to hold have synced. */
  synced(): boolean;
  stop(): Promise<void>;
  /** The answer from the cache, or undefined to pass the request through. */
  tryServe(method: string, url: string, accept: string | undefined, signal?: AbortSignal): Promise<CachedResponse | undefined>;
  /**
   * Serves a WATCH from the cache on `res` and resolves true, or resolves false having written
   * nothing (the request goes to the apiserver).
   */
  tryWatch(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /**
   * A write passed through the proxy was answered 2xx; `resourceVersion` is the written
   * object's (undefined when the answer carried none, e.g. a delete's Status).
   */
  observeWrite(url: string, resourceVersion: bigint | undefined): void;
  /** Whether observeWrite is needed (bounded mode's read-your-writes); strong reads probe instead. */
  readonly observesWrites: boolean;
}

export interface CachedReadsOptions {
  readonly source: WatchCacheSource;
  /** For consistency probes. */
  readonly client: UpstreamClient;
  readonly consistency?: ReadConsistency;
  /**
   * How long a read waits for the cache to reach the RV it needs before it is passed through.
   * The events it waits for are normally a watch delivery away (milliseconds); a cache that is
   * behind only because other types moved the global RV never gets there, so waiting longer
   * only delays the pass-through.
   */
  readonly freshnessWaitMs?: number;
  /** The caches' clock (bounded mode compares it with lastProgressAt). */
  readonly clock?: Clock;
  readonly metrics?: Pick<ProxyMetrics, 'probe' | 'cacher'>;
}

export const DEFAULT_FRESHNESS_WAIT_MS = 50;
/**
 * In bounded mode, a cache whose watch has said nothing (no event, no bookmark) for this long is
 * not trusted: the apiserver sends each watcher a bookmark every minute (cacher.go
 * defaultBookmarkFrequency), and this is its eventFreshDuration (a minute plus 15 s).
 */
export const WATCH_ALIVE_MS = 75_000;
/** Bounded mode: how long the proxy's own write waits to show in the cache before a read is passed through. */
const READ_YOUR_WRITES_WAIT_MS = 3_000;

const JSON_HEADERS = { 'content-type': 'application/json' } as const;
const OPEN = Buffer.from('{');
const COMMA = Buffer.from(',');
const NEWLINE = Buffer.from('\n');

/**
 * Plain JSON is acceptable (no Accept, `*\/*`, `application/*` or `application/json` without an
 * `as=` conversion) and no Table is asked for. Anything else goes to the apiserver.
 */
export function acceptsPlainJson(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  // A client that prefers a Table (kubectl get) gets the apiserver's Table, printed server-side.
  if (/;\s*as=Table/i.test(accept)) return false;
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    if (params.some((p) => p.startsWith('as=') || p.startsWith('g=') || p.startsWith('v='))) continue;
    if (params.some((p) => p === 'q=0' || p === 'q=0.0')) continue;
    if (type === 'application/json' || type === '*/*' || type === 'application/*') return true;
  }
  return false;
}

/** Where a read is served from: the live cache at an RV, or a kept snapshot. */
type ReadPlan =
  | { readonly kind: 'latest'; readonly minRv: bigint }
  | { readonly kind: 'consistent' }
  | { readonly kind: 'exact'; readonly rv: bigint; readonly from: DecodedContinue | undefined };

export function newCachedReads(options: CachedReadsOptions): CachedReads {
  const { source, client } = options;
  const consistency = options.consistency ?? 'strong';
  const waitMs = options.freshnessWaitMs ?? DEFAULT_FRESHNESS_WAIT_MS;
  const clock = options.clock ?? realClock;
  const metrics = options.metrics ?? noopProxyMetrics;
  const probes = new WeakMap<WatchCache, ConsistencyProbe>();
  const cachers = new WeakMap<WatchCache, Cacher>();
  const cacherOf = (cache: WatchCache): Cacher => {
    let cacher = cachers.get(cache);
    if (cacher === undefined) {
      const { group, resource } = cache.spec;
      cacher = newCacher(cache, { clock, metrics: metrics.cacher(typeName(group, resource)) });
      cachers.set(cache, cacher);
    }
    return cacher;
  };
  /**
   * Bounded mode, read-your-writes: per type, the newest RV written through this proxy, or
   * 'probe' after a write whose RV the answer did not carry (reads then probe, as in strong mode,
   * until one finds the cache fresh).
   */
  const written = new Map<string, bigint | 'probe'>();

  const probeOf = (cache: WatchCache): ConsistencyProbe => {
    let probe = probes.get(cache);
    if (probe === undefined) {
      const { group, version, resource } = cache.spec;
      const name = typeName(group, resource);
      probe = newConsistencyProbe(client, collectionPath({ group, version, resource, namespace: cache.namespace }), () => {
        metrics.probe(name);
      });
      probes.set(cache, probe);
    }
    return probe;
  };

  /** Resolves true once the cache holds the state an RV-unset read must see. */
  const consistentReady = async (cache: WatchCache, signal: AbortSignal | undefined): Promise<boolean> => {
    const type = typeKey(cache.spec.group, cache.spec.resource);
    const mine = written.get(type);
    if (consistency === 'bounded' && mine !== 'probe') {
      if (!cache.informer.hasSynced() || clock.now() - cache.lastProgressAt() > WATCH_ALIVE_MS) return false;
      return mine === undefined || (await cache.waitUntilFresh(mine, READ_YOUR_WRITES_WAIT_MS, signal)) !== undefined;
    }
    const rv = await probeOf(cache).currentResourceVersion();
    const fresh = rv !== undefined && (await cache.waitUntilFresh(rv, waitMs, signal)) !== undefined;
    if (fresh && mine === 'probe') written.delete(type);
    return fresh;
  };

  return {
    start() {
      source.start();
    },
    synced() {
      return source.synced();
    },
    stop() {
      return source.stop();
    },
    observesWrites: consistency === 'bounded',
    observeWrite(url, resourceVersion) {
      if (consistency !== 'bounded') return; // strong reads probe after every write anyway
      let info: RequestInfo;
      try {
        info = parseRequestInfo('POST', url);
      } catch {
        return;
      }
      if (!info.isResourceRequest) return;
      const key = typeKey(info.apiGroup, info.resource);
      const before = written.get(key);
      if (resourceVersion === undefined || before === 'probe') written.set(key, 'probe');
      else if (before === undefined || before < resourceVersion) written.set(key, resourceVersion);
    },
    async tryWatch(req, res) {
      const method = req.method ?? 'GET';
      const url = req.url ?? '/';
      if (method !== 'GET' || !acceptsPlainJson(req.headers.accept)) return false;
      let info: RequestInfo;
      let options: ListOptions;
      try {
        info = parseRequestInfo(method, url);
        // Collections only: a watch of one named object is the apiserver's (it becomes a field selector there).
        if (!info.isResourceRequest || info.subresource !== '' || info.verb !== 'watch' || info.name !== '') return false;
        options = parseListOptions(new URL(url, 'http://proxy').searchParams, { forceWatch: info.legacyWatch });
      } catch {
        return false; // the apiserver words the error
      }
      if (info.namespace !== '' && !plainName(info.namespace)) return false;
      const cache = source.cacheFor(info.apiGroup, info.apiVersion, info.resource, info.namespace);
      if (cache === undefined) return false;
      if (!cache.spec.namespaced && info.namespace !== '' && info.resource !== 'namespaces') return false;
      const gone = new AbortController();
      const onClose = (): void => {
        gone.abort();
      };
      res.on('close', onClose);
      try {
        return await serveWatch({
          cache,
          cacher: cacherOf(cache),
          info,
          options,
          res,
          consistentReady: () => consistentReady(cache, gone.signal),
          waitMs,
        });
      } finally {
        res.off('close', onClose);
      }
    },
    async tryServe(method, url, accept, signal) {
      if (method !== 'GET' || !acceptsPlainJson(accept)) return undefined;
      let info: RequestInfo;
      let options: ListOptions;
      try {
        info = parseRequestInfo(method, url);
        if (!info.isResourceRequest || info.subresource !== '' || info.legacyWatch) return undefined;
        if (info.verb !== 'get' && info.verb !== 'list') return undefined;
        options = parseListOptions(new URL(url, 'http://proxy').searchParams);
      } catch {
        return undefined; // the apiserver words the error
      }
      if (options.watch) return undefined;
      // Names the apiserver refuses (IsValidPathSegmentName) or would quote as raw bytes: its to word.
      if ((info.name !== '' && !plainName(info.name)) || (info.namespace !== '' && !plainName(info.namespace))) return undefined;
      const cache = source.cacheFor(info.apiGroup, info.apiVersion, info.resource, info.namespace);
      if (cache === undefined) return undefined;
      // A cluster-scoped type asked for in a namespace is the apiserver's 404 to word.
      if (!cache.spec.namespaced && info.namespace !== '' && info.resource !== 'namespaces') return undefined;
      const plan = readPlan(info, options, cache);
      if (plan === undefined) return undefined;
      if (plan.kind === 'consistent') {
        if (!(await consistentReady(cache, signal))) return undefined;
      } else if (plan.kind === 'latest') {
        if ((await cache.waitUntilFresh(plan.minRv, waitMs, signal)) === undefined) return undefined;
      }
      // The cache may have been stopped while this request waited: the apiserver answers then.
      if (cache.isClosed()) return undefined;
      // From here on synchronous: the RV and the contents are read in one turn.
      if (info.verb === 'get') return cache.resourceVersion() === undefined ? undefined : serveGet(cache, info);
      return serveList(cache, info, options, plan);
    },
  };
}

/** A path segment name the apiserver accepts (not `.` or `..`, no `/` or `%`), printable ASCII only. */
function plainName(name: string): boolean {
  return name !== '.' && name !== '..' && /^[\x21-\x24\x26-\x2e\x30-\x7e]+$/.test(name);
}

function typeKey(group: string, resource: string): string {
  return `${group}/${resource}`;
}

/**
 * The storage key of an object, as continue tokens see it: a root standing for the apiserver's
 * `/registry/<resource>`, then the cache key (`namespace/name` or `name`). A token's start key
 * is relative to the list's key without its trailing slash (`/name\0` in a namespace,
 * `/namespace/name\0` across namespaces), as the apiserver's (cacher.go PrepareContinueToken).
 */
const KEY_ROOT = '/r';

/** The list's key: the namespace's keys, or all keys. Tokens are encoded against it and decoded against it plus `/`. */
function listKeyOf(cache: WatchCache, info: RequestInfo): string {
  return cache.spec.namespaced && info.namespace !== '' ? `${KEY_ROOT}/${info.namespace}` : KEY_ROOT;
}

/** Which state the request reads, or undefined to pass it through (see the file comment). */
function readPlan(info: RequestInfo, options: ListOptions, cache: WatchCache): ReadPlan | undefined {
  const rv = options.resourceVersion;
  if (rv !== '' && rv !== '0' && !/^[1-9][0-9]{0,18}$/.test(rv)) return undefined;
  if (info.verb === 'get') {
    if (rv === '') return { kind: 'consistent' };
    return { kind: 'latest', minRv: BigInt(rv) };
  }
  if (options.continue !== '') {
    let from: DecodedContinue;
    try {
      from = decodeContinue(options.continue, `${listKeyOf(cache, info)}/`);
    } catch {
      return undefined;
    }
    if ((rv !== '' && rv !== '0') || from.resourceVersion <= 0) return undefined;
    return { kind: 'exact', rv: BigInt(from.resourceVersion), from };
  }
  if (rv === '') return { kind: 'consistent' };
  if (rv === '0') return { kind: 'latest', minRv: 0n };
  const exact = options.resourceVersionMatch === 'Exact' || (options.resourceVersionMatch === '' && options.limit > 0);
  return exact ? { kind: 'exact', rv: BigInt(rv), from: undefined } : { kind: 'latest', minRv: BigInt(rv) };
}

function serveGet(cache: WatchCache, info: RequestInfo): CachedResponse {
  const key = cache.spec.namespaced ? `${info.namespace}/${info.name}` : info.name;
  const obj = cache.get(key);
  if (obj === undefined) {
    const status = notFound({ group: cache.spec.group, resource: cache.spec.resource }, info.name);
    return { statusCode: 404, headers: JSON_HEADERS, body: [status.body()] };
  }
  return { statusCode: 200, headers: JSON_HEADERS, body: [obj.raw, NEWLINE] };
}

interface Page {
  readonly items: KubeObject[];
  readonly resourceVersion: bigint;
  readonly continue: string;
  readonly remainingItemCount: bigint | undefined;
}

function serveList(cache: WatchCache, info: RequestInfo, options: ListOptions, plan: ReadPlan): CachedResponse | undefined {
  const selection = selectionOf(cache, info, options);
  if (selection === undefined) return undefined; // the apiserver words the error
  const { labels, fields } = selection;
  const rv = plan.kind === 'exact' ? plan.rv : cache.resourceVersion();
  if (rv === undefined) return undefined;
  const ordered = cache.snapshot(rv);
  if (ordered === undefined) return undefined;
  // The request's range: one namespace's keys (a contiguous run in key order), or all.
  const prefix = cache.spec.namespaced && info.namespace !== '' ? `${info.namespace}/` : '';
  const listKey = listKeyOf(cache, info);
  const fromKey = plan.kind === 'exact' && plan.from !== undefined ? plan.from.fromKey.slice(KEY_ROOT.length + 1) : prefix;
  let start = lowerBound(ordered, fromKey < prefix ? prefix : fromKey);
  // A continue key outside this request's range yields nothing, as the apiserver's range read.
  if (!fromKey.startsWith(prefix)) start = ordered.length;
  const end = prefix === '' ? ordered.length : lowerBound(ordered, `${prefix.slice(0, -1)}0`); // '0' follows '/'
  // computeListLimit (cacher.go): RV=0 ignores the limit.
  const limit = options.resourceVersion === '0' ? 0 : Math.max(0, options.limit);
  const everything = labels.empty() && fields.empty();
  const items: KubeObject[] = [];
  let hasMore = false;
  let last = '';
  for (let i = start; i < end; i++) {
    const obj = ordered[i];
    if (obj === undefined) continue;
    if (everything || (labels.matches(obj.labels) && fields.matches(obj.fields))) {
      items.push(obj);
      last = obj.key;
    }
    if (limit > 0 && items.length >= limit) {
      hasMore = i < end - 1;
      break;
    }
  }
  // PrepareContinueToken (storage/continue.go): resume just after the last key; a count of what
  // remains only when nothing was filtered out.
  const page: Page = {
    items,
    resourceVersion: rv,
    continue: hasMore ? encodeContinue(`${KEY_ROOT}/${last}\u0000`, listKey, rv) : '',
    remainingItemCount: hasMore && everything ? BigInt(end - start - limit) : undefined,
  };
  return { statusCode: 200, headers: JSON_HEADERS, body: listBody(cache.spec, page) };
}

/** Per type, computed once: the JSON strings of its list's kind and apiVersion, and its objects' leading TypeMeta. */
interface ListShape {
  readonly apiVersion: string;
  readonly listKind: string;
  /** `{"kind":K,"apiVersion":V,`: cut from each stored object to make a typed list item. */
  readonly typeMeta: Buffer;
}

const shapes = new WeakMap<CachedResourceSpec, ListShape>();

function shapeOf(spec: CachedResourceSpec): ListShape {
  let shape = shapes.get(spec);
  if (shape === undefined) {
    const apiVersion = JSON.stringify(spec.group === '' ? spec.version : `${spec.group}/${spec.version}`);
    shape = {
      apiVersion,
      listKind: JSON.stringify(`${spec.kind}List`),
      typeMeta: Buffer.from(`{"kind":${JSON.stringify(spec.kind)},"apiVersion":${apiVersion},`),
    };
    shapes.set(spec, shape);
  }
  return shape;
}

/**
 * The list's bytes, as the apiserver writes them: a typed list (built-in types) has its fields
 * in declaration order and items without kind and apiVersion; an unstructured list (custom
 * resources) has its keys sorted and items as stored.
 */
function listBody(spec: CachedResourceSpec, page: Page): Buffer[] {
  const { apiVersion, listKind, typeMeta } = shapeOf(spec);
  const rv = `"resourceVersion":"${String(page.resourceVersion)}"`;
  const cont = page.continue === '' ? '' : `"continue":"${page.continue}"`;
  const remaining = page.remainingItemCount === undefined ? '' : `"remainingItemCount":${String(page.remainingItemCount)}`;
  const body: Buffer[] = [];
  if (spec.unstructured) {
    // UnstructuredList.SetContinue always sets the field, empty or not; remainingItemCount only when known.
    const metadata = [`"continue":"${page.continue}"`, remaining, rv].filter((s) => s !== '').join(',');
    body.push(Buffer.from(`{"apiVersion":${apiVersion},"items":[`));
    page.items.forEach((obj, i) => {
      if (i > 0) body.push(COMMA);
      body.push(obj.raw);
    });
    body.push(Buffer.from(`],"kind":${listKind},"metadata":{${metadata}}}\n`));
    return body;
  }
  const metadata = [rv, cont, remaining].filter((s) => s !== '').join(',');
  body.push(Buffer.from(`{"kind":${listKind},"apiVersion":${apiVersion},"metadata":{${metadata}},"items":[`));
  page.items.forEach((obj, i) => {
    if (i > 0) body.push(COMMA);
    // Typed list items carry no kind and apiVersion: the stored object's leading TypeMeta is cut.
    if (obj.raw.subarray(0, typeMeta.length).equals(typeMeta)) body.push(OPEN, obj.raw.subarray(typeMeta.length));
    else body.push(obj.raw);
  });
  body.push(Buffer.from(']}\n'));
  return body;
}
