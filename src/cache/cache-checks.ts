/**
 * The caches' states as /readyz and the status page report them (the apiserver's healthz checks:
 * a name, pass or fail, and the state in words): a check per named type (listing until its first
 * sync; "not cached" when it cannot be) and per running cache.
 */
import { qualifiedResource } from '../kube/group-resource.ts';
import type { CacheStatus } from './cache-source.ts';
import type { CachedResourceSpec } from './cached-resources.ts';
import type { WatchCache } from './watch-cache.ts';
import type { CheckRecord } from './consistency-checker.ts';
import type { RequestSelectors } from './selector-scope.ts';
import { describeSelectors } from './selector-scope.ts';

/** A cache's scope in words: `pods (v1)`, `configmaps (v1) in team-a`, `pods (v1) where spec.nodeName=n1`. */
export function describeScope(spec: CachedResourceSpec, namespace: string | undefined, selectors?: RequestSelectors): string {
  const type = `${qualifiedResource(spec.group, spec.resource)} (${spec.version})`;
  const where = selectors === undefined ? '' : ` where ${describeSelectors(selectors)}`;
  return (namespace === undefined ? type : `${type} in ${namespace}`) + where;
}

/**
 * `cache-<resource>[.<group>]`, plus `-<version>` when it is not the type's preferred version,
 * `-in-<namespace>` when it holds a namespace other than --namespace's, and `-where-<selectors>`
 * for a selector scope (`cache-pods-where-spec.nodeName=n1`).
 */
export function checkName(
  spec: CachedResourceSpec,
  namespace: string | undefined,
  own: { readonly ownVersion: boolean; readonly ownNamespace: string | undefined },
  selectors?: RequestSelectors,
): string {
  let name = `cache-${qualifiedResource(spec.group, spec.resource)}`;
  if (!own.ownVersion) name += `-${spec.version}`;
  if (namespace !== undefined && namespace !== own.ownNamespace) name += `-in-${namespace}`;
  if (selectors !== undefined) name += `-where-${describeSelectors(selectors)}`;
  return name;
}

/** A named type's check before (or without) a running cache: listing until it first syncs, or not cached. */
export function namedCheck(
  spec: CachedResourceSpec,
  namespace: string | undefined,
  pending: boolean,
  selectors?: RequestSelectors,
): CacheStatus {
  const type = qualifiedResource(spec.group, spec.resource);
  return {
    name: checkName(spec, undefined, { ownVersion: true, ownNamespace: undefined }, selectors),
    type,
    version: spec.version,
    namespace,
    phase: pending ? 'listing' : 'not cached',
    failure: pending ? 'not synced yet' : undefined,
    state: pending ? 'listing' : 'not cached: its reads pass through',
    objects: 0,
    resourceVersion: undefined,
    heardAgoMs: undefined,
  };
}

/** A running cache's state in words, e.g. `watching, 120 objects at RV 4711, heard from 3 s ago`. */
export function cacheStatus(
  name: string,
  cache: WatchCache,
  failure: string | undefined,
  now: number,
  lastCheck?: CheckRecord,
): CacheStatus {
  const { group, version, resource } = cache.spec;
  const consistency =
    lastCheck === undefined
      ? undefined
      : {
          result: lastCheck.result,
          resourceVersion: lastCheck.resourceVersion,
          agoMs: Math.max(0, now - lastCheck.at),
          detail: lastCheck.detail,
        };
  const base = { name, type: qualifiedResource(group, resource), version, namespace: cache.namespace, failure, consistency };
  if (!cache.hasSynced()) {
    return { ...base, phase: 'listing', state: 'listing', objects: 0, resourceVersion: undefined, heardAgoMs: undefined };
  }
  const objects = cache.current().size;
  const resourceVersion = String(cache.resourceVersion() ?? '');
  const last = cache.lastProgressAt();
  // None yet: a cache restored from a saved state, until a bookmark or a proof shows it current.
  const heardAgoMs = Number.isFinite(last) ? Math.max(0, now - last) : undefined;
  const heard = heardAgoMs === undefined ? 'not proven current yet' : `heard from ${String(Math.round(heardAgoMs / 1000))} s ago`;
  const held = `${String(objects)} objects at RV ${resourceVersion}`;
  const watching = cache.watching();
  const state = watching ? `watching, ${held}, ${heard}` : `upstream watch down (its reads pass through), ${held}, ${heard}`;
  return { ...base, phase: watching ? 'watching' : 'down', state, objects, resourceVersion, heardAgoMs };
}
