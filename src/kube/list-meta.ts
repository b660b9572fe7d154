/**
 * metav1.ListMeta (apimachinery pkg/apis/meta/v1/types.go) of a list the proxy writes: the one type
 * every encoding of a LIST takes (JSON lists, Tables, PartialObjectMetadataLists, protobuf), and
 * its JSON fields as the apiserver's encoders write them.
 */
import { goJsonString } from './go-json.ts';

/** What a list's metadata says: the RV it is the state at, the next page's token, what is left. */
export interface ListMeta {
  readonly resourceVersion: string;
  /** '' on the last page. */
  readonly continue: string;
  /** Known only when the page was cut from an unselected list (`remainingItemCount` is omitted otherwise). */
  readonly remainingItemCount: bigint | undefined;
}

/**
 * The typed (Go struct) encoding: fields in declaration order, empty ones omitted (`omitempty`),
 * no braces: `"resourceVersion":"5"[,"continue":"…"][,"remainingItemCount":3]`.
 */
export function listMetaJson(meta: ListMeta): string {
  let json = `"resourceVersion":${goJsonString(meta.resourceVersion)}`;
  if (meta.continue !== '') json += `,"continue":${goJsonString(meta.continue)}`;
  if (meta.remainingItemCount !== undefined) json += `,"remainingItemCount":${String(meta.remainingItemCount)}`;
  return json;
}

/**
 * The unstructured encoding (custom resources' lists): keys sorted, and `continue` always written,
 * since UnstructuredList.SetContinue sets the field empty or not; remainingItemCount only when known.
 */
export function unstructuredListMetaJson(meta: ListMeta): string {
  let json = `"continue":${goJsonString(meta.continue)}`;
  if (meta.remainingItemCount !== undefined) json += `,"remainingItemCount":${String(meta.remainingItemCount)}`;
  return `${json},"resourceVersion":${goJsonString(meta.resourceVersion)}`;
}
