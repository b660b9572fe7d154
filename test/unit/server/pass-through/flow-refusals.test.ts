import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isRefusal, newFlowRefusalLimits } from '../../../../src/server/pass-through/flow-refusals.ts';
import { FakeClock } from '../../../helpers/fake-clock.ts';

/** The function of a request let through (failing when it was refused). */
function pass(taken: ((statusCode: number) => void) | number): (statusCode: number) => void {
  if (typeof taken === 'number') assert.fail(`refused, Retry-After ${String(taken)}`);
  return taken;
}

test('flow refusals: a refusal is an answer of 4xx but 404, 409 and 429', () => {
  for (const code of [400, 401, 403, 405, 406, 410, 413, 414, 415, 422]) assert.equal(isRefusal(code), true, String(code));
  for (const code of [200, 201, 304, 404, 409, 429, 500, 503, 504]) assert.equal(isRefusal(code), false, String(code));
});

test('flow refusals: only refusals spend the flow’s bucket, once answered; past it, Retry-After until a token is back; other flows untouched', () => {
  const clock = new FakeClock();
  const limits = newFlowRefusalLimits({ qpsPerFlow: 0.5, burstPerFlow: 3, clock });
  const flow = '10.0.0.1 system:serviceaccount:a:b';
  for (let i = 0; i < 100; i++) pass(limits.take(flow))(i % 2 === 0 ? 200 : 404);
  const first = pass(limits.take(flow));
  first(410);
  first(410);
  pass(limits.take(flow))(400);
  pass(limits.take(flow))(403);
  assert.equal(limits.take(flow), 2, 'one token refills in 2 s at 0.5 a second');
  assert.equal(limits.rejected(), 1);
  pass(limits.take('10.0.0.2 system:serviceaccount:a:b'))(410);
  pass(limits.take('10.0.0.1 someone-else'))(410);
  clock.step(1_000);
  assert.equal(limits.take(flow), 1, 'half a token back: 1 s to go');
  clock.step(1_000);
  pass(limits.take(flow))(410);
  assert.equal(limits.rejected(), 2);
});

test('flow refusals: requests let through at once that are all refused leave the bucket owing, and the flow waits for it to refill', () => {
  const clock = new FakeClock();
  const limits = newFlowRefusalLimits({ qpsPerFlow: 10, burstPerFlow: 2, clock });
  const inFlight = Array.from({ length: 12 }, () => pass(limits.take('f')));
  for (const answered of inFlight) answered(410);
  assert.equal(limits.take('f'), 2, '10 tokens owed, one more to hold one: 11 at 10 a second, 2 s');
  clock.step(1_100);
  pass(limits.take('f'));
});

test('flow refusals: the bucket never holds more than its burst; qps 0 is no limit; past maxFlows the least recently used flow starts full', () => {
  const clock = new FakeClock();
  const limits = newFlowRefusalLimits({ qpsPerFlow: 1, burstPerFlow: 2, maxFlows: 2, clock });
  pass(limits.take('a'))(403);
  clock.step(60_000);
  pass(limits.take('a'))(403);
  pass(limits.take('a'))(403);
  assert.equal(typeof limits.take('a'), 'number', 'a minute refilled the bucket to its burst, no more');
  pass(limits.take('b'))(403);
  pass(limits.take('c'))(403);
  pass(limits.take('a'))(403);
  const unlimited = newFlowRefusalLimits({ qpsPerFlow: 0, burstPerFlow: 0, clock });
  for (let i = 0; i < 100; i++) pass(unlimited.take('a'))(403);
  assert.equal(unlimited.rejected(), 0);
});
