import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  defaultControllerRateLimiter,
  newBucketRateLimiter,
  newItemExponentialFailureRateLimiter,
  newItemFastSlowRateLimiter,
  newMaxOfRateLimiter,
  newWithMaxWaitRateLimiter,
} from '../../../src/workqueue/default-rate-limiters.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

test('ItemExponentialFailureRateLimiter: delays 5, 10, 20 ms … capped at the max, per item', () => {
  const limiter = newItemExponentialFailureRateLimiter<string>(5, 1000);
  const delays = Array.from({ length: 10 }, () => limiter.when('one'));
  assert.deepEqual(delays, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
  assert.equal(limiter.numRequeues('one'), 10);
  assert.equal(limiter.when('two'), 5);
  assert.equal(limiter.when('two'), 10);
  assert.equal(limiter.numRequeues('two'), 2);
  limiter.forget('one');
  assert.equal(limiter.numRequeues('one'), 0);
  assert.equal(limiter.when('one'), 5);
});

test('ItemExponentialFailureRateLimiter: no overflow at large exponents', () => {
  // default_rate_limiters_test.go TestItemExponentialFailureRateLimiterOverFlow
  const limiter = newItemExponentialFailureRateLimiter<string>(1, 1_000_000);
  for (let i = 0; i < 5; i++) limiter.when('one');
  assert.equal(limiter.when('one'), 32);
  for (let i = 0; i < 2000; i++) limiter.when('overflow1');
  assert.equal(limiter.when('overflow1'), 1_000_000);

  const fine = newItemExponentialFailureRateLimiter<string>(1e-6, 1000);
  for (let i = 0; i < 2000; i++) {
    const delay = fine.when('overflow2');
    assert.ok(Number.isFinite(delay) && delay >= 0 && delay <= 1000, `delay ${delay} at attempt ${i}`);
  }
  assert.equal(fine.when('overflow2'), 1000);

  const zero = newItemExponentialFailureRateLimiter<string>(0, 1000);
  for (let i = 0; i < 1100; i++) assert.equal(zero.when('z'), 0);
});

test('ItemFastSlowRateLimiter: fast delays for N attempts, then slow ones', () => {
  const limiter = newItemFastSlowRateLimiter<string>(5, 10_000, 3);
  assert.deepEqual(
    Array.from({ length: 5 }, () => limiter.when('one')),
    [5, 5, 5, 10_000, 10_000],
  );
  assert.equal(limiter.numRequeues('one'), 5);
  assert.equal(limiter.when('two'), 5);
  limiter.forget('one');
  assert.equal(limiter.numRequeues('one'), 0);
  assert.equal(limiter.when('one'), 5);
});

test('MaxOfRateLimiter: picks the larger delay, counts with every limiter, forgets in all', () => {
  // default_rate_limiters_test.go TestMaxOfRateLimiter
  const limiter = newMaxOfRateLimiter<string>(newItemFastSlowRateLimiter(5, 3000, 3), newItemExponentialFailureRateLimiter(1, 1000));
  assert.deepEqual(
    Array.from({ length: 5 }, () => limiter.when('one')),
    [5, 5, 5, 3000, 3000],
  );
  assert.equal(limiter.numRequeues('one'), 5);
  // The exponential limiter wins once it passes the fast delay: 1, 2, 4, 8 (> 5).
  const other = newMaxOfRateLimiter<string>(newItemFastSlowRateLimiter(5, 3000, 10), newItemExponentialFailureRateLimiter(1, 1000));
  assert.deepEqual(
    Array.from({ length: 5 }, () => other.when('x')),
    [5, 5, 5, 8, 16],
  );
  limiter.forget('one');
  assert.equal(limiter.numRequeues('one'), 0);
  assert.equal(limiter.when('one'), 5);
});

test('WithMaxWaitRateLimiter: caps the delays of the limiter it wraps', () => {
  const limiter = newWithMaxWaitRateLimiter<string>(newItemExponentialFailureRateLimiter(100, 100_000), 300);
  assert.deepEqual(
    Array.from({ length: 4 }, () => limiter.when('one')),
    [100, 200, 300, 300],
  );
  assert.equal(limiter.numRequeues('one'), 4);
  limiter.forget('one');
  assert.equal(limiter.numRequeues('one'), 0);
});

test('BucketRateLimiter: a burst of 100 at once, then 10 per second', () => {
  const clock = new FakeClock();
  const limiter = newBucketRateLimiter<string>(10, 100, clock);
  for (let i = 0; i < 100; i++) assert.equal(limiter.when(`item-${i}`), 0, `call ${i} within the burst`);
  // Past the burst, each call reserves the next token: 100 ms apart at 10 qps.
  assert.equal(limiter.when('a'), 100);
  assert.equal(limiter.when('b'), 200);
  assert.equal(limiter.when('c'), 300);
  // After 300 ms the three reserved tokens are paid; the bucket is empty, the next waits 100 ms.
  clock.step(300);
  assert.equal(limiter.when('d'), 100);
  // After a long idle time the bucket refills to its burst, no more.
  clock.step(60_000);
  for (let i = 0; i < 100; i++) assert.equal(limiter.when('again'), 0);
  assert.equal(limiter.when('again'), 100);
  assert.equal(limiter.numRequeues('again'), 0);
});

test('BucketRateLimiter: steady 10/s is never delayed', () => {
  const clock = new FakeClock();
  const limiter = newBucketRateLimiter<string>(10, 1, clock);
  assert.equal(limiter.when('x'), 0);
  for (let i = 0; i < 50; i++) {
    clock.step(100);
    assert.equal(limiter.when('x'), 0);
  }
  assert.equal(limiter.when('x'), 100);
});

test('BucketRateLimiter: an infinite rate never delays; a zero burst never allows', () => {
  const clock = new FakeClock();
  const unlimited = newBucketRateLimiter<string>(Infinity, 0, clock);
  for (let i = 0; i < 1000; i++) assert.equal(unlimited.when('x'), 0);
  const closed = newBucketRateLimiter<string>(10, 0, clock);
  assert.equal(closed.when('x'), Infinity);
});

test('defaultControllerRateLimiter: the max of per-item exponential (5 ms … 1000 s) and the bucket (10 qps, burst 100)', () => {
  const clock = new FakeClock();
  const limiter = defaultControllerRateLimiter<string>(clock);
  // Per item: 5, 10, 20 ms while the bucket has tokens.
  assert.equal(limiter.when('one'), 5);
  assert.equal(limiter.when('one'), 10);
  assert.equal(limiter.when('one'), 20);
  assert.equal(limiter.numRequeues('one'), 3);
  // Exhaust the bucket (3 tokens used above): the bucket's delay then wins over a fresh item's 5 ms.
  for (let i = 0; i < 97; i++) limiter.when(`other-${i}`);
  assert.equal(limiter.when('fresh'), 100);
  // The exponential cap: 1000 s.
  for (let i = 0; i < 40; i++) limiter.when('failing');
  assert.equal(limiter.when('failing'), 1_000_000);
  limiter.forget('one');
  assert.equal(limiter.numRequeues('one'), 0);
});
