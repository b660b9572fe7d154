/**
 * Reads a metadata-only list in protobuf (`Accept: application/vnd.kubernetes.protobuf;
 * as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`, client-go's metadata client) for what
 * identifies each item: its namespace, name and resourceVersion, in the list's order, and the
 * list's resourceVersion and continue token. Everything else is skipped unread.
 *
 * The messages (apimachinery pkg/apis/meta/v1/generated.proto): PartialObjectMetadataList
 * {1: ListMeta, 2: repeated PartialObjectMetadata}; ListMeta {2: resourceVersion, 3: continue};
 * PartialObjectMetadata {1: ObjectMeta}; ObjectMeta {1: name, 3: namespace, 6: resourceVersion};
 * inside the envelope (envelope.ts): `k8s\0`, runtime.Unknown {2: raw}.
 */
import { PROTOBUF_MAGIC } from './envelope.ts';
import { WireType, readField } from './wire.ts';
import type { FieldRead } from './wire.ts';

/** What identifies one item of a list. */
export interface ItemIdentity {
  readonly namespace: string;
  readonly name: string;
  readonly resourceVersion: string;
}

export interface MetadataListPage {
  readonly resourceVersion: string;
  readonly continue: string;
  readonly items: readonly ItemIdentity[];
}

/** Thrown for bytes that are not an enveloped metadata list (cut off, or another message). */
export class MalformedMetadataList extends Error {}

/** The fields of the message in bytes [start, end), each whole within it. */
function* fields(bytes: Uint8Array, start: number, end: number): Generator<FieldRead> {
  for (let at = start; at < end;) {
    const field = readField(bytes, at);
    if (field === undefined || field.next > end) throw new MalformedMetadataList('a field runs past its message');
    yield field;
    at = field.next;
  }
}

function text(bytes: Uint8Array, field: FieldRead): string {
  if (field.wireType !== WireType.Bytes) throw new MalformedMetadataList(`field ${String(field.number)} is not a string`);
  return Buffer.from(bytes.buffer, bytes.byteOffset + field.start, field.length).toString('utf8');
}

export function readMetadataList(body: Uint8Array): MetadataListPage {
  if (body.length < PROTOBUF_MAGIC.length || !PROTOBUF_MAGIC.equals(body.subarray(0, PROTOBUF_MAGIC.length)))
    throw new MalformedMetadataList('not protobuf: no k8s\\0 magic');
  let raw: FieldRead | undefined;
  for (const field of fields(body, PROTOBUF_MAGIC.length, body.length)) if (field.number === 2) raw = field;
  if (raw === undefined) throw new MalformedMetadataList('no raw object in the envelope');
  let resourceVersion = '';
  let continueToken = '';
  const items: ItemIdentity[] = [];
  for (const field of fields(body, raw.start, raw.next)) {
    if (field.number === 1 && field.wireType === WireType.Bytes) {
      for (const meta of fields(body, field.start, field.next)) {
        if (meta.number === 2) resourceVersion = text(body, meta);
        else if (meta.number === 3) continueToken = text(body, meta);
      }
    } else if (field.number === 2 && field.wireType === WireType.Bytes) {
      let namespace = '';
      let name = '';
      let itemRv = '';
      for (const partial of fields(body, field.start, field.next)) {
        if (partial.number !== 1 || partial.wireType !== WireType.Bytes) continue;
        for (const meta of fields(body, partial.start, partial.next)) {
          if (meta.number === 1) name = text(body, meta);
          else if (meta.number === 3) namespace = text(body, meta);
          else if (meta.number === 6) itemRv = text(body, meta);
        }
      }
      items.push({ namespace, name, resourceVersion: itemRv });
    }
  }
  return { resourceVersion, continue: continueToken, items };
}
