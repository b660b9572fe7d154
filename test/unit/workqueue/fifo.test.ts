import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newFifo } from '../../../src/workqueue/fifo.ts';

test('Fifo: keeps order through growth, wrap-around and shrinking', () => {
  const fifo = newFifo<number>();
  const reference: number[] = [];
  let seed = 7;
  const random = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  let next = 0;
  // Phases of mostly pushes then mostly shifts, so that the buffer grows past 2^12 and shrinks back.
  for (let phase = 0; phase < 6; phase++) {
    const pushBias = phase % 2 === 0 ? 0.8 : 0.2;
    for (let i = 0; i < 10_000; i++) {
      if (random() < pushBias || reference.length === 0) {
        fifo.push(next);
        reference.push(next++);
      } else {
        assert.equal(fifo.shift(), reference.shift());
      }
      assert.equal(fifo.length, reference.length);
    }
  }
  while (reference.length > 0) assert.equal(fifo.shift(), reference.shift());
  assert.equal(fifo.length, 0);
  fifo.push(1);
  fifo.clear();
  assert.equal(fifo.length, 0);
  fifo.push(2);
  assert.equal(fifo.shift(), 2);
});
