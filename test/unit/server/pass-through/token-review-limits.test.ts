import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newTokenReviewLimits } from '../../../../src/server/pass-through/token-review-limits.ts';
import type { Refusal, ReviewSeat, TokenReviewLimitsOptions } from '../../../../src/server/pass-through/token-review-limits.ts';
import { FakeClock } from '../../../helpers/fake-clock.ts';

function room(taken: ReviewSeat | Refusal): ReviewSeat {
  assert.ok('release' in taken, `refused: ${'reason' in taken ? taken.reason : ''}`);
  return taken;
}

function refusal(taken: ReviewSeat | Refusal): Refusal {
  assert.ok(!('release' in taken), 'a review was let through');
  return taken;
}

/** A token never presented before. */
let presented = 0;
function fresh(): string {
  return `token-${String(presented++)}`;
}

const unlimited: TokenReviewLimitsOptions = { qpsPerAddress: 0, burstPerAddress: 0, qps: 0, burst: 0, maxInflight: 0 };

test('token review limits: an address gets its burst, then one review per 1/qps, with Retry-After until then', () => {
  const clock = new FakeClock();
  const limits = newTokenReviewLimits({ ...unlimited, qpsPerAddress: 0.5, burstPerAddress: 3, clock });
  // Refused tokens spend the bucket: three reviews (the burst), then none.
  for (let i = 0; i < 3; i++) room(limits.take('10.0.0.1', fresh())).release();
  assert.deepEqual(refusal(limits.take('10.0.0.1', fresh())), { reason: 'token-reviews-per-address', retryAfterSeconds: 2 });
  // Another address has its own bucket.
  room(limits.take('10.0.0.2', fresh())).release();
  clock.step(1000);
  assert.equal(refusal(limits.take('10.0.0.1', fresh())).retryAfterSeconds, 1, 'half a token: one more second');
  clock.step(1000);
  room(limits.take('10.0.0.1', fresh())).release();
  assert.equal(refusal(limits.take('10.0.0.1', fresh())).reason, 'token-reviews-per-address');
  assert.deepEqual(limits.rejected(), { 'token-reviews-per-address': 3, 'token-reviews': 0, 'token-reviews-in-flight': 0 });
});

test('token review limits: a review that authenticates its token gives its tokens back, so valid tokens never drain a bucket', () => {
  const clock = new FakeClock();
  const limits = newTokenReviewLimits({ ...unlimited, qpsPerAddress: 1, burstPerAddress: 2, qps: 1, burst: 3, clock });
  // 100 valid tokens from one address (a NAT, hostNetwork pods, a test's loopback): never refused.
  for (let i = 0; i < 100; i++) room(limits.take('10.0.0.1', fresh())).authenticated();
  // Refused tokens then spend the address's burst of 2 ...
  room(limits.take('10.0.0.1', fresh())).release();
  room(limits.take('10.0.0.1', fresh())).release();
  assert.equal(refusal(limits.take('10.0.0.1', fresh())).reason, 'token-reviews-per-address');
  // ... and the proxy's: one left of 3, then the global refusal with its own Retry-After.
  room(limits.take('10.0.0.2', fresh())).release();
  assert.deepEqual(refusal(limits.take('10.0.0.3', fresh())), { reason: 'token-reviews', retryAfterSeconds: 1 });
  // authenticated() after release() gives nothing back.
  clock.step(1000);
  const late = room(limits.take('10.0.0.4', fresh()));
  late.release();
  late.authenticated();
  assert.equal(refusal(limits.take('10.0.0.5', fresh())).reason, 'token-reviews');
});

test('token review limits: reviews in flight are bounded, and a seat released (any outcome) frees its place', () => {
  const limits = newTokenReviewLimits({ ...unlimited, maxInflight: 2, clock: new FakeClock() });
  const first = room(limits.take('10.0.0.1', fresh()));
  const second = room(limits.take('10.0.0.2', fresh()));
  assert.deepEqual(refusal(limits.take('10.0.0.3', fresh())), { reason: 'token-reviews-in-flight', retryAfterSeconds: 1 });
  assert.equal(limits.inflight(), 2);
  first.authenticated();
  second.release();
  second.release();
  assert.equal(limits.inflight(), 0);
  room(limits.take('10.0.0.3', fresh()));
});

test('token review limits: buckets are bounded in number, and a bucket refilled to its burst is forgotten', () => {
  const clock = new FakeClock();
  const limits = newTokenReviewLimits({ ...unlimited, qpsPerAddress: 1, burstPerAddress: 2, maxAddresses: 100, clock });
  for (let i = 0; i < 1000; i++) room(limits.take(`10.0.${String(i >> 8)}.${String(i & 255)}`, fresh())).release();
  assert.equal(limits.addresses(), 100, 'at most maxAddresses: the least recently used go');
  // The most recent address kept its state: one token left of 2.
  room(limits.take('10.0.3.231', fresh())).release();
  assert.equal(refusal(limits.take('10.0.3.231', fresh())).reason, 'token-reviews-per-address');
  // Once full again (2 s), buckets are dropped as the Map's head is seen by later reviews.
  clock.step(2000);
  for (let i = 0; i < 60; i++) room(limits.take('10.9.9.9', fresh())).authenticated();
  assert.ok(limits.addresses() <= 2, `${String(limits.addresses())} buckets held once refilled`);
});

test('token review limits: a token authenticated within the hour is reviewed again past an empty bucket, a flood from its address notwithstanding', () => {
  const clock = new FakeClock();
  const limits = newTokenReviewLimits({ ...unlimited, qpsPerAddress: 1, burstPerAddress: 2, qps: 1, burst: 3, clock });
  room(limits.take('10.0.0.1', 'valid')).authenticated();
  // A flood of made-up tokens from the same address drains its bucket (and two of the proxy's three).
  room(limits.take('10.0.0.1', fresh())).release();
  room(limits.take('10.0.0.1', fresh())).release();
  assert.equal(refusal(limits.take('10.0.0.1', fresh())).reason, 'token-reviews-per-address');
  // Reviewed again (its result gone from the token cache), the valid token passes the empty buckets and spends nothing.
  clock.step(100);
  for (let i = 0; i < 3; i++) room(limits.take('10.0.0.1', 'valid')).authenticated();
  assert.equal(refusal(limits.take('10.0.0.1', fresh())).reason, 'token-reviews-per-address');
  // A token refused is not vouched for: it spent the proxy's last token.
  const refused = fresh();
  room(limits.take('10.0.0.9', refused)).release();
  assert.equal(refusal(limits.take('10.0.0.9', refused)).reason, 'token-reviews');
  // After the hour, the valid token meets the buckets again.
  clock.step(61 * 60_000);
  for (let i = 0; i < 2; i++) room(limits.take('10.0.0.1', fresh())).release();
  assert.equal(refusal(limits.take('10.0.0.1', 'valid')).reason, 'token-reviews-per-address');
});
