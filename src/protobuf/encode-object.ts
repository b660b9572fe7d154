/**
 * An object's protobuf bytes, made from its JSON as the apiserver's Go marshallers would write the
 * same object (k8s.io/api/*\/generated.pb.go MarshalToSizedBuffer): the JSON is read as Go's
 * encoding/json would decode it into the Go type (schema.ts), and each field is written by the
 * generated code's rules:
 *
 * - fields in ascending number order;
 * - a non-pointer field always, even zero or absent (an empty string `0a 00`, a zero number, an
 *   empty message); a pointer field only when set; a []byte only when non-nil (JSON `""` is an
 *   empty, non-nil one); slices element by element, nil and empty alike; maps only when
 *   non-empty, as {1: key, 2: value} entries in Go string order of their keys;
 * - a struct embedded inline in JSON (Volume's VolumeSource) as a nested message of its own;
 * - the types with a form of their own: metav1.Time as a Timestamp of whole seconds (nothing for
 *   the zero time), MicroTime with its microseconds as nanos, Quantity as {1: its canonical string,
 *   as the JSON carries it}, IntOrString as {type, intVal, strVal}, RawExtension, FieldsV1 and
 *   apiextensions JSON as {1: the raw JSON}, ExtraValue-like string lists as {1: repeated string},
 *   and JSONSchemaPropsOr{Bool,Array,StringArray} by the JSON's shape.
 *
 * The input is the apiserver's own JSON of the object, so it decodes into its Go type; a member
 * the type does not have is skipped, as Go's decoder skips it.
 */
import { compareGoStrings } from '../kube/go-format.ts';
import type { Span } from '../json/json-scan.ts';
import { arrayElements, objectMembers } from '../json/json-scan.ts';
import type { FieldSchema, MessageSchema, Schema, ValueType } from './schema.ts';
import { protobufSchema } from './schema.ts';
import { WireType, Writer } from '../protowire/wire.ts';

const META = 'k8s.io/apimachinery/pkg/apis/meta/v1';
const TIME = `${META}.Time`;
const MICRO_TIME = `${META}.MicroTime`;
const FIELDS_V1 = `${META}.FieldsV1`;
const QUANTITY = 'k8s.io/apimachinery/pkg/api/resource.Quantity';
const INT_OR_STRING = 'k8s.io/apimachinery/pkg/util/intstr.IntOrString';
const RAW_EXTENSION = 'k8s.io/apimachinery/pkg/runtime.RawExtension';
const APIEXTENSIONS = 'k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1';
const EXTENSIONS_JSON = `${APIEXTENSIONS}.JSON`;
const OR_BOOL = `${APIEXTENSIONS}.JSONSchemaPropsOrBool`;
const OR_ARRAY = `${APIEXTENSIONS}.JSONSchemaPropsOrArray`;
const OR_STRING_ARRAY = `${APIEXTENSIONS}.JSONSchemaPropsOrStringArray`;
const SCHEMA_PROPS = `${APIEXTENSIONS}.JSONSchemaProps`;

/** Messages whose form is {1: the JSON value's raw bytes}. */
const RAW_JSON = new Set([RAW_EXTENSION, FIELDS_V1, EXTENSIONS_JSON]);
/** Named string lists with a message form: {1: repeated string}. */
function isStringList(name: string): boolean {
  return name.endsWith('.ExtraValue') || name.endsWith('.AttestationValue') || name === `${META}.Verbs`;
}

/** Every special type the schema names has a rule here (checked by the unit tests). */
export function knowsSpecial(name: string): boolean {
  return (
    [TIME, MICRO_TIME, QUANTITY, INT_OR_STRING, OR_BOOL, OR_ARRAY, OR_STRING_ARRAY].includes(name) ||
    RAW_JSON.has(name) ||
    isStringList(name)
  );
}

const EMPTY = new Writer(0);

/** The protobuf bytes of the object whose JSON is `json` (the whole buffer), as a `goType`. */
export function encodeObject(goType: string, json: Buffer): Buffer {
  const w = new Writer(json.length);
  new Encoder(protobufSchema(), json).message(w, goType, objectMembers(json));
  return w.finish();
}

class Encoder {
  readonly #schema: Schema;
  readonly #src: Buffer;

  constructor(schema: Schema, src: Buffer) {
    this.#schema = schema;
    this.#src = src;
  }

  #schemaOf(goType: string): MessageSchema {
    const message = this.#schema.messages[goType];
    if (message === undefined) throw new Error(`protobuf: no schema for ${goType}`);
    return message;
  }

  /** Writes the fields of a `goType` message whose JSON members are `members` (none: the zero value). */
  message(w: Writer, goType: string, members: ReadonlyMap<string, Span> | undefined): void {
    const fields = this.#schemaOf(goType).fields;
    if (fields === null) throw new Error(`protobuf: ${goType} has no generated form`);
    for (const field of fields) this.#field(w, field, members);
  }

  #field(w: Writer, field: FieldSchema, members: ReadonlyMap<string, Span> | undefined): void {
    if (field.json === '') {
      // Inline in JSON, a message of its own in protobuf: the parent's members are its own.
      const nested = new Writer();
      this.message(nested, messageName(field.type), members);
      w.message(field.number, nested);
      return;
    }
    const span = field.json === '-' ? undefined : members?.get(field.json);
    const present = span !== undefined && !this.#isNull(span);
    if (field.map !== undefined) {
      if (present) this.#map(w, field, span);
      return;
    }
    if (field.repeated === true) {
      if (present) for (const element of arrayElements(this.#src, span)) this.#value(w, field.number, field.type as ValueType, element);
      return;
    }
    if (present) this.#value(w, field.number, field.type as ValueType, span);
    else if (field.pointer !== true) this.#zero(w, field.number, field.type as ValueType);
  }

  #map(w: Writer, field: FieldSchema, span: Span): void {
    const { key, value, valueNilable } = field.map ?? { key: 'string', value: 'string' };
    const entries = [...objectMembers(this.#src, span.start)].sort(([a], [b]) => compareGoStrings(a, b));
    for (const [name, valueSpan] of entries) {
      const entry = new Writer();
      if (key !== 'string') throw new Error(`protobuf: map keys of ${key} are not supported`);
      entry.string(1, name);
      if (!this.#isNull(valueSpan)) this.#value(entry, 2, value, valueSpan);
      else if (valueNilable !== true) this.#zero(entry, 2, value);
      w.message(field.number, entry);
    }
  }

  /** Writes one value present in the JSON. */
  #value(w: Writer, number: number, type: ValueType, span: Span): void {
    switch (type) {
      case 'string':
        w.field(number, this.#string(span));
        return;
      case 'bool':
        w.key(number, WireType.Varint);
        w.byte(this.#src[span.start] === 0x74 ? 1 : 0);
        return;
      case 'int32':
      case 'int64':
      case 'uint32':
      case 'uint64':
        w.key(number, WireType.Varint);
        w.varintBig(this.#integer(span));
        return;
      case 'float64':
        w.double(number, Number(this.#text(span)));
        return;
      case 'bytes':
        w.field(number, Buffer.from(JSON.parse(this.#text(span)) as string, 'base64'));
        return;
    }
    const nested = new Writer();
    this.#special(nested, messageName(type), span);
    w.message(number, nested);
  }

  /** Writes a message value present in the JSON: a special type by its rule, any other by its fields. */
  #special(w: Writer, goType: string, span: Span): void {
    const src = this.#src;
    if (goType === TIME || goType === MICRO_TIME) {
      const time = parseTime(JSON.parse(this.#text(span)) as string);
      if (time === undefined) return; // the zero time: no bytes
      w.key(1, WireType.Varint);
      w.varintBig(time.seconds);
      w.key(2, WireType.Varint);
      w.varint(goType === MICRO_TIME ? time.nanos : 0);
    } else if (goType === QUANTITY) {
      w.field(1, this.#string(span));
    } else if (goType === INT_OR_STRING) {
      const isString = src[span.start] === 0x22;
      w.key(1, WireType.Varint);
      w.varint(isString ? 1 : 0);
      w.key(2, WireType.Varint);
      w.varintBig(isString ? 0n : this.#integer(span));
      w.field(3, isString ? this.#string(span) : Buffer.alloc(0));
    } else if (RAW_JSON.has(goType)) {
      w.field(1, src.subarray(span.start, span.end));
    } else if (isStringList(goType)) {
      for (const element of arrayElements(src, span)) w.field(1, this.#string(element));
    } else if (goType === OR_BOOL) {
      const isSchema = src[span.start] === 0x7b;
      w.key(1, WireType.Varint);
      w.byte(isSchema || src[span.start] === 0x74 ? 1 : 0);
      if (isSchema) this.#schemaProps(w, 2, span);
    } else if (goType === OR_ARRAY || goType === OR_STRING_ARRAY) {
      if (src[span.start] === 0x7b) this.#schemaProps(w, 1, span);
      else if (goType === OR_ARRAY) for (const element of arrayElements(src, span)) this.#schemaProps(w, 2, element);
      else for (const element of arrayElements(src, span)) w.field(2, this.#string(element));
    } else {
      this.message(w, goType, objectMembers(src, span.start));
    }
  }

  #schemaProps(w: Writer, number: number, span: Span): void {
    const nested = new Writer();
    this.message(nested, SCHEMA_PROPS, objectMembers(this.#src, span.start));
    w.message(number, nested);
  }

  /** Writes the zero value of a non-pointer field absent from the JSON. */
  #zero(w: Writer, number: number, type: ValueType): void {
    switch (type) {
      case 'string':
        w.field(number, Buffer.alloc(0));
        return;
      case 'bool':
      case 'int32':
      case 'int64':
      case 'uint32':
      case 'uint64':
        w.key(number, WireType.Varint);
        w.byte(0);
        return;
      case 'float64':
        w.double(number, 0);
        return;
      case 'bytes':
        return; // a nil []byte is not written
    }
    const goType = messageName(type);
    if (goType === TIME || goType === MICRO_TIME || RAW_JSON.has(goType) || isStringList(goType)) {
      w.message(number, EMPTY);
    } else if (goType === QUANTITY) {
      const nested = new Writer();
      nested.string(1, '0');
      w.message(number, nested);
    } else {
      const nested = new Writer();
      this.message(nested, goType, undefined);
      w.message(number, nested);
    }
  }

  #isNull(span: Span): boolean {
    return this.#src[span.start] === 0x6e;
  }

  #text(span: Span): string {
    return this.#src.toString('latin1', span.start, span.end);
  }

  /** A JSON string's UTF-8 bytes (a copy-free view when it has no escapes). */
  #string(span: Span): Buffer {
    const inner = this.#src.subarray(span.start + 1, span.end - 1);
    if (!inner.includes(0x5c)) return inner;
    return Buffer.from(JSON.parse(this.#src.toString('utf8', span.start, span.end)) as string, 'utf8');
  }

  #integer(span: Span): bigint {
    const text = this.#text(span);
    try {
      return BigInt(text);
    } catch {
      // Go decodes an integer field from an exponent form (1e3) too.
      return BigInt(Math.trunc(Number(text)));
    }
  }
}

function messageName(type: ValueType | 'map'): string {
  if (!type.startsWith('message:')) throw new Error(`protobuf: ${type} is not a message`);
  return type.slice('message:'.length);
}

/**
 * An RFC 3339 time as Go's time.Parse reads metav1.Time and MicroTime: whole seconds since the
 * epoch and the nanoseconds of the fraction; undefined for the zero time (0001-01-01T00:00:00Z).
 */
export function parseTime(text: string): { readonly seconds: bigint; readonly nanos: number } | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/.exec(text);
  if (match === null) throw new Error(`protobuf: not an RFC 3339 time: ${text}`);
  const [, y, mo, d, h, mi, s, fraction, sign, oh, om] = match;
  const days = daysFromCivil(Number(y), Number(mo), Number(d));
  let seconds = BigInt(days) * 86_400n + BigInt(Number(h) * 3600 + Number(mi) * 60 + Number(s));
  if (sign !== undefined) {
    const offset = BigInt(Number(oh) * 3600 + Number(om) * 60);
    seconds += sign === '+' ? -offset : offset;
  }
  const nanos = fraction === undefined ? 0 : Number(fraction.padEnd(9, '0'));
  // Go's zero time.Time: 0001-01-01T00:00:00Z (IsZero), which the marshaller writes as nothing.
  if (seconds === ZERO_TIME_SECONDS && nanos === 0) return undefined;
  return { seconds, nanos };
}

/** Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

const ZERO_TIME_SECONDS = BigInt(daysFromCivil(1, 1, 1)) * 86_400n;
