/**
 * What a cached type is, from discovery: `specOf` turns a ResourceInfo into the spec a watch
 * cache serves by, and `resolveCachedResources` resolves the `--resources` names (the group's
 * preferred version, the kind, the scope). A name the cache cannot serve exactly is skipped with
 * the reason, and its reads are passed through.
 */
import type { ResourceInfo, ResourceMap } from '../upstream/resource-map.ts';
import { isCacheable } from '../upstream/resource-map.ts';
import { BUILT_IN_GROUPS } from '../kube/group-resource.ts';
import { SelectorParseError } from '../selector/selector-error.ts';
import { selectableFieldsFor } from './selectable-fields.ts';
import type { SelectorScope } from './selector-scope.ts';
import { newSelectorScope, parseScopeEntry } from './selector-scope.ts';

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

/** A type cached in a selector scope (`--resources pods:spec.nodeName=n1`): only the objects the scope selects. */
export interface ScopedResourceSpec {
  readonly spec: CachedResourceSpec;
  readonly scope: SelectorScope;
}

export interface ResolvedResources {
  /** The types cached whole. */
  readonly specs: readonly CachedResourceSpec[];
  /** The types cached in a selector scope (a type may be in both lists, and in several scopes). */
  readonly scoped: readonly ScopedResourceSpec[];
  readonly skipped: readonly { readonly name: string; readonly reason: string }[];
}

/**
 * Resolves names such as `configmaps` or `deployments.apps` (kubectl's resource.group form),
 * each with an optional selector scope (`pods:spec.nodeName=n1`, selector-scope.ts).
 */
export function resolveCachedResources(map: ResourceMap, entries: readonly string[]): ResolvedResources {
  const specs: CachedResourceSpec[] = [];
  const scoped: ScopedResourceSpec[] = [];
  const skipped: { name: string; reason: string }[] = [];
  for (const entry of entries) {
    let parsed: ReturnType<typeof parseScopeEntry>;
    try {
      parsed = parseScopeEntry(entry);
    } catch (error) {
      skipped.push({ name: entry, reason: `its scope: ${error instanceof Error ? error.message : String(error)}` });
      continue;
    }
    const { name } = parsed;
    const dot = name.indexOf('.');
    const resource = dot < 0 ? name : name.slice(0, dot);
    const group = dot < 0 ? '' : name.slice(dot + 1);
    const version = map.preferredVersion(group);
    const info = version === undefined ? undefined : map.resolve(group, version, resource);
    if (info === undefined) skipped.push({ name: entry, reason: 'the apiserver does not serve it' });
    else if (!isCacheable(info)) skipped.push({ name: entry, reason: 'it cannot be listed and watched' });
    else if (parsed.scope === undefined) specs.push(specOf(info));
    else {
      const spec = specOf(info);
      try {
        scoped.push({
          spec,
          scope: newSelectorScope(parsed.scope, selectableFieldsFor(spec.group, spec.resource, spec.namespaced).conversion),
        });
      } catch (error) {
        if (!(error instanceof SelectorParseError)) throw error;
        skipped.push({ name: entry, reason: `its scope's ${error.parameter}: ${error.message}` });
      }
    }
  }
  return { specs, scoped, skipped };
}

/** The spec of a cacheable top-level resource. */
export function specOf(info: ResourceInfo): CachedResourceSpec {
  const { group, version, resource, kind, namespaced } = info;
  return { group, version, resource, kind, namespaced, unstructured: !BUILT_IN_GROUPS.has(group) };
}
