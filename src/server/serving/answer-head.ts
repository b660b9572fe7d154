/**
 * What a read passed through to the apiserver was answered with, read from the answer's first
 * bytes as the apiserver writes them: read-your-writes (cache/consistency.ts) settles its doubts
 * from a consistent read's answer as from a probe's.
 *
 * - A LIST's resourceVersion: a consistent LIST's is the apiserver's current RV when it read
 *   (etcd's revision), what a probe would learn.
 * - A GET's object: its kind, name, namespace and resourceVersion (the revision of its last
 *   change), which settle the doubts of that object.
 *
 * Only the forms whose metadata comes before anything else are read, so that what is found is
 * the answer's own and never an item's or a field's:
 * - compact JSON of a built-in type, a metadata list or object, or a Table (Go's struct order:
 *   kind, apiVersion, metadata{...}; ObjectMeta: name, generateName, namespace, selfLink, uid,
 *   resourceVersion; ListMeta: resourceVersion first);
 * - protobuf (`k8s\0`, runtime.Unknown{1 typeMeta{2 kind}, 2 raw}), whose raw message has its
 *   ObjectMeta or ListMeta as field 1 (apimachinery/pkg/apis/meta/v1/generated.proto: ObjectMeta
 *   name 1, namespace 3, resourceVersion 6; ListMeta resourceVersion 2), before the items.
 * Anything else (indented JSON, a custom resource's JSON with its keys sorted, gzip) is
 * undefined: nothing is settled from it.
 */
import type { AnsweredObject } from '../../cache/read-your-writes.ts';
import { PROTOBUF_MAGIC } from '../../protowire/envelope.ts';
import type { FieldRead } from '../../protowire/wire.ts';
import { WireType, findBytesField, readField } from '../../protowire/wire.ts';

/** The bytes of an answer read for its metadata: the TypeMeta and ObjectMeta or ListMeta fields read fit in far less. */
export const ANSWER_HEAD_BYTES = 4096;

/** A list's kind (ConfigMapList, PartialObjectMetadataList). */
export function isListKind(kind: string): boolean {
  return kind.length > 'List'.length && kind.endsWith('List');
}

const RV = /^[1-9][0-9]{0,19}$/;
const JSON_LIST_HEAD = /^\{"kind":"(?:[A-Za-z0-9]+List|Table)","apiVersion":"[^"\\]*","metadata":\{"resourceVersion":"([1-9][0-9]{0,19})"/;
const JSON_OBJECT_HEAD =
  /^\{"kind":"([A-Za-z0-9]+)","apiVersion":"[^"\\]*","metadata":\{"name":"([^"\\]*)",(?:"generateName":"[^"\\]*",)?(?:"namespace":"([^"\\]*)",)?(?:"selfLink":"[^"\\]*",)?(?:"uid":"[^"\\]*",)?"resourceVersion":"([1-9][0-9]{0,19})"/;

/** The list's RV from the first bytes of its answer, or undefined when they do not show it plainly. */
export function listResourceVersion(contentType: string, contentEncoding: string, head: Buffer): bigint | undefined {
  const type = plainType(contentType, contentEncoding);
  if (type === 'json') {
    const match = JSON_LIST_HEAD.exec(jsonHead(head));
    return match?.[1] === undefined ? undefined : BigInt(match[1]);
  }
  if (type !== 'protobuf') return undefined;
  const envelope = protobufEnvelope(head);
  if (envelope === undefined || !(envelope.kind === 'Table' || isListKind(envelope.kind))) return undefined;
  const rv = stringField(head, envelope.meta, 2);
  return rv !== undefined && RV.test(rv) ? BigInt(rv) : undefined;
}

/** The object from the first bytes of a GET's answer, or undefined when they do not show it plainly. */
export function objectHead(contentType: string, contentEncoding: string, head: Buffer): AnsweredObject | undefined {
  const type = plainType(contentType, contentEncoding);
  if (type === 'json') {
    const match = JSON_OBJECT_HEAD.exec(jsonHead(head));
    if (match === null) return undefined;
    const [, kind = '', name = '', namespace = '', rv = ''] = match;
    return isListKind(kind) || kind === 'Table' ? undefined : { kind, name, namespace, resourceVersion: BigInt(rv) };
  }
  if (type !== 'protobuf') return undefined;
  const envelope = protobufEnvelope(head);
  if (envelope === undefined || envelope.kind === 'Table' || isListKind(envelope.kind)) return undefined;
  // ObjectMeta's fields in order, up to resourceVersion (6); each read must be whole in the head.
  const { meta } = envelope;
  const end = Math.min(meta.next, head.length);
  let name = '';
  let namespace = '';
  for (let at = meta.start; at < end;) {
    const field = readField(head, at);
    if (field === undefined || field.next > end || field.number > 6) return undefined;
    if (field.wireType === WireType.Bytes) {
      const value = head.toString('utf8', field.start, field.next);
      if (field.number === 1) name = value;
      else if (field.number === 3) namespace = value;
      else if (field.number === 6)
        return RV.test(value) ? { kind: envelope.kind, name, namespace, resourceVersion: BigInt(value) } : undefined;
    }
    at = field.next;
  }
  return undefined;
}

function plainType(contentType: string, contentEncoding: string): 'json' | 'protobuf' | undefined {
  if (contentEncoding !== '' && contentEncoding.toLowerCase() !== 'identity') return undefined;
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/json') return 'json';
  if (type === 'application/vnd.kubernetes.protobuf') return 'protobuf';
  return undefined;
}

function jsonHead(head: Buffer): string {
  return head.toString('latin1', 0, Math.min(head.length, ANSWER_HEAD_BYTES));
}

/** The envelope's kind and its raw message's first field, the ObjectMeta or ListMeta (which may run past the head). */
function protobufEnvelope(head: Buffer): { readonly kind: string; readonly meta: FieldRead } | undefined {
  if (head.length < PROTOBUF_MAGIC.length || !head.subarray(0, PROTOBUF_MAGIC.length).equals(PROTOBUF_MAGIC)) return undefined;
  const typeMeta = readField(head, PROTOBUF_MAGIC.length);
  if (typeMeta?.number !== 1 || typeMeta.wireType !== WireType.Bytes || typeMeta.next > head.length) return undefined;
  const kind = stringField(head, typeMeta, 2);
  if (kind === undefined) return undefined;
  const raw = readField(head, typeMeta.next);
  if (raw?.number !== 2 || raw.wireType !== WireType.Bytes) return undefined;
  const meta = readField(head, raw.start);
  if (meta?.number !== 1 || meta.wireType !== WireType.Bytes || meta.next > raw.next) return undefined;
  return { kind, meta };
}

/** The first length-delimited field `number` of the message `within` (the part of it in `bytes`), as text when whole. */
function stringField(bytes: Buffer, within: FieldRead, number: number): string | undefined {
  const field = findBytesField(bytes, within.start, Math.min(within.next, bytes.length), number);
  return field === undefined || field.next > bytes.length ? undefined : bytes.toString('latin1', field.start, field.next);
}
