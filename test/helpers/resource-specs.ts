/** The cached-resource specs the tests use, as discovery describes them. */
import type { CachedResourceSpec } from '../../src/cache/cached-resources.ts';
import type { TestCrd } from './kube.ts';

export const CONFIGMAPS: CachedResourceSpec = {
  group: '',
  version: 'v1',
  resource: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
  unstructured: false,
};

/** A type the suite seldom writes: "quiet" holds while other tests write ConfigMaps. */
export const PODTEMPLATES: CachedResourceSpec = {
  group: '',
  version: 'v1',
  resource: 'podtemplates',
  kind: 'PodTemplate',
  namespaced: true,
  unstructured: false,
};

export const PODS: CachedResourceSpec = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, unstructured: false };

/** The spec of a test's CustomResourceDefinition (kube.ts testCrd), as --resources would resolve it: namespaced, unstructured lists. */
export function crdSpec(crd: TestCrd): CachedResourceSpec {
  return { group: crd.group, version: crd.version, resource: crd.plural, kind: crd.kind, namespaced: true, unstructured: true };
}
