import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Indexer } from '../../../src/informer/indexer.ts';
import { LABEL_INDEX, NAMESPACE_INDEX, defaultIndexers, fieldIndex, newIndexer } from '../../../src/informer/indexer.ts';
import type { DeletedFinalStateUnknown } from '../../../src/informer/object.ts';
import { objectName } from '../../../src/informer/object.ts';
import { obj } from '../../helpers/scripted-lister-watcher.ts';

const [NODE_INDEX, nodeIndexFunc] = fieldIndex('spec.nodeName');

function newPodIndexer(): Indexer {
  return newIndexer({ ...defaultIndexers, [NODE_INDEX]: nodeIndexFunc });
}

function sorted(values: readonly string[]): string[] {
  return [...values].sort();
}

test('Indexer: namespace, label and field indices follow add, update and delete', () => {
  const idx = newPodIndexer();
  idx.add(obj('ns1', 'a', '1', { app: 'web' }, { nodeName: 'n1' }));
  idx.add(obj('ns1', 'b', '2', { app: 'db' }, { nodeName: 'n1' }));
  idx.add(obj('ns2', 'c', '3', { app: 'web', tier: 'front' }, { nodeName: 'n2' }));

  assert.deepEqual(sorted(idx.indexKeys(NAMESPACE_INDEX, 'ns1')), ['ns1/a', 'ns1/b']);
  assert.deepEqual(sorted(idx.indexKeys(LABEL_INDEX, 'app=web')), ['ns1/a', 'ns2/c']);
  assert.deepEqual(idx.indexKeys(LABEL_INDEX, 'tier=front'), ['ns2/c']);
  assert.deepEqual(sorted(idx.indexKeys(NODE_INDEX, 'n1')), ['ns1/a', 'ns1/b']);

  // a moves node and changes label; c loses a label.
  idx.update(obj('ns1', 'a', '4', { app: 'db' }, { nodeName: 'n2' }));
  idx.update(obj('ns2', 'c', '5', { app: 'web' }, { nodeName: 'n2' }));
  assert.deepEqual(idx.indexKeys(LABEL_INDEX, 'app=web'), ['ns2/c']);
  assert.deepEqual(sorted(idx.indexKeys(LABEL_INDEX, 'app=db')), ['ns1/a', 'ns1/b']);
  assert.deepEqual(idx.indexKeys(NODE_INDEX, 'n1'), ['ns1/b']);
  assert.deepEqual(sorted(idx.indexKeys(NODE_INDEX, 'n2')), ['ns1/a', 'ns2/c']);
  assert.deepEqual(sorted(idx.listIndexFuncValues(LABEL_INDEX)), ['app=db', 'app=web']);

  idx.delete(obj('ns1', 'b', '2'));
  assert.deepEqual(idx.indexKeys(NODE_INDEX, 'n1'), []);
  assert.deepEqual(idx.indexKeys(NAMESPACE_INDEX, 'ns1'), ['ns1/a']);
  assert.deepEqual(sorted(idx.listIndexFuncValues(NODE_INDEX)), ['n2']);

  // An object without the field is in no value of its index.
  idx.add(obj('ns1', 'pending', '6'));
  assert.deepEqual(sorted(idx.listIndexFuncValues(NODE_INDEX)), ['n2']);
  assert.deepEqual(sorted(idx.indexKeys(NAMESPACE_INDEX, 'ns1')), ['ns1/a', 'ns1/pending']);
});

test('Indexer: a cluster-scoped object is indexed under the empty namespace', () => {
  const idx = newIndexer();
  idx.add(obj('', 'node-1', '1'));
  assert.equal(idx.getByKey('node-1')?.key, 'node-1');
  assert.deepEqual(idx.indexKeys(NAMESPACE_INDEX, ''), ['node-1']);
});

test('Indexer: replace rebuilds contents and indices and records the resourceVersion', () => {
  const idx = newPodIndexer();
  idx.add(obj('ns1', 'a', '1', { app: 'web' }, { nodeName: 'n1' }));
  idx.add(obj('ns1', 'b', '1', { app: 'db' }));
  idx.replace([obj('ns2', 'b', '7', { app: 'web' }, { nodeName: 'n3' }), obj('ns2', 'c', '7')], '7');

  assert.equal(idx.resourceVersion(), '7');
  assert.deepEqual(sorted(idx.listKeys()), ['ns2/b', 'ns2/c']);
  assert.deepEqual(idx.listIndexFuncValues(NAMESPACE_INDEX), ['ns2']);
  assert.deepEqual(idx.listIndexFuncValues(LABEL_INDEX), ['app=web']);
  assert.deepEqual(idx.listIndexFuncValues(NODE_INDEX), ['n3']);
  assert.deepEqual(idx.indexKeys(LABEL_INDEX, 'app=db'), []);

  idx.updateResourceVersion?.('9');
  assert.equal(idx.resourceVersion(), '9');
});

test('Indexer: byIndex, indexKeys, listKeys, getByKey, get, list and size', () => {
  const idx = newIndexer();
  const a = obj('ns1', 'a', '1', { app: 'web' });
  const b = obj('ns2', 'b', '2', { app: 'web' });
  idx.add(a);
  idx.add(b);

  assert.equal(idx.size(), 2);
  assert.deepEqual(sorted(idx.listKeys()), ['ns1/a', 'ns2/b']);
  assert.equal(idx.getByKey('ns1/a'), a);
  assert.equal(idx.get(obj('ns2', 'b', 'other')), b);
  assert.equal(idx.getByKey('ns1/nope'), undefined);
  assert.deepEqual(sorted(idx.list().map((o) => o.key)), ['ns1/a', 'ns2/b']);
  assert.deepEqual(
    idx.byIndex(LABEL_INDEX, 'app=web').map((o) => o.key),
    ['ns1/a', 'ns2/b'],
  );
  assert.deepEqual(idx.byIndex(NAMESPACE_INDEX, 'ns3'), []);
  assert.equal(idx.hasIndex(NAMESPACE_INDEX), true);
  assert.equal(idx.hasIndex('nope'), false);
  assert.throws(() => idx.byIndex('nope', 'x'), /Index with name nope does not exist/);
  assert.throws(() => idx.indexKeys('nope', 'x'), /does not exist/);
});

test('Indexer: a delete by key alone (DeletedFinalStateUnknown) removes the object and its index entries', () => {
  const idx = newIndexer();
  idx.add(obj('ns', 'a', '1', { app: 'web' }));
  const tombstone: DeletedFinalStateUnknown = { kind: 'DeletedFinalStateUnknown', key: 'ns/a', obj: undefined };
  idx.delete(tombstone);
  assert.equal(idx.size(), 0);
  assert.deepEqual(idx.listIndexFuncValues(LABEL_INDEX), []);
  idx.delete({ key: 'ns/never' });
  assert.equal(idx.size(), 0);
});

test('Indexer: empty index values are removed, so 10k adds and deletes leave no values behind', () => {
  const idx = newPodIndexer();
  for (let i = 0; i < 10_000; i++) {
    const o = obj(`ns-${String(i)}`, `pod-${String(i)}`, String(i), { run: String(i) }, { nodeName: `node-${String(i)}` });
    idx.add(o);
    // Changing every indexed value leaves the old values empty too.
    idx.update(obj(`ns-${String(i)}`, `pod-${String(i)}`, String(i), { run: `${String(i)}b` }, { nodeName: `node-${String(i)}b` }));
    idx.delete(o);
  }
  assert.equal(idx.size(), 0);
  for (const index of [NAMESPACE_INDEX, LABEL_INDEX, NODE_INDEX]) assert.deepEqual(idx.listIndexFuncValues(index), [], index);
});

test('Indexer: addIndexers is refused once objects are held, and for a name already used', () => {
  const idx = newIndexer();
  idx.addIndexers({ byName: (o) => [objectName(o)] });
  assert.equal(idx.hasIndex('byName'), true);
  assert.throws(() => {
    idx.addIndexers({ [NAMESPACE_INDEX]: (o) => [o.namespace] });
  }, /indexer conflict: namespace/);

  const a = obj('ns', 'a', '1');
  idx.add(a);
  assert.deepEqual(idx.indexKeys('byName', 'a'), ['ns/a']);
  assert.throws(() => {
    idx.addIndexers({ late: (o) => [o.resourceVersion] });
  }, /cannot add indexers to running index/);
  assert.equal(idx.hasIndex('late'), false);

  idx.delete(a);
  idx.addIndexers({ late: (o) => [o.resourceVersion] });
  assert.equal(idx.hasIndex('late'), true);
});
