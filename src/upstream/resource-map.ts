/**
 * The resource map: what discovery says the apiserver serves, by group/version/resource
 * (client-go's restmapper and metav1.APIResource, reduced to what the proxy routes and caches by).
 * Immutable: discovery builds a new map on each change and swaps it in whole.
 */

export interface GroupVersionKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

export interface SubresourceInfo {
  /** e.g. "status", "scale", "log", "exec". */
  readonly subresource: string;
  /** What the subresource returns (Scale for scale, the parent's kind for status); undefined for streams such as log. */
  readonly responseKind: GroupVersionKind | undefined;
  readonly verbs: readonly string[];
}

export interface ResourceInfo {
  /** "" for the core (legacy) group. */
  readonly group: string;
  readonly version: string;
  /** The plural, as in the URL path: "pods", "deployments". */
  readonly resource: string;
  /** Set when this entry describes a subresource of `resource` (resolve("", "v1", "pods/log")). */
  readonly subresource?: string;
  /** The kind served at this path ("Pod"; "Scale" for deployments/scale; "" when the apiserver reports none). */
  readonly kind: string;
  /** The group and version of that kind: differs from group/version for e.g. autoscaling/v1 Scale. */
  readonly responseKind: GroupVersionKind | undefined;
  /** scope == "Namespaced" (apidiscovery/v2 types.go ResourceScope). */
  readonly namespaced: boolean;
  readonly verbs: readonly string[];
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  /** Subresources of a top-level resource; empty on a subresource entry. */
  readonly subresources: readonly SubresourceInfo[];
  /** The group's preferred version (the first non-stale version in aggregated discovery). */
  readonly preferredVersion: string;
}

export interface ResourceMap {
  /**
   * The resource at group/version/resource, where resource may be "plural/subresource"; undefined
   * when the apiserver does not serve it (or reports it without a kind).
   */
  resolve(group: string, version: string, resource: string): ResourceInfo | undefined;
  /** Every top-level resource with a kind, sorted by group, version, resource. Subresources are in `subresources`. */
  all(): readonly ResourceInfo[];
  /** The group's preferred version, or undefined for a group not served. */
  preferredVersion(group: string): string | undefined;
  /** Group versions the apiserver reported but could not describe (Stale aggregated APIs, failed legacy fetches). */
  staleGroupVersions(): readonly string[];
}

/** A GET/LIST/WATCH the cache can serve: list and watch verbs, and not a subresource. */
export function isCacheable(info: ResourceInfo): boolean {
  return info.subresource === undefined && info.verbs.includes('list') && info.verbs.includes('watch');
}

/** "apps/v1/deployments", "/v1/pods" for the core group. */
export function resourceKey(info: Pick<ResourceInfo, 'group' | 'version' | 'resource'>): string {
  return `${info.group}/${info.version}/${info.resource}`;
}

export interface ResourceMapInput {
  /** Top-level resources, kindless ones included (their subresources still resolve). */
  readonly resources: readonly ResourceInfo[];
  /** group -> preferred version. */
  readonly preferredVersions: ReadonlyMap<string, string>;
  readonly staleGroupVersions?: readonly string[];
}

export function newResourceMap(input: ResourceMapInput): ResourceMap {
  return new ImmutableResourceMap(input);
}

class ImmutableResourceMap implements ResourceMap {
  /** resourceKey -> info, every top-level resource including kindless parents. */
  readonly #byKey = new Map<string, ResourceInfo>();
  readonly #all: readonly ResourceInfo[];
  readonly #preferred: ReadonlyMap<string, string>;
  readonly #stale: readonly string[];

  constructor(input: ResourceMapInput) {
    for (const info of input.resources) this.#byKey.set(resourceKey(info), info);
    this.#all = [...this.#byKey.values()].filter((i) => i.kind !== '').sort(compareResources);
    this.#preferred = new Map(input.preferredVersions);
    this.#stale = [...(input.staleGroupVersions ?? [])].sort();
  }

  resolve(group: string, version: string, resource: string): ResourceInfo | undefined {
    const slash = resource.indexOf('/');
    if (slash < 0) {
      const info = this.#byKey.get(`${group}/${version}/${resource}`);
      return info === undefined || info.kind === '' ? undefined : info;
    }
    const parent = this.#byKey.get(`${group}/${version}/${resource.slice(0, slash)}`);
    const name = resource.slice(slash + 1);
    const sub = parent?.subresources.find((s) => s.subresource === name);
    if (parent === undefined || sub === undefined) return undefined;
    // aggregated_discovery.go convertAPISubresource: the parent's names and scope, the subresource's kind and verbs.
    return {
      ...parent,
      subresource: sub.subresource,
      kind: sub.responseKind?.kind ?? '',
      responseKind: sub.responseKind,
      verbs: sub.verbs,
      shortNames: [],
      categories: [],
      subresources: [],
    };
  }

  all(): readonly ResourceInfo[] {
    return this.#all;
  }

  preferredVersion(group: string): string | undefined {
    return this.#preferred.get(group);
  }

  staleGroupVersions(): readonly string[] {
    return this.#stale;
  }
}

/** The map before the first discovery. (Defined after the class: a const is not hoisted.) */
export const emptyResourceMap: ResourceMap = newResourceMap({ resources: [], preferredVersions: new Map() });

function compareResources(a: ResourceInfo, b: ResourceInfo): number {
  return compare(a.group, b.group) || compare(a.version, b.version) || compare(a.resource, b.resource);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
