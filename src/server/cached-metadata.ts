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
import type { WatchRepresentation } from '../cache/window-event.ts';
import { objectMembers } from '../informer/json-scan.ts';
import type { KubeObject } from '../informer/object.ts';
import { PieceWriter } from './piece-writer.ts';

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

/** The stored object's `metadata` member, as stored. */
export function metadataBytes(raw: Buffer): Buffer {
  const span = metadataSpan(raw);
  return span === undefined ? EMPTY_METADATA : raw.subarray(span.start, span.end);
}

/** Appends the object's PartialObjectMetadata to `out`, copying its metadata bytes once. */
export function writePartialObjectMetadata(out: PieceWriter, raw: Buffer, version: MetaVersion): void {
  out.bytes(head(version));
  const span = metadataSpan(raw);
  if (span === undefined) out.bytes(EMPTY_METADATA);
  else out.bytes(raw, span.start, span.end);
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
export function partialObjectMetadata(raw: Buffer, version: MetaVersion): Buffer {
  return Buffer.concat([head(version), metadataBytes(raw), CLOSE]);
}

/** A GET's answer: the object's PartialObjectMetadata and the encoder's newline. */
export function metadataGetBody(obj: KubeObject, version: MetaVersion): Buffer[] {
  return [head(version), metadataBytes(obj.raw), CLOSE_LINE];
}

export interface MetadataListMeta {
  readonly resourceVersion: string;
  readonly continue: string;
  readonly remainingItemCount: bigint | undefined;
}

/** A LIST's answer: the page's items as PartialObjectMetadata, in the list's order, in large pieces. */
export function metadataListBody(objects: readonly KubeObject[], meta: MetadataListMeta, version: MetaVersion): Buffer[] {
  let listMeta = `"resourceVersion":"${meta.resourceVersion}"`;
  if (meta.continue !== '') listMeta += `,"continue":"${meta.continue}"`;
  if (meta.remainingItemCount !== undefined) listMeta += `,"remainingItemCount":${String(meta.remainingItemCount)}`;
  const listHead = `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/${version}","metadata":{${listMeta}},"items":`;
  if (objects.length === 0) return [Buffer.from(`${listHead}null}\n`)];
  const out = new PieceWriter();
  out.bytes(Buffer.from(`${listHead}[`));
  for (let i = 0; i < objects.length; i++) {
    const obj = objects[i];
    if (obj === undefined) continue;
    if (i > 0) out.byte(COMMA_BYTE);
    writePartialObjectMetadata(out, obj.raw, version);
  }
  out.bytes(LIST_TAIL);
  return out.end();
}

/** A metadata watch: every event's and bookmark's object as a PartialObjectMetadata. */
export function metadataWatchRepresentation(version: MetaVersion): WatchRepresentation {
  return {
    object: (raw) => partialObjectMetadata(raw, version),
    bookmark: (raw) => partialObjectMetadata(raw, version),
  };
}
