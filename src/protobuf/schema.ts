/**
 * The protobuf schema of the built-in API types, generated from the pinned Kubernetes modules by
 * tools/protogen (its Go types' struct tags and kinds; npm test checks the committed schema.json
 * is what the generator writes). Read from disk on first use only: a proxy whose clients never
 * ask for protobuf holds none of it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A scalar kind, or `message:<Go type name>`. */
export type ValueType = 'string' | 'bool' | 'int32' | 'int64' | 'uint32' | 'uint64' | 'float64' | 'bytes' | `message:${string}`;

export interface FieldSchema {
  /** The JSON member name; '' for a struct embedded inline (its JSON members are the parent's); '-' for none. */
  readonly json: string;
  readonly number: number;
  /** What one value is ('map' for a map: see `map`). */
  readonly type: ValueType | 'map';
  /** Written only when set; otherwise written even when zero. */
  readonly pointer?: boolean;
  /** Each element written with the field's key. */
  readonly repeated?: boolean;
  readonly map?: { readonly key: ValueType; readonly value: ValueType; readonly valueNilable?: boolean };
}

export interface MessageSchema {
  /** In field-number order; null for a type whose protobuf form is hand-written (Time, Quantity). */
  readonly fields: readonly FieldSchema[] | null;
}

export interface Schema {
  /** `group/version/Kind` ('' group for core) to its Go type name. */
  readonly kinds: Readonly<Record<string, string>>;
  readonly messages: Readonly<Record<string, MessageSchema>>;
  /** Types whose JSON or protobuf form is their own: the encoder knows each (encode-object.ts). */
  readonly special: readonly string[];
}

let loaded: Schema | undefined;

export function protobufSchema(): Schema {
  loaded ??= JSON.parse(readFileSync(join(import.meta.dirname, 'schema.json'), 'utf8')) as Schema;
  return loaded;
}

/** The Go type of a kind served in protobuf, or undefined (custom resources, types without protobuf). */
export function goTypeOf(group: string, version: string, kind: string): string | undefined {
  return protobufSchema().kinds[`${group}/${version}/${kind}`];
}
