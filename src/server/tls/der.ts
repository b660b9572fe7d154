/**
 * The few ASN.1 DER encodings an X.509 certificate is made of (ITU-T X.690, section 10 and
 * RFC 5280's types), so the proxy can issue its own serving certificate (serving-certificate.ts)
 * with node:crypto alone: Node signs and verifies certificates but has no API to build one, and
 * the container image has no openssl binary. Encoding only: nothing here parses.
 */

/** Tag numbers (X.690 8.x): universal class, primitive unless noted. */
const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  utf8String: 0x0c,
  utcTime: 0x17,
  generalizedTime: 0x18,
  /** Constructed. */
  sequence: 0x30,
  /** Constructed. */
  set: 0x31,
} as const;

/** Definite length (X.690 8.1.3): short form below 128, else 0x80 | count of big-endian bytes. */
function encodeLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** Tag, length, value. */
export function tlv(tag: number, ...content: readonly Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), encodeLength(body.length), body]);
}

export function sequence(...items: readonly Buffer[]): Buffer {
  return tlv(TAG.sequence, ...items);
}

export function set(...items: readonly Buffer[]): Buffer {
  return tlv(TAG.set, ...items);
}

/** `[n] EXPLICIT`: the whole encoding of `inner` inside a constructed context-specific tag. */
export function explicit(n: number, inner: Buffer): Buffer {
  return tlv(0xa0 | n, inner);
}

/** `[n] IMPLICIT` of a primitive type: its content octets under a context-specific tag. */
export function implicit(n: number, content: Buffer): Buffer {
  return tlv(0x80 | n, content);
}

export function boolean(value: boolean): Buffer {
  return tlv(TAG.boolean, Buffer.from([value ? 0xff : 0x00]));
}

/**
 * A non-negative INTEGER from its big-endian magnitude: leading zero octets dropped (DER's
 * minimal form), one put back where the top bit would read as a sign.
 */
export function unsignedInteger(magnitude: Buffer): Buffer {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const bytes = magnitude.subarray(start);
  const first = bytes[0] ?? 0;
  return tlv(TAG.integer, first >= 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes.length === 0 ? Buffer.from([0]) : bytes);
}

export function smallInteger(value: number): Buffer {
  const bytes: number[] = [];
  for (let rest = value; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return unsignedInteger(Buffer.from(bytes));
}

/** An OBJECT IDENTIFIER from its dotted form (X.690 8.19: base-128 arcs, the first two joined). */
export function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  const [first = 0, second = 0, ...rest] = arcs;
  const bytes: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    const groups = [arc % 128];
    for (let high = Math.floor(arc / 128); high > 0; high = Math.floor(high / 128)) groups.unshift((high % 128) | 0x80);
    bytes.push(...groups);
  }
  return tlv(TAG.oid, Buffer.from(bytes));
}

export function octetString(content: Buffer): Buffer {
  return tlv(TAG.octetString, content);
}

/** A BIT STRING of whole octets (a key, a signature): no unused bits. */
export function bitString(content: Buffer): Buffer {
  return tlv(TAG.bitString, Buffer.from([0]), content);
}

/**
 * A named-bit BIT STRING (KeyUsage): bit 0 is the first octet's top bit; DER drops trailing
 * zero bits (X.690 11.2.2), the first octet counting the unused bits of the last.
 */
export function namedBits(bits: readonly number[]): Buffer {
  const last = Math.max(...bits);
  const octets = Buffer.alloc(Math.floor(last / 8) + 1);
  for (const bit of bits) octets[Math.floor(bit / 8)] = (octets[Math.floor(bit / 8)] ?? 0) | (0x80 >> (bit % 8));
  return tlv(TAG.bitString, Buffer.from([7 - (last % 8)]), octets);
}

export function utf8String(text: string): Buffer {
  return tlv(TAG.utf8String, Buffer.from(text, 'utf8'));
}

/**
 * RFC 5280 4.1.2.5's Time: UTCTime (YYMMDDHHMMSSZ) through 2049, GeneralizedTime
 * (YYYYMMDDHHMMSSZ) from 2050; whole seconds, UTC.
 */
export function time(date: Date): Buffer {
  const two = (n: number): string => String(n).padStart(2, '0');
  const year = date.getUTCFullYear();
  const rest = `${two(date.getUTCMonth() + 1)}${two(date.getUTCDate())}${two(date.getUTCHours())}${two(date.getUTCMinutes())}${two(date.getUTCSeconds())}Z`;
  if (year >= 1950 && year < 2050) return tlv(TAG.utcTime, Buffer.from(`${two(year % 100)}${rest}`, 'latin1'));
  return tlv(TAG.generalizedTime, Buffer.from(`${String(year).padStart(4, '0')}${rest}`, 'latin1'));
}
