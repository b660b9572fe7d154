/**
 * The object a write was answered with (its kind, name, namespace and resourceVersion), read
 * from the answer's bytes in whatever form the apiserver chose for the client: JSON (compact, or
 * indented for curl and `?pretty`), or protobuf (client-go's default for built-in types),
 * gzip-compressed or not. Read-your-writes (cache/consistency.ts lessonOf) waits for the cache to
 * reach the RV only when the answer is the written object itself; an answer that names none (a
 * Status, a collection) or another object makes the next reads probe instead.
 *
 * Protobuf without a schema (apimachinery runtime/serializer/protobuf/protobuf.go): the body is
 * the 4 bytes `k8s\0`, then a runtime.Unknown message: 1 typeMeta {1 apiVersion, 2 kind},
 * 2 raw (the object's own message), 3 contentEncoding, 4 contentType. Every built-in object has
 * its ObjectMeta as field 1, and ObjectMeta has resourceVersion as field 6
 * (apimachinery/pkg/apis/meta/v1/generated.proto); every built-in list has its ListMeta as field 1
 * and its items as field 2, repeated.
 *
 * A list (a collection delete's answer: the objects it deleted, registry/generic/registry/store.go
 * DeleteCollection) is counted: its `items` (isListKind: the kinds whose items are counted).
 */
import { gunzipSync } from 'node:zlib';
import type { AnsweredObject } from '../../cache/read-your-writes.ts';
import { PROTOBUF_MAGIC } from '../../protowire/envelope.ts';
import { WireType, readField } from '../../protowire/wire.ts';
import { isListKind } from './answer-head.ts';

/** Larger answers are not read (a probe decides instead): no object in etcd exceeds 1.5 MiB, and JSON rarely doubles it. */
export const MAX_WRITE_ANSWER_BYTES = 4 * 1024 * 1024;

/** The object the answer carries, or undefined when it is none that can be read (unreadable, another encoding, no kind). */
export function answeredObject(contentType: string, contentEncoding: string, body: Buffer): AnsweredObject | undefined {
  let bytes = body;
  if (contentEncoding.toLowerCase() === 'gzip') {
    try {
      bytes = gunzipSync(body, { maxOutputLength: MAX_WRITE_ANSWER_BYTES });
    } catch (error) {
      // zlib's refusal (not gzip, truncated, past the size): an answer the proxy cannot read.
      if (isZlibError(error)) return undefined;
      throw error;
    }
  } else if (contentEncoding !== '' && contentEncoding.toLowerCase() !== 'identity') {
    return undefined;
  }
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/vnd.kubernetes.protobuf') return fromProtobuf(bytes);
  if (type === 'application/json') return fromJson(bytes);
  return undefined;
}

/** An error of node:zlib (its `code` is Z_DATA_ERROR, Z_BUF_ERROR, ERR_BUFFER_TOO_LARGE, ...). */
function isZlibError(error: unknown): boolean {
  if (!(error instanceof Error) || !('code' in error)) return false;
  const { code } = error as { code: unknown };
  return typeof code === 'string' && (code.startsWith('Z_') || code === 'ERR_BUFFER_TOO_LARGE');
}

function toRv(value: unknown): bigint | undefined {
  return typeof value === 'string' && /^[1-9][0-9]{0,19}$/.test(value) ? BigInt(value) : undefined;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

function fromJson(bytes: Buffer): AnsweredObject | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { kind, metadata } = parsed as { kind?: unknown; metadata?: unknown };
  if (typeof kind !== 'string' || typeof metadata !== 'object' || metadata === null) return undefined;
  const meta = metadata as { name?: unknown; namespace?: unknown; resourceVersion?: unknown };
  const object = { kind, name: text(meta.name), namespace: text(meta.namespace), resourceVersion: toRv(meta.resourceVersion) };
  const { items } = parsed as { items?: unknown };
  return isListKind(kind) && Array.isArray(items) ? { ...object, items: items.length } : object;
}

/** A protobuf field: its number and, for length-delimited ones, the bytes. */
interface Field {
  readonly number: number;
  readonly bytes: Buffer | undefined;
}

/** The message's fields in order; undefined when the bytes are not a well-formed message. */
function fields(message: Buffer): Field[] | undefined {
  const out: Field[] = [];
  for (let at = 0; at < message.length;) {
    const read = readField(message, at);
    if (read === undefined || read.next > message.length) return undefined;
    out.push({ number: read.number, bytes: read.wireType === WireType.Bytes ? message.subarray(read.start, read.next) : undefined });
    at = read.next;
  }
  return out;
}

function field(message: Buffer | undefined, number: number): Buffer | undefined {
  if (message === undefined) return undefined;
  return fields(message)?.find((f) => f.number === number)?.bytes;
}

/** ObjectMeta's fields (apimachinery generated.proto): name 1, namespace 3, resourceVersion 6. */
function fromProtobuf(bytes: Buffer): AnsweredObject | undefined {
  if (bytes.length < PROTOBUF_MAGIC.length || !bytes.subarray(0, PROTOBUF_MAGIC.length).equals(PROTOBUF_MAGIC)) return undefined;
  const unknown = bytes.subarray(PROTOBUF_MAGIC.length);
  const kind = field(field(unknown, 1), 2)?.toString('utf8');
  if (kind === undefined) return undefined;
  const raw = field(unknown, 2);
  if (isListKind(kind)) {
    const listFields = raw === undefined ? undefined : fields(raw);
    if (listFields === undefined) return undefined;
    const listMeta = listFields.find((f) => f.number === 1)?.bytes;
    // ListMeta: resourceVersion 2. The list's RV is the state it was read at, not a write's.
    return {
      kind,
      name: '',
      namespace: '',
      resourceVersion: toRv(field(listMeta, 2)?.toString('latin1')),
      items: listFields.filter((f) => f.number === 2).length,
    };
  }
  const metadata = field(raw, 1);
  return {
    kind,
    name: field(metadata, 1)?.toString('utf8') ?? '',
    namespace: field(metadata, 3)?.toString('utf8') ?? '',
    resourceVersion: toRv(field(metadata, 6)?.toString('latin1')),
  };
}
