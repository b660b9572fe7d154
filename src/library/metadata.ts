/**
 * Metadata-only informers (client-go metadata/metadatainformer over metadata.Client): the
 * apiserver sends each object's metadata alone, as a PartialObjectMetadata, so the informer holds
 * names, labels, annotations, owners and resourceVersions and none of the spec or status: for
 * controllers that only need to know which objects exist (garbage collection, quota, "does any pod
 * still use this").
 *
 * Asked for as client-go's metadata client asks (metadata/metadata.go), in JSON: a LIST with
 * `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`, a WATCH (and a
 * WatchList) with `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`; every
 * built-in resource and custom resource serves them.
 */
import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';
import type { ListWatchClient } from '../informer/lister-watcher.ts';

/**
 * meta.k8s.io/v1 PartialObjectMetadata: an object's TypeMeta and metadata, nothing else.
 * client-node has no model of it; its nearest, KubernetesObject, is what this extends (metadata
 * decoded as V1ObjectMeta, Dates for timestamps).
 */
export interface V1PartialObjectMetadata extends KubernetesObject {
  /** `meta.k8s.io/v1`. */
  apiVersion?: string;
  /** `PartialObjectMetadata`. */
  kind?: string;
  /** The object's metadata, whole (managedFields included unless a transform drops them). */
  metadata?: V1ObjectMeta;
}

/** The Accept of a metadata LIST (client-go metadata.go: `as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`). */
export const PARTIAL_OBJECT_METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
/** The Accept of a metadata WATCH (client-go metadata.go: `as=PartialObjectMetadata;g=meta.k8s.io;v=v1`). */
export const PARTIAL_OBJECT_METADATA_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/** `client` asking for PartialObjectMetadata: LISTs (request) as lists of it, WATCHes (stream) as events of it. */
export function metadataClient(client: ListWatchClient): ListWatchClient {
  return {
    request: (request) => client.request({ ...request, headers: { ...request.headers, accept: PARTIAL_OBJECT_METADATA_LIST_ACCEPT } }),
    stream: (request) => client.stream({ ...request, headers: { ...request.headers, accept: PARTIAL_OBJECT_METADATA_ACCEPT } }),
  };
}
