/**
 * Which of the `--resources` the proxy caches, resolved through discovery: the group's
 * preferred version, the kind, the scope. A name the cache cannot serve exactly is skipped with
 * the reason, and its reads are passed through. `newStaticCacheSource` holds one watch cache per
 * resolved type, started with the proxy.
 */
import type { SharedInformerFactory } from '../informer/factory.ts';
import type { ResourceMap } from '../upstream/resource-map.ts';
import { isCacheable } from '../upstream/resource-map.ts';
import { selectableFieldsFor } from '../cache/selectable-fields.ts';
import type { CachedResourceSpec, WatchCache, WatchCacheSource } from '../cache/watch-cache.ts';
import { newWatchCache } from '../cache/watch-cache.ts';

/**
 * The API groups served by kube-apiserver itself. Their list bodies are typed (`kind`,
 * `apiVersion`, `metadata`, `items`, items without kind); other groups' (custom resources)
 * are unstructured: keys sorted, items with kind and apiVersion.
 */
export const BUILT_IN_GROUPS = new Set([
  '',
  'admissionregistration.k8s.io',
  'apiextensions.k8s.io',
  'apiregistration.k8s.io',
  'apps',
  'authentication.k8s.io',
  'authorization.k8s.io',
  'autoscaling',
  'batch',
  'certificates.k8s.io',
  'coordination.k8s.io',
  'discovery.k8s.io',
  'events.k8s.io',
  'flowcontrol.apiserver.k8s.io',
  'internal.apiserver.k8s.io',
  'networking.k8s.io',
  'node.k8s.io',
  'policy',
  'rbac.authorization.k8s.io',
  'resource.k8s.io',
  'scheduling.k8s.io',
  'storage.k8s.io',
  'storagemigration.k8s.io',
]);

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
    else {
      const unstructured = !BUILT_IN_GROUPS.has(group);
      specs.push({ group, version: info.version, resource, kind: info.kind, namespaced: info.namespaced, unstructured });
    }
  }
  return { specs, skipped };
}

/**
 * One watch cache per type, all created now and started with the proxy; `namespace` limits them
 * to one namespace (then only that namespace's reads are served).
 */
export function newStaticCacheSource(
  factory: SharedInformerFactory,
  specs: readonly CachedResourceSpec[],
  namespace?: string,
): WatchCacheSource {
  const caches = new Map<string, WatchCache>();
  for (const spec of specs) {
    const fields = selectableFieldsFor(spec.group, spec.resource, spec.namespaced);
    const scope = spec.namespaced ? namespace : undefined;
    const informer = factory.informerFor({
      group: spec.group,
      version: spec.version,
      resource: spec.resource,
      namespace: scope,
      extract: fields.extract,
    });
    caches.set(`${spec.group}/${spec.version}/${spec.resource}`, newWatchCache({ spec, fields, informer, namespace: scope }));
  }
  return {
    cacheFor(group, version, resource, ns) {
      const cache = caches.get(`${group}/${version}/${resource}`);
      if (cache === undefined || !cache.informer.hasSynced()) return undefined;
      // A namespace-limited cache answers reads of its namespace only.
      if (cache.namespace !== undefined && ns !== cache.namespace) return undefined;
      return cache;
    },
    start() {
      factory.start();
    },
    synced() {
      return [...caches.values()].every((c) => c.informer.hasSynced());
    },
    stop() {
      return factory.shutdown();
    },
  };
}
