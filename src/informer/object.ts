/**
 * The cached form of a Kubernetes object: its JSON bytes exactly as the apiserver sent them,
 * next to the few parsed fields that keys, indices and selectors need. The parsed object itself
 * is dropped after decoding: holding it would cost several times the bytes.
 */
import type { SelectableFields } from '../selector/field-selector.ts';
import { SharingTable } from './sharing-table.ts';

/** Selectable fields (fieldSelector names such as `metadata.name`, `spec.nodeName`) -> value. */
export type { SelectableFields };

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
  /** '' for a cluster-scoped object. Its name is the rest of the key (objectName). */
  readonly namespace: string;
  readonly resourceVersion: string;
  /** Shared by the objects with the same labels (a ReplicaSet's pods): read-only. */
  readonly labels: Readonly<Record<string, string>>;
  /**
   * The selectable fields but metadata.name and metadata.namespace (those are `name` and
   * `namespace`; read them all through fieldValue), shared by the objects with the same values:
   * read-only.
   */
  readonly fields: SelectableFields;
  /**
   * The object's leading TypeMeta members as sent, `"kind":K,"apiVersion":V,` (a binary string,
   * shared by every object of the type), or '' when its JSON does not begin with them.
   */
  readonly typeMeta: string;
  /**
   * The rest of the object's JSON after its opening brace and its TypeMeta, exactly as received:
   * a binary string (each character one byte of the UTF-8 JSON: V8 keeps it one byte a
   * character, with a 16-byte header, where a Buffer costs ~200 bytes of wrappers besides its
   * bytes). The object is `{` + typeMeta + rest (objectBytes); a typed list's item (kind and
   * apiVersion cut, as the apiserver writes list items of built-in types) is `{` + rest. Never
   * mutated.
   */
  readonly rest: string;
}

/** The object's JSON bytes, as a GET of it returns it (a new Buffer: for answers and events, not per LIST item). */
export function objectBytes(obj: KubeObject): Buffer {
  const out = Buffer.allocUnsafe(objectByteLength(obj));
  out[0] = OPEN_BRACE;
  out.write(obj.typeMeta, 1, 'latin1');
  out.write(obj.rest, 1 + obj.typeMeta.length, 'latin1');
  return out;
}

/** The object's JSON text (UTF-8 decoded), to parse. */
export function objectText(obj: KubeObject): string {
  return objectBytes(obj).toString('utf8');
}

/** The length in bytes of the object's JSON. */
export function objectByteLength(obj: KubeObject): number {
  return 1 + obj.typeMeta.length + obj.rest.length;
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

/** A flat string (join builds one; a template literal would leave a cons string and, once compared, its flattened copy beside it). */
export function objectKey(namespace: string, name: string): string {
  return namespace === '' ? name : [namespace, name].join('/');
}

/** The object's name: the key after its namespace. */
export function objectName(obj: KubeObject): string {
  return obj.namespace === '' ? obj.key : obj.key.slice(obj.namespace.length + 1);
}

/** Whether the object is named `name` (no string made per call: fieldSelector metadata.name per item). */
export function hasName(obj: KubeObject, name: string): boolean {
  const { key, namespace } = obj;
  if (namespace === '') return key === name;
  return key.length === namespace.length + 1 + name.length && key.endsWith(name);
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
 * Decodes one object from its JSON bytes, `buf[start, end)`, copied into the object's strings
 * (never a view that pins `buf`). A list item of a built-in type comes without kind and
 * apiVersion: `listTypeMeta` gives them (the list's, as `"kind":K,"apiVersion":V,`).
 */
export function decodeObject(
  buf: Buffer,
  extract: FieldExtractor = metadataFields,
  start = 0,
  end = buf.length,
  listTypeMeta = '',
): KubeObject {
  const parsed: unknown = JSON.parse(buf.toString('utf8', start, end));
  if (!isParsedObject(parsed)) throw new SyntaxError('not a Kubernetes object: no metadata');
  const restStart = typeMetaEnd(buf, start, end);
  const typeMeta = restStart === start + 1 ? listTypeMeta : buf.toString('latin1', start + 1, restStart);
  return fromParsed(parsed, internTypeMeta(typeMeta), buf.toString('latin1', restStart, end), extract);
}

export function fromParsed(parsed: ParsedObject, typeMeta: string, rest: string, extract: FieldExtractor): KubeObject {
  const meta = parsed.metadata;
  const namespace = intern(meta.namespace ?? '');
  return {
    key: objectKey(namespace, meta.name ?? ''),
    namespace,
    resourceVersion: meta.resourceVersion ?? '',
    labels: internRecord(labelRecords, meta.labels ?? EMPTY),
    fields: internRecord(fieldRecords, extract(parsed), META_FIELDS),
    typeMeta,
    rest,
  };
}

const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

/**
 * An object saved with its parsed fields (a watch cache's saved state, cache/cache-state.ts),
 * made again without parsing its JSON: its strings and records shared as a decoded object's are.
 */
export function restoredObject(saved: Omit<KubeObject, 'namespace'>): KubeObject {
  const slash = saved.key.indexOf('/');
  return {
    key: saved.key,
    // A name holds no '/' (path segment names, validation.go IsValidPathSegmentName).
    namespace: slash < 0 ? '' : intern(saved.key.slice(0, slash)),
    resourceVersion: saved.resourceVersion,
    labels: internRecord(labelRecords, saved.labels),
    fields: internRecord(fieldRecords, saved.fields, META_FIELDS),
    typeMeta: internTypeMeta(saved.typeMeta),
    rest: saved.rest,
  };
}

/**
 * Strings that many cached objects share (namespaces, label values, selectable field values such
 * as a pod's phase or scheduler), kept once: each JSON.parse makes its own copy of every value.
 */
const strings = new SharingTable<string>(32_768);
/** Longer values are rarely shared (and a lookup costs a hash of the whole string). */
const MAX_INTERNED_LENGTH = 64;

export function intern(value: string): string {
  return value.length > MAX_INTERNED_LENGTH ? value : strings.share(value, value);
}

/** The fields every object has apart, kept as the object's `name` and `namespace` (fieldValue). */
const META_FIELDS = new Set(['metadata.name', 'metadata.namespace']);

/**
 * A selectable field of the object (fields.Set: absent when its type does not have it):
 * metadata.namespace is present for namespaced objects only.
 */
export function fieldValue(obj: KubeObject, field: string): string | undefined {
  if (field === 'metadata.name') return objectName(obj);
  if (field === 'metadata.namespace') return obj.namespace === '' ? undefined : obj.namespace;
  return Object.hasOwn(obj.fields, field) ? obj.fields[field] : undefined;
}

/**
 * Records that many cached objects share, kept once, values interned, the `skip` keys left out:
 * labels (the pods of a ReplicaSet have the same ones) and selectable fields (a node, a phase, a
 * scheduler) in tables of their own, so that the fields unique to each object (a pod's IP) never
 * crowd out the labels that are shared.
 */
const labelRecords = new SharingTable<Readonly<Record<string, string>>>(32_768);
const fieldRecords = new SharingTable<Readonly<Record<string, string>>>(32_768);
/** A longer record is unlikely to be shared, and its key costs its length. */
const MAX_RECORD_KEY = 2_048;

function internRecord(
  table: SharingTable<Readonly<Record<string, string>>>,
  record: Readonly<Record<string, string>>,
  skip?: ReadonlySet<string>,
): Readonly<Record<string, string>> {
  // The key spells each entry with its lengths: unambiguous whatever the keys and values hold.
  let key = '';
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(record)) {
    if (skip?.has(k) === true) continue;
    out[k] = intern(v);
    key += `${String(k.length)}:${k}${String(v.length)}:${v}`;
  }
  if (key === '') return EMPTY;
  // Shared records are read-only, and so is every record, shared or not.
  Object.freeze(out);
  return key.length > MAX_RECORD_KEY ? out : table.share(key, out);
}

const KIND_OPEN = Buffer.from('{"kind":"');
const API_VERSION_OPEN = Buffer.from('","apiVersion":"');
const OPEN_BRACE = 0x7b;
const QUOTE = 0x22;
const COMMA = 0x2c;

/**
 * Where the object's members after its leading `"kind":K,"apiVersion":V,` begin in `buf` (kind
 * and apiVersion are plain names, with no escapes, so the next quote ends each); `start + 1`
 * (just after the brace) when the object does not begin with them.
 */
export function typeMetaEnd(buf: Buffer, start = 0, end = buf.length): number {
  const none = start + 1;
  if (end - start < KIND_OPEN.length || buf.compare(KIND_OPEN, 0, KIND_OPEN.length, start, start + KIND_OPEN.length) !== 0) return none;
  const kindEnd = buf.indexOf(QUOTE, start + KIND_OPEN.length);
  if (kindEnd < 0 || kindEnd + API_VERSION_OPEN.length > end) return none;
  if (buf.compare(API_VERSION_OPEN, 0, API_VERSION_OPEN.length, kindEnd, kindEnd + API_VERSION_OPEN.length) !== 0) return none;
  const versionEnd = buf.indexOf(QUOTE, kindEnd + API_VERSION_OPEN.length);
  if (versionEnd < 0 || versionEnd + 2 > end || buf[versionEnd + 1] !== COMMA) return none;
  return versionEnd + 2;
}

/** The TypeMeta strings of the types cached: one per type, shared by its objects. */
const typeMetas = new Map<string, string>();
const MAX_TYPE_METAS = 4_096;

function internTypeMeta(typeMeta: string): string {
  if (typeMeta === '') return '';
  const known = typeMetas.get(typeMeta);
  if (known !== undefined) return known;
  if (typeMetas.size < MAX_TYPE_METAS) typeMetas.set(typeMeta, typeMeta);
  return typeMeta;
}

/**
 * A resourceVersion as the number it is (an etcd revision), or undefined when it is not one
 * (empty, or not decimal digits: never from the apiserver). The one place RVs are parsed.
 */
export function parseResourceVersionNumber(rv: string): bigint | undefined {
  return /^[0-9]{1,20}$/.test(rv) ? BigInt(rv) : undefined;
}

/**
 * Compares two resourceVersions. They are etcd revisions: decimal integers of any length, so a
 * shorter one is smaller. Callers must not rely on this for RVs of other storages.
 */
export function compareResourceVersions(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
