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
