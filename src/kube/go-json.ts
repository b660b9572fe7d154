/**
 * The bytes Go's encoding/json writes, for the few shapes the server builds itself (Status, the
 * continue token). JSON.stringify differs from Go only in escaping: Go also escapes < > & as
 * \u003c \u003e \u0026, and U+2028/U+2029 (encoding/json/encode.go, appendString with escapeHTML).
 */

const GO_EXTRA_ESCAPES = /[<>&\u2028\u2029]/g;

function escapeExtra(ch: string): string {
  return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** A JSON string literal exactly as Go's json.Marshal writes it. */
export function goJsonString(s: string): string {
  return JSON.stringify(s).replace(GO_EXTRA_ESCAPES, escapeExtra);
}

/**
 * A JSON value for `goMarshal`. Objects are written in insertion order, which is Go's struct
 * declaration order when the caller builds them field by field (keys must not look like array
 * indexes, which JS would reorder). `undefined` members are left out: the caller applies
 * `omitempty` by leaving a field undefined.
 */
export type GoJsonValue = string | number | boolean | null | readonly GoJsonValue[] | { readonly [key: string]: GoJsonValue | undefined };

/** Go's json.Marshal(v), or json.MarshalIndent(v, "", indent) when indent is given. */
export function goMarshal(value: GoJsonValue, indent?: string): string {
  return write(value, indent, '');
}

function write(value: GoJsonValue, indent: string | undefined, prefix: string): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return goJsonString(value);
  // Go writes -0 as -0; String(-0) is '0'.
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  const inner = indent === undefined ? '' : prefix + indent;
  if (isArray(value)) {
    if (value.length === 0) return '[]';
    const items = value.map((v) => write(v, indent, inner));
    return indent === undefined ? `[${items.join(',')}]` : `[\n${items.map((i) => inner + i).join(',\n')}\n${prefix}]`;
  }
  const members: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined) continue;
    members.push(`${goJsonString(k)}:${indent === undefined ? '' : ' '}${write(v, indent, inner)}`);
  }
  if (members.length === 0) return '{}';
  return indent === undefined ? `{${members.join(',')}}` : `{\n${members.map((m) => inner + m).join(',\n')}\n${prefix}}`;
}

function isArray(v: GoJsonValue): v is readonly GoJsonValue[] {
  return Array.isArray(v);
}
