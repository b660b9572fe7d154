/**
 * GET and LIST answered from the watch caches, for the requests whose answer the cache can give
 * exactly as the apiserver would; everything else is passed through, with the reason
 * (cache/pass-reason.ts).
 * The resourceVersion rules (storage/cacher/delegator.go, watch_cache.go waitUntilFreshAndList):
 * - "0" (any): the cache as it is; LIST ignores `limit` and returns everything.
 * - N, NotOlderThan (or a LIST without limit, or a GET): once the cache is at N or later. The
 *   cache waits briefly; past that the apiserver decides (it can see newer state than the
 *   cache's watch has reported, and answers 200 or its own 504 ResourceVersionTooLarge).
 * - N with limit and no match, Exact N, and `continue` (Exact at the token's RV): from the
 *   snapshot kept of the cache at exactly N, else passed through (etcd serves it, or says 410).
 * - unset (most recent): as the type's consistency mode says (cache/delegator.ts decides).
 * Invalid queries, tables and other media types are passed through: the apiserver words them.
 *
 * HOT PATH: a LIST body is the concatenation of a head, each item's stored bytes, and a tail; no
 * object is parsed or serialized per request, and the key order is sorted once per RV.
 *
 * Memory: every LIST body (shared or per request, JSON, Table, metadata, indented) takes its
 * size from the proxy's budget of response bodies (memory-budget.ts) before it is made, and gives
 * it back once written. A read that finds no room waits for it (BODY_WAIT_MS, first come first
 * served), then is passed through: the apiserver's answer streams through a few chunks at a time.
 */
import { indexedFieldOf } from '../../cache/field-index.ts';
import type { KubeObject } from '../../informer/object.ts';
import { objectBytes, objectText } from '../../informer/object.ts';
import type { ReadTarget, ReadYourWrites } from '../../cache/consistency.ts';
import type { CacheDelegator, Decision } from '../../cache/delegator.ts';
import type { PassReason } from '../../cache/pass-reason.ts';
import type { WatchCache } from '../../cache/watch-cache.ts';
import type { CacheStatus, WatchCacheSource } from '../../cache/cache-source.ts';
import type { CachedResourceSpec } from '../../cache/cached-resources.ts';
import { listItemBytes } from '../../cache/watch-cache.ts';
import type { OrderedView } from '../../cache/ordered-map.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ListOptions } from '../../request/list-options.ts';
import { parseListOptions } from '../../request/list-options.ts';
import type { DecodedContinue } from '../../request/continue-token.ts';
import { ContinueTokenError, decodeContinue, encodeContinue } from '../../request/continue-token.ts';
import type { ParsedRequest } from '../../request/parsed-request.ts';
import type { RequestInfo } from '../../request/request-info.ts';
import { StatusError, notFound } from '../../kube/status.ts';
import { PieceWriter, freePieces, releasePieces } from '../../cache/piece-writer.ts';
import { BODY_WAIT_MS, newByteBudget } from '../../cache/memory-budget.ts';
import type { ByteBudget, MemoryBudget } from '../../cache/memory-budget.ts';
import { newSharedLists } from './shared-lists.ts';
import type { SharedLists } from './shared-lists.ts';
import { indentJson } from '../../kube/json-indent.ts';
import type * as CachedTable from './cached-table.ts';
import { metadataGetBody, metadataListBody, metadataWatchRepresentation, objectMetadataLength } from './cached-metadata.ts';
import type { ProtobufShape } from './cached-protobuf.ts';
import {
  PROTOBUF_CONTENT_TYPE,
  metadataShape,
  protobufGetBody,
  protobufListBody,
  protobufShape,
  protobufStatusBody,
  protobufWatchRepresentation,
} from './cached-protobuf.ts';
import type { MetaVersion } from './cached-metadata.ts';
import type { WatchRepresentation } from '../../cache/window-event.ts';
import type { IncludeObject, TableVersion } from './cached-table.ts';
import type { KubeJson, Printer } from '../../table/model.ts';
import { realClock } from '../../clock/clock.ts';
import type { Clock } from '../../clock/clock.ts';
import { firstAccept, negotiateRead, prettyByRequest } from '../../request/negotiation.ts';
import { selectionOf, serveWatch } from './cached-watch.ts';
import { writtenResourceVersion } from './written-resource-version.ts';
import { groupVersionString } from '../../kube/group-resource.ts';
import type { ListMeta } from '../../kube/list-meta.ts';
import { listMetaJson, unstructuredListMetaJson } from '../../kube/list-meta.ts';

export interface CachedResponse {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The body's length in bytes (Content-Length). */
  readonly length: number;
  /**
   * The body's pieces in order, made as they are taken: a large LIST is copied piece by piece
   * from an immutable snapshot, so its writer may yield between pieces.
   */
  readonly body: Iterable<Buffer>;
  /**
   * Told once, when the response is done with the body: `complete` when no write holds its
   * pieces any more (every byte handed to the kernel, or none written), false when the write was
   * cut short. A body of pooled pieces goes back to the pool only after a complete write (a write
   * cut short may still hold its pieces).
   */
  readonly written?: (complete: boolean) => void;
}

/** A response whose whole body is at hand. */
function whole(statusCode: number, body: readonly Buffer[]): CachedResponse {
  return { statusCode, headers: JSON_HEADERS, length: body.reduce((n, b) => n + b.length, 0), body };
}

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
}

export interface CachedReadsOptions {
  readonly source: WatchCacheSource;
  /** The proxy's writes, shared with the delegators; undefined: no read is bounded, writes are not observed. */
  readonly writes?: ReadYourWrites | undefined;
  /** The clock of the shared LIST bodies' ages (tests); default: the real one. */
  readonly clock?: Clock;
  /** The proxy's memory budget (its response bodies' share); default: bodies counted nowhere, never refused. */
  readonly memory?: MemoryBudget;
}

const JSON_HEADERS = { 'content-type': 'application/json' } as const;

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
}

/**
 * The answer indented as the apiserver indents JSON for curl and `?pretty=true` (no trailing
 * newline, as Go's MarshalIndent): a new body, in the budget from now until it is written.
 */
function indented(response: CachedResponse, bodies: ByteBudget): CachedResponse {
  const body = indentJson(response.body, response.length);
  // A new body: the pieces it was copied from are done with.
  response.written?.(true);
  bodies.force(body.length);
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    length: body.length,
    body: [body],
    written: givesBack(bodies, body.length),
  };
}

/** A `written` that gives a body's share back once (done with, written or cut short). */
function givesBack(bodies: ByteBudget, bytes: number): (complete: boolean) => void {
  let given = false;
  return () => {
    if (given) return;
    given = true;
    bodies.give(bytes);
  };
}

/** No room in the budget for a body of `bytes`: the read waits for it, or is passed through. */
interface NoRoom {
  readonly kind: 'no-room';
  readonly bytes: number;
}

function noRoom(bytes: number): NoRoom {
  return { kind: 'no-room', bytes };
}

function isNoRoom(outcome: CachedResponse | NoRoom | PassReason): outcome is NoRoom {
  return typeof outcome !== 'string' && 'kind' in outcome;
}

/**
 * One response's room in the bodies' budget: `reserved` bytes taken ahead (what it waited for),
 * then whatever else its body needs, if that fits now.
 */
class BodyRoom {
  readonly budget: ByteBudget;
  #reserved: number;

  constructor(budget: ByteBudget, reserved = 0) {
    this.budget = budget;
    this.#reserved = reserved;
  }

  /** Makes this response's share exactly `bytes` (true), or gives back all it had (false). */
  fit(bytes: number): boolean {
    if (bytes <= this.#reserved) {
      this.budget.give(this.#reserved - bytes);
      this.#reserved = 0;
      return true;
    }
    if (this.budget.tryTake(bytes - this.#reserved)) {
      this.#reserved = 0;
      return true;
    }
    this.release();
    return false;
  }

  /** Gives back what was taken ahead and not used. */
  release(): void {
    if (this.#reserved > 0) this.budget.give(this.#reserved);
    this.#reserved = 0;
  }
}
const NEWLINE = Buffer.from('\n');

/** Where a read is served from: the live cache at an RV, or a kept snapshot. */
type ReadPlan =
  | { readonly kind: 'latest'; readonly minRv: bigint }
  | { readonly kind: 'consistent' }
  | { readonly kind: 'exact'; readonly rv: bigint; readonly from: DecodedContinue | undefined };

/** What a read covers, for read-your-writes. */
function readTarget(cache: WatchCache, info: RequestInfo): ReadTarget {
  return {
    group: cache.spec.group,
    resource: cache.spec.resource,
    namespace: cache.spec.namespaced ? info.namespace : '',
    name: info.name,
  };
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
  const bodies = memory?.bodies ?? newByteBudget(Number.POSITIVE_INFINITY);
  const sharedLists = newSharedLists({
    bodies,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(memory === undefined ? {} : { maxBytes: memory.sizes.sharedListsBytes }),
  });

  /**
   * The delegator of the cache that may answer this collection or object read, or why none may.
   * A cache that is starting is waited for, up to `coldWaitMs`.
   */
  const delegatorFor = async (
    request: ParsedRequest,
    info: RequestInfo,
    coldWaitMs: number,
    signal: AbortSignal | undefined,
  ): Promise<CacheDelegator | PassReason> => {
    if (!isCleanPath(request.url)) return 'unclean-path';
    // Names the apiserver refuses (IsValidPathSegmentName) or would quote as raw bytes: its to word.
    if ((info.name !== '' && !plainName(info.name)) || (info.namespace !== '' && !plainName(info.namespace))) return 'unusual-name';
    const { apiGroup, apiVersion, resource, namespace } = info;
    const delegator =
      source.cacheFor(apiGroup, apiVersion, resource, namespace) ??
      (await source.cacheWhenSynced(apiGroup, apiVersion, resource, namespace, coldWaitMs, signal));
    if (delegator === undefined) return 'uncached';
    // A cluster-scoped type asked for in a namespace is the apiserver's 404 to word; but for a
    // Namespace itself, whose name request-info reads as the namespace too.
    if (!delegator.cache.spec.namespaced && info.namespace !== '' && !isNamespaceObjectPath(info)) return 'cluster-scoped-in-namespace';
    return delegator;
  };

  /**
   * The printer of a type's Tables: a built-in type's ported printer, or for a custom resource
   * the one its CRD's printer columns make, the CRD read from the proxy's own cache of
   * customresourcedefinitions (started by this first read when every type is cached; when the
   * proxy caches named types only, or may not list CRDs, custom resources' Tables go to the
   * apiserver).
   */
  const printerOf = (t: Tables, spec: CachedResourceSpec): Printer | undefined => {
    if (!spec.unstructured) return t.printerFor(spec.group, spec.resource);
    const crds = source.cacheFor('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', '');
    const crd = crds?.cache.get(`${spec.resource}.${spec.group}`);
    return crd === undefined ? undefined : crdPrinterOf(t, crd, spec.version);
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
    const delegator = await delegatorFor(request, info, COLD_WATCH_WAIT_MS, gone);
    if (typeof delegator === 'string') return delegator;
    if (gone.aborted) return 'uncached';
    // Pretty printing does not apply to watch streams (their encoder is never the pretty one).
    const negotiated = negotiateRead(firstAccept(req.rawHeaders), !delegator.cache.spec.unstructured);
    if (negotiated.kind === 'apiserver') return negotiated.reason;
    let representation: WatchRepresentation | undefined;
    if (negotiated.kind === 'table') {
      const { spec } = delegator.cache;
      const t = await tables();
      const printer = printerOf(t, spec);
      const include = t.parseIncludeObject(request.query().get('includeObject'));
      if (printer === undefined) return 'no-printer';
      if (include === undefined) return 'bad-include-object';
      representation = t.tableWatchRepresentation(printer, include, negotiated.version, () => realClock.wallNow(), spec.unstructured);
    } else if (negotiated.kind === 'metadata') {
      // A watch asking for the list kind gets an empty stream from the apiserver: its own to give.
      if (negotiated.list) return 'metadata-kind-mismatch';
      representation = negotiated.protobuf
        ? protobufWatchRepresentation(metadataShape(negotiated.version))
        : metadataWatchRepresentation(negotiated.version, delegator.cache.spec.unstructured);
    } else if (negotiated.kind === 'protobuf') {
      const shape = protobufShape(delegator.cache.spec);
      if (shape === undefined) return 'no-protobuf-schema';
      representation = protobufWatchRepresentation(shape);
    }
    return serveWatch({
      delegator,
      info,
      options,
      res,
      consistentReady: () => delegator.mostRecent(readTarget(delegator.cache, info), 'watch', gone),
      ...(representation === undefined ? {} : { representation }),
    });
  };

  return {
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
      const target = { group: info.apiGroup, resource: info.resource, namespace: info.namespace, name: info.name };
      if (answer.statusCode >= 200 && answer.statusCode <= 299) {
        // A write of a subresource (status, scale, eviction) changes the object it belongs to.
        const rv = answer.body === undefined ? undefined : writtenResourceVersion(answer.contentType, answer.contentEncoding, answer.body);
        if (rv !== undefined && info.verb !== 'deletecollection') writes.written(info.apiGroup, info.resource, rv);
        else writes.doubt(target);
        return;
      }
      // The cache may be behind for this object: the client wrote from a state older than the
      // apiserver's (Conflict), created what exists (AlreadyExists), or changed what is gone.
      const behind =
        answer.statusCode === 409 || (answer.statusCode === 404 && info.verb !== 'create' && info.subresource === '' && info.name !== '');
      if (behind) writes.doubt(target);
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
      // GetResource (endpoints/handlers/get.go) refuses export=true (400) and words a bad value: its to answer.
      if (info.verb === 'get' && request.query().has('export')) return 'export-parameter';
      const delegator = await delegatorFor(request, info, COLD_READ_WAIT_MS, signal);
      if (typeof delegator === 'string') return delegator;
      const { cache } = delegator;
      const negotiated = negotiateRead(headers.accept, !cache.spec.unstructured);
      if (negotiated.kind === 'apiserver') return negotiated.reason;
      let table: { printer: Printer; include: IncludeObject; version: TableVersion; body: Tables['tableBody'] } | undefined;
      if (negotiated.kind === 'table') {
        // Types without a ported printer, and custom resources whose CRD is not at hand, are the apiserver's to print.
        const t = await tables();
        const printer = printerOf(t, cache.spec);
        const include = t.parseIncludeObject(request.query().get('includeObject'));
        if (printer === undefined) return 'no-printer';
        if (include === undefined) return 'bad-include-object';
        table = { printer, include, version: negotiated.version, body: t.tableBody };
      }
      // The item kind for a GET, the list kind for a LIST; the other way round is the apiserver's 406.
      if (negotiated.kind === 'metadata' && negotiated.list !== (info.verb === 'list')) return 'metadata-kind-mismatch';
      let protobuf: { shape: ProtobufShape; metadata: boolean } | undefined;
      if (negotiated.kind === 'protobuf') {
        const shape = protobufShape(cache.spec);
        if (shape === undefined) return 'no-protobuf-schema';
        protobuf = { shape, metadata: false };
      } else if (negotiated.kind === 'metadata' && negotiated.protobuf) {
        protobuf = { shape: metadataShape(negotiated.version), metadata: true };
      }
      const metadata = negotiated.kind === 'metadata' && !negotiated.protobuf ? negotiated.version : undefined;
      // Indenting is JSON's (isPrettyPrint applies to the JSON serializer only).
      const pretty =
        protobuf === undefined &&
        negotiated.kind !== 'protobuf' &&
        (negotiated.pretty || prettyByRequest(request.query(), headers['user-agent']));
      const plan = readPlan(info, options, cache);
      if (typeof plan === 'string') return plan;
      if (plan.kind === 'consistent') {
        const decision = await delegator.mostRecent(readTarget(cache, info), info.verb === 'get' ? 'get' : 'list', signal);
        if (decision !== 'cache') return decision;
      } else if (plan.kind === 'latest') {
        if (!(await delegator.notOlderThan(plan.minRv, signal))) return 'rv-not-reached';
      }
      let room = new BodyRoom(bodies);
      for (let waited = false; ; waited = true) {
        // The cache may have been stopped while this request waited: the apiserver answers then.
        if (cache.isClosed()) {
          room.release();
          return 'cache-closed';
        }
        // From here on synchronous: the RV and the contents are read in one turn.
        let outcome: CachedResponse | NoRoom | PassReason;
        if (cache.resourceVersion() === undefined) outcome = 'not-synced';
        else if (table !== undefined) outcome = serveTable(cache, info, options, plan, { ...table, now: realClock.wallNow() }, room);
        else if (protobuf !== undefined)
          outcome = serveProtobuf(cache, info, options, plan, protobuf.shape, protobuf.metadata, sharedLists, room);
        else if (metadata !== undefined) outcome = serveMetadata(cache, info, options, plan, metadata, room);
        else if (info.verb === 'get') outcome = serveGet(cache, info);
        else outcome = serveList(cache, info, options, plan, sharedLists, room);
        if (!isNoRoom(outcome)) {
          room.release();
          return typeof outcome !== 'string' && pretty ? indented(outcome, bodies) : outcome;
        }
        // No room for the body now: wait for it once, then read the state again (it may have moved on).
        if (waited || !(await bodies.take(outcome.bytes, BODY_WAIT_MS, signal))) {
          memory?.notePassedThrough();
          return 'no-room';
        }
        room = new BodyRoom(bodies, outcome.bytes);
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

/** Which state the request reads, or why it is passed through (see the file comment). */
function readPlan(info: RequestInfo, options: ListOptions, cache: WatchCache): ReadPlan | PassReason {
  const rv = options.resourceVersion;
  if (rv !== '' && rv !== '0' && !/^[1-9][0-9]{0,18}$/.test(rv)) return 'bad-resource-version';
  if (info.verb === 'get') {
    if (rv === '') return { kind: 'consistent' };
    return { kind: 'latest', minRv: BigInt(rv) };
  }
  if (options.continue !== '') {
    let from: DecodedContinue;
    try {
      from = decodeContinue(options.continue, `${listKeyOf(cache, info)}/`);
    } catch (error) {
      if (error instanceof ContinueTokenError) return 'bad-continue';
      throw error;
    }
    if ((rv !== '' && rv !== '0') || from.resourceVersion <= 0) return 'continue-with-resource-version';
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
    return whole(404, [status.body()]);
  }
  return whole(200, [objectBytes(obj), NEWLINE]);
}

interface Page {
  readonly items: KubeObject[];
  readonly resourceVersion: bigint;
  readonly continue: string;
  readonly remainingItemCount: bigint | undefined;
}

/**
 * A LIST body's items: `count` objects, read once as the body is made (a lazy range of a
 * snapshot, or a page's array), and their bytes as list items when the store already knows them
 * (undefined: summed from the items, which must then be an array to be read twice).
 */
interface ListItems extends Omit<Page, 'items'> {
  readonly items: Iterable<KubeObject>;
  readonly count: number;
  readonly itemBytes: number | undefined;
}

/** The scope of a whole LIST of the cache's current state ('' for all, else the namespace), or undefined for any other LIST. */
function wholeListScope(info: RequestInfo, options: ListOptions, plan: ReadPlan): string | undefined {
  if (plan.kind === 'exact' || options.labelSelector !== '' || options.fieldSelector !== '' || options.continue !== '') return undefined;
  // computeListLimit (cacher.go): RV=0 ignores the limit.
  if (options.limit > 0 && options.resourceVersion !== '0') return undefined;
  return info.namespace;
}

function serveList(
  cache: WatchCache,
  info: RequestInfo,
  options: ListOptions,
  plan: ReadPlan,
  shared: SharedLists,
  room: BodyRoom,
): CachedResponse | NoRoom | PassReason {
  // Whole LISTs share their bodies (shared-lists.ts); the rest are made per request, in pooled pieces.
  const scope = wholeListScope(info, options, plan);
  const rv = cache.resourceVersion();
  if (scope !== undefined && rv !== undefined) {
    const kept = shared.find(cache, scope, rv, options.resourceVersion === '0');
    if (kept !== undefined) return { statusCode: 200, headers: JSON_HEADERS, length: kept.length, body: kept, written: kept.acquire() };
    // HOT PATH: the whole range of the current state, read lazily as the body is written; its
    // length from the store's weights, so a 100,000-object LIST holds the loop for no walk of it.
    const view = cache.current();
    const { start, end } = namespaceRange(view, cache, info);
    const items = { items: view.values(start, end), count: end - start, itemBytes: view.weight(start, end) };
    const body = listBody(cache.spec, { ...items, resourceVersion: rv, continue: '', remainingItemCount: undefined });
    const made = shared.keep(cache, scope, rv, body.length, body.pieces, (bytes) => room.fit(bytes));
    if (made !== undefined) return { statusCode: 200, headers: JSON_HEADERS, length: body.length, body: made, written: made.acquire() };
    return room.fit(body.length) ? pooledResponse(body.length, body.pieces, room.budget) : noRoom(body.length);
  }
  const page = selectPage(cache, info, options, plan);
  if (typeof page === 'string') return page;
  const body = listBody(cache.spec, { ...page, count: page.items.length, itemBytes: undefined });
  return room.fit(body.length) ? pooledResponse(body.length, body.pieces, room.budget) : noRoom(body.length);
}

/** The ranks [start, end) of the request's objects in `view`: one namespace's keys (a contiguous run in key order), or all. O(log n). */
function namespaceRange(view: OrderedView<KubeObject>, cache: WatchCache, info: RequestInfo): { start: number; end: number } {
  const prefix = namespacePrefix(cache, info);
  if (prefix === '') return { start: 0, end: view.size };
  return { start: view.lowerBound(prefix), end: view.lowerBound(`${prefix.slice(0, -1)}0`) }; // '0' follows '/'
}

function namespacePrefix(cache: WatchCache, info: RequestInfo): string {
  return cache.spec.namespaced && info.namespace !== '' ? `${info.namespace}/` : '';
}

/**
 * A body of pooled pieces made for one response: they go back to the pool once it is written,
 * and its share of the budget (taken by the caller) once it is done with.
 */
function pooledResponse(length: number, pieces: Iterable<Buffer>, bodies: ByteBudget): CachedResponse {
  const taken: Buffer[] = [];
  function* body(): Generator<Buffer> {
    for (const piece of pieces) {
      taken.push(piece);
      yield piece;
    }
  }
  const giveBack = givesBack(bodies, length);
  return {
    statusCode: 200,
    headers: JSON_HEADERS,
    length,
    body: body(),
    written: (complete) => {
      if (complete) releasePieces(taken.splice(0));
      giveBack(complete);
    },
  };
}

/**
 * A body made whole in one turn (Tables, metadata lists) for `items`: room is made for an
 * estimate first (`itemBytes` each, and the list's framing), NoRoom when there is none; once
 * made, the share is corrected to its length and given back once written.
 */
function madeWhole(
  items: readonly KubeObject[],
  itemBytes: (obj: KubeObject) => number,
  room: BodyRoom,
  make: () => Buffer[],
): CachedResponse | NoRoom {
  let estimate = 1024;
  for (const obj of items) estimate += itemBytes(obj);
  if (!room.fit(estimate)) return noRoom(estimate);
  const body = make();
  const length = body.reduce((n, b) => n + b.length, 0);
  if (length > estimate) room.budget.force(length - estimate);
  else room.budget.give(estimate - length);
  const giveBack = givesBack(room.budget, length);
  const written = (complete: boolean): void => {
    // Written whole: its pieces are freed now, not at a later collection (piece-writer.ts).
    if (complete) freePieces(body);
    giveBack(complete);
  };
  return { statusCode: 200, headers: JSON_HEADERS, length, body, written };
}

/** The objects a LIST answers, at the plan's RV, with its continue token and remaining count; or why the apiserver answers. */
function selectPage(cache: WatchCache, info: RequestInfo, options: ListOptions, plan: ReadPlan): Page | PassReason {
  const selection = selectionOf(cache, info, options);
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
  const prefix = namespacePrefix(cache, info);
  const listKey = listKeyOf(cache, info);
  const fromKey = plan.kind === 'exact' && plan.from !== undefined ? plan.from.fromKey.slice(KEY_ROOT.length + 1) : prefix;
  let start = ordered.lowerBound(fromKey < prefix ? prefix : fromKey);
  // A continue key outside this request's range yields nothing, as the apiserver's range read.
  if (!fromKey.startsWith(prefix)) start = ordered.size;
  const { end } = namespaceRange(ordered, cache, info);
  // computeListLimit (cacher.go): RV=0 ignores the limit.
  const limit = options.resourceVersion === '0' ? 0 : Math.max(0, options.limit);
  const everything = labels.empty() && fields.empty();
  const items: KubeObject[] = [];
  let hasMore = false;
  let last = '';
  let i = start;
  for (const obj of ordered.values(start, end)) {
    i++;
    if (everything || (labels.matches(obj.labels) && fields.matchesObject(obj))) {
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

/**
 * A GET or a LIST answered as PartialObjectMetadata (cached-metadata.ts); undefined: the
 * apiserver answers, a missing object's 404 too (its Status is negotiated without the
 * conversion, indented when no plain-JSON clause is left: the apiserver's to word).
 */
const PROTOBUF_HEADERS = { 'content-type': PROTOBUF_CONTENT_TYPE } as const;

/**
 * A GET or LIST in protobuf (cached-protobuf.ts): the object's or the page's messages; a GET of
 * an object the cache does not hold is the apiserver's 404 Status in protobuf, but in the
 * metadata form, whose 404 the apiserver words itself.
 */
function serveProtobuf(
  cache: WatchCache,
  info: RequestInfo,
  options: ListOptions,
  plan: ReadPlan,
  shape: ProtobufShape,
  metadataOnly: boolean,
  shared: SharedLists,
  room: BodyRoom,
): CachedResponse | NoRoom | PassReason {
  if (info.verb === 'get') {
    const obj = cache.get(cache.spec.namespaced ? `${info.namespace}/${info.name}` : info.name);
    if (obj !== undefined) {
      const body = protobufGetBody(obj, shape);
      return { statusCode: 200, headers: PROTOBUF_HEADERS, length: body.length, body: [body] };
    }
    if (metadataOnly) return 'not-found-converted';
    const status = protobufStatusBody(notFound({ group: cache.spec.group, resource: cache.spec.resource }, info.name).body());
    return { statusCode: 404, headers: PROTOBUF_HEADERS, length: status.length, body: [status] };
  }
  // Whole LISTs share their bodies, as JSON ones do (one per representation, RV and scope).
  const scope = wholeListScope(info, options, plan);
  const rv = cache.resourceVersion();
  if (scope !== undefined && rv !== undefined) {
    const key = `${shape.goType}\u0001${shape.apiVersion}\u0001${scope}`;
    const kept = shared.find(cache, key, rv, options.resourceVersion === '0');
    if (kept !== undefined) return { statusCode: 200, headers: PROTOBUF_HEADERS, length: kept.length, body: kept, written: kept.acquire() };
    const view = cache.current();
    const { start, end } = namespaceRange(view, cache, info);
    const body = protobufListBody(
      view.values(start, end),
      { resourceVersion: String(rv), continue: '', remainingItemCount: undefined },
      shape,
    );
    const made = shared.keep(cache, key, rv, body.length, body.pieces, (bytes) => room.fit(bytes));
    if (made !== undefined) return { statusCode: 200, headers: PROTOBUF_HEADERS, length: body.length, body: made, written: made.acquire() };
    return room.fit(body.length)
      ? { ...pooledResponse(body.length, body.pieces, room.budget), headers: PROTOBUF_HEADERS }
      : noRoom(body.length);
  }
  const page = selectPage(cache, info, options, plan);
  if (typeof page === 'string') return page;
  const meta = { resourceVersion: String(page.resourceVersion), continue: page.continue, remainingItemCount: page.remainingItemCount };
  const body = protobufListBody(page.items, meta, shape);
  return room.fit(body.length)
    ? { ...pooledResponse(body.length, body.pieces, room.budget), headers: PROTOBUF_HEADERS }
    : noRoom(body.length);
}

function serveMetadata(
  cache: WatchCache,
  info: RequestInfo,
  options: ListOptions,
  plan: ReadPlan,
  version: MetaVersion,
  room: BodyRoom,
): CachedResponse | NoRoom | PassReason {
  if (info.verb === 'get') {
    const obj = cache.get(cache.spec.namespaced ? `${info.namespace}/${info.name}` : info.name);
    return obj === undefined ? 'not-found-converted' : whole(200, metadataGetBody(obj, version, cache.spec.unstructured));
  }
  const page = selectPage(cache, info, options, plan);
  if (typeof page === 'string') return page;
  const meta = { resourceVersion: String(page.resourceVersion), continue: page.continue, remainingItemCount: page.remainingItemCount };
  const { unstructured } = cache.spec;
  return madeWhole(
    page.items,
    (obj) => METADATA_ITEM_FRAMING_BYTES + objectMetadataLength(obj, unstructured),
    room,
    () => metadataListBody(page.items, meta, version, unstructured),
  );
}

/** What Tables are made with: cached-table.ts and the printers of src/table. */
interface Tables {
  readonly parseIncludeObject: typeof CachedTable.parseIncludeObject;
  readonly tableBody: typeof CachedTable.tableBody;
  readonly tableWatchRepresentation: typeof CachedTable.tableWatchRepresentation;
  readonly printerFor: (group: string, resource: string) => Printer | undefined;
  readonly crdPrinter: (crd: KubeJson, version: string) => Printer | undefined;
}

let tablesLoaded: Promise<Tables> | undefined;

/**
 * The Table machinery (~60 ported printers, a jsonpath port: about 0.2 MB of code), loaded by
 * the first Table read: a proxy nobody asks for a Table (a sidecar whose app is a controller)
 * never holds it.
 */
function tables(): Promise<Tables> {
  tablesLoaded ??= Promise.all([
    import('./cached-table.ts'),
    import('../../table/printers/index.ts'),
    import('../../table/crd-printer.ts'),
  ]).then(([table, printers, crd]) => ({
    parseIncludeObject: table.parseIncludeObject,
    tableBody: table.tableBody,
    tableWatchRepresentation: table.tableWatchRepresentation,
    printerFor: printers.printerFor,
    crdPrinter: crd.crdPrinter,
  }));
  return tablesLoaded;
}

/** Per CRD object (a new version of it is a new object, so a changed CRD makes new printers), per served version. */
const crdPrinters = new WeakMap<KubeObject, Map<string, Printer | undefined>>();

function crdPrinterOf(t: Tables, crd: KubeObject, version: string): Printer | undefined {
  let byVersion = crdPrinters.get(crd);
  if (byVersion === undefined) {
    byVersion = new Map();
    crdPrinters.set(crd, byVersion);
  }
  if (!byVersion.has(version)) byVersion.set(version, t.crdPrinter(JSON.parse(objectText(crd)) as KubeJson, version));
  return byVersion.get(version);
}

/** A GET or a LIST answered as a Table (cached-table.ts); undefined: the apiserver answers. */
function serveTable(
  cache: WatchCache,
  info: RequestInfo,
  options: ListOptions,
  plan: ReadPlan,
  table: {
    readonly printer: Printer;
    readonly include: IncludeObject;
    readonly version: TableVersion;
    readonly now: number;
    readonly body: Tables['tableBody'];
  },
  room: BodyRoom,
): CachedResponse | NoRoom | PassReason {
  const { printer, include, version, now, body: tableBody } = table;
  if (info.verb === 'get') {
    const key = cache.spec.namespaced ? `${info.namespace}/${info.name}` : info.name;
    const obj = cache.get(key);
    // The 404's Status is negotiated without the Table conversion (indented when no plain-JSON
    // clause is left): the apiserver's to word.
    if (obj === undefined) return 'not-found-converted';
    const meta = { resourceVersion: obj.resourceVersion, continue: '', remainingItemCount: undefined };
    return whole(200, tableBody(printer, [obj], meta, include, version, now, false, cache.spec.unstructured));
  }
  const page = selectPage(cache, info, options, plan);
  if (typeof page === 'string') return page;
  const meta = { resourceVersion: String(page.resourceVersion), continue: page.continue, remainingItemCount: page.remainingItemCount };
  // A row is its cells and, as asked, nothing more, the object's metadata, or the object.
  const { unstructured } = cache.spec;
  const itemBytes = listItemBytes(cache.spec);
  const rowBytes =
    include === 'None'
      ? () => TABLE_ROW_CELLS_BYTES
      : include === 'Metadata'
        ? (obj: KubeObject) => TABLE_ROW_CELLS_BYTES + METADATA_ITEM_FRAMING_BYTES + objectMetadataLength(obj, unstructured)
        : (obj: KubeObject) => TABLE_ROW_CELLS_BYTES + itemBytes(obj);
  return madeWhole(page.items, rowBytes, room, () => tableBody(printer, page.items, meta, include, version, now, true, unstructured));
}

/** A Table row's cells and framing beyond what it embeds (kubectl's pod columns: ~150 bytes). */
const TABLE_ROW_CELLS_BYTES = 256;
/** A PartialObjectMetadata's kind, apiVersion and braces around the metadata. */
const METADATA_ITEM_FRAMING_BYTES = 80;

/** Per type, computed once: the JSON strings of its list's kind and apiVersion. */
interface ListShape {
  readonly apiVersion: string;
  readonly listKind: string;
}

const shapes = new WeakMap<CachedResourceSpec, ListShape>();

function shapeOf(spec: CachedResourceSpec): ListShape {
  let shape = shapes.get(spec);
  if (shape === undefined) {
    shape = {
      apiVersion: JSON.stringify(groupVersionString(spec.group, spec.version)),
      listKind: JSON.stringify(`${spec.kind}List`),
    };
    shapes.set(spec, shape);
  }
  return shape;
}

const COMMA_BYTE = 0x2c;

/**
 * The list's bytes, as the apiserver writes them: a typed list (built-in types) has its fields
 * in declaration order and items without kind and apiVersion; an unstructured list (custom
 * resources) has its keys sorted and items as stored. The length is summed first (the items are
 * chosen already); the pieces are copied as they are taken.
 */
function listBody(spec: CachedResourceSpec, page: ListItems): { length: number; pieces: Iterable<Buffer> } {
  const { apiVersion, listKind } = shapeOf(spec);
  const meta: ListMeta = {
    resourceVersion: String(page.resourceVersion),
    continue: page.continue,
    remainingItemCount: page.remainingItemCount,
  };
  const typed = !spec.unstructured;
  let head: Buffer;
  let tail: Buffer;
  if (typed) {
    head = Buffer.from(`{"kind":${listKind},"apiVersion":${apiVersion},"metadata":{${listMetaJson(meta)}},"items":[`);
    tail = Buffer.from(']}\n');
  } else {
    head = Buffer.from(`{"apiVersion":${apiVersion},"items":[`);
    tail = Buffer.from(`],"kind":${listKind},"metadata":{${unstructuredListMetaJson(meta)}}}\n`);
  }
  const { items, count } = page;
  let length = head.length + tail.length + Math.max(0, count - 1);
  if (page.itemBytes !== undefined) length += page.itemBytes;
  else {
    const itemBytes = listItemBytes(spec);
    for (const obj of items) length += itemBytes(obj);
  }
  function* pieces(): Generator<Buffer> {
    const out = new PieceWriter({ pooled: true });
    out.bytes(head);
    let first = true;
    for (const obj of items) {
      if (!first) out.byte(COMMA_BYTE);
      first = false;
      out.object(obj, !typed);
      if (out.ready()) yield* out.take();
    }
    out.bytes(tail);
    yield* out.end();
  }
  return { length, pieces: pieces() };
}
