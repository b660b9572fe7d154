import assert from 'node:assert/strict';
import { test } from 'node:test';
import { indexedFieldOf, newFieldIndex } from '../../../src/cache/field-index.ts';
import type { KubeObject } from '../../../src/informer/object.ts';
import { checkInvariants } from '../../../src/cache/ordered-map.ts';
import { seededRandom } from '../../helpers/prng.ts';

function pod(key: string, nodeName: string | undefined, rv: number): KubeObject {
  const [namespace = ''] = key.split('/');
  return {
    key,
    namespace,
    resourceVersion: String(rv),
    labels: {},
    fields: nodeName === undefined ? {} : { 'spec.nodeName': nodeName },
    typeMeta: '',
    rest: '}',
  };
}

test('field index: pods are indexed by spec.nodeName, as the apiserver; other types by nothing', () => {
  assert.equal(indexedFieldOf({ group: '', resource: 'pods' }), 'spec.nodeName');
  assert.equal(indexedFieldOf({ group: '', resource: 'configmaps' }), undefined);
  assert.equal(indexedFieldOf({ group: 'example.com', resource: 'pods' }), undefined);
});

test('field index: after any sequence of adds, moves, deletes and relists, each value holds exactly the objects that have it, in key order', () => {
  const seed = Number(process.env['KCP_FUZZ_SEED'] ?? 17);
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const nodes = ['node-a', 'node-b', 'node-c', '', undefined];
  const keys = Array.from({ length: 60 }, (_, i) => `ns-${String(i % 4)}/pod-${String(i).padStart(2, '0')}`);
  const index = newFieldIndex('spec.nodeName');
  const model = new Map<string, KubeObject>();
  for (let step = 1; step <= 3_000; step++) {
    const roll = random();
    if (roll < 0.005) {
      // A relist: a new state, some objects kept, some not.
      const list = keys.filter(() => random() < 0.5).map((key) => pod(key, pick(nodes), step));
      model.clear();
      for (const obj of list) model.set(obj.key, obj);
      index.replace(list);
    } else if (roll < 0.3) {
      const key = pick(keys);
      const prev = model.get(key);
      model.delete(key);
      index.change(prev, undefined);
    } else {
      const obj = pod(pick(keys), pick(nodes), step);
      const prev = model.get(obj.key);
      model.set(obj.key, obj);
      index.change(prev, obj);
    }
    if (step % 100 !== 0) continue;
    for (const node of ['node-a', 'node-b', 'node-c', '', 'node-none']) {
      const view = index.view(node);
      checkInvariants(view);
      const want = [...model.values()]
        .filter((o) => (o.fields['spec.nodeName'] ?? '') === node)
        .map((o) => o.key)
        .sort();
      assert.deepEqual(
        [...view.values()].map((o) => o.key),
        want,
        `seed ${String(seed)}, step ${String(step)}, node "${node}"`,
      );
      for (const key of want) assert.equal(view.get(key), model.get(key), `the current object of ${key}`);
    }
  }
});

test('field index: a view is a snapshot: later changes do not alter it', () => {
  const index = newFieldIndex('spec.nodeName');
  index.replace([pod('a/1', 'n1', 1), pod('a/2', 'n1', 1)]);
  const before = index.view('n1');
  index.change(pod('a/1', 'n1', 1), pod('a/1', 'n2', 2));
  index.change(undefined, pod('a/3', 'n1', 3));
  assert.deepEqual(
    [...before.values()].map((o) => o.key),
    ['a/1', 'a/2'],
  );
  assert.deepEqual(
    [...index.view('n1').values()].map((o) => o.key),
    ['a/2', 'a/3'],
  );
  assert.deepEqual(
    [...index.view('n2').values()].map((o) => o.resourceVersion),
    ['2'],
  );
});
