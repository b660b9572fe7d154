import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextCheck } from 'node:timers/promises';
import { newFlowTurns } from '../../../../src/server/pass-through/flow-turns.ts';

test('flow turns: a flow starts its share of a turn at once; the rest waits for later turns, flows in turn, each in its order', async () => {
  const turns = newFlowTurns(2);
  const started: string[] = [];
  const enter = (flow: string, name: string): Promise<void> => {
    const wait = turns.enter(flow);
    if (wait === undefined) {
      started.push(name);
      return Promise.resolve();
    }
    return wait.then(() => {
      started.push(name);
    });
  };
  // One turn: the flood's first two start, its other four wait; the quiet flow's one starts at once.
  const all = [...['a1', 'a2', 'a3', 'a4', 'a5', 'a6'].map((n) => enter('attacker', n)), enter('good', 'g1')];
  assert.deepEqual(started, ['a1', 'a2', 'g1']);
  assert.equal(turns.waiting(), 4);
  // The next turn: two more of the flood; a quiet flow's request arriving meanwhile never waits.
  await nextCheck();
  assert.deepEqual(started.slice(3), ['a3', 'a4']);
  await enter('good', 'g2');
  assert.equal(started.at(-1), 'g2');
  await Promise.all(all);
  assert.deepEqual(started, ['a1', 'a2', 'g1', 'a3', 'a4', 'g2', 'a5', 'a6']);
  assert.equal(turns.waiting(), 0);
  // A flow whose requests wait goes behind them: its order is kept.
  const order: string[] = [];
  const waits = ['x1', 'x2', 'x3', 'x4', 'x5'].map((n) => (turns.enter('f') ?? Promise.resolve()).then(() => order.push(n)));
  await Promise.all(waits);
  assert.deepEqual(order, ['x1', 'x2', 'x3', 'x4', 'x5']);
});

test('flow turns: the counts are per turn: a flow that sent its share may send again in the next turn without waiting', async () => {
  const turns = newFlowTurns(1);
  assert.equal(turns.enter('f'), undefined);
  assert.notEqual(turns.enter('f'), undefined);
  await nextCheck();
  await nextCheck();
  assert.equal(turns.waiting(), 0);
  await nextCheck();
  assert.equal(turns.enter('f'), undefined);
});
