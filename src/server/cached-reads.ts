/**
 * GET and LIST answered from the informers' indexers, for the requests whose answer the cache
 * can give exactly as the apiserver would; everything else is passed through (returns
 * undefined). This first cut serves:
 * - resourceVersion="0" (any state): GET of one object, LIST (the apiserver's cache ignores
 *   `limit` for RV=0 and returns everything, without `continue`);
 * - resourceVersion=N without limit or with resourceVersionMatch=NotOlderThan, when the cache
 *   is already at N or later.
 * Passed through: RV unset (the consistency probe comes next), Exact, continue, tables and other
 * media types, invalid queries (the apiserver words the error), and any moment when the cache is
 * not a consistent snapshot (not synced yet, or changes still queued).
 *
 * HOT PATH: a LIST body is the concatenation of a head, each item's stored bytes, and a tail; no
 * object is parsed or serialized per request.
 */
import type { SharedInformerFactory } from '../informer/factory.ts';
import type { SharedIndexInformer } from '../informer/shared-informer.ts';
import type { KubeObject } from '../informer/object.ts';
import { compareResourceVersions } from '../informer/object.ts';
import { NAMESPACE_INDEX } from '../informer/indexer.ts';
import type { FieldSelector } from '../cache/field-selector.ts';
import { parseFieldSelector } from '../cache/field-selector.ts';
import type { LabelSelector } from '../cache/label-selector.ts';
import { parseLabelSelector } from '../cache/label-selector.ts';
import type { ResourceSelectableFields } from '../cache/selectable-fields.ts';
import { selectableFieldsFor } from '../cache/selectable-fields.ts';
import type { ListOptions } from './list-options.ts';
import { parseListOptions } from './list-options.ts';
import type { RequestInfo } from './request-info.ts';
import { parseRequestInfo } from './request-info.ts';
import { notFound } from './status.ts';

/** A built-in type to cache: its list items come without kind and apiVersion. */
export interface CachedResourceSpec {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

export interface CachedResponse {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Chunks to write in order. */
  readonly body: readonly Buffer[];
}

export interface CachedReads {
  /** Creates and starts the informers. */
  start(): void;
  /** True once every informer has synced. */
  synced(): boolean;
  /** The answer from the cache, or undefined to pass the request through. */
  tryServe(method: string, url: string, accept: string | undefined): CachedResponse | undefined;
}

interface Entry {
  readonly spec: CachedResourceSpec;
  readonly fields: ResourceSelectableFields;
  readonly informer: SharedIndexInformer;
  /** `{"kind":K,"apiVersion":V,`: stripped from each object for list items. */
  readonly typeMeta: Buffer;
  /** `{"kind":"KList","apiVersion":V,"metadata":{"resourceVersion":"` */
  readonly listHead: Buffer;
}

const JSON_HEADERS = { 'content-type': 'application/json' } as const;
const OPEN = Buffer.from('{');
const COMMA = Buffer.from(',');
const ITEMS = Buffer.from('"},"items":[');
const TAIL = Buffer.from(']}\n');
const NEWLINE = Buffer.from('\n');

function apiVersionOf(spec: CachedResourceSpec): string {
  return spec.group === '' ? spec.version : `${spec.group}/${spec.version}`;
}

function entryKey(group: string, version: string, resource: string): string {
  return `${group}/${version}/${resource}`;
}

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

export function newCachedReads(factory: SharedInformerFactory, specs: readonly CachedResourceSpec[]): CachedReads {
  const entries = new Map<string, Entry>();
  for (const spec of specs) {
    const fields = selectableFieldsFor(spec.group, spec.resource, spec.namespaced);
    const apiVersion = apiVersionOf(spec);
    entries.set(entryKey(spec.group, spec.version, spec.resource), {
      spec,
      fields,
      informer: factory.informerFor({ group: spec.group, version: spec.version, resource: spec.resource, extract: fields.extract }),
      typeMeta: Buffer.from(`{"kind":${JSON.stringify(spec.kind)},"apiVersion":${JSON.stringify(apiVersion)},`),
      listHead: Buffer.from(
        `{"kind":${JSON.stringify(`${spec.kind}List`)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":{"resourceVersion":"`,
      ),
    });
  }
  return {
    start() {
      factory.start();
    },
    synced() {
      return [...entries.values()].every((e) => e.informer.hasSynced());
    },
    tryServe(method, url, accept) {
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
      const entry = entries.get(entryKey(info.apiGroup, info.apiVersion, info.resource));
      if (entry === undefined || options.watch) return undefined;
      // A cluster-scoped type asked for in a namespace is the apiserver's 404 to word.
      if (!entry.spec.namespaced && info.namespace !== '' && info.resource !== 'namespaces') return undefined;
      // Everything below is synchronous: the snapshot RV and the indexer are read together.
      const rv = entry.informer.snapshotResourceVersion();
      if (rv === undefined || !servable(options, info.verb, rv)) return undefined;
      return info.verb === 'get' ? serveGet(entry, info) : serveList(entry, info, options, rv);
    },
  };
}

/** The resourceVersion rules this cache can honour exactly (see the file comment). */
export function servable(options: ListOptions, verb: string, cacheRv: string): boolean {
  if (options.continue !== '' || options.resourceVersionMatch === 'Exact') return false;
  const rv = options.resourceVersion;
  if (rv === '') return false;
  if (rv === '0') return true;
  // RV=N with a limit and no match is an exact read; NotOlderThan (or no limit) is served from a fresh enough cache.
  if (verb === 'list' && options.limit > 0 && options.resourceVersionMatch !== 'NotOlderThan') return false;
  if (!/^[1-9][0-9]*$/.test(rv)) return false;
  return compareResourceVersions(cacheRv, rv) >= 0;
}

function serveGet(entry: Entry, info: RequestInfo): CachedResponse {
  const key = entry.spec.namespaced ? `${info.namespace}/${info.name}` : info.name;
  const obj = entry.informer.getIndexer().getByKey(key);
  if (obj === undefined) {
    const status = notFound({ group: entry.spec.group, resource: entry.spec.resource }, info.name);
    return { statusCode: 404, headers: JSON_HEADERS, body: [status.body()] };
  }
  return { statusCode: 200, headers: JSON_HEADERS, body: [obj.raw, NEWLINE] };
}

function serveList(entry: Entry, info: RequestInfo, options: ListOptions, rv: string): CachedResponse | undefined {
  let labels: LabelSelector;
  let fields: FieldSelector;
  try {
    labels = parseLabelSelector(options.labelSelector);
    fields = parseFieldSelector(options.fieldSelector, entry.fields.conversion);
  } catch {
    return undefined; // the apiserver words the error
  }
  const indexer = entry.informer.getIndexer();
  const candidates: KubeObject[] =
    entry.spec.namespaced && info.namespace !== '' ? indexer.byIndex(NAMESPACE_INDEX, info.namespace) : indexer.list();
  const selected = candidates.filter((o) => labels.matches(o.labels) && fields.matches(o.fields));
  // The apiserver lists in etcd key order: namespace, then name (byte order; names are ASCII).
  selected.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const body: Buffer[] = [entry.listHead, Buffer.from(rv), ITEMS];
  selected.forEach((obj, i) => {
    if (i > 0) body.push(COMMA);
    if (obj.raw.subarray(0, entry.typeMeta.length).equals(entry.typeMeta)) body.push(OPEN, obj.raw.subarray(entry.typeMeta.length));
    else body.push(obj.raw);
  });
  body.push(TAIL);
  return { statusCode: 200, headers: JSON_HEADERS, body };
}
