import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DeltaFIFO, Deltas } from '../../../src/informer/delta-fifo.ts';
import { FifoClosedError, RequeueError, newDeltaFIFO } from '../../../src/informer/delta-fifo.ts';
import { newIndexer } from '../../../src/informer/indexer.ts';
import { isDeletedFinalStateUnknown } from '../../../src/informer/object.ts';
import { isPending, obj, settles } from '../../helpers/scripted-lister-watcher.ts';

type Delta = Deltas[number];

/** `Type key@rv`, or `Type key@?rv` for a DeletedFinalStateUnknown whose last known state had that RV. */
function describe(deltas: Deltas | undefined): string[] {
  return (deltas ?? []).map((d) => {
    const o = d.object;
    if (isDeletedFinalStateUnknown(o)) return `${d.type} ${o.key}@?${o.obj?.resourceVersion ?? 'none'}`;
    return `${d.type} ${o.key}@${o.resourceVersion}`;
  });
}

/** Pops one key, returning its Deltas as described and the isInInitialList flag pop passed. */
async function popOne(f: DeltaFIFO): Promise<{ deltas: string[]; initial: boolean }> {
  let initial: boolean | undefined;
  const deltas = await settles(
    f.pop((_d, isInInitialList) => {
      initial = isInInitialList;
    }),
    'pop()',
  );
  assert.notEqual(initial, undefined, 'pop() called process');
  return { deltas: describe(deltas), initial: initial === true };
}

test('DeltaFIFO: Added, Updated and Deleted deltas accumulate per key in order; keys pop first in, first out', async () => {
  const f = newDeltaFIFO();
  f.add(obj('ns', 'a', '1'));
  f.add(obj('ns', 'b', '2'));
  f.update(obj('ns', 'a', '3'));
  f.delete(obj('ns', 'a', '4'));
  f.update(obj('ns', 'b', '5'));

  assert.deepEqual(f.listKeys(), ['ns/a', 'ns/b']);
  assert.equal(f.len(), 2);
  assert.deepEqual((await popOne(f)).deltas, ['Added ns/a@1', 'Updated ns/a@3', 'Deleted ns/a@4']);
  assert.deepEqual((await popOne(f)).deltas, ['Added ns/b@2', 'Updated ns/b@5']);
  assert.equal(f.len(), 0);
  assert.equal(f.get('ns/a'), undefined);
});

test('DeltaFIFO: get() hands out a copy of the queued Deltas', () => {
  const f = newDeltaFIFO();
  f.add(obj('ns', 'a', '1'));
  const copy = f.get('ns/a') as Delta[];
  copy.push({ type: 'Sync', object: obj('ns', 'a', '9') });
  assert.deepEqual(describe(f.get('ns/a')), ['Added ns/a@1']);
});

test('DeltaFIFO: two consecutive deletes collapse, a known final state wins over DeletedFinalStateUnknown', async () => {
  const known = newIndexer();
  for (const name of ['a', 'b', 'c']) known.add(obj('ns', name, '1'));
  const f = newDeltaFIFO({ knownObjects: known });

  // a: the watch's deletion (final state known) first, then the relist's DeletedFinalStateUnknown.
  f.delete(obj('ns', 'a', '5'));
  f.replace([obj('ns', 'b', '1'), obj('ns', 'c', '1')], '6');
  // b: the relist's DeletedFinalStateUnknown first, then a watch deletion with the final state.
  f.replace([obj('ns', 'c', '1')], '7');
  f.delete(obj('ns', 'b', '8'));
  // c: two DeletedFinalStateUnknown in a row: one is kept.
  f.replace([], '9');
  f.replace([], '10');

  assert.deepEqual((await popOne(f)).deltas, ['Deleted ns/a@5']);
  assert.deepEqual((await popOne(f)).deltas, ['Sync ns/b@1', 'Deleted ns/b@8']);
  assert.deepEqual((await popOne(f)).deltas, ['Sync ns/c@1', 'Sync ns/c@1', 'Deleted ns/c@?1']);
  assert.equal(f.len(), 0);
});

test('DeltaFIFO: a delete of a key neither queued nor known is ignored', () => {
  const known = newIndexer();
  known.add(obj('ns', 'known', '1'));
  const f = newDeltaFIFO({ knownObjects: known });
  f.delete(obj('ns', 'stranger', '2'));
  assert.equal(f.len(), 0);

  f.delete(obj('ns', 'known', '3'));
  f.add(obj('ns', 'queued', '4'));
  f.delete(obj('ns', 'queued', '5'));
  assert.deepEqual(f.listKeys(), ['ns/known', 'ns/queued']);
  assert.deepEqual(describe(f.get('ns/known')), ['Deleted ns/known@3']);
  assert.deepEqual(describe(f.get('ns/queued')), ['Added ns/queued@4', 'Deleted ns/queued@5']);

  // Without knownObjects, only the queue counts.
  const bare = newDeltaFIFO();
  bare.delete(obj('ns', 'x', '1'));
  assert.equal(bare.len(), 0);
});

test('DeltaFIFO: replace emits Sync deltas, or Replaced with emitDeltaTypeReplaced', () => {
  const sync = newDeltaFIFO();
  sync.replace([obj('ns', 'a', '1'), obj('ns', 'b', '2')], '2');
  assert.deepEqual(sync.listKeys(), ['ns/a', 'ns/b']);
  assert.deepEqual(describe(sync.get('ns/a')), ['Sync ns/a@1']);

  const replaced = newDeltaFIFO({ emitDeltaTypeReplaced: true });
  replaced.add(obj('ns', 'a', '1'));
  replaced.replace([obj('ns', 'a', '2'), obj('ns', 'b', '2')], '2');
  assert.deepEqual(describe(replaced.get('ns/a')), ['Added ns/a@1', 'Replaced ns/a@2']);
  assert.deepEqual(describe(replaced.get('ns/b')), ['Replaced ns/b@2']);
});

test('DeltaFIFO: replace emits DeletedFinalStateUnknown for queued keys missing from the list, with the newest queued object', () => {
  const f = newDeltaFIFO({ emitDeltaTypeReplaced: true });
  f.add(obj('ns', 'a', '1'));
  f.update(obj('ns', 'a', '2'));
  f.add(obj('ns', 'b', '3'));
  f.add(obj('ns', 'gone', '4'));
  f.delete(obj('ns', 'gone', '5')); // already queued as deleted with its final state
  f.replace([obj('ns', 'b', '6')], '6');

  assert.deepEqual(describe(f.get('ns/a')), ['Added ns/a@1', 'Updated ns/a@2', 'Deleted ns/a@?2']);
  assert.deepEqual(describe(f.get('ns/b')), ['Added ns/b@3', 'Replaced ns/b@6']);
  assert.deepEqual(describe(f.get('ns/gone')), ['Added ns/gone@4', 'Deleted ns/gone@5']);

  // A key whose newest queued delta is itself a DeletedFinalStateUnknown keeps the object inside it.
  f.replace([], '7');
  const a = f.get('ns/a')?.at(-1)?.object;
  assert.ok(a !== undefined && isDeletedFinalStateUnknown(a));
  assert.equal(a.obj?.resourceVersion, '2');
  assert.equal(isDeletedFinalStateUnknown(a.obj), false, 'not a DeletedFinalStateUnknown inside another');
});

test('DeltaFIFO: replace emits DeletedFinalStateUnknown for knownObjects keys missing from the list', () => {
  const known = newIndexer();
  known.add(obj('ns', 'kept', '1'));
  known.add(obj('ns', 'lost', '2'));
  known.add(obj('ns', 'queued', '3'));
  const f = newDeltaFIFO({ knownObjects: known, emitDeltaTypeReplaced: true });
  f.update(obj('ns', 'queued', '4'));
  f.replace([obj('ns', 'kept', '1')], '10');

  assert.deepEqual(f.listKeys(), ['ns/queued', 'ns/kept', 'ns/lost']);
  assert.deepEqual(describe(f.get('ns/kept')), ['Replaced ns/kept@1']);
  assert.deepEqual(describe(f.get('ns/lost')), ['Deleted ns/lost@?2']);
  // Known and queued: one deletion, from the queue pass, with the newest queued state.
  assert.deepEqual(describe(f.get('ns/queued')), ['Updated ns/queued@4', 'Deleted ns/queued@?4']);
});

test('DeltaFIFO: resync queues Sync only for known keys with nothing queued', () => {
  const known = newIndexer();
  known.add(obj('ns', 'a', '1'));
  known.add(obj('ns', 'b', '2'));
  const f = newDeltaFIFO({ knownObjects: known });
  f.update(obj('ns', 'b', '3'));
  f.resync();
  assert.deepEqual(f.listKeys(), ['ns/b', 'ns/a']);
  assert.deepEqual(describe(f.get('ns/a')), ['Sync ns/a@1']);
  assert.deepEqual(describe(f.get('ns/b')), ['Updated ns/b@3'], 'a Sync would overtake the queued update with an older state');

  const bare = newDeltaFIFO();
  bare.resync();
  assert.equal(bare.len(), 0);
});

test('DeltaFIFO: hasSynced once the first replace, its deletions included, has been popped; isInInitialList follows it', async () => {
  const known = newIndexer();
  known.add(obj('ns', 'old', '1'));
  const f = newDeltaFIFO({ knownObjects: known });
  assert.equal(f.hasSynced(), false);

  f.replace([obj('ns', 'a', '2'), obj('ns', 'b', '2')], '2');
  f.replace([obj('ns', 'a', '3'), obj('ns', 'b', '3')], '3'); // a second replace does not extend the initial population
  assert.equal(f.hasSynced(), false);
  assert.deepEqual(await popOne(f), { deltas: ['Sync ns/a@2', 'Sync ns/a@3'], initial: true });
  assert.equal(f.hasSynced(), false);
  assert.deepEqual(await popOne(f), { deltas: ['Sync ns/b@2', 'Sync ns/b@3'], initial: true });
  assert.equal(f.hasSynced(), false, 'the deletion of old is part of the initial population');
  assert.deepEqual(await popOne(f), { deltas: ['Deleted ns/old@?1'], initial: true });
  assert.equal(f.hasSynced(), true);

  f.add(obj('ns', 'c', '4'));
  assert.equal(f.hasSynced(), true);
  assert.deepEqual(await popOne(f), { deltas: ['Added ns/c@4'], initial: false });
});

test('DeltaFIFO: an empty first replace, or an add before any replace, makes it synced', () => {
  const empty = newDeltaFIFO();
  empty.replace([], '1');
  assert.equal(empty.hasSynced(), true);

  const added = newDeltaFIFO();
  added.add(obj('ns', 'a', '1'));
  assert.equal(added.hasSynced(), true);
  added.replace([obj('ns', 'b', '2')], '2');
  assert.equal(added.hasSynced(), true, 'a replace after the queue was populated is not an initial list');
});

test('DeltaFIFO: a RequeueError from process puts the Deltas back at the end of the queue', async () => {
  const f = newDeltaFIFO();
  f.add(obj('ns', 'a', '1'));
  f.update(obj('ns', 'a', '2'));
  f.add(obj('ns', 'b', '3'));
  await assert.rejects(
    f.pop(() => {
      throw new RequeueError(new Error('not now'));
    }),
    RequeueError,
  );
  assert.deepEqual(f.listKeys(), ['ns/b', 'ns/a']);
  assert.deepEqual(describe(f.get('ns/a')), ['Added ns/a@1', 'Updated ns/a@2']);

  // Any other error drops the item.
  await assert.rejects(
    f.pop(() => {
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.deepEqual(f.listKeys(), ['ns/a']);
});

test('DeltaFIFO: a RequeueError does not requeue when the key was queued again meanwhile', async () => {
  const f = newDeltaFIFO();
  f.add(obj('ns', 'a', '1'));
  await assert.rejects(
    f.pop(() => {
      f.update(obj('ns', 'a', '2'));
      throw new RequeueError();
    }),
    RequeueError,
  );
  assert.deepEqual(f.listKeys(), ['ns/a']);
  assert.deepEqual(describe(f.get('ns/a')), ['Updated ns/a@2']);
});

test('DeltaFIFO: pop waits for an item; close releases a waiting pop with FifoClosedError', async () => {
  const f = newDeltaFIFO();
  const waiting = f.pop(() => undefined);
  assert.equal(await isPending(waiting), true);
  f.add(obj('ns', 'a', '1'));
  assert.deepEqual(describe(await settles(waiting, 'pop() after add')), ['Added ns/a@1']);

  const blocked = f.pop(() => undefined);
  assert.equal(await isPending(blocked), true);
  f.close();
  assert.equal(f.isClosed(), true);
  await assert.rejects(settles(blocked, 'pop() after close'), FifoClosedError);
});

test('DeltaFIFO: items queued before close are still popped after it', async () => {
  const f = newDeltaFIFO();
  f.add(obj('ns', 'a', '1'));
  f.add(obj('ns', 'b', '2'));
  f.close();
  assert.deepEqual((await popOne(f)).deltas, ['Added ns/a@1']);
  assert.deepEqual((await popOne(f)).deltas, ['Added ns/b@2']);
  await assert.rejects(
    f.pop(() => undefined),
    FifoClosedError,
  );
});

test('DeltaFIFO: order holds across thousands of adds and pops (queue compaction)', async () => {
  const f = newDeltaFIFO();
  const popped: string[] = [];
  let next = 0;
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 1500; i++) f.add(obj('ns', `o${String(next++)}`, '1'));
    for (let i = 0; i < 1200; i++) popped.push((await popOne(f)).deltas[0] ?? '');
  }
  while (f.len() > 0) popped.push((await popOne(f)).deltas[0] ?? '');
  assert.equal(popped.length, next);
  assert.deepEqual(
    popped,
    Array.from({ length: next }, (_, i) => `Added ns/o${String(i)}@1`),
  );
});
