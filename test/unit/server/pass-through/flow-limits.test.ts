import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newFlowLimits } from '../../../../src/server/pass-through/flow-limits.ts';
import type { Seat } from '../../../../src/server/pass-through/flow-limits.ts';

function seat(taken: Seat | string): Seat {
  if (typeof taken === 'string') assert.fail(`refused: ${taken}`);
  return taken;
}

test('flow limits: each kind of seat is limited per flow, and one flow at its limit takes nothing from another', () => {
  const limits = newFlowLimits({ maxRequestsInflight: 2, maxWatches: 3, maxReviewsInflight: 1 });
  const requests = [seat(limits.take('10.0.0.1 alice', 'request')), seat(limits.take('10.0.0.1 alice', 'request'))];
  assert.equal(limits.take('10.0.0.1 alice', 'request'), 'requests-in-flight');
  const watches = [1, 2, 3].map(() => seat(limits.take('10.0.0.1 alice', 'watch')));
  assert.equal(limits.take('10.0.0.1 alice', 'watch'), 'watches');
  const review = seat(limits.take('10.0.0.1 alice', 'review'));
  assert.equal(limits.take('10.0.0.1 alice', 'review'), 'reviews-in-flight');
  // The kinds are counted apart: a flow at its watch limit still has its requests, and the reverse.
  // Another flow (another user at the same address, or the same user elsewhere) has all of its own.
  for (const other of ['10.0.0.1 bob', '10.0.0.2 alice', '10.0.0.1']) {
    seat(limits.take(other, 'request')).release();
    seat(limits.take(other, 'watch')).release();
    seat(limits.take(other, 'review')).release();
  }
  assert.deepEqual(limits.rejected(), { 'requests-in-flight': 1, watches: 1, 'reviews-in-flight': 1 });
  assert.deepEqual(limits.held(), { request: 2, watch: 3, review: 1 });
  // A seat released is a seat free; releasing twice frees one seat only.
  requests[0]?.release();
  requests[0]?.release();
  seat(limits.take('10.0.0.1 alice', 'request'));
  assert.equal(limits.take('10.0.0.1 alice', 'request'), 'requests-in-flight');
  for (const w of watches) w.release();
  review.release();
  seat(limits.take('10.0.0.1 alice', 'watch'));
});

test('flow limits: a flow is forgotten with its last seat; objects (connections) are flows as strings are; 0 is no limit', () => {
  const limits = newFlowLimits({ maxRequestsInflight: 1, maxWatches: 0, maxReviewsInflight: 0 });
  const connection = {};
  const a = seat(limits.take(connection, 'request'));
  assert.equal(limits.take(connection, 'request'), 'requests-in-flight');
  seat(limits.take({}, 'request')).release();
  const watches = Array.from({ length: 1000 }, () => seat(limits.take(connection, 'watch')));
  assert.equal(limits.flows(), 1);
  a.release();
  assert.equal(limits.flows(), 1, 'its watches still hold it');
  for (const w of watches) w.release();
  assert.equal(limits.flows(), 0, 'no seat held: nothing kept for it');
  assert.deepEqual(limits.held(), { request: 0, watch: 0, review: 0 });
});

test('flow limits: past maxFlows, new flows share one overflow flow with the same limits; the flows tracked keep their own', () => {
  const limits = newFlowLimits({ maxRequestsInflight: 2, maxWatches: 0, maxReviewsInflight: 0, maxFlows: 3 });
  const tracked = ['a', 'b', 'c'].map((flow) => seat(limits.take(flow, 'request')));
  assert.equal(limits.flows(), 3);
  // New flows d, e, f: two seats between them, then refused.
  const d = seat(limits.take('d', 'request'));
  seat(limits.take('e', 'request'));
  assert.equal(limits.take('f', 'request'), 'requests-in-flight');
  assert.equal(limits.flows(), 4, 'the tracked flows and the overflow: never more');
  // A tracked flow still has its second seat.
  seat(limits.take('a', 'request'));
  d.release();
  seat(limits.take('f', 'request'));
  // Once a tracked flow is gone, a new flow gets a place of its own again.
  tracked[1]?.release();
  seat(limits.take('g', 'request'));
  seat(limits.take('g', 'request'));
  assert.equal(limits.take('g', 'request'), 'requests-in-flight');
});
