/**
 * client-node's ObjectSerializer.deserialize (its gen/models/ObjectSerializer.ts, wrapped by its
 * serializer.ts for objects it has no model for), over client-node's public exports only: its
 * model classes (`V1Pod`, `V1ObjectMeta`, ...) and their static `getAttributeTypeMap()`, which
 * its root module exports. The serializer itself is exported from no public entry point of
 * client-node, and importing its internal files binds the library to what client-node's semver
 * does not cover; the rules below are its rules, so an object decodes as client-node's own API
 * calls return it.
 *
 * Not honoured: models registered with client-node's ObjectSerializer.registerModel (a registry
 * inside that internal module).
 */
import * as clientNode from '@kubernetes/client-node';

/** One attribute of a model: `name` on the model, `baseName` on the wire, `type` a type name. */
interface AttributeType {
  readonly name: string;
  readonly baseName: string;
  readonly type: string;
  readonly format: string;
}

/** What client-node's generated model classes have in common. */
interface ModelClass {
  new (): object;
  getAttributeTypeMap(): readonly AttributeType[];
  readonly discriminator?: string | undefined;
  readonly mapping?: Readonly<Record<string, string>> | undefined;
}

/** gen/models/ObjectSerializer.ts primitives: returned as they are. */
const PRIMITIVES = new Set(['string', 'boolean', 'double', 'integer', 'long', 'float', 'number', 'any']);
const NULLABLE_SUFFIX = ' | null';
const OPTIONAL_SUFFIX = ' | undefined';
const ARRAY_PREFIX = 'Array<';
const ARRAY_SUFFIX = '>';
const MAP_PREFIX = '{ [key: string]: ';
const MAP_SUFFIX = '; }';

/** serializer.ts KubernetesObject.attributeTypeMap: what an object without a model has decoded. */
const KUBERNETES_OBJECT_ATTRIBUTES: readonly AttributeType[] = [
  { name: 'apiVersion', baseName: 'apiVersion', type: 'string', format: '' },
  { name: 'kind', baseName: 'kind', type: 'string', format: '' },
  { name: 'metadata', baseName: 'metadata', type: 'V1ObjectMeta', format: '' },
];

const exported = clientNode as unknown as Readonly<Record<string, unknown>>;
const models = new Map<string, ModelClass | undefined>();

/** client-node's model class named `type`, if its root exports one (gen/models/ObjectSerializer.ts typeMap). */
function modelOf(type: string): ModelClass | undefined {
  if (models.has(type)) return models.get(type);
  const candidate = Object.hasOwn(exported, type) ? exported[type] : undefined;
  const model =
    typeof candidate === 'function' && typeof (candidate as { getAttributeTypeMap?: unknown }).getAttributeTypeMap === 'function'
      ? (candidate as ModelClass)
      : undefined;
  models.set(type, model);
  return model;
}

/** gen/models/ObjectSerializer.ts findCorrectType: a discriminator may name a more specific model. */
function correctType(data: Readonly<Record<string, unknown>>, expected: string): string {
  const model = modelOf(expected);
  const property = model?.discriminator;
  if (model === undefined || property === undefined) return expected;
  const value = data[property];
  if (typeof value !== 'string' || value === '') return expected;
  const mapped = model.mapping?.[value];
  if (mapped !== undefined) return mapped;
  return modelOf(value) !== undefined ? value : expected;
}

/** gen/models/ObjectSerializer.ts deserialize. */
function deserializeModel(data: unknown, type: string): unknown {
  if (data === undefined || data === null) return data;
  if (PRIMITIVES.has(type.toLowerCase())) return data;
  if (type.endsWith(NULLABLE_SUFFIX)) return deserializeModel(data, type.slice(0, -NULLABLE_SUFFIX.length));
  if (type.endsWith(OPTIONAL_SUFFIX)) return deserializeModel(data, type.slice(0, -OPTIONAL_SUFFIX.length));
  if (type.startsWith(ARRAY_PREFIX)) {
    const itemType = type.slice(ARRAY_PREFIX.length, -ARRAY_SUFFIX.length);
    return (data as readonly unknown[]).map((item) => deserializeModel(item, itemType));
  }
  if (type.startsWith(MAP_PREFIX)) {
    const valueType = type.slice(MAP_PREFIX.length, -MAP_SUFFIX.length);
    const map: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(data as Readonly<Record<string, unknown>>)) map[key] = deserializeModel(value, valueType);
    return map;
  }
  if (type === 'Date') return new Date(data as string);
  const record = data as Readonly<Record<string, unknown>>;
  const model = modelOf(correctType(record, type));
  if (model === undefined) return data;
  const instance = new model() as Record<string, unknown>;
  for (const attribute of model.getAttributeTypeMap()) {
    const value = deserializeModel(record[attribute.baseName], attribute.type);
    if (value !== undefined) instance[attribute.name] = value;
  }
  return instance;
}

function isKubernetesObject(data: unknown): data is Readonly<Record<string, unknown>> {
  return typeof data === 'object' && data !== null && 'apiVersion' in data && 'kind' in data;
}

/** serializer.ts KubernetesObject.fromUnknown: apiVersion, kind and metadata decoded, every other field as sent. */
function fromUnknown(data: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const instance: Record<string, unknown> = {};
  for (const attribute of KUBERNETES_OBJECT_ATTRIBUTES) {
    const value = data[attribute.baseName];
    if (value !== undefined) instance[attribute.name] = deserializeModel(value, attribute.type);
  }
  for (const [key, value] of Object.entries(data)) {
    if (KUBERNETES_OBJECT_ATTRIBUTES.some((attribute) => attribute.name === key)) continue;
    instance[key] = value;
  }
  return instance;
}

/** client-node's ObjectSerializer, the part the library uses. */
export const ObjectSerializer = {
  /**
   * serializer.ts ObjectSerializer.deserialize: `data` (parsed JSON) as the model `type` names
   * (`V1Pod`); an object of a type client-node has no model for keeps its fields, its metadata
   * decoded.
   */
  deserialize(data: unknown, type: string): unknown {
    const decoded = deserializeModel(data, type);
    if (decoded !== data || !isKubernetesObject(data)) return decoded;
    return fromUnknown(data);
  },
} as const;
