/**
 * ListerWatcher (client-go tools/cache/listwatch.go) over the upstream undici client, for any
 * group/version/resource, cluster-wide or in one namespace, with label and field selectors.
 *
 * HOT PATH (watch): the stream is split into lines as chunks arrive; each event's object bytes
 * are copied out once (never re-serialized) and parsed once for the fields the cache needs.
 */
import type { ApiStatus } from '../upstream/api-error.ts';
import { ApiStatusError } from '../upstream/api-error.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { arrayElements, objectMembers } from '../json/json-scan.ts';
import type { FieldExtractor, KubeObject } from './object.ts';
import { decodeObject, isParsedObject, metadataFields } from './object.ts';
import { qualifiedResource } from '../kube/group-resource.ts';
import {
  PROOF_AGES_BOOKMARKS,
  PROOF_AGES_REQUEST_HEADER,
  PROOF_AGE_ANNOTATION,
  PROOF_AGE_HEADER,
  PROOF_RESOURCE_VERSION_HEADER,
  parseProofAge,
  parseProofResourceVersion,
} from '../protocol/proof-age.ts';

/** The query of a LIST or WATCH (metav1.ListOptions), without the selectors of the scope. */
export interface ListOptions {
  readonly resourceVersion?: string;
  readonly resourceVersionMatch?: 'NotOlderThan' | 'Exact';
  readonly limit?: number;
  readonly continue?: string;
  readonly timeoutSeconds?: number;
  readonly allowWatchBookmarks?: boolean;
  readonly sendInitialEvents?: boolean;
}

export interface ListPage {
  readonly items: readonly KubeObject[];
  readonly resourceVersion: string;
  /** '' on the last page. */
  readonly continue: string;
  /**
   * The page came from an upstream proxy's cache whose proof was this old when it answered
   * (protocol/proof-age.ts); undefined: the apiserver's answer, fresh as of its arrival.
   */
  readonly proofAgeMs?: number;
}

/**
 * What an upstream proxy said of the state a watch opened on (protocol/proof-age.ts): the events
 * up to `resourceVersion` (its cache's RV when the watch opened: a replay or an initial state)
 * were proven `ageMs` before the watch's head arrived; the events after it are live. An
 * undefined `resourceVersion` (a head that did not say) makes every event as old as the head.
 */
export interface WatchProof {
  readonly ageMs: number;
  readonly resourceVersion: bigint | undefined;
}

export type WatchEvent =
  | { readonly type: 'ADDED' | 'MODIFIED' | 'DELETED'; readonly object: KubeObject }
  | {
      readonly type: 'BOOKMARK';
      readonly resourceVersion: string;
      readonly initialEventsEnd: boolean;
      /** The bookmark object's bytes (the watch cache copies its shape for its own bookmarks). */
      readonly object?: Buffer;
      /** An upstream proxy's proof age of this RV when it sent the bookmark (protocol/proof-age.ts); undefined from the apiserver. */
      readonly proofAgeMs?: number;
    }
  | { readonly type: 'ERROR'; readonly status: ApiStatus };

/** An open watch. */
export interface Watch {
  /**
   * The next event, or undefined once the stream ended (the server closed it, or stop() was
   * called). Throws when the connection breaks or a line cannot be decoded.
   */
  next(): Promise<WatchEvent | undefined>;
  /** Ends the watch and closes its connection; a pending next() resolves undefined. */
  stop(): void;
  /**
   * True when the watch ended because its upstream moved (routed-lister-watcher.ts: a pool's
   * route to another target): a close of the proxy's own making, after which the reflector
   * resumes from its RV on the new target, never the server's "very short watch".
   */
  readonly rerouted?: () => boolean;
  /** Undefined from the apiserver; from an upstream proxy, how old the state it opened on was (WatchProof). */
  readonly proof?: WatchProof;
}

export interface ListerWatcher {
  /** `signal` aborts the request (the informer is stopping). */
  list(options: ListOptions, signal?: AbortSignal): Promise<ListPage>;
  /** `signal` aborts the request while it opens; once open, stop() the watch. */
  watch(options: ListOptions, signal?: AbortSignal): Promise<Watch>;
}

/** What a ListerWatcher sends its LISTs and WATCHes through: any UpstreamClient will do. */
export type ListWatchClient = Pick<UpstreamClient, 'request' | 'stream'>;

export interface ResourceScope {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  /** Only this namespace; undefined for all namespaces (or a cluster-scoped resource). */
  readonly namespace?: string | undefined;
  readonly labelSelector?: string | undefined;
  readonly fieldSelector?: string | undefined;
}

/** A short name for logs and metrics: `pods`, `deployments.apps`, `pods in ns`, `pods where spec.nodeName=n1`. */
export function describeScope(scope: ResourceScope): string {
  const resource = qualifiedResource(scope.group, scope.resource);
  const selectors = [scope.fieldSelector, scope.labelSelector].filter((s) => s !== undefined && s !== '').join(';');
  const where = selectors === '' ? '' : ` where ${selectors}`;
  return (scope.namespace === undefined ? resource : `${resource} in ${scope.namespace}`) + where;
}

export function collectionPath(scope: Pick<ResourceScope, 'group' | 'version' | 'resource' | 'namespace'>): string {
  const prefix = scope.group === '' ? `/api/${scope.version}` : `/apis/${scope.group}/${scope.version}`;
  const ns = scope.namespace === undefined ? '' : `/namespaces/${encodeURIComponent(scope.namespace)}`;
  return `${prefix}${ns}/${scope.resource}`;
}

function query(scope: ResourceScope, options: ListOptions, watch: boolean): string {
  const params = new URLSearchParams();
  if (watch) params.set('watch', '1');
  if (scope.labelSelector !== undefined && scope.labelSelector !== '') params.set('labelSelector', scope.labelSelector);
  if (scope.fieldSelector !== undefined && scope.fieldSelector !== '') params.set('fieldSelector', scope.fieldSelector);
  if (options.resourceVersion !== undefined) params.set('resourceVersion', options.resourceVersion);
  if (options.resourceVersionMatch !== undefined) params.set('resourceVersionMatch', options.resourceVersionMatch);
  if (options.limit !== undefined && options.limit > 0) params.set('limit', String(options.limit));
  if (options.continue !== undefined && options.continue !== '') params.set('continue', options.continue);
  if (options.timeoutSeconds !== undefined) params.set('timeoutSeconds', String(options.timeoutSeconds));
  if (options.allowWatchBookmarks === true) params.set('allowWatchBookmarks', 'true');
  if (options.sendInitialEvents !== undefined) params.set('sendInitialEvents', String(options.sendInitialEvents));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

export function newListerWatcher(client: ListWatchClient, scope: ResourceScope, extract: FieldExtractor = metadataFields): ListerWatcher {
  const path = collectionPath(scope);
  return {
    async list(options, signal) {
      const res = await client.request({
        method: 'GET',
        path: `${path}${query(scope, options, false)}`,
        ...(signal === undefined ? {} : { signal }),
      });
      if (res.statusCode !== 200) throw ApiStatusError.fromResponse(res.statusCode, res.body, res.headers['retry-after']);
      const page = decodeList(res.body, extract);
      const proofAgeMs = parseProofAge(res.headers[PROOF_AGE_HEADER]);
      return proofAgeMs === undefined ? page : { ...page, proofAgeMs };
    },
    async watch(options, signal) {
      const abort = new AbortController();
      const onAbort = (): void => {
        abort.abort();
      };
      if (signal?.aborted === true) abort.abort();
      signal?.addEventListener('abort', onAbort, { once: true });
      // Asks an upstream proxy for its bookmarks' proof ages; the apiserver ignores the header.
      const res = await client.stream({
        method: 'GET',
        path: `${path}${query(scope, options, true)}`,
        headers: { [PROOF_AGES_REQUEST_HEADER]: PROOF_AGES_BOOKMARKS },
        signal: abort.signal,
      });
      // Once open, the watch is stopped through stop(); the caller's signal has done its part.
      signal?.removeEventListener('abort', onAbort);
      if (res.statusCode !== 200) {
        const body = Buffer.from(await res.body.arrayBuffer());
        throw ApiStatusError.fromResponse(res.statusCode, body, res.headers['retry-after']);
      }
      const lines = splitLines(res.body);
      const ageMs = parseProofAge(res.headers[PROOF_AGE_HEADER]);
      const proof: WatchProof | undefined =
        ageMs === undefined ? undefined : { ageMs, resourceVersion: parseProofResourceVersion(res.headers[PROOF_RESOURCE_VERSION_HEADER]) };
      return {
        ...(proof === undefined ? {} : { proof }),
        async next() {
          try {
            const line = await lines.next();
            return line.done === true ? undefined : decodeWatchLine(line.value, extract);
          } catch (error) {
            if (abort.signal.aborted) return undefined;
            throw error;
          }
        },
        stop() {
          abort.abort();
        },
      };
    },
  };
}

/** Yields each newline-terminated line of a byte stream as it completes (no whole-body buffering). */
export async function* splitLines(chunks: AsyncIterable<Buffer | Uint8Array>): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  for await (const raw of chunks) {
    const chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    let start = 0;
    for (let nl = chunk.indexOf(0x0a, start); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, nl);
      const line = pending.length === 0 ? piece : Buffer.concat([...pending, piece]);
      pending = [];
      if (line.length > 0) yield line;
      start = nl + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
  if (pending.length > 0) {
    const line = Buffer.concat(pending);
    if (line.length > 0) yield line;
  }
}

const EVENT_PREFIX = Buffer.from('{"type":"');
const OBJECT_MEMBER = Buffer.from('","object":');

/**
 * Decodes one watch line. The apiserver writes `{"type":"T","object":{...}}`: the object's bytes
 * are the span between the fixed prefix and the final brace, copied out without re-encoding.
 */
export function decodeWatchLine(line: Buffer, extract: FieldExtractor = metadataFields): WatchEvent {
  let end = line.length;
  while (end > 0 && (line[end - 1] === 0x0d || line[end - 1] === 0x20)) end--;
  let type: string;
  // The object's bytes: line[objectStart, objectEnd), read in place (decodeObject copies them).
  let source = line;
  let objectStart: number;
  let objectEnd: number;
  const typeEnd = line.subarray(0, EVENT_PREFIX.length).equals(EVENT_PREFIX) ? line.indexOf(OBJECT_MEMBER, EVENT_PREFIX.length) : -1;
  objectStart = typeEnd + OBJECT_MEMBER.length;
  if (typeEnd > 0 && line[objectStart] === 0x7b && line[end - 1] === 0x7d && line[end - 2] === 0x7d) {
    type = line.toString('latin1', EVENT_PREFIX.length, typeEnd);
    objectEnd = end - 1;
  } else {
    // Not the apiserver's layout (another server, whitespace): parse it whole.
    const event = JSON.parse(line.toString('utf8', 0, end)) as { type?: unknown; object?: unknown };
    if (typeof event.type !== 'string') throw new SyntaxError('watch event without a type');
    type = event.type;
    source = Buffer.from(JSON.stringify(event.object));
    objectStart = 0;
    objectEnd = source.length;
  }
  switch (type) {
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED':
      return { type, object: decodeObject(source, extract, objectStart, objectEnd) };
    case 'BOOKMARK': {
      const raw = Buffer.from(source.subarray(objectStart, objectEnd));
      const parsed: unknown = JSON.parse(raw.toString('utf8'));
      const meta = isParsedObject(parsed) ? parsed.metadata : {};
      const proofAgeMs = parseProofAge(meta.annotations?.[PROOF_AGE_ANNOTATION]);
      return {
        type,
        resourceVersion: meta.resourceVersion ?? '',
        initialEventsEnd: meta.annotations?.['k8s.io/initial-events-end'] === 'true',
        object: raw,
        ...(proofAgeMs === undefined ? {} : { proofAgeMs }),
      };
    }
    case 'ERROR':
      return { type, status: JSON.parse(source.toString('utf8', objectStart, objectEnd)) as ApiStatus };
    default:
      throw new SyntaxError(`unknown watch event type ${type}`);
  }
}

const METADATA_FIRST = Buffer.from('{"metadata":');

/**
 * Decodes a LIST body, keeping each item's bytes. Items of built-in types come without kind and
 * apiVersion in a list; they are given the list's (`"kind":K,"apiVersion":V,`), so that each
 * cached object is the object a GET or a watch event returns.
 */
export function decodeList(body: Buffer, extract: FieldExtractor = metadataFields): ListPage {
  const members = objectMembers(body);
  const span = (name: string): string | undefined => {
    const s = members.get(name);
    return s === undefined ? undefined : body.toString('utf8', s.start, s.end);
  };
  const listKind = JSON.parse(span('kind') ?? '""') as string;
  const apiVersion = JSON.parse(span('apiVersion') ?? '""') as string;
  const metadata = JSON.parse(span('metadata') ?? '{}') as { resourceVersion?: string; continue?: string };
  const itemsSpan = members.get('items');
  const items: KubeObject[] = [];
  if (itemsSpan !== undefined && body.toString('latin1', itemsSpan.start, itemsSpan.start + 4) !== 'null') {
    const kind = listKind.endsWith('List') ? listKind.slice(0, -4) : listKind;
    const typeMeta = Buffer.from(`"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},`).toString('latin1');
    for (const item of arrayElements(body, itemsSpan)) {
      // A typed list's items begin with metadata (no kind, no apiVersion); unstructured ones carry their own.
      const typed =
        item.end - item.start >= METADATA_FIRST.length &&
        body.compare(METADATA_FIRST, 0, METADATA_FIRST.length, item.start, item.start + METADATA_FIRST.length) === 0;
      items.push(decodeObject(body, extract, item.start, item.end, typed ? typeMeta : ''));
    }
  }
  return { items, resourceVersion: metadata.resourceVersion ?? '', continue: metadata.continue ?? '' };
}
