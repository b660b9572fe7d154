/**
 * Which group versions kube-apiserver serves itself, told apart from those it proxies to an
 * aggregated API server (kube-aggregator's APIService, apiregistration.k8s.io/v1).
 *
 * Every group version the apiserver serves has an APIService named `{version}.{group}`
 * (validation requires the name). Built-in groups and custom resources (the CRD registration
 * controller inside kube-apiserver creates one per served CRD group version) have one without
 * `spec.service`: "Local". An aggregated API (metrics.k8s.io) names the Service it is proxied to.
 * Only local ones have list bodies the cache can reproduce (typed or unstructured, from this
 * apiserver's storage); an aggregated server writes its own, so its reads are passed through.
 *
 * Why APIServices and not discovery or CRDs: discovery documents do not say who serves a group;
 * listing CRDs would say which groups are CRDs, but not cover an APIService that later takes a
 * CRD's group over, and APIService events are also the signal that a group came or went.
 */
import type { ResourceScope } from '../informer/lister-watcher.ts';
import type { KubeObject } from '../informer/object.ts';
import { objectText } from '../informer/object.ts';
import type { SharedIndexInformer } from '../informer/shared-informer.ts';

export const API_SERVICES: Required<Pick<ResourceScope, 'group' | 'version' | 'resource'>> = {
  group: 'apiregistration.k8s.io',
  version: 'v1',
  resource: 'apiservices',
};

/** The APIService of a group version (apiregistration validation: name == version + "." + group). */
export function apiServiceName(group: string, version: string): string {
  return `${version}.${group}`;
}

/** Objects are immutable (an update is a new object): each is parsed at most once. */
const local = new WeakMap<KubeObject, boolean>();

/** True when the APIService is served by kube-apiserver itself (no spec.service). */
export function isLocalApiService(apiService: KubeObject): boolean {
  let known = local.get(apiService);
  if (known === undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(objectText(apiService));
    } catch {
      parsed = undefined; // unreadable: not known to be local
    }
    const spec = typeof parsed === 'object' && parsed !== null ? (parsed as { spec?: unknown }).spec : undefined;
    const service = typeof spec === 'object' && spec !== null ? (spec as { service?: unknown }).service : 'unknown';
    known = service === undefined || service === null;
    local.set(apiService, known);
  }
  return known;
}

/**
 * Calls `changed` for each APIService added after the initial list, updated or deleted (a group
 * came, went or moved), and `synced` once the informer has its initial list; returns the
 * handlers' removal.
 */
export function onApiServiceChanges(
  informer: SharedIndexInformer,
  changed: () => void,
  synced: () => void,
  signal: AbortSignal,
): () => void {
  const registration = informer.addEventHandler({
    onAdd: (_obj, isInInitialList) => {
      if (!isInInitialList) changed();
    },
    onUpdate: changed,
    onDelete: changed,
  });
  informer.waitForSync(signal).then(synced, () => undefined);
  return () => {
    informer.removeEventHandler(registration);
  };
}
