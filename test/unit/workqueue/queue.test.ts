import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { newQueue } from '../../../src/workqueue/queue.ts';
import type { GetResult, Queue } from '../../../src/workqueue/queue.ts';

const PENDING = Symbol('pending');

/** The promise's value if it is settled by the next turn of the event loop, else PENDING. */
async function peek<V>(promise: Promise<V>): Promise<V | typeof PENDING> {
  return Promise.race([promise, nextTurn().then((): typeof PENDING => PENDING)]);
}

/** Gets an item that must be available now. */
async function mustGet<T>(q: Queue<T>): Promise<T> {
  const result = await peek(q.get());
  assert.notEqual(result, PENDING, 'get() should not wait');
  assert.ok(result !== PENDING && !result.shutdown, 'get() should return an item');
  return result.item;
}

test('Queue: items are handed out in the order they were added', async () => {
  const q = newQueue<string>();
  for (const item of ['a', 'b', 'c', 'd']) q.add(item);
  assert.equal(q.len(), 4);
  const got = [await mustGet(q), await mustGet(q), await mustGet(q), await mustGet(q)];
  assert.deepEqual(got, ['a', 'b', 'c', 'd']);
  assert.equal(q.len(), 0);
});

test('Queue: an item added 1,000 times while queued is processed once', async () => {
  const q = newQueue<string>();
  for (let i = 0; i < 1000; i++) q.add('foo');
  assert.equal(q.len(), 1);
  assert.equal(await mustGet(q), 'foo');
  q.done('foo');
  assert.equal(q.len(), 0);
  assert.equal(await peek(q.get()), PENDING);
  q.shutDown();
});

test('Queue: an item added while processing is processed again after done, never concurrently', async () => {
  const q = newQueue<string>();
  q.add('foo');
  assert.equal(await mustGet(q), 'foo');
  q.add('foo');
  q.add('foo');
  // While 'foo' is being processed, a second worker must not get it.
  assert.equal(q.len(), 0);
  const second = q.get();
  assert.equal(await peek(second), PENDING);
  q.done('foo');
  assert.deepEqual(await peek(second), { shutdown: false, item: 'foo' });
  q.done('foo');
  // Processed twice in all: the two adds while processing collapsed into one.
  assert.equal(q.len(), 0);
  assert.equal(await peek(q.get()), PENDING);
  q.shutDown();
});

test('Queue: an item re-added while processing keeps its place behind items added before it', async () => {
  const q = newQueue<string>();
  q.add('foo');
  assert.equal(await mustGet(q), 'foo');
  q.add('foo');
  q.add('bar');
  q.done('foo');
  assert.equal(await mustGet(q), 'bar');
  assert.equal(await mustGet(q), 'foo');
});

test('Queue: waiting getters are served in the order they called', async () => {
  const q = newQueue<number>();
  const first = q.get();
  const second = q.get();
  q.add(1);
  q.add(2);
  assert.deepEqual(await first, { shutdown: false, item: 1 });
  assert.deepEqual(await second, { shutdown: false, item: 2 });
});

test('Queue: done of an item that is not being processed changes nothing', async () => {
  const q = newQueue<string>();
  q.add('foo');
  q.done('foo');
  assert.equal(q.len(), 1);
  assert.equal(await mustGet(q), 'foo');
  q.done('foo');
  q.done('foo');
  assert.equal(q.len(), 0);
});

test('Queue: items are compared by identity', async () => {
  const q = newQueue<object>();
  const a = { key: 'x' };
  q.add(a);
  q.add({ key: 'x' });
  q.add(a);
  assert.equal(q.len(), 2);
  assert.equal(await mustGet(q), a);
});

test('Queue: shutDown ignores later adds and releases waiting getters', async () => {
  const q = newQueue<string>();
  const waiting = [q.get(), q.get()];
  assert.equal(q.shuttingDown(), false);
  q.shutDown();
  assert.equal(q.shuttingDown(), true);
  const results: GetResult<string>[] = await Promise.all(waiting);
  assert.deepEqual(results, [{ shutdown: true }, { shutdown: true }]);
  q.add('late');
  assert.equal(q.len(), 0);
  assert.deepEqual(await peek(q.get()), { shutdown: true });
});

test('Queue: after shutDown, items already queued are still handed out, then the shutdown', async () => {
  const q = newQueue<string>();
  q.add('a');
  q.add('b');
  q.shutDown();
  assert.equal(await mustGet(q), 'a');
  assert.equal(await mustGet(q), 'b');
  assert.deepEqual(await peek(q.get()), { shutdown: true });
});

test('Queue: shutDownWithDrain resolves only after the last done', async () => {
  const q = newQueue<string>();
  q.add('a');
  q.add('b');
  const a = await mustGet(q);
  const b = await mustGet(q);
  const drained = q.shutDownWithDrain();
  assert.equal(q.shuttingDown(), true);
  assert.equal(await peek(drained), PENDING);
  q.done(a);
  assert.equal(await peek(drained), PENDING);
  q.done(b);
  assert.equal(await peek(drained), undefined);
});

test('Queue: shutDownWithDrain resolves at once when nothing is being processed', async () => {
  const q = newQueue<string>();
  q.add('queued');
  assert.equal(await peek(q.shutDownWithDrain()), undefined);
});

test('Queue: an item re-added while processing is handed out again during shutDownWithDrain', async () => {
  // queue_test.go TestQueueDrainageUsingShutDownWithDrainWithDirtyItem
  const q = newQueue<string>();
  q.add('foo');
  const gotten = await mustGet(q);
  q.add('foo');
  const drained = q.shutDownWithDrain();
  assert.deepEqual(await peek(q.get()), { shutdown: true });
  q.done(gotten);
  assert.equal(await mustGet(q), 'foo');
  q.done('foo');
  assert.deepEqual(await peek(q.get()), { shutdown: true });
  assert.equal(await peek(drained), undefined);
});

test('Queue: shutDown after shutDownWithDrain stops the drain from waiting', async () => {
  const q = newQueue<string>();
  q.add('stuck');
  await mustGet(q);
  const drained = q.shutDownWithDrain();
  assert.equal(await peek(drained), PENDING);
  q.shutDown();
  assert.equal(await peek(drained), undefined);
});

test('Queue: len counts queued items, not those being processed', async () => {
  const q = newQueue<string>();
  q.add('a');
  q.add('b');
  assert.equal(q.len(), 2);
  await mustGet(q);
  assert.equal(q.len(), 1);
  q.add('a');
  assert.equal(q.len(), 1);
});
