import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Clock } from '../../../src/clock/clock.ts';
import { newDelayingQueue } from '../../../src/workqueue/delaying-queue.ts';
import type { DelayingQueue } from '../../../src/workqueue/delaying-queue.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

/** Takes every queued item, in order, marking each done. */
async function drain<T>(q: DelayingQueue<T>): Promise<T[]> {
  const items: T[] = [];
  while (q.len() > 0) {
    const result = await q.get();
    assert.ok(!result.shutdown);
    items.push(result.item);
    q.done(result.item);
  }
  return items;
}

test('DelayingQueue: addAfter adds the item once its delay has passed', () => {
  const clock = new FakeClock();
  const q = newDelayingQueue<string>({ clock });
  q.addAfter('foo', 50);
  assert.equal(q.len(), 0);
  clock.step(49);
  assert.equal(q.len(), 0);
  clock.step(1);
  assert.equal(q.len(), 1);
  assert.equal(clock.waiters(), 0);
  q.shutDown();
});

test('DelayingQueue: addAfter with ms <= 0 adds at once', () => {
  const clock = new FakeClock();
  const q = newDelayingQueue<string>({ clock });
  q.addAfter('zero', 0);
  q.addAfter('negative', -5);
  assert.equal(q.len(), 2);
  assert.equal(clock.waiters(), 0);
  q.shutDown();
});

test('DelayingQueue: the same item added again with an earlier time moves up', () => {
  const clock = new FakeClock();
  const q = newDelayingQueue<string>({ clock });
  q.addAfter('foo', 50);
  q.addAfter('foo', 20);
  clock.step(20);
  assert.equal(q.len(), 1);
  clock.step(30);
  // The entry was moved, not duplicated: nothing more is added at 50 ms.
  assert.equal(q.len(), 1);
  q.shutDown();
});

test('DelayingQueue: the same item added again with a later time is ignored', async () => {
  const clock = new FakeClock();
  const q = newDelayingQueue<string>({ clock });
  q.addAfter('foo', 50);
  q.addAfter('foo', 70);
  clock.step(50);
  assert.deepEqual(await drain(q), ['foo']);
  clock.step(20);
  assert.equal(q.len(), 0);
  q.shutDown();
});

test('DelayingQueue: items are added in order of ready time, ties in order of addAfter', async () => {
  const clock = new FakeClock();
  const q = newDelayingQueue<string>({ clock });
  q.addAfter('c', 30);
  q.addAfter('a', 10);
  q.addAfter('b1', 20);
  q.addAfter('b2', 20);
  clock.step(30);
  assert.deepEqual(await drain(q), ['a', 'b1', 'b2', 'c']);
  q.shutDown();
});

test('DelayingQueue: many random delays come out sorted by ready time', async () => {
  const clock = new FakeClock();
  const q = newDelayingQueue<number>({ clock });
  let seed = 42;
  const random = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const readyAt = new Map<number, number>();
  for (let i = 0; i < 2000; i++) {
    const ms = 1 + Math.floor(random() * 10_000);
    const previous = readyAt.get(i % 500);
    readyAt.set(i % 500, Math.min(previous ?? Infinity, clock.now() + ms));
    q.addAfter(i % 500, ms);
    if (i % 100 === 0) clock.step(1);
  }
  clock.step(20_000);
  const order = await drain(q);
  assert.equal(order.length, 500);
  const times = order.map((item) => readyAt.get(item) ?? NaN);
  assert.deepEqual(
    times,
    [...times].sort((x, y) => x - y),
  );
  q.shutDown();
});

test('DelayingQueue: an item added directly while it waits is added again when its time comes', async () => {
  // delaying_queue.go: Add does not touch the waiting entry.
  const clock = new FakeClock();
  const q = newDelayingQueue<string>({ clock });
  q.addAfter('foo', 50);
  q.add('foo');
  assert.deepEqual(await drain(q), ['foo']);
  clock.step(50);
  assert.deepEqual(await drain(q), ['foo']);
  q.shutDown();
});

test('DelayingQueue: one timer at a time, never set further than 10 s', () => {
  const fake = new FakeClock();
  const timerDelays: number[] = [];
  const clock: Clock = {
    now: () => fake.now(),
    wallNow: () => fake.wallNow(),
    setTimeout: (fn, ms) => {
      timerDelays.push(ms);
      return fake.setTimeout(fn, ms);
    },
  };
  const q = newDelayingQueue<string>({ clock });
  q.addAfter('late', 25_000);
  q.addAfter('later', 120_000);
  assert.equal(fake.waiters(), 1);
  fake.step(10_000);
  assert.equal(q.len(), 0);
  assert.equal(fake.waiters(), 1);
  fake.step(15_000);
  assert.equal(q.len(), 1);
  q.addAfter('soon', 5);
  assert.equal(fake.waiters(), 1);
  fake.step(5);
  assert.equal(q.len(), 2);
  // Re-armed every 10 s at most; re-armed earlier when an earlier item arrives.
  assert.deepEqual(timerDelays, [10_000, 10_000, 5_000, 10_000, 5, 10_000]);
  q.shutDown();
});

test('DelayingQueue: shutDown clears the timer and drops waiting items; later addAfter is ignored', () => {
  const clock = new FakeClock();
  const q = newDelayingQueue<string>({ clock });
  q.addAfter('foo', 50);
  assert.equal(clock.waiters(), 1);
  q.shutDown();
  assert.equal(clock.waiters(), 0);
  q.addAfter('bar', 10);
  q.addAfter('baz', 0);
  assert.equal(clock.waiters(), 0);
  clock.step(100);
  assert.equal(q.len(), 0);
});

test('DelayingQueue: shutDownWithDrain clears the timer too', async () => {
  const clock = new FakeClock();
  const q = newDelayingQueue<string>({ clock });
  q.addAfter('foo', 50);
  await q.shutDownWithDrain();
  assert.equal(clock.waiters(), 0);
});

test('DelayingQueue: it wraps the queue it is given', async () => {
  const clock = new FakeClock();
  const inner = newDelayingQueue<string>({ clock });
  const q = newDelayingQueue<string>({ clock, queue: inner });
  q.addAfter('foo', 10);
  clock.step(10);
  assert.equal(inner.len(), 1);
  assert.deepEqual(await drain(inner), ['foo']);
  q.shutDown();
  assert.equal(inner.shuttingDown(), true);
});
