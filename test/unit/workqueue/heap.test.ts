import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newHeap } from '../../../src/workqueue/heap.ts';

interface Entry {
  index: number;
  key: number;
}

test('Heap: pops in key order, also after keys change in place with fix', () => {
  const heap = newHeap<Entry>((a, b) => a.key < b.key);
  let seed = 3;
  const random = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const entries: Entry[] = Array.from({ length: 1000 }, () => ({ index: -1, key: Math.floor(random() * 10_000) }));
  for (const entry of entries) heap.push(entry);
  assert.ok(entries.every((e) => e.index >= 0));
  for (let i = 0; i < 300; i++) {
    const entry = entries[Math.floor(random() * entries.length)];
    assert.ok(entry !== undefined);
    entry.key = random() < 0.5 ? Math.floor(entry.key / 2) : entry.key + 5000;
    heap.fix(entry);
  }
  const popped: number[] = [];
  for (let e = heap.pop(); e !== undefined; e = heap.pop()) {
    assert.equal(e.index, -1);
    popped.push(e.key);
  }
  assert.equal(popped.length, entries.length);
  assert.deepEqual(
    popped,
    entries.map((e) => e.key).sort((a, b) => a - b),
  );
  assert.equal(heap.peek(), undefined);
  assert.equal(heap.length, 0);
});
