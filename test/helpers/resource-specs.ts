/** The cached-resource specs the tests use, as discovery describes them. */
import type { CachedResourceSpec } from '../../src/cache/cached-resources.ts';

export const CONFIGMAPS: CachedResourceSpec = {
  group: '',
  version: 'v1',
  resource: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
  unstructured: false,
};

export const PODS: CachedResourceSpec = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, unstructured: false };
