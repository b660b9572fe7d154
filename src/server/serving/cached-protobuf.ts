/**
 * Protobuf answers from the cache (src/protobuf/ makes the bytes), byte for byte the apiserver's
 * for built-in types:
 *
 *   GET   k8s\0 + Unknown{TypeMeta{apiVersion, kind}, raw = the object's message, "", ""}
 *   LIST  the same around the list kind's message {1: ListMeta, 2: items}: the envelope's head
 *         carries the raw length, then each item's stored message bytes, as the apiserver's
 *         streaming list encoder writes them (protobuf/collections.go)
 *   WATCH frames of a 4-byte big-endian length and a metav1.WatchEvent {1: type, 2: object = the
 *         enveloped object}, as the apiserver's watch encoder writes them (handlers/response.go:
 *         the event through the stream's raw serializer, its object through the negotiated one)
 *
 * and the same for PartialObjectMetadata[List] (client-go's metadata client), whose message is
 * the object's metadata alone. Each object's message is made once per object version and kept
 * as long as the cache keeps that version (a WeakMap on the object): a type no protobuf client
 * reads costs no protobuf bytes.
 */
import type { WatchRepresentation } from '../../cache/window-event.ts';
import { PieceWriter } from '../../cache/piece-writer.ts';
import { noteDerivedEncoding } from '../../cache/derived-encodings.ts';
import type { PiecePool } from '../../cache/piece-writer.ts';
import type { CachedResourceSpec } from '../../cache/cached-resources.ts';
import { objectMembers } from '../../json/json-scan.ts';
import type { KubeObject } from '../../informer/object.ts';
import { objectBytes } from '../../informer/object.ts';
import { encodeObject } from '../../protobuf/encode-object.ts';
import { ENVELOPE_TAIL, envelope, envelopeHead } from '../../protowire/envelope.ts';
import { goTypeOf } from '../../protobuf/schema.ts';
import { Writer } from '../../protowire/wire.ts';
import { groupVersionString } from '../../kube/group-resource.ts';
import type { ListMeta } from '../../kube/list-meta.ts';
import { notFound } from '../../kube/status.ts';
import type { ReadEncoding } from './read-encoding.ts';

export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';
export const PROTOBUF_WATCH_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf;stream=watch';

const META = 'k8s.io/apimachinery/pkg/apis/meta/v1';
const PARTIAL = `${META}.PartialObjectMetadata`;
const STATUS = `${META}.Status`;

/** What the answers of one type in protobuf are made as: its kind's message, or its metadata alone. */
export interface ProtobufShape {
  readonly apiVersion: string;
  readonly kind: string;
  readonly listKind: string;
  /** The Go type of one object's message. */
  readonly goType: string;
  /** The list's Go type: its ListMeta is field 1 and its items field 2 (every API list's form). */
  readonly listGoType: string;
}

/** A built-in type's own objects in protobuf, or undefined when the apiserver has no protobuf for it. */
export function protobufShape(spec: CachedResourceSpec): ProtobufShape | undefined {
  if (spec.unstructured) return undefined;
  const goType = goTypeOf(spec.group, spec.version, spec.kind);
  const listGoType = goTypeOf(spec.group, spec.version, `${spec.kind}List`);
  if (goType === undefined || listGoType === undefined) return undefined;
  const apiVersion = groupVersionString(spec.group, spec.version);
  return { apiVersion, kind: spec.kind, listKind: `${spec.kind}List`, goType, listGoType };
}

/** PartialObjectMetadata in meta.k8s.io `version`, for any type (custom resources too: conversions have protobuf). */
export function metadataShape(version: 'v1' | 'v1beta1'): ProtobufShape {
  return {
    apiVersion: `meta.k8s.io/${version}`,
    kind: 'PartialObjectMetadata',
    listKind: 'PartialObjectMetadataList',
    goType: PARTIAL,
    listGoType: `${META}.PartialObjectMetadataList`,
  };
}

/**
 * Each object's message, per Go type it was encoded as (a kind's own, or PartialObjectMetadata),
 * kept as a binary string (one byte a character), as the object's JSON is (KubeObject.rest): on
 * the heap, its own size and a header. A small Buffer would be a slice of one of Node's shared
 * 8 KiB slabs, which the transient buffers made beside it would keep whole, ~10 times the
 * message's bytes per object.
 */
const messages = new Map<string, WeakMap<KubeObject, string>>();

/** A message's string header and its map entry (measured: ~1.4 KB of heap per 930-byte Pod message, with the entries' tables). */
const DERIVED_OVERHEAD_BYTES = 400;

/** The object's message as `goType`, as a binary string, made once per object version. */
function messageText(obj: KubeObject, goType: string): string {
  let ofType = messages.get(goType);
  if (ofType === undefined) messages.set(goType, (ofType = new WeakMap()));
  let text = ofType.get(obj);
  if (text === undefined) {
    text = encodeObject(goType, objectBytes(obj)).toString('latin1');
    ofType.set(obj, text);
    noteDerivedEncoding(obj, text.length + DERIVED_OVERHEAD_BYTES);
  }
  return text;
}

/** The object's message as `goType`. */
export function messageOf(obj: KubeObject, goType: string): Buffer {
  return Buffer.from(messageText(obj, goType), 'latin1');
}

/** A GET's body: the object, enveloped. */
export function protobufGetBody(obj: KubeObject, shape: ProtobufShape): Buffer {
  return envelope(shape.apiVersion, shape.kind, messageOf(obj, shape.goType));
}

/** An error's body: the Status (its JSON as the apiserver words it), enveloped as the apiserver's protobuf errors are. */
export function protobufStatusBody(statusJson: Buffer): Buffer {
  return envelope('v1', 'Status', encodeObject(STATUS, statusJson));
}

/** ListMeta {1: selfLink, 2: resourceVersion, 3: continue, 4: remainingItemCount (when known)}. */
function listMetaField(meta: ListMeta): Writer {
  const listMeta = new Writer(64);
  listMeta.string(1, '');
  listMeta.string(2, meta.resourceVersion);
  listMeta.string(3, meta.continue);
  if (meta.remainingItemCount !== undefined) {
    listMeta.key(4, 0);
    listMeta.varintBig(meta.remainingItemCount);
  }
  const field = new Writer(80);
  field.message(1, listMeta);
  return field;
}

/** How many bytes a varint of `n` takes. */
function varintLength(n: number): number {
  let length = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    length++;
  }
  return length;
}

/**
 * A LIST's body in pooled pieces: the envelope's head, ListMeta, each item's message after its
 * field key and length, and the envelope's tail. Each item's message is made (or found) once,
 * before the head, whose raw length counts them all.
 */
export function protobufListBody(
  items: Iterable<KubeObject>,
  meta: ListMeta,
  shape: ProtobufShape,
  pool: PiecePool,
): { length: number; pieces: Iterable<Buffer> } {
  const bodies: string[] = [];
  const listMeta = listMetaField(meta).finish();
  let raw = listMeta.length;
  for (const obj of items) {
    const text = messageText(obj, shape.goType);
    bodies.push(text);
    raw += 1 + varintLength(text.length) + text.length;
  }
  const head = envelopeHead(shape.apiVersion, shape.listKind, raw);
  const length = head.length + raw + ENVELOPE_TAIL.length;
  function* pieces(): Generator<Buffer> {
    const out = new PieceWriter({ pool });
    out.bytes(head);
    out.bytes(listMeta);
    const prefix = new Writer(16);
    for (const text of bodies) {
      prefix.reset();
      prefix.key(2, 2);
      prefix.varint(text.length);
      out.bytes(prefix.view());
      out.latin1(text);
      if (out.ready()) yield* out.take();
    }
    out.bytes(ENVELOPE_TAIL);
    yield* out.end();
  }
  return { length, pieces: pieces() };
}

/** A watch frame: the length, then WatchEvent {1: type, 2: RawExtension {1: the enveloped object}}. */
function watchEventFrame(type: string, object: Buffer): Buffer {
  const raw = new Writer(object.length + 8);
  raw.field(1, object);
  const event = new Writer(object.length + 32);
  event.string(1, type);
  event.message(2, raw);
  const bytes = event.finish();
  const frame = Buffer.allocUnsafe(4 + bytes.length);
  frame.writeUInt32BE(bytes.length, 0);
  bytes.copy(frame, 4);
  return frame;
}

/** An object whose JSON carries its own kind and apiVersion (a bookmark's, an error's Status), enveloped. */
function enveloped(raw: Buffer, shape: ProtobufShape, own: boolean): Buffer {
  if (!own) return envelope(shape.apiVersion, shape.kind, encodeObject(shape.goType, raw));
  const members = objectMembers(raw);
  const kindSpan = members.get('kind');
  const kind = kindSpan === undefined ? '' : (JSON.parse(raw.toString('utf8', kindSpan.start, kindSpan.end)) as string);
  if (kind === 'Status') return protobufStatusBody(raw);
  return envelope(shape.apiVersion, shape.kind, encodeObject(shape.goType, raw));
}

/**
 * A watch in protobuf: every watcher with the same shape gets the same frames (the key), each
 * event's made once. Bookmarks are the type's object with only its resourceVersion (and the
 * initial-events-end annotation), as the apiserver's are.
 */
export function protobufWatchRepresentation(shape: ProtobufShape): WatchRepresentation {
  return {
    key: `protobuf:${shape.goType}:${shape.apiVersion}`,
    contentType: PROTOBUF_WATCH_CONTENT_TYPE,
    object: (raw) => enveloped(raw, shape, false),
    stored: (obj) => envelope(shape.apiVersion, shape.kind, messageOf(obj, shape.goType)),
    bookmark: (raw) => enveloped(raw, shape, false),
    status: (raw) => protobufStatusBody(raw),
    frame: watchEventFrame,
  };
}

const PROTOBUF_HEADERS = { 'content-type': PROTOBUF_CONTENT_TYPE } as const;

/**
 * Protobuf (read-encoding.ts): the object's or the items' messages, whole LISTs shared per Go
 * type and version; a GET of an object the cache does not hold is the apiserver's 404 Status in
 * protobuf, but in the metadata form (`metadataOnly`), whose 404 the apiserver words itself.
 */
export function protobufEncoding(shape: ProtobufShape, metadataOnly: boolean): ReadEncoding {
  return {
    headers: PROTOBUF_HEADERS,
    sharedKey: (scope) => `${shape.goType}\u0001${shape.apiVersion}\u0001${scope}`,
    anyRv: true,
    object: (obj) => {
      const body = protobufGetBody(obj, shape);
      return { statusCode: 200, headers: PROTOBUF_HEADERS, length: body.length, body: [body] };
    },
    missing: (cache, name) => {
      if (metadataOnly) return 'not-found-converted';
      const status = protobufStatusBody(notFound({ group: cache.spec.group, resource: cache.spec.resource }, name).body());
      return { statusCode: 404, headers: PROTOBUF_HEADERS, length: status.length, body: [status] };
    },
    list: (items, meta, pool) => ({ kind: 'streamed', ...protobufListBody(items.items, meta, shape, pool) }),
  };
}
