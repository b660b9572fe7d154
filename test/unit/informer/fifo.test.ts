import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FifoClosedError, RequeueError } from '../../../src/informer/delta-fifo.ts';
import type { FIFO } from '../../../src/informer/fifo.ts';
import { newFIFO } from '../../../src/informer/fifo.ts';
import { isPending, obj, settles } from '../../helpers/scripted-lister-watcher.ts';

/** Pops one object as `key@rv`. */
async function popOne(f: FIFO): Promise<string> {
  const o = await settles(
    f.pop(() => undefined),
    'pop()',
  );
  return `${o.key}@${o.resourceVersion}`;
}

test('FIFO: an object added again keeps only its latest value, in its first place', async () => {
  const f = newFIFO();
  f.add(obj('ns', 'a', '1'));
  f.add(obj('ns', 'b', '2'));
  f.update(obj('ns', 'a', '3'));
  f.add(obj('ns', 'a', '4'));
  assert.deepEqual(f.listKeys(), ['ns/a', 'ns/b']);
  assert.equal(f.len(), 2);
  assert.equal(f.getByKey('ns/a')?.resourceVersion, '4');
  assert.equal(await popOne(f), 'ns/a@4');
  assert.equal(await popOne(f), 'ns/b@2');
  assert.equal(f.len(), 0);
});

test('FIFO: delete drops the queued object; pop skips it', async () => {
  const f = newFIFO();
  f.add(obj('ns', 'a', '1'));
  f.add(obj('ns', 'b', '2'));
  f.delete(obj('ns', 'a', '1'));
  assert.equal(f.getByKey('ns/a'), undefined);
  assert.deepEqual(f.listKeys(), ['ns/b']);
  assert.equal(await popOne(f), 'ns/b@2');
  assert.equal(await isPending(f.pop(() => undefined)), true, 'nothing left to pop');
  f.close();
});

test('FIFO: replace swaps the whole contents', async () => {
  const f = newFIFO();
  f.add(obj('ns', 'old', '1'));
  f.add(obj('ns', 'b', '1'));
  f.replace([obj('ns', 'b', '5'), obj('ns', 'c', '5')], '5');
  assert.deepEqual(f.listKeys(), ['ns/b', 'ns/c']);
  assert.equal(await popOne(f), 'ns/b@5');
  assert.equal(await popOne(f), 'ns/c@5');
  assert.equal(f.len(), 0);
});

test('FIFO: addIfNotPresent adds only keys not queued', async () => {
  const f = newFIFO();
  f.add(obj('ns', 'a', '2'));
  f.addIfNotPresent(obj('ns', 'a', '1'));
  f.addIfNotPresent(obj('ns', 'b', '1'));
  assert.deepEqual(f.listKeys(), ['ns/a', 'ns/b']);
  assert.equal(await popOne(f), 'ns/a@2');
  assert.equal(await popOne(f), 'ns/b@1');
});

test('FIFO: hasSynced once the first replace has been popped', async () => {
  const f = newFIFO();
  assert.equal(f.hasSynced(), false);
  f.replace([obj('ns', 'a', '1'), obj('ns', 'b', '1')], '1');
  assert.equal(f.hasSynced(), false);
  assert.equal(await popOne(f), 'ns/a@1');
  assert.equal(f.hasSynced(), false);
  assert.equal(await popOne(f), 'ns/b@1');
  assert.equal(f.hasSynced(), true);

  const empty = newFIFO();
  empty.replace([], '1');
  assert.equal(empty.hasSynced(), true);

  const added = newFIFO();
  added.add(obj('ns', 'a', '1'));
  assert.equal(added.hasSynced(), true, 'populated by an add, with no initial list to wait for');
});

test('FIFO: a RequeueError puts the object back unless a newer one was queued', async () => {
  const f = newFIFO();
  f.add(obj('ns', 'a', '1'));
  await assert.rejects(
    f.pop(() => {
      throw new RequeueError();
    }),
    RequeueError,
  );
  assert.equal(f.getByKey('ns/a')?.resourceVersion, '1');

  await assert.rejects(
    f.pop(() => {
      f.add(obj('ns', 'a', '2'));
      throw new RequeueError();
    }),
    RequeueError,
  );
  assert.equal(f.getByKey('ns/a')?.resourceVersion, '2');
  assert.equal(f.len(), 1);
});

test('FIFO: close releases a waiting pop; queued objects are still popped after close', async () => {
  const f = newFIFO();
  const waiting = f.pop(() => undefined);
  assert.equal(await isPending(waiting), true);
  f.close();
  await assert.rejects(settles(waiting, 'pop() after close'), FifoClosedError);

  const g = newFIFO();
  g.add(obj('ns', 'a', '1'));
  g.close();
  assert.equal(await popOne(g), 'ns/a@1');
  await assert.rejects(
    g.pop(() => undefined),
    FifoClosedError,
  );
});
