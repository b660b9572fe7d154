/**
 * The resourceVersion of a LIST answer, read from its first bytes as the apiserver writes them:
 * a consistent LIST's RV is the apiserver's current RV when it read (etcd's revision), which is
 * what read-your-writes needs to settle a doubt (cache/consistency.ts), as a probe would learn it.
 *
 * Only the forms whose list metadata comes before the items are read, so that the RV found is the
 * list's and never an item's:
 * - compact JSON of a built-in list, a metadata list or a Table (Go's struct order: kind,
 *   apiVersion, metadata{resourceVersion, ...}, then items or columnDefinitions);
 * - protobuf (`k8s\0`, runtime.Unknown{1 typeMeta{2 kind}, 2 raw}), whose raw list message has
 *   its ListMeta as field 1 (ListMeta: resourceVersion 2), before the items (field 2).
 * Anything else (indented JSON, a custom resource's list with its keys sorted, gzip) is undefined:
 * nothing is settled from it.
 */
import { PROTOBUF_MAGIC } from '../../protobuf/envelope.ts';
import { WireType, readField } from '../../protobuf/wire.ts';

/** The bytes of an answer read for its list metadata: the TypeMeta and ListMeta fit in far less. */
export const LIST_HEAD_BYTES = 4096;

const JSON_LIST_HEAD = /^\{"kind":"(?:[A-Za-z0-9]+List|Table)","apiVersion":"[^"\\]*","metadata":\{"resourceVersion":"([1-9][0-9]{0,19})"/;
const RV = /^[1-9][0-9]{0,19}$/;

/** The list's RV from the first bytes of its answer, or undefined when they do not show it plainly. */
export function listResourceVersion(contentType: string, contentEncoding: string, head: Buffer): bigint | undefined {
  if (contentEncoding !== '' && contentEncoding.toLowerCase() !== 'identity') return undefined;
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/json') {
    const match = JSON_LIST_HEAD.exec(head.toString('latin1', 0, Math.min(head.length, LIST_HEAD_BYTES)));
    return match?.[1] === undefined ? undefined : BigInt(match[1]);
  }
  if (type === 'application/vnd.kubernetes.protobuf') return fromProtobuf(head);
  return undefined;
}

function fromProtobuf(head: Buffer): bigint | undefined {
  if (head.length < PROTOBUF_MAGIC.length || !head.subarray(0, PROTOBUF_MAGIC.length).equals(PROTOBUF_MAGIC)) return undefined;
  const typeMeta = readField(head, PROTOBUF_MAGIC.length);
  if (typeMeta?.number !== 1 || typeMeta.wireType !== WireType.Bytes || typeMeta.next > head.length) return undefined;
  const kind = stringField(head, typeMeta.start, typeMeta.next, 2);
  if (kind === undefined || !(kind === 'Table' || (kind.length > 4 && kind.endsWith('List')))) return undefined;
  const raw = readField(head, typeMeta.next);
  if (raw?.number !== 2 || raw.wireType !== WireType.Bytes) return undefined;
  const listMeta = readField(head, raw.start);
  if (listMeta?.number !== 1 || listMeta.wireType !== WireType.Bytes || listMeta.next > head.length || listMeta.next > raw.next)
    return undefined;
  const rv = stringField(head, listMeta.start, listMeta.next, 2);
  return rv !== undefined && RV.test(rv) ? BigInt(rv) : undefined;
}

/** The first length-delimited field `number` of the message in bytes [start, end), as text. */
function stringField(bytes: Buffer, start: number, end: number, number: number): string | undefined {
  for (let at = start; at < end;) {
    const field = readField(bytes, at);
    if (field === undefined || field.next > end) return undefined;
    if (field.number === number && field.wireType === WireType.Bytes) return bytes.toString('latin1', field.start, field.next);
    at = field.next;
  }
  return undefined;
}
