/**
 * Object keys, as client-go's tools/cache/store.go makes them: `namespace/name`, or `name` for a
 * cluster-scoped object. The informer's Indexer is keyed by them, and a controller's workqueue
 * usually holds them (strings compare by value, so a key queued twice is processed once).
 */
import { objectKey } from '../informer/object.ts';

/**
 * client-go DeletedFinalStateUnknown: what an informer hands to onDelete for an object it knows
 * was deleted while its watch was down, without the object's final state. `obj` is the last
 * state the informer held (possibly stale), if any.
 */
export interface DeletedFinalStateUnknown<T> {
  /** The discriminant: an object of the API has no kind of this name. */
  readonly kind: 'DeletedFinalStateUnknown';
  /** The deleted object's key. */
  readonly key: string;
  /** The last state the informer held of it, if any. */
  readonly obj: T | undefined;
}

/** True if `value` is a DeletedFinalStateUnknown rather than an object (client-go's type switch in onDelete). */
export function isDeletedFinalStateUnknown<T>(value: T | DeletedFinalStateUnknown<T>): value is DeletedFinalStateUnknown<T> {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'DeletedFinalStateUnknown';
}

/**
 * What a key is made of: any object with metadata (a client-node KubernetesObject, such as
 * V1Pod, or the JSON of one).
 */
export interface ObjectWithMetadata {
  /** The object's metadata: its name and, for a namespaced object, its namespace. */
  readonly metadata?:
    | {
        /** The object's name. */
        readonly name?: string | undefined;
        /** Its namespace; none for a cluster-scoped object. */
        readonly namespace?: string | undefined;
      }
    | undefined;
}

/**
 * client-go MetaNamespaceKeyFunc: `namespace/name`, or `name` for a cluster-scoped object.
 * Throws a TypeError for an object without metadata.name.
 */
export function metaNamespaceKeyFunc(obj: ObjectWithMetadata): string {
  const name = obj.metadata?.name;
  if (name === undefined || name === '') throw new TypeError('object has no metadata.name');
  return objectKey(obj.metadata?.namespace ?? '', name);
}

/** client-go DeletionHandlingMetaNamespaceKeyFunc: the key of an object, or of a DeletedFinalStateUnknown. */
export function deletionHandlingMetaNamespaceKeyFunc(obj: ObjectWithMetadata | DeletedFinalStateUnknown<unknown>): string {
  return isDeletedFinalStateUnknown(obj) ? obj.key : metaNamespaceKeyFunc(obj);
}

/**
 * client-go SplitMetaNamespaceKey: the namespace ('' for a cluster-scoped object) and name of a
 * key. Throws a TypeError for a key of more than two parts.
 */
export function splitMetaNamespaceKey(key: string): {
  /** '' for a cluster-scoped object. */
  readonly namespace: string;
  /** The object's name. */
  readonly name: string;
} {
  const parts = key.split('/');
  if (parts.length === 1) return { namespace: '', name: key };
  const [namespace, name] = parts;
  if (parts.length !== 2 || namespace === undefined || name === undefined)
    throw new TypeError(`unexpected key format: ${JSON.stringify(key)}`);
  return { namespace, name };
}
