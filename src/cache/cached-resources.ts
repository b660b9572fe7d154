/**
 * What a cached type is, from discovery: `specOf` turns a ResourceInfo into the spec a watch
 * cache serves by, and `resolveCachedResources` resolves the `--resources` names (the group's
 * preferred version, the kind, the scope). A name the cache cannot serve exactly is skipped with
 * the reason, and its reads are passed through.
 */
import type { ResourceInfo, ResourceMap } from '../upstream/resource-map.ts';
import { isCacheable } from '../upstream/resource-map.ts';
import { BUILT_IN_GROUPS } from '../kube/group-resource.ts';

/** A resource type served from a cache: what discovery says of it. */
export interface CachedResourceSpec {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /**
   * Served by the apiserver as unstructured objects (custom resources): lists have their keys
   * sorted and their items keep kind and apiVersion. Built-in types have typed lists.
   */
  readonly unstructured: boolean;
}

export interface ResolvedResources {
  readonly specs: readonly CachedResourceSpec[];
  readonly skipped: readonly { readonly name: string; readonly reason: string }[];
}

/** Resolves names such as `configmaps` or `deployments.apps` (kubectl's resource.group form). */
export function resolveCachedResources(map: ResourceMap, names: readonly string[]): ResolvedResources {
  const specs: CachedResourceSpec[] = [];
  const skipped: { name: string; reason: string }[] = [];
  for (const name of names) {
    const dot = name.indexOf('.');
    const resource = dot < 0 ? name : name.slice(0, dot);
    const group = dot < 0 ? '' : name.slice(dot + 1);
    const version = map.preferredVersion(group);
    const info = version === undefined ? undefined : map.resolve(group, version, resource);
    if (info === undefined) skipped.push({ name, reason: 'the apiserver does not serve it' });
    else if (!isCacheable(info)) skipped.push({ name, reason: 'it cannot be listed and watched' });
    else specs.push(specOf(info));
  }
  return { specs, skipped };
}

/** The spec of a cacheable top-level resource. */
export function specOf(info: ResourceInfo): CachedResourceSpec {
  const { group, version, resource, kind, namespaced } = info;
  return { group, version, resource, kind, namespaced, unstructured: !BUILT_IN_GROUPS.has(group) };
}
