/**
 * Protobuf wire format, as the Go marshallers write it (google.golang.org/protobuf/encoding/
 * protowire): varints, field keys, and length-delimited fields. A Writer appends forward; a
 * nested message is written into a Writer of its own and then added with its length, as the
 * generated MarshalToSizedBuffer code writes each message's size before its bytes.
 */

/** The wire types the API's messages use (protowire.Type). */
export const WireType = { Varint: 0, Fixed64: 1, Bytes: 2 } as const;
export type WireType = (typeof WireType)[keyof typeof WireType];

const TWO_64 = 1n << 64n;

/** A growable byte buffer written front to back. */
export class Writer {
  #buf: Buffer;
  #len = 0;

  constructor(initial = 256) {
    this.#buf = Buffer.allocUnsafe(initial);
  }

  get length(): number {
    return this.#len;
  }

  #room(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#len + n));
    this.#buf.copy(next, 0, 0, this.#len);
    this.#buf = next;
  }

  byte(b: number): void {
    this.#room(1);
    this.#buf[this.#len++] = b;
  }

  /** An unsigned varint of a non-negative safe integer. */
  varint(n: number): void {
    this.#room(10);
    while (n >= 0x80) {
      this.#buf[this.#len++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.#buf[this.#len++] = n;
  }

  /** A varint of any 64-bit integer: a negative one as its two's complement (10 bytes), as Go's uint64(v). */
  varintBig(v: bigint): void {
    let n = v < 0n ? v + TWO_64 : v;
    if (n < 0n || n >= TWO_64) throw new RangeError(`not a 64-bit integer: ${String(v)}`);
    if (n <= BigInt(Number.MAX_SAFE_INTEGER)) {
      this.varint(Number(n));
      return;
    }
    this.#room(10);
    while (n >= 0x80n) {
      this.#buf[this.#len++] = Number(n & 0x7fn) | 0x80;
      n >>= 7n;
    }
    this.#buf[this.#len++] = Number(n);
  }

  key(field: number, wire: WireType): void {
    this.varint(field * 8 + wire);
  }

  bytes(data: Buffer | Uint8Array): void {
    this.#room(data.length);
    this.#buf.set(data, this.#len);
    this.#len += data.length;
  }

  /** A length-delimited field: key, length, bytes. */
  field(field: number, data: Buffer | Uint8Array): void {
    this.key(field, WireType.Bytes);
    this.varint(data.length);
    this.bytes(data);
  }

  /** A string field, UTF-8. */
  string(field: number, value: string): void {
    this.field(field, Buffer.from(value, 'utf8'));
  }

  /** A nested message: its writer's bytes, length-delimited. */
  message(field: number, nested: Writer): void {
    this.key(field, WireType.Bytes);
    this.varint(nested.#len);
    this.#room(nested.#len);
    nested.#buf.copy(this.#buf, this.#len, 0, nested.#len);
    this.#len += nested.#len;
  }

  double(field: number, value: number): void {
    this.key(field, WireType.Fixed64);
    this.#room(8);
    this.#buf.writeDoubleLE(value, this.#len);
    this.#len += 8;
  }

  /** Empties the writer for reuse. */
  reset(): void {
    this.#len = 0;
  }

  /** The bytes written so far, without a copy: valid until the next write or reset. */
  view(): Buffer {
    return this.#buf.subarray(0, this.#len);
  }

  /** The bytes written, as a Buffer of their own. */
  finish(): Buffer {
    return Buffer.from(this.#buf.subarray(0, this.#len));
  }
}

/** A field read from a message: its number, wire type, and for a length-delimited one where its bytes lie. */
export interface FieldRead {
  readonly number: number;
  readonly wireType: number;
  /** Length-delimited: the offset of its bytes and their length (which may run past the bytes read so far). */
  readonly start: number;
  readonly length: number;
  /** The offset after the field (past the bytes read so far when they end inside it). */
  readonly next: number;
}

/**
 * The varint at `at` and the offset after it; undefined when the bytes end first or it is longer
 * than 10 bytes. Values past 2^53 lose precision (field numbers and lengths never get there).
 */
export function readVarint(bytes: Uint8Array, at: number): { readonly value: number; readonly next: number } | undefined {
  let value = 0;
  for (let i = 0; i < 10; i++) {
    const byte = bytes[at + i];
    if (byte === undefined) return undefined;
    if (i < 7) value += (byte & 0x7f) * 2 ** (7 * i);
    if ((byte & 0x80) === 0) return { value, next: at + i + 1 };
  }
  return undefined;
}

/**
 * The field whose key is at `at` (protowire.ConsumeField's reading of it); undefined when its key
 * or length is cut off, or its wire type is one the API's messages never use (groups).
 */
export function readField(bytes: Uint8Array, at: number): FieldRead | undefined {
  const key = readVarint(bytes, at);
  if (key === undefined) return undefined;
  const number = Math.floor(key.value / 8);
  const wireType = key.value % 8;
  switch (wireType) {
    case 0: {
      const value = readVarint(bytes, key.next);
      return value === undefined ? undefined : { number, wireType, start: key.next, length: 0, next: value.next };
    }
    case 1:
      return { number, wireType, start: key.next, length: 8, next: key.next + 8 };
    case 2: {
      const length = readVarint(bytes, key.next);
      if (length === undefined) return undefined;
      return { number, wireType, start: length.next, length: length.value, next: length.next + length.value };
    }
    case 5:
      return { number, wireType, start: key.next, length: 4, next: key.next + 4 };
    default:
      return undefined;
  }
}

/**
 * The first length-delimited field `number` among the fields in bytes [start, end) (a message, or
 * the part of it read so far); undefined when there is none, or a field before it does not end
 * by `end`. The field found may itself run past `end`: its caller reads what it needs of it.
 */
export function findBytesField(bytes: Uint8Array, start: number, end: number, number: number): FieldRead | undefined {
  for (let at = start; at < end;) {
    const field = readField(bytes, at);
    if (field === undefined) return undefined;
    if (field.number === number && field.wireType === WireType.Bytes) return field;
    if (field.next > end) return undefined;
    at = field.next;
  }
  return undefined;
}
