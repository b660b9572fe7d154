/**
 * GET, LIST and WATCH answered from the watch caches, for the requests whose answer the cache can
 * give exactly as the apiserver would; everything else is passed through, with the reason
 * (cache/pass-reason.ts). The server's part only: the request is parsed once (src/request/), the
 * delegator decides which state it reads or why the apiserver answers (cache/delegator.ts), the
 * cacher selects it (cache/cacher.ts selectRead), and the answer is negotiated and made here:
 * encodings.ts chooses the encoding asked for, read-encoding.ts serves every encoding alike.
 *
 * Memory: every LIST body (shared or per request, JSON, Table, metadata, indented) takes its
 * size from the proxy's budget of response bodies (memory-budget.ts) before it is made, and gives
 * it back once written. A read that finds no room waits for it (BODY_WAIT_MS, first come first
 * served), then is passed through: the apiserver's answer streams through a few chunks at a time.
 * A GET's or LIST's answer is gzipped when the apiserver would gzip it (response-compression.ts,
 * gzipped-response.ts), its compressed bytes counted in the same budget.
 *
 * A read that asks for cached answers only (`Cache-Control: only-if-cached`, a pool follower's:
 * protocol/pool-protocol.ts) is answered from a cache whose upstream watch is open, without
 * waiting for a cold one; what would be passed through is refused instead (onlyIfCachedRefusal).
 */
import { connectionOf } from '../../request/http2-streams.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ReadYourWrites } from '../../cache/read-your-writes.ts';
import { lessonOf, objectAnswered } from '../../cache/read-your-writes.ts';
import type { CacheDelegator, Decision, ReadRequest } from '../../cache/delegator.ts';
import type { CacheStatus, WatchCacheSource } from '../../cache/cache-source.ts';
import type { PassReason } from '../../cache/pass-reason.ts';
import type { RequestSelectors } from '../../cache/selector-scope.ts';
import { selectorTooLong } from '../../selector/selector-bounds.ts';
import { BODY_WAIT_MS, newByteBudget } from '../../memory/memory-budget.ts';
import type { MemoryBudget } from '../../memory/memory-budget.ts';
import { newPiecePool } from '../../cache/piece-writer.ts';
import type { PiecePool } from '../../cache/piece-writer.ts';
import { realClock } from '../../clock/clock.ts';
import type { Clock } from '../../clock/clock.ts';
import { StatusError, serviceUnavailable } from '../../kube/status.ts';
import { PASS_REASONS } from '../../cache/pass-reason.ts';
import { isOnlyIfCached } from '../../protocol/pool-protocol.ts';
import { PROOF_AGE_HEADER, PROOF_AGES_REQUEST_HEADER, asksProofAges, formatProofAge } from '../../protocol/proof-age.ts';
import type { ListOptions } from '../../request/list-options.ts';
import { parseListOptions } from '../../request/list-options.ts';
import { firstAccept, negotiateRead, prettyByRequest } from '../../request/negotiation.ts';
import type { ParsedRequest } from '../../request/parsed-request.ts';
import type { RequestInfo } from '../../request/request-info.ts';
import type { CachedResponse, NoRoom } from './cached-response.ts';
import { BodyRoom, indented, isNoRoom } from './cached-response.ts';
import { gzipped, newCompressions } from './gzipped-response.ts';
import type { Compressions } from './gzipped-response.ts';
import { gzipsAnswer } from './response-compression.ts';
import { serveWatch } from './cached-watch.ts';
import { chooseEncoding } from './encodings.ts';
import { serveRead } from './read-encoding.ts';
import { newSharedLists } from './shared-lists.ts';
import { answeredObject } from './written-resource-version.ts';
import { listResourceVersion, objectHead } from './answer-head.ts';
import { negotiatedStatus } from './negotiated-status.ts';

export type { CachedResponse } from './cached-response.ts';

/** A write's answer as passed through: what read-your-writes learns from. */
export interface WriteAnswer {
  readonly statusCode: number;
  readonly contentType: string;
  readonly contentEncoding: string;
  /** The whole body, or undefined when it was larger than the proxy reads. */
  readonly body: Buffer | undefined;
}

export interface CachedReads {
  /** Starts the caches. */
  start(): void;
  /** True once the caches the proxy was told to hold have synced. */
  synced(): boolean;
  /** Each cache's readiness check and state (/readyz, the status page). */
  checks(): CacheStatus[];
  stop(): Promise<void>;
  /** The answer from the cache, or why the request is passed through. */
  tryServe(request: ParsedRequest, headers: ReadHeaders, signal?: AbortSignal): Promise<CachedResponse | PassReason>;
  /**
   * Serves a WATCH from the cache on `res` and resolves 'cache', or resolves why not having
   * written nothing (the request goes to the apiserver).
   */
  tryWatch(request: ParsedRequest, req: IncomingMessage, res: ServerResponse): Promise<Decision>;
  /** Whether observeWrite is needed: some type's reads are bounded (read-your-writes). */
  readonly observesWrites: boolean;
  /** A write passed through the proxy was answered. */
  observeWrite(request: ParsedRequest, answer: WriteAnswer): void;
  /**
   * For a read about to be passed through: when it is a consistent LIST (RV unset, no continue)
   * or GET of a type with a doubt to settle, what to hand its answer's first ANSWER_HEAD_BYTES
   * to; a LIST's RV settles the type's doubts, a GET's object RV those of the object, as a
   * probe's would (a doubted read is its own probe). Else undefined.
   */
  observeRead(request: ParsedRequest): ReadObserver | undefined;
  /** What gzipping answers has cost and saved (gzipped-response.ts), for the metrics. */
  readonly compressions: Readonly<Compressions>;
}

/** Told a passed-through read's answer: its status, Content-Type, Content-Encoding and first bytes. */
export type ReadObserver = (statusCode: number, contentType: string, contentEncoding: string, head: Buffer) => void;

export interface CachedReadsOptions {
  readonly source: WatchCacheSource;
  /** The proxy's writes, shared with the delegators; undefined: no read is bounded, writes are not observed. */
  readonly writes?: ReadYourWrites | undefined;
  /** The clock of the shared LIST bodies' ages and of Tables' ages (tests); default: the real one. */
  readonly clock?: Clock;
  /** The proxy's memory budget (its response bodies' share); default: bodies counted nowhere, never refused. */
  readonly memory?: MemoryBudget;
  /** The pieces LIST bodies are copied into and given back to (piece-writer.ts); default: a pool of the reads' own. */
  readonly pool?: PiecePool;
}

/**
 * How long a GET or LIST waits for a cache that is starting (the first read of a type starts
 * it). A type of a few thousand objects lists in well under a second; past this the read is
 * passed through (a short request), and the cache serves the reads after it.
 */
export const COLD_READ_WAIT_MS = 3_000;
/**
 * How long a WATCH waits for a cache that is starting: a watch passed through would stay open at
 * the apiserver for its whole timeout (5 to 10 min for client-go), beside the cache's own.
 */
export const COLD_WATCH_WAIT_MS = 60_000;

/** The request headers content negotiation reads. */
export interface ReadHeaders {
  readonly accept?: string | undefined;
  readonly 'user-agent'?: string | undefined;
  /**
   * The first Accept-Encoding header (response-compression.ts firstAcceptEncoding), when the
   * proxy may gzip this client's answers; undefined: never gzipped.
   */
  readonly 'accept-encoding'?: string | undefined;
  readonly 'cache-control'?: string | undefined;
}

/**
 * The answer to a read that asked for cached answers only and would be passed through: 503, and
 * why the cache does not answer it (the pass reason, as the operator's catalogue words it).
 */
export function onlyIfCachedRefusal(reason: PassReason): StatusError {
  return serviceUnavailable(
    `the cache does not answer this request, which accepts cached answers only (Cache-Control: only-if-cached): ${reason}: ${PASS_REASONS[reason]}`,
  );
}

/**
 * `/api/v1/namespaces/{name}` (or its legacy `/watch/` form): the one path where request-info
 * gives a cluster-scoped type a namespace, the Namespace's own name (requestinfo.go). Not
 * `/api/v1/namespaces/{ns}/namespaces[/{name}]`, which reads the same but is no route of the
 * apiserver (its 404): answered from the cache, it would list every Namespace to whoever may
 * read Namespaces in one namespace (shared mode authorizes it in `{ns}`).
 */
function isNamespaceObjectPath(info: RequestInfo): boolean {
  if (info.apiGroup !== '' || info.resource !== 'namespaces' || info.name !== info.namespace || info.subresource !== '') return false;
  const base = `/${info.apiPrefix}/${info.apiVersion}`;
  return info.path === `${base}/namespaces/${info.name}` || info.path === `${base}/watch/namespaces/${info.name}`;
}

export function newCachedReads(options: CachedReadsOptions): CachedReads {
  const { source, writes, memory } = options;
  const clock = options.clock ?? realClock;
  const bodies = memory?.bodies ?? newByteBudget(Number.POSITIVE_INFINITY);
  const pool = options.pool ?? newPiecePool(memory?.sizes.piecePoolBytes);
  const compressions = newCompressions();
  const sharedLists = newSharedLists({
    bodies,
    pool,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(memory === undefined ? {} : { maxBytes: memory.sizes.sharedListsBytes }),
  });

  /**
   * The delegator of the cache that may answer this collection or object read, or why none may.
   * A cache that is starting is waited for, up to `coldWaitMs`. A LIST's or WATCH's `selectors`
   * may let a selector-scoped cache answer it (cache/selector-scope.ts); a GET's never do.
   */
  const delegatorFor = async (
    request: ParsedRequest,
    info: RequestInfo,
    coldWaitMs: number,
    signal: AbortSignal | undefined,
    selectors: RequestSelectors | undefined,
    onlyIfCached: boolean,
  ): Promise<CacheDelegator | PassReason> => {
    if (!isCleanPath(request.url)) return 'unclean-path';
    // Names the apiserver refuses (IsValidPathSegmentName) or would quote as raw bytes: its to word.
    if ((info.name !== '' && !plainName(info.name)) || (info.namespace !== '' && !plainName(info.namespace))) return 'unusual-name';
    const { apiGroup, apiVersion, resource, namespace } = info;
    const delegator =
      source.cacheFor(apiGroup, apiVersion, resource, namespace, selectors) ??
      (onlyIfCached ? undefined : await source.cacheWhenSynced(apiGroup, apiVersion, resource, namespace, coldWaitMs, signal, selectors));
    if (delegator === undefined) return 'uncached';
    if (onlyIfCached && !delegator.cache.watching()) return 'not-watching';
    // A cluster-scoped type asked for in a namespace is the apiserver's 404 to word; but for a
    // Namespace itself, whose name request-info reads as the namespace too.
    if (!delegator.cache.spec.namespaced && info.namespace !== '' && !isNamespaceObjectPath(info)) return 'cluster-scoped-in-namespace';
    return delegator;
  };

  /**
   * What an exact-RV LIST passed through tells the cache that would have answered it (a 410:
   * delegator.ts observeExactList); undefined for any other read, or one no cache holds.
   */
  const exactListObserver = (request: ParsedRequest, info: RequestInfo): ReadObserver | undefined => {
    if (info.verb !== 'list') return undefined;
    let options: ListOptions;
    try {
      options = parseListOptions(request.query());
    } catch (error) {
      if (error instanceof StatusError) return undefined;
      throw error;
    }
    if (options.watch) return undefined;
    const delegator = source.cacheFor(info.apiGroup, info.apiVersion, info.resource, info.namespace, options);
    return delegator?.observeExactList({ verb: 'list', namespace: info.namespace, name: '', options });
  };

  /** A WATCH from the cache on `res` ('cache'), or why not, having written nothing. */
  const watchFromCache = async (
    request: ParsedRequest,
    info: RequestInfo,
    options: ListOptions,
    req: IncomingMessage,
    res: ServerResponse,
    gone: AbortSignal,
  ): Promise<Decision> => {
    // A watch is long-running: it waits for a cold cache to sync rather than open one more watch upstream.
    const onlyIfCached = isOnlyIfCached(req.headers['cache-control']);
    const delegator = await delegatorFor(request, info, COLD_WATCH_WAIT_MS, gone, options, onlyIfCached);
    if (typeof delegator === 'string') return delegator;
    if (gone.aborted) return 'uncached';
    // Pretty printing does not apply to watch streams (their encoder is never the pretty one).
    const negotiated = negotiateRead(firstAccept(req.rawHeaders), !delegator.cache.spec.unstructured);
    if (negotiated.kind === 'apiserver') return negotiated.reason;
    const encoding = await chooseEncoding(negotiated, 'watch', delegator.cache.spec, request.query(), source);
    if (typeof encoding === 'string') return encoding;
    const representation = encoding.watch(() => clock.wallNow());
    return serveWatch({
      delegator,
      namespace: info.namespace,
      options,
      res,
      connection: connectionOf(req),
      signal: gone,
      onlyIfCached,
      proofAges: asksProofAges(req.headers[PROOF_AGES_REQUEST_HEADER]),
      ...(representation === undefined ? {} : { representation }),
    });
  };

  return {
    compressions,
    start() {
      source.start();
    },
    synced() {
      return source.synced();
    },
    checks() {
      return source.checks();
    },
    stop() {
      return source.stop();
    },
    observesWrites: writes !== undefined,
    observeWrite(request, answer) {
      const { info } = request;
      if (writes === undefined || info === undefined || !info.isResourceRequest) return;
      // Only a type a cache holds, and only the apiserver's own answers about the written object (consistency.ts lessonOf).
      const cached = source.cachedKind(info.apiGroup, info.resource);
      if (cached === undefined) return;
      const { statusCode, body } = answer;
      const object =
        statusCode >= 200 && statusCode <= 299 && body !== undefined
          ? answeredObject(answer.contentType, answer.contentEncoding, body)
          : undefined;
      const write = {
        group: info.apiGroup,
        resource: info.resource,
        verb: info.verb,
        subresource: info.subresource,
        namespace: info.namespace,
        name: info.name,
      };
      const lesson = lessonOf(write, statusCode, object, cached);
      if (lesson.kind === 'written') writes.written(info.apiGroup, info.resource, lesson.resourceVersion);
      else if (lesson.kind === 'doubt') writes.doubt(lesson.target);
    },
    observeRead(request) {
      const { info } = request;
      if (info === undefined || !info.isResourceRequest || info.subresource !== '') return undefined;
      if (info.verb !== 'list' && info.verb !== 'get') return undefined;
      const { apiGroup, resource } = info;
      const query = request.query();
      if ((query.get('resourceVersion') ?? '') !== '' || (query.get('continue') ?? '') !== '') return exactListObserver(request, info);
      if (writes === undefined || !writes.unsettled(apiGroup, resource)) return undefined;
      // Only a consistent read answers at the apiserver's current state.
      const cached = source.cachedKind(apiGroup, resource);
      if (cached === undefined) return undefined;
      const target = { group: apiGroup, resource, namespace: cached.namespaced ? info.namespace : '', name: info.name };
      // Taken before the read is sent: the doubts that arose before it are the ones its answer settles.
      const sequence = writes.sequence();
      if (info.verb === 'list')
        return (statusCode, contentType, contentEncoding, head) => {
          const rv = statusCode === 200 ? listResourceVersion(contentType, contentEncoding, head) : undefined;
          if (rv === undefined) writes.unsettledBy(target, sequence);
          else writes.settle(apiGroup, resource, sequence, rv);
        };
      return (statusCode, contentType, contentEncoding, head) => {
        const rv = statusCode === 200 ? objectAnswered(target, objectHead(contentType, contentEncoding, head), cached) : undefined;
        if (rv === undefined) writes.unsettledBy(target, sequence);
        else writes.settleObject(target, sequence, rv);
      };
    },
    async tryWatch(request, req, res) {
      const { info } = request;
      if (info === undefined || !info.isResourceRequest) return 'not-a-resource';
      if (request.method !== 'GET' || info.verb !== 'watch') return 'not-a-read';
      if (info.subresource !== '') return 'subresource';
      // Collections only: a watch of one named object is the apiserver's (it becomes a field selector there).
      if (info.name !== '') return 'named-watch';
      let options: ListOptions;
      try {
        options = parseListOptions(request.query(), { forceWatch: info.legacyWatch });
      } catch (error) {
        if (error instanceof StatusError) return 'bad-query'; // the apiserver words the error
        throw error;
      }
      // Before any cache is chosen by the selectors (selector-scope.ts parses them).
      if (selectorTooLong(options)) return 'selector-too-large';
      const gone = new AbortController();
      const onClose = (): void => {
        gone.abort();
      };
      res.on('close', onClose);
      try {
        return await watchFromCache(request, info, options, req, res, gone.signal);
      } finally {
        res.off('close', onClose);
      }
    },
    async tryServe(request, headers, signal) {
      const { info } = request;
      if (info === undefined || !info.isResourceRequest) return 'not-a-resource';
      if (request.method !== 'GET' || info.legacyWatch || (info.verb !== 'get' && info.verb !== 'list')) return 'not-a-read';
      if (info.subresource !== '') return 'subresource';
      let options: ListOptions;
      try {
        options = parseListOptions(request.query());
      } catch (error) {
        if (error instanceof StatusError) return 'bad-query'; // the apiserver words the error
        throw error;
      }
      if (options.watch) return 'not-a-read';
      if (info.verb === 'list' && selectorTooLong(options)) return 'selector-too-large';
      // GetResource (endpoints/handlers/get.go) refuses export=true (400) and words a bad value: its to answer.
      if (info.verb === 'get' && request.query().has('export')) return 'export-parameter';
      const onlyIfCached = isOnlyIfCached(headers['cache-control']);
      const delegator = await delegatorFor(
        request,
        info,
        COLD_READ_WAIT_MS,
        signal,
        info.verb === 'list' ? options : undefined,
        onlyIfCached,
      );
      if (typeof delegator === 'string') return delegator;
      const { cache } = delegator;
      const negotiated = negotiateRead(headers.accept, !cache.spec.unstructured);
      if (negotiated.kind === 'apiserver') return negotiated.reason;
      const encoding = await chooseEncoding(negotiated, info.verb === 'get' ? 'get' : 'list', cache.spec, request.query(), source);
      if (typeof encoding === 'string') return encoding;
      // Indenting is JSON's (isPrettyPrint applies to the JSON serializer only).
      const pretty =
        encoding.json && (('pretty' in negotiated && negotiated.pretty) || prettyByRequest(request.query(), headers['user-agent']));
      const read: ReadRequest = { verb: info.verb === 'get' ? 'get' : 'list', namespace: info.namespace, name: info.name, options };
      const plan = await delegator.decideRead(read, signal);
      if (typeof plan === 'string') return plan;
      if (plan instanceof StatusError) {
        const { contentType, body } = negotiatedStatus(plan, headers.accept, request.query(), headers['user-agent']);
        return { statusCode: plan.code, headers: { 'content-type': contentType }, length: body.length, body: [body] };
      }
      let room = new BodyRoom(bodies, pool);
      for (let waited = false; ; waited = true) {
        // The cache may have been stopped while this request waited: the apiserver answers then.
        if (cache.isClosed()) {
          room.release();
          return 'cache-closed';
        }
        // From here on synchronous: the RV and the contents are read in one turn.
        let outcome: CachedResponse | NoRoom | PassReason;
        if (cache.resourceVersion() === undefined) outcome = 'not-synced';
        else if (onlyIfCached && !cache.watching()) outcome = 'not-watching';
        else outcome = serveRead(cache, read, plan, encoding.read(clock.wallNow()), sharedLists, room);
        if (!isNoRoom(outcome)) {
          room.release();
          if (typeof outcome === 'string') return outcome;
          // The age of the state just read (same turn), for a proxy in front (protocol/proof-age.ts).
          const aged = withProofAge(outcome, delegator.proofAgeMs());
          const answer = pretty ? indented(aged, bodies) : aged;
          return gzipsAnswer(headers['accept-encoding'], answer.length) ? gzipped(answer, bodies, compressions) : answer;
        }
        // No room for the body now: wait for it once, then read the state again (it may have moved on).
        if (waited || !(await bodies.take(outcome.bytes, BODY_WAIT_MS, signal))) {
          memory?.notePassedThrough();
          return 'no-room';
        }
        room = new BodyRoom(bodies, pool, outcome.bytes);
      }
    },
  };
}

/**
 * The path as the apiserver's router matches it: no empty segment (`//api/v1/pods` is its 404,
 * though its RequestInfo trims the slashes), no trailing slash, no `.` or `..` segment. Any
 * other spelling is the apiserver's to answer.
 */
function isCleanPath(url: string): boolean {
  const at = url.indexOf('?');
  const path = at < 0 ? url : url.slice(0, at);
  return path.startsWith('/') && !path.endsWith('/') && !path.includes('//') && !/\/\.\.?(\/|$)/.test(path);
}

/** A path segment name the apiserver accepts (not `.` or `..`, no `/` or `%`), printable ASCII only. */
function plainName(name: string): boolean {
  return name !== '.' && name !== '..' && /^[\x21-\x24\x26-\x2e\x30-\x7e]+$/.test(name);
}

/** The answer with its state's proof age (protocol/proof-age.ts): every answer from a cache carries it. */
function withProofAge(response: CachedResponse, ageMs: number): CachedResponse {
  return { ...response, headers: { ...response.headers, [PROOF_AGE_HEADER]: formatProofAge(ageMs) } };
}
