import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newAnonymousRefusalLimits } from '../../../../src/server/pass-through/anonymous-refusals.ts';
import type { AnonymousPass } from '../../../../src/server/pass-through/anonymous-refusals.ts';
import { FakeClock } from '../../../helpers/fake-clock.ts';

/** The pass of a request let through (failing when it was refused). */
function pass(taken: AnonymousPass | number): AnonymousPass {
  if (typeof taken === 'number') assert.fail(`refused, Retry-After ${String(taken)}`);
  return taken;
}

test('anonymous refusals: only answers of 400 and more spend the address’s bucket; past it, Retry-After until a token is back', () => {
  const clock = new FakeClock();
  const limits = newAnonymousRefusalLimits({ qpsPerAddress: 0.5, burstPerAddress: 3, clock });
  for (let i = 0; i < 10; i++) pass(limits.take('10.0.0.1')).answered(200);
  for (const code of [401, 403, 404]) pass(limits.take('10.0.0.1')).answered(code);
  assert.equal(limits.take('10.0.0.1'), 2, 'one token refills in 2 s at 0.5 a second');
  assert.equal(limits.rejected(), 1);
  pass(limits.take('10.0.0.2')).answered(403);
  clock.step(1_000);
  assert.equal(limits.take('10.0.0.1'), 1, 'half a token back: 1 s to go');
  clock.step(1_000);
  const inFlight = pass(limits.take('10.0.0.1'));
  assert.equal(typeof limits.take('10.0.0.1'), 'number', 'a request in flight holds its token');
  inFlight.answered(200);
  inFlight.answered(403);
  pass(limits.take('10.0.0.1')).answered(403);
  assert.equal(limits.rejected(), 3);
});

test('anonymous refusals: the bucket never holds more than its burst; qps 0 is no limit; past maxAddresses the least recently used address starts full', () => {
  const clock = new FakeClock();
  const limits = newAnonymousRefusalLimits({ qpsPerAddress: 1, burstPerAddress: 2, maxAddresses: 2, clock });
  const first = pass(limits.take('a'));
  clock.step(60_000);
  first.answered(200);
  pass(limits.take('a')).answered(403);
  pass(limits.take('a')).answered(403);
  assert.equal(typeof limits.take('a'), 'number', 'a token given back at a full bucket is not kept');
  pass(limits.take('b')).answered(403);
  pass(limits.take('c')).answered(403);
  pass(limits.take('a')).answered(403);
  const unlimited = newAnonymousRefusalLimits({ qpsPerAddress: 0, burstPerAddress: 0, clock });
  for (let i = 0; i < 100; i++) pass(unlimited.take('a')).answered(403);
  assert.equal(unlimited.rejected(), 0);
});
