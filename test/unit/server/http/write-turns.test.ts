import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newWriteTurns } from '../../../../src/server/http/write-turns.ts';

/** Holds the loop for `ms` (what a writer copying pieces does). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // copying
  }
}

test('write turns: the writers share one budget per loop turn; the next turn opens a new one', async () => {
  const turns = newWriteTurns();
  const mayWrite = (): boolean => turns.mayWrite();
  const nextTurn = (): Promise<void> => turns.nextTurn();
  await nextTurn(); // a turn of our own
  assert.equal(mayWrite(), true, 'the first writer of a turn may write');
  assert.equal(mayWrite(), true, 'so may the next, while the share lasts');
  busy(3);
  assert.equal(mayWrite(), false, 'a share spent by one writer is spent for all of them');
  assert.equal(mayWrite(), false);
  await nextTurn();
  assert.equal(mayWrite(), true, 'the next turn has a share of its own');
});

test('write turns: writers waiting for the next turn run in the order they yielded', async () => {
  const turns = newWriteTurns();
  const nextTurn = (): Promise<void> => turns.nextTurn();
  await nextTurn();
  const order: number[] = [];
  await Promise.all(
    [0, 1, 2].map(async (i) => {
      await nextTurn();
      order.push(i);
    }),
  );
  assert.deepEqual(order, [0, 1, 2]);
});
