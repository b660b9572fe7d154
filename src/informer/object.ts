/**
 * The cached form of a Kubernetes object: its JSON bytes exactly as the apiserver sent them,
 * next to the few parsed fields that keys, indices and selectors need. The parsed object itself
 * is dropped after decoding: holding it would cost several times the bytes.
 */

/** Selectable fields (fieldSelector names such as `metadata.name`, `spec.nodeName`) -> value. */
export type SelectableFields = Readonly<Record<string, string>>;

/** Computes the selectable fields of a parsed object (apiserver: the strategy's GetAttrs). */
export type FieldExtractor = (object: ParsedObject) => SelectableFields;

export interface ObjectMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** An object as JSON.parse returns it, before the guard below accepted it. */
export interface ParsedObject {
  readonly kind?: string;
  readonly apiVersion?: string;
  readonly metadata: ObjectMeta;
  readonly [field: string]: unknown;
}

export interface KubeObject {
  /** `namespace/name`, or `name` for cluster-scoped objects (client-go MetaNamespaceKeyFunc). */
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly resourceVersion: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly fields: SelectableFields;
  /** The object's JSON, with kind and apiVersion, as a GET of it returns it. Never mutated. */
  readonly raw: Buffer;
  /**
   * Where the object's fields after its leading TypeMeta begin in `raw`: a typed list's item
   * (kind and apiVersion cut, as the apiserver writes list items of built-in types) is `{`
   * followed by raw[listItemStart..]. 1 when `raw` does not begin with `{"kind":K,"apiVersion":V,`.
   * Found once, when the object is decoded, so that a LIST never looks at it again.
   */
  readonly listItemStart: number;
}

/**
 * What a DeltaFIFO reports for an object it knows was deleted but whose final state it missed
 * (the watch was down while it happened; client-go DeletedFinalStateUnknown).
 */
export interface DeletedFinalStateUnknown {
  readonly kind: 'DeletedFinalStateUnknown';
  readonly key: string;
  /** The last state known, if any. */
  readonly obj: KubeObject | undefined;
}

export function isDeletedFinalStateUnknown(value: KubeObject | DeletedFinalStateUnknown): value is DeletedFinalStateUnknown {
  return (value as Partial<DeletedFinalStateUnknown>).kind === 'DeletedFinalStateUnknown';
}

/** client-go DeletionHandlingMetaNamespaceKeyFunc. */
export function keyOf(value: KubeObject | DeletedFinalStateUnknown): string {
  return value.key;
}

export function objectKey(namespace: string, name: string): string {
  return namespace === '' ? name : `${namespace}/${name}`;
}

/** The fields every object can be selected by (apiserver: DefaultClusterScopedAttr / DefaultNamespaceScopedAttr). */
export const metadataFields: FieldExtractor = (object) => {
  const fields: Record<string, string> = { 'metadata.name': object.metadata.name ?? '' };
  if (object.metadata.namespace !== undefined) fields['metadata.namespace'] = object.metadata.namespace;
  return fields;
};

export function isParsedObject(value: unknown): value is ParsedObject {
  if (typeof value !== 'object' || value === null) return false;
  const metadata = (value as { metadata?: unknown }).metadata;
  return typeof metadata === 'object' && metadata !== null;
}

/**
 * Decodes one object. `raw` is kept as the object's bytes (copied out of larger buffers by the
 * caller so that a cached object never pins a whole response chunk).
 */
export function decodeObject(raw: Buffer, extract: FieldExtractor = metadataFields): KubeObject {
  const parsed: unknown = JSON.parse(raw.toString('utf8'));
  if (!isParsedObject(parsed)) throw new SyntaxError('not a Kubernetes object: no metadata');
  return fromParsed(parsed, raw, extract);
}

export function fromParsed(parsed: ParsedObject, raw: Buffer, extract: FieldExtractor): KubeObject {
  const meta = parsed.metadata;
  const namespace = intern(meta.namespace ?? '');
  const name = meta.name ?? '';
  return {
    key: objectKey(namespace, name),
    namespace,
    name,
    resourceVersion: meta.resourceVersion ?? '',
    labels: internValues(meta.labels ?? EMPTY),
    fields: internValues(extract(parsed), 'metadata.name'),
    raw,
    listItemStart: listItemStartOf(raw),
  };
}

const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Strings that many cached objects share (namespaces, label values, selectable field values such
 * as a pod's phase or scheduler), kept once: each JSON.parse makes its own copy of every value.
 * Bounded, so that unique values (names, hashes) cannot grow it past MAX_INTERNED strings; a
 * string not kept is simply not shared.
 */
const interned = new Map<string, string>();
const MAX_INTERNED = 65_536;
/** Longer values are rarely shared (and a lookup costs a hash of the whole string). */
const MAX_INTERNED_LENGTH = 64;

export function intern(value: string): string {
  if (value.length > MAX_INTERNED_LENGTH) return value;
  const known = interned.get(value);
  if (known !== undefined) return known;
  if (interned.size < MAX_INTERNED) interned.set(value, value);
  return value;
}

/** The record with its values interned, but for the field named `unique` (never shared, e.g. metadata.name). */
function internValues(record: Readonly<Record<string, string>>, unique?: string): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(record)) out[k] = k === unique ? v : intern(v);
  return out;
}

const KIND_OPEN = Buffer.from('{"kind":"');
const API_VERSION_OPEN = Buffer.from('","apiVersion":"');
const QUOTE = 0x22;
const COMMA = 0x2c;

/** See KubeObject.listItemStart: kind and apiVersion are plain names (no escapes), so the next quote ends each. */
export function listItemStartOf(raw: Buffer): number {
  if (raw.length < KIND_OPEN.length || raw.compare(KIND_OPEN, 0, KIND_OPEN.length, 0, KIND_OPEN.length) !== 0) return 1;
  const kindEnd = raw.indexOf(QUOTE, KIND_OPEN.length);
  if (kindEnd < 0 || raw.compare(API_VERSION_OPEN, 0, API_VERSION_OPEN.length, kindEnd, kindEnd + API_VERSION_OPEN.length) !== 0) return 1;
  const versionEnd = raw.indexOf(QUOTE, kindEnd + API_VERSION_OPEN.length);
  if (versionEnd < 0 || raw[versionEnd + 1] !== COMMA) return 1;
  return versionEnd + 2;
}

/** A copy of `buf[start, end)` in memory of its own (never a view that pins `buf`). */
export function copyBytes(buf: Buffer, start = 0, end = buf.length): Buffer {
  const out = Buffer.allocUnsafeSlow(end - start);
  buf.copy(out, 0, start, end);
  return out;
}

/**
 * Compares two resourceVersions. They are etcd revisions: decimal integers of any length, so a
 * shorter one is smaller. Callers must not rely on this for RVs of other storages.
 */
/**
 * A resourceVersion as the number it is (an etcd revision), or undefined when it is not one
 * (empty, or not decimal digits: never from the apiserver). The one place RVs are parsed.
 */
export function parseResourceVersionNumber(rv: string): bigint | undefined {
  return /^[0-9]{1,20}$/.test(rv) ? BigInt(rv) : undefined;
}

export function compareResourceVersions(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
