/**
 * Which types and scopes the registry may cache (cache-registry.ts asks before it wants a cache):
 * the types discovery describes as listable and watchable, named by --resources or (with none
 * named) every one but secrets, built-in or served by kube-apiserver itself (custom resources, not
 * aggregated APIs); namespaced ones in --namespace, or in the namespace read when the proxy may
 * not list them across namespaces; a type named only in selector scopes (selector-scope.ts) is
 * never cached whole. It remembers the LISTs the apiserver refused the proxy, for
 * forbiddenRetryMs, so that reads are passed through without a LIST each.
 *
 * Invariant: a scope key is in #forbidden only until its time; isForbidden() drops it after.
 */
import { scopeKey } from '../informer/factory.ts';
import type { ResourceScope } from '../informer/lister-watcher.ts';
import type { Clock } from '../clock/clock.ts';
import { BUILT_IN_GROUPS, qualifiedResource } from '../kube/group-resource.ts';
import type { Discovery } from '../upstream/discovery.ts';
import type { ResourceInfo } from '../upstream/resource-map.ts';
import { isCacheable } from '../upstream/resource-map.ts';
import { specOf } from './cached-resources.ts';
import type { CachedResourceSpec } from './cached-resources.ts';
import type { SelectorScope } from './selector-scope.ts';

/** At most one discovery refresh per this long for reads of types discovery does not know (404s, new CRDs). */
const DISCOVERY_MISS_REFRESH_MS = 5_000;

export interface CacheScopesOptions {
  readonly discovery: Discovery;
  /** Named types (`resource.group`), whole or in a selector scope; undefined: every type, lazily. */
  readonly named: ReadonlySet<string> | undefined;
  /** Named types named only in selector scopes: no cache holds them whole. */
  readonly scopedOnly?: ReadonlySet<string>;
  /** --namespace: namespaced types in this namespace only; undefined: all namespaces. */
  readonly namespace: string | undefined;
  readonly forbiddenRetryMs: number;
  readonly clock: Clock;
  /** Whether kube-apiserver serves this group version itself (the registry's APIService cache); undefined: not known yet. */
  readonly servedLocally: (group: string, version: string) => boolean | undefined;
}

/**
 * The scope of a cache: its type, its namespace (undefined: all, or a cluster-scoped type) and
 * its selectors (selector-scope.ts; undefined: the whole type).
 */
export function scopeOf(spec: CachedResourceSpec, namespace: string | undefined, selectors?: SelectorScope): ResourceScope {
  const scope = { group: spec.group, version: spec.version, resource: spec.resource, namespace };
  if (selectors === undefined) return scope;
  return {
    ...scope,
    ...(selectors.fieldSelector === '' ? {} : { fieldSelector: selectors.fieldSelector }),
    ...(selectors.labelSelector === '' ? {} : { labelSelector: selectors.labelSelector }),
  };
}

export class CacheScopes {
  readonly #options: CacheScopesOptions;
  /** Scope key -> until when (clock ms) its LIST is known to be forbidden. */
  readonly #forbidden = new Map<string, number>();
  /** One spec per discovery entry, so a cache's spec is the same object for as long as discovery says the same. */
  readonly #specs = new WeakMap<ResourceInfo, CachedResourceSpec>();
  #lastMissRefresh = Number.NEGATIVE_INFINITY;

  constructor(options: CacheScopesOptions) {
    this.#options = options;
  }

  /** What a read of this type is cached as, or undefined when it is not to be cached. */
  specFor(group: string, version: string, resource: string): CachedResourceSpec | undefined {
    const { discovery, named } = this.#options;
    const info = discovery.resolve(group, version, resource);
    if (info === undefined) {
      this.#discoveryMissed();
      return undefined;
    }
    if (!isCacheable(info)) return undefined;
    const name = qualifiedResource(group, resource);
    if (named === undefined ? name === 'secrets' : !named.has(name)) return undefined;
    if (!BUILT_IN_GROUPS.has(group) && this.#options.servedLocally(group, version) !== true) return undefined;
    let spec = this.#specs.get(info);
    if (spec === undefined) {
      spec = specOf(info);
      this.#specs.set(info, spec);
    }
    return spec;
  }

  /**
   * The namespace the cache for this read holds (undefined: all), or false when no cache may
   * answer it: outside --namespace, or the type is forbidden cluster-wide and the read is not
   * limited to one namespace.
   */
  scopeFor(spec: CachedResourceSpec, namespace: string, now: number): string | undefined | false {
    if (!spec.namespaced) return undefined;
    const only = this.#options.namespace;
    if (only !== undefined) return namespace === only ? namespace : false;
    if (!this.isForbidden(scopeKey(scopeOf(spec, undefined)), now)) return undefined;
    return namespace === '' ? false : namespace;
  }

  /** Whether a cache may hold this type whole: not when it is named only in selector scopes. */
  wholeAllowed(spec: CachedResourceSpec): boolean {
    return this.#options.scopedOnly?.has(qualifiedResource(spec.group, spec.resource)) !== true;
  }

  /** A named type's own cache: its preferred version, in the --namespace scope. */
  isNamedScope(spec: CachedResourceSpec, scope: string | undefined): boolean {
    const { named, discovery, namespace } = this.#options;
    if (named?.has(qualifiedResource(spec.group, spec.resource)) !== true) return false;
    return spec.version === discovery.preferredVersion(spec.group) && scope === (spec.namespaced ? namespace : undefined);
  }

  /** True while the LIST of this scope is known to be forbidden. */
  isForbidden(key: string, now: number): boolean {
    const until = this.#forbidden.get(key);
    if (until === undefined) return false;
    if (now < until) return true;
    this.#forbidden.delete(key);
    return false;
  }

  /** The apiserver refused this scope's LIST: remembered for forbiddenRetryMs, which it returns. */
  forbid(key: string): number {
    const { forbiddenRetryMs, clock } = this.#options;
    this.#forbidden.set(key, clock.now() + forbiddenRetryMs);
    return forbiddenRetryMs;
  }

  /** Forgets the refusals of the scopes `gone` says are gone (their type changed or went away). */
  forgetForbidden(gone: (key: string) => boolean): void {
    for (const key of [...this.#forbidden.keys()]) if (gone(key)) this.#forbidden.delete(key);
  }

  /** Drops the refusals whose time is over (the registry's sweep). */
  expireForbidden(now: number): void {
    for (const key of [...this.#forbidden.keys()]) this.isForbidden(key, now);
  }

  /** A read of a type discovery does not know: perhaps a CRD newer than the map. */
  #discoveryMissed(): void {
    const now = this.#options.clock.now();
    if (now - this.#lastMissRefresh < DISCOVERY_MISS_REFRESH_MS) return;
    this.#lastMissRefresh = now;
    this.#options.discovery.invalidate();
  }
}
