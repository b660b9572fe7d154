/**
 * How the library hands out objects: the informer keeps each object as the apiserver's JSON bytes
 * (src/informer/object.ts) and decodes it at each read, into the form @kubernetes/client-node's
 * own API calls return (`listNamespacedPod` gives V1Pod objects whose timestamps are Dates), so
 * that an object from an informer can be passed back to client-node as it is.
 *
 * Each read decodes a fresh copy: it is the caller's to keep or change, and the informer's cache
 * can never be corrupted through it (client-go's "don't mutate objects from the cache" rule has
 * nothing left to guard). The price is the decoding at each read; code that needs only keys or
 * counts reads keys (Indexer.listKeys, indexKeys) and decodes nothing, and an informer made with
 * `cacheDecoded` decodes each stored version once and shares it, frozen (object-reader.ts).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
// client-node's serializer for any object (its KubernetesObjectApi decodes answers with it), written
// over client-node's public model classes: its own is exported from no public entry point. The
// packed-install test decodes through it on every run.
import { ObjectSerializer } from './client-node-models.ts';
import type { KubeObject } from '../informer/object.ts';
import { objectText } from '../informer/object.ts';
import { BUILT_IN_GROUPS } from '../kube/group-resource.ts';

/**
 * Turns an object's JSON, as `JSON.parse` returns it, into the object the informer hands out.
 * Called at each read of the object; must not keep `json` (it is not shared, but keeping it
 * would hold a second copy of the object).
 */
export type ObjectDecoder<T> = (json: unknown) => T;

/**
 * The object as client-node's API calls return it: built-in types as their client-node model
 * (`V1Pod`, `V1ConfigMap`, `V1Lease`: Date timestamps, unknown fields dropped as client-node drops
 * them), custom resources and types client-node has no model for with their metadata decoded
 * (V1ObjectMeta) and every other field as sent.
 */
export const clientNodeDecoder: ObjectDecoder<KubernetesObject> = (json) => {
  const decoded: unknown = ObjectSerializer.deserialize(json, clientNodeModel(json));
  return decoded as KubernetesObject;
};

/** The object exactly as the apiserver sent it, JSON-parsed: timestamps are strings. The cheapest decoder. */
export const jsonDecoder: ObjectDecoder<KubernetesObject> = (json) => json as KubernetesObject;

/**
 * Kinds whose model name carries their group, where two groups have a kind of the same name
 * (client-node's generator prefixes both); keyed `group/version/kind`.
 */
const PREFIXED_MODELS: Readonly<Record<string, string>> = {
  'core/v1/Event': 'CoreV1Event',
  'events.k8s.io/v1/Event': 'EventsV1Event',
  'core/v1/EventList': 'CoreV1EventList',
  'events.k8s.io/v1/EventList': 'EventsV1EventList',
  'resource.k8s.io/v1/ResourceClaim': 'ResourceV1ResourceClaim',
  'authentication.k8s.io/v1/TokenRequest': 'AuthenticationV1TokenRequest',
  'storage.k8s.io/v1/TokenRequest': 'StorageV1TokenRequest',
};

/**
 * client-node's model name of an object, from its apiVersion and kind (client-node util.ts
 * getSerializationType, and the prefixed names above): `V1Pod`, `V1beta1CSIStorageCapacity`;
 * `KubernetesObject` (metadata only) for anything else.
 */
export function clientNodeModel(json: unknown): string {
  if (typeof json !== 'object' || json === null) return 'KubernetesObject';
  const { apiVersion, kind } = json as { apiVersion?: unknown; kind?: unknown };
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return 'KubernetesObject';
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? 'core' : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  // client-node models the built-in groups' types (its util.ts BUILT_IN_API_GROUPS: the same groups, 'core' for '').
  const builtIn = group !== '' && (group === 'core' || BUILT_IN_GROUPS.has(group));
  if (!builtIn || version === '') return 'KubernetesObject';
  return PREFIXED_MODELS[`${group}/${version}/${kind}`] ?? `${version.charAt(0).toUpperCase()}${version.slice(1)}${kind}`;
}

/** Decodes a cached object with `decode`. */
export function decodeCached<T>(obj: KubeObject, decode: ObjectDecoder<T>): T {
  return decode(JSON.parse(objectText(obj)));
}
