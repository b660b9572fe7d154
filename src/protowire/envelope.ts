/**
 * The apiserver's protobuf envelope (apimachinery runtime/serializer/protobuf/protobuf.go): the
 * magic `k8s\0`, then a runtime.Unknown {1: TypeMeta {1: apiVersion, 2: kind}, 2: raw = the
 * object's bytes, 3: contentEncoding, 4: contentType}; the last two are always written, empty.
 */
import { Writer } from './wire.ts';

export const PROTOBUF_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** The envelope's bytes before the object's: magic, TypeMeta, and raw's key and length. */
export function envelopeHead(apiVersion: string, kind: string, rawLength: number): Buffer {
  const typeMeta = new Writer(64);
  typeMeta.string(1, apiVersion);
  typeMeta.string(2, kind);
  const head = new Writer(96);
  head.bytes(PROTOBUF_MAGIC);
  head.message(1, typeMeta);
  head.key(2, 2);
  head.varint(rawLength);
  return head.finish();
}

/** What follows the object's bytes: contentEncoding and contentType, both empty. */
export const ENVELOPE_TAIL = Buffer.from([0x1a, 0x00, 0x22, 0x00]);

/** One object, enveloped. */
export function envelope(apiVersion: string, kind: string, raw: Buffer): Buffer {
  return Buffer.concat([envelopeHead(apiVersion, kind, raw.length), raw, ENVELOPE_TAIL]);
}
