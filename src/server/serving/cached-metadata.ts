/**
 * Metadata-only answers from the cache, for client-go's metadata client (the garbage collector,
 * the namespace and quota controllers, controller-runtime's metadata informers): what the
 * apiserver's asPartialObjectMetadata and asPartialObjectMetadataList (handlers/response.go)
 * make of the stored objects, byte for byte:
 *
 *   GET   {"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{…as stored…}}
 *   LIST  {"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{…},
 *          "items":[PartialObjectMetadata…]}   ("items":null when empty: the new list has none)
 *   WATCH each event's object as a PartialObjectMetadata, bookmarks included
 *
 * The metadata is the stored object's own `metadata` bytes, never re-serialized. The apiserver
 * answers a GET asking for the list kind, a LIST asking for the item kind (406) and a watch
 * asking for the list kind (a stream that stays empty) in ways of its own: those go to it.
 */
import type { WatchRepresentation } from '../../cache/window-event.ts';
import { objectMembers } from '../../json/json-scan.ts';
import type { KubeObject } from '../../informer/object.ts';
import { objectBytes } from '../../informer/object.ts';
import type { Span } from '../../json/json-scan.ts';
import { PieceWriter } from '../../cache/piece-writer.ts';
import type { PiecePool } from '../../cache/piece-writer.ts';
import { goMarshal } from '../../kube/go-json.ts';
import type { GoJsonValue } from '../../kube/go-json.ts';
import type { ListMeta } from '../../kube/list-meta.ts';
import { listMetaJson } from '../../kube/list-meta.ts';
import { JSON_HEADERS, whole } from './cached-response.ts';
import type { ReadEncoding } from './read-encoding.ts';

export type MetaVersion = 'v1' | 'v1beta1';

const EMPTY_METADATA = Buffer.from('{}');

/**
 * Where each served object's `metadata` member lies in its bytes: found by a scan the first time
 * the object is served metadata-only (or in a Table), then kept as long as the object is.
 */
const metadataSpans = new WeakMap<Buffer, { readonly start: number; readonly end: number }>();

function metadataSpan(raw: Buffer): { readonly start: number; readonly end: number } | undefined {
  let span = metadataSpans.get(raw);
  if (span === undefined) {
    span = objectMembers(raw).get('metadata');
    if (span !== undefined) metadataSpans.set(raw, span);
  }
  return span;
}

/** Go's omitempty: '' , 0, false, an empty map or list, and an absent value are left out. */
function omitEmpty(value: unknown): GoJsonValue | undefined {
  if (value === undefined || value === null || value === '' || value === 0 || value === false) return undefined;
  if (Array.isArray(value) && value.length === 0) return undefined;
  if (typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0) return undefined;
  return value as GoJsonValue;
}

function ordered(obj: unknown, fields: readonly string[], always: readonly string[] = []): GoJsonValue {
  const source = (obj ?? {}) as Record<string, unknown>;
  const out: Record<string, GoJsonValue | undefined> = {};
  for (const field of fields) out[field] = always.includes(field) ? ((source[field] ?? '') as GoJsonValue) : omitEmpty(source[field]);
  return out;
}

/**
 * A custom resource's metadata as meta.AsPartialObjectMetadata writes it: the object is
 * unstructured (its stored keys sorted), so the apiserver rebuilds an ObjectMeta through its
 * getters and encodes the struct, in field order, omitting what is empty.
 */
function objectMetaJson(metadata: unknown): string {
  const m = (metadata ?? {}) as Record<string, unknown>;
  const list = (value: unknown, fields: readonly string[], always: readonly string[] = []): GoJsonValue | undefined =>
    Array.isArray(value) && value.length > 0 ? value.map((item) => ordered(item, fields, always)) : undefined;
  return goMarshal({
    name: omitEmpty(m.name),
    generateName: omitEmpty(m.generateName),
    namespace: omitEmpty(m.namespace),
    selfLink: omitEmpty(m.selfLink),
    uid: omitEmpty(m.uid),
    resourceVersion: omitEmpty(m.resourceVersion),
    generation: omitEmpty(m.generation),
    creationTimestamp: omitEmpty(m.creationTimestamp),
    deletionTimestamp: omitEmpty(m.deletionTimestamp),
    deletionGracePeriodSeconds:
      m.deletionGracePeriodSeconds === undefined || m.deletionGracePeriodSeconds === null
        ? undefined
        : (m.deletionGracePeriodSeconds as GoJsonValue),
    labels: omitEmpty(m.labels),
    annotations: omitEmpty(m.annotations),
    ownerReferences: list(
      m.ownerReferences,
      ['apiVersion', 'kind', 'name', 'uid', 'controller', 'blockOwnerDeletion'],
      ['apiVersion', 'kind', 'name', 'uid'],
    ),
    finalizers: omitEmpty(m.finalizers),
    managedFields: list(m.managedFields, ['manager', 'operation', 'apiVersion', 'time', 'fieldsType', 'fieldsV1', 'subresource']),
  });
}

/** Each custom resource's re-encoded metadata, made the first time it is served so. */
const unstructuredMetadata = new WeakMap<Buffer, Buffer>();

/**
 * The object's metadata as the apiserver writes it in a PartialObjectMetadata: a built-in
 * type's stored `metadata` bytes as they are (typed objects encode ObjectMeta in struct order
 * already), a custom resource's re-encoded in ObjectMeta's order.
 */
export function metadataBytes(raw: Buffer, unstructured = false): Buffer {
  const span = metadataSpan(raw);
  if (span === undefined) return EMPTY_METADATA;
  if (!unstructured) return raw.subarray(span.start, span.end);
  let bytes = unstructuredMetadata.get(raw);
  if (bytes === undefined) {
    bytes = Buffer.from(objectMetaJson(JSON.parse(raw.toString('utf8', span.start, span.end))));
    unstructuredMetadata.set(raw, bytes);
  }
  return bytes;
}

/**
 * Where a stored object's `metadata` member lies in its rest (KubeObject.rest), found by a scan
 * the first time it is served metadata-only (or in a Table), then kept as long as the object is;
 * null: it has none.
 */
const objectMetadataSpans = new WeakMap<KubeObject, Span | null>();

function objectMetadataSpan(obj: KubeObject): Span | undefined {
  let span = objectMetadataSpans.get(obj);
  if (span === undefined) {
    const found = objectMembers(objectBytes(obj)).get('metadata');
    // objectBytes is `{` + TypeMeta + rest: the same span, shifted.
    const shift = 1 + obj.typeMeta.length;
    span = found === undefined ? null : { start: found.start - shift, end: found.end - shift };
    objectMetadataSpans.set(obj, span);
  }
  return span ?? undefined;
}

/** Each custom resource's re-encoded metadata, made the first time it is served so. */
const unstructuredObjectMetadata = new WeakMap<KubeObject, Buffer>();

/** A stored object's metadata as the apiserver writes it in a PartialObjectMetadata (see metadataBytes). */
export function objectMetadataBytes(obj: KubeObject, unstructured: boolean): Buffer {
  if (unstructured) {
    let bytes = unstructuredObjectMetadata.get(obj);
    if (bytes === undefined) {
      bytes = metadataBytes(objectBytes(obj), true);
      unstructuredObjectMetadata.set(obj, bytes);
    }
    return bytes;
  }
  const span = objectMetadataSpan(obj);
  return span === undefined ? EMPTY_METADATA : Buffer.from(obj.rest.slice(span.start, span.end), 'latin1');
}

/** The length of a stored object's metadata as served (objectMetadataBytes), without copying it: a body's size before it is made. */
export function objectMetadataLength(obj: KubeObject, unstructured: boolean): number {
  if (unstructured) return objectMetadataBytes(obj, true).length;
  const span = objectMetadataSpan(obj);
  return span === undefined ? EMPTY_METADATA.length : span.end - span.start;
}

/** Appends a stored object's PartialObjectMetadata to `out`, copying its metadata bytes once. */
export function writePartialObjectMetadata(out: PieceWriter, obj: KubeObject, version: MetaVersion, unstructured = false): void {
  out.bytes(head(version));
  const span = unstructured ? undefined : objectMetadataSpan(obj);
  if (span !== undefined) out.latin1(obj.rest.slice(span.start, span.end));
  else out.bytes(objectMetadataBytes(obj, unstructured));
  out.byte(CLOSE_BRACE);
}

const heads = new Map<MetaVersion, Buffer>();

function head(version: MetaVersion): Buffer {
  let h = heads.get(version);
  if (h === undefined) {
    h = Buffer.from(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/${version}","metadata":`);
    heads.set(version, h);
  }
  return h;
}

const CLOSE = Buffer.from('}');
const CLOSE_LINE = Buffer.from('}\n');
const CLOSE_BRACE = 0x7d;
const COMMA_BYTE = 0x2c;
const LIST_TAIL = Buffer.from(']}\n');

/** The PartialObjectMetadata of a stored object (or of a bookmark object), without a newline. */
export function partialObjectMetadata(raw: Buffer, version: MetaVersion, unstructured = false): Buffer {
  return Buffer.concat([head(version), metadataBytes(raw, unstructured), CLOSE]);
}

/** A GET's answer: the object's PartialObjectMetadata and the encoder's newline. */
export function metadataGetBody(obj: KubeObject, version: MetaVersion, unstructured: boolean): Buffer[] {
  return [head(version), objectMetadataBytes(obj, unstructured), CLOSE_LINE];
}

/**
 * A LIST's answer: the items as PartialObjectMetadata, in the list's order, in large pieces (of
 * `pool`'s when given: the body must then go back to it once written). Its length is known
 * before any piece is made: each item's metadata span is found in one pass over the items (and
 * kept with the object), the pieces are made as they are read.
 */
export function metadataListBody(
  items: Iterable<KubeObject>,
  meta: ListMeta,
  version: MetaVersion,
  unstructured: boolean,
  pool?: PiecePool,
): { length: number; pieces: Iterable<Buffer> } {
  const listHead = `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/${version}","metadata":{${listMetaJson(meta)}},"items":`;
  const objects: KubeObject[] = [];
  const itemHead = head(version).length;
  let itemsBytes = 0;
  for (const obj of items) {
    objects.push(obj);
    itemsBytes += itemHead + objectMetadataLength(obj, unstructured) + 1;
  }
  if (objects.length === 0) {
    const empty = Buffer.from(`${listHead}null}\n`);
    return { length: empty.length, pieces: [empty] };
  }
  const open = Buffer.from(`${listHead}[`);
  const length = open.length + itemsBytes + (objects.length - 1) + LIST_TAIL.length;
  function* pieces(): Generator<Buffer> {
    const out = new PieceWriter(pool === undefined ? {} : { pool });
    out.bytes(open);
    for (let i = 0; i < objects.length; i++) {
      const obj = objects[i];
      if (obj === undefined) continue;
      if (i > 0) out.byte(COMMA_BYTE);
      writePartialObjectMetadata(out, obj, version, unstructured);
      if (out.ready()) yield* out.take();
    }
    out.bytes(LIST_TAIL);
    yield* out.end();
  }
  return { length, pieces: pieces() };
}

/** A metadata watch: every event's and bookmark's object as a PartialObjectMetadata. */
export function metadataWatchRepresentation(version: MetaVersion, unstructured: boolean): WatchRepresentation {
  return {
    // The same bytes for every metadata watcher of this version: rendered once per event.
    key: `PartialObjectMetadata/${version}`,
    object: (raw) => partialObjectMetadata(raw, version, unstructured),
    // The initial state: from each object's metadata span, found once per object for every watcher.
    stored: (obj) => Buffer.concat([head(version), objectMetadataBytes(obj, unstructured), CLOSE]),
    bookmark: (raw) => partialObjectMetadata(raw, version, unstructured),
  };
}

/** A PartialObjectMetadata's kind, apiVersion and braces around the metadata (a Table row's too, with includeObject=Metadata). */
export const METADATA_ITEM_FRAMING_BYTES = 80;

/**
 * PartialObjectMetadata in JSON (read-encoding.ts), whole LISTs shared per version; a GET of an
 * object the cache does not hold is the apiserver's to answer (its 404's Status is negotiated
 * without the conversion, indented when no plain-JSON clause is left).
 */
export function metadataEncoding(version: MetaVersion, unstructured: boolean): ReadEncoding {
  return {
    headers: JSON_HEADERS,
    sharedKey: (scope) => `PartialObjectMetadataList\u0001${version}\u0001${scope}`,
    anyRv: true,
    object: (obj) => whole(200, metadataGetBody(obj, version, unstructured)),
    missing: () => 'not-found-converted',
    list: (items, meta, pool) => ({ kind: 'streamed', ...metadataListBody(items.items, meta, version, unstructured, pool) }),
  };
}
