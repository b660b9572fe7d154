import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UnsentHolder } from '../../../src/memory/unsent-budget.ts';
import { newUnsentBudget } from '../../../src/memory/unsent-budget.ts';

/** A holder whose unsent figure the test sets; closing it releases its share, as a watcher does. */
function holder(
  budget: ReturnType<typeof newUnsentBudget>,
  name: string,
  closed: string[],
  connection?: object,
): UnsentHolder & { bytes: number } {
  const h = {
    connection,
    bytes: 0,
    unsentBytes: () => h.bytes,
    closeForSlowness: () => {
      closed.push(name);
      h.bytes = 0;
      budget.release(h);
    },
  };
  return h;
}

test('UnsentBudget: the sum of the reported figures; under the budget nobody is closed', () => {
  const budget = newUnsentBudget(100);
  const closed: string[] = [];
  const a = holder(budget, 'a', closed);
  const b = holder(budget, 'b', closed);
  budget.report(a, (a.bytes = 40));
  budget.report(b, (b.bytes = 60));
  assert.equal(budget.total(), 100);
  budget.report(a, (a.bytes = 10));
  assert.equal(budget.total(), 70);
  budget.release(b);
  assert.equal(budget.total(), 10);
  assert.deepEqual(closed, []);
});

test('UnsentBudget: past the budget the largest holders are closed until the sum fits', () => {
  const budget = newUnsentBudget(100);
  const closed: string[] = [];
  const small = holder(budget, 'small', closed);
  const large = holder(budget, 'large', closed);
  const middle = holder(budget, 'middle', closed);
  budget.report(small, (small.bytes = 10));
  budget.report(large, (large.bytes = 70));
  budget.report(middle, (middle.bytes = 50));
  assert.deepEqual(closed, ['large'], 'the largest goes first, and one is enough');
  assert.equal(budget.total(), 60);
});

test('UnsentBudget: figures are measured again before anyone is closed (a connection may have drained since its report)', () => {
  const budget = newUnsentBudget(100);
  const closed: string[] = [];
  const drained = holder(budget, 'drained', closed);
  const busy = holder(budget, 'busy', closed);
  budget.report(drained, (drained.bytes = 90));
  drained.bytes = 0; // sent since, without a report
  budget.report(busy, (busy.bytes = 50));
  assert.deepEqual(closed, []);
  assert.equal(budget.total(), 50);
});

test('UnsentBudget: the streams of one connection are bounded together; the largest closes, the others and other connections go on', () => {
  const budget = newUnsentBudget(1_000, 100);
  const closed: string[] = [];
  const session = {};
  const other = {};
  const slow = holder(budget, 'slow', closed, session);
  const quick = holder(budget, 'quick', closed, session);
  const elsewhere = holder(budget, 'elsewhere', closed, other);
  const alone = holder(budget, 'alone', closed);
  budget.report(elsewhere, (elsewhere.bytes = 90));
  budget.report(alone, (alone.bytes = 150));
  budget.report(quick, (quick.bytes = 30));
  budget.report(slow, (slow.bytes = 60));
  assert.deepEqual(closed, [], 'each connection within its bound; a holder of no shared connection is not bounded by it');
  budget.report(slow, (slow.bytes = 80));
  assert.deepEqual(closed, ['slow'], "past the connection's bound its largest stream is closed, and only it");
  assert.equal(budget.total(), 90 + 150 + 30);
  budget.report(quick, (quick.bytes = 99));
  assert.deepEqual(closed, ['slow'], 'the connection fits again with its one stream left');
});

test("UnsentBudget: a connection's figures are measured again before any of its streams is closed", () => {
  const budget = newUnsentBudget(1_000, 100);
  const closed: string[] = [];
  const session = {};
  const a = holder(budget, 'a', closed, session);
  const b = holder(budget, 'b', closed, session);
  budget.report(a, (a.bytes = 60));
  a.bytes = 0; // drained since its report
  budget.report(b, (b.bytes = 50));
  assert.deepEqual(closed, []);
  assert.equal(budget.total(), 50);
});
