import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resolveCachedResources } from '../../../src/cache/cached-resources.ts';
import type { ResourceInfo } from '../../../src/upstream/resource-map.ts';
import { newResourceMap } from '../../../src/upstream/resource-map.ts';
import { PODS } from '../../helpers/resource-specs.ts';

function info(resource: string, kind: string): ResourceInfo {
  return {
    group: '',
    version: 'v1',
    resource,
    kind,
    responseKind: undefined,
    namespaced: true,
    verbs: ['get', 'list', 'watch'],
    singular: kind.toLowerCase(),
    shortNames: [],
    categories: [],
    subresources: [],
    preferredVersion: 'v1',
  };
}

const MAP = newResourceMap({ resources: [info('pods', 'Pod'), info('configmaps', 'ConfigMap')], preferredVersions: new Map([['', 'v1']]) });

test('resolveCachedResources: an entry with a scope is cached in it, its field names converted as the type converts them', () => {
  const resolved = resolveCachedResources(MAP, ['configmaps', 'pods:spec.host=n1;labels=app=web', 'pods']);
  assert.deepEqual(
    resolved.specs.map((s) => s.resource),
    ['configmaps', 'pods'],
  );
  assert.equal(resolved.scoped.length, 1);
  const [scoped] = resolved.scoped;
  assert.deepEqual(scoped?.spec, PODS);
  assert.equal(scoped.scope.fieldSelector, 'spec.host=n1', 'sent upstream as written');
  assert.deepEqual(scoped.scope.fields.requirements, [{ field: 'spec.nodeName', operator: '=', value: 'n1' }]);
  assert.equal(scoped.scope.labelSelector, 'app=web');
  assert.deepEqual(resolved.skipped, []);
});

test("resolveCachedResources: a scope the type cannot select by is skipped with the apiserver's words", () => {
  const resolved = resolveCachedResources(MAP, ['configmaps:spec.nodeName=n1', 'pods:', 'widgets:metadata.name=x']);
  assert.deepEqual(resolved.specs, []);
  assert.deepEqual(resolved.scoped, []);
  assert.deepEqual(resolved.skipped, [
    {
      name: 'configmaps:spec.nodeName=n1',
      reason: `its scope's fieldSelector: "spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"`,
    },
    { name: 'pods:', reason: 'its scope: the scope of pods selects nothing out: give a field or a label selector' },
    { name: 'widgets:metadata.name=x', reason: 'the apiserver does not serve it' },
  ]);
});
