import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newDelayingQueue } from '../../../src/workqueue/delaying-queue.ts';
import { defaultControllerRateLimiter, newItemExponentialFailureRateLimiter } from '../../../src/workqueue/default-rate-limiters.ts';
import { newRateLimitingQueue } from '../../../src/workqueue/rate-limiting-queue.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

test('RateLimitingQueue: addRateLimited waits as long as the limiter says; forget resets the count', async () => {
  // rate_limiting_queue_test.go TestRateLimitingQueue
  const clock = new FakeClock();
  const q = newRateLimitingQueue<string>(newItemExponentialFailureRateLimiter(1, 1000), { clock });

  q.addRateLimited('one');
  clock.step(0);
  assert.equal(q.len(), 0);
  clock.step(1);
  assert.equal(q.len(), 1);
  const first = await q.get();
  assert.deepEqual(first, { shutdown: false, item: 'one' });
  q.done('one');

  q.addRateLimited('one');
  clock.step(1);
  assert.equal(q.len(), 0);
  clock.step(1);
  assert.equal(q.len(), 1);
  assert.equal(q.numRequeues('one'), 2);

  q.addRateLimited('two');
  assert.equal(q.numRequeues('two'), 1);

  q.forget('one');
  assert.equal(q.numRequeues('one'), 0);
  assert.equal(q.numRequeues('two'), 1);
  q.shutDown();
  assert.equal(clock.waiters(), 0);
});

test('RateLimitingQueue: a failing item is retried at 5, 10, 20 ms with the default controller limiter', async () => {
  const clock = new FakeClock();
  const q = newRateLimitingQueue<string>(defaultControllerRateLimiter(clock), { clock });
  const retriedAfter: number[] = [];
  q.add('flaky');
  for (let attempt = 0; attempt < 4; attempt++) {
    const result = await q.get();
    assert.ok(!result.shutdown);
    q.addRateLimited(result.item);
    q.done(result.item);
    let waited = 0;
    while (q.len() === 0) {
      clock.step(1);
      waited++;
    }
    retriedAfter.push(waited);
  }
  assert.deepEqual(retriedAfter, [5, 10, 20, 40]);
  q.shutDown();
});

test('RateLimitingQueue: it wraps the delaying queue it is given', () => {
  const clock = new FakeClock();
  const delayingQueue = newDelayingQueue<string>({ clock });
  const q = newRateLimitingQueue<string>(newItemExponentialFailureRateLimiter(10, 1000), { delayingQueue });
  q.addRateLimited('one');
  clock.step(10);
  assert.equal(delayingQueue.len(), 1);
  q.shutDown();
  assert.equal(delayingQueue.shuttingDown(), true);
  assert.equal(clock.waiters(), 0);
});
