import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { newQueue } from '../../../src/workqueue/queue.ts';
import { seededRandom } from '../../helpers/prng.ts';

const WORKERS = 8;
const PRODUCERS = 2;
const ADDS = 100_000;
const KEYS = 10_000;

test('Queue: 8 async workers, 100k adds over 10k keys: each key is processed after its last add, never by two workers at once', async () => {
  const seed = Number(process.env.WORKQUEUE_SEED ?? 20_240_601);
  const random = seededRandom(seed);
  const q = newQueue<string>();
  const keys = Array.from({ length: KEYS }, (_, i) => `default/pod-${i}`);

  // Every key once, plus random duplicates, shuffled (Fisher-Yates).
  const adds = [...keys, ...Array.from({ length: ADDS - KEYS }, () => keys[Math.floor(random() * KEYS)] ?? '')];
  for (let i = adds.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [adds[i], adds[j]] = [adds[j] ?? '', adds[i] ?? ''];
  }

  /** Logical time: one tick per add and per start of processing. */
  let tick = 0;
  const lastAdd = new Map<string, number>();
  const lastStart = new Map<string, number>();
  const active = new Set<string>();
  let maxActive = 0;
  let overlaps = 0;
  let processed = 0;

  /** Yields nothing, a microtask, or a turn of the event loop, at random. */
  const pause = async (): Promise<void> => {
    const r = random();
    if (r < 0.3) return;
    if (r < 0.8) await Promise.resolve();
    else await nextTurn();
  };

  const worker = async (): Promise<void> => {
    for (;;) {
      const result = await q.get();
      if (result.shutdown) return;
      const key = result.item;
      if (active.has(key)) overlaps++;
      active.add(key);
      maxActive = Math.max(maxActive, active.size);
      lastStart.set(key, ++tick);
      processed++;
      const steps = Math.floor(random() * 4);
      for (let i = 0; i < steps; i++) await pause();
      active.delete(key);
      q.done(key);
    }
  };

  const producer = async (share: readonly string[]): Promise<void> => {
    for (const key of share) {
      lastAdd.set(key, ++tick);
      q.add(key);
      if (random() < 0.2) await pause();
    }
  };

  const workers = Array.from({ length: WORKERS }, () => worker());
  const perProducer = ADDS / PRODUCERS;
  await Promise.all(Array.from({ length: PRODUCERS }, (_, p) => producer(adds.slice(p * perProducer, (p + 1) * perProducer))));
  const drained = q.shutDownWithDrain();
  await Promise.all(workers);
  await drained;

  const context = `seed ${seed}`;
  assert.equal(overlaps, 0, `an item was processed by two workers at once (${context})`);
  assert.ok(maxActive > 1, `workers never overlapped, the test proves nothing (${context})`);
  const late = keys.filter((key) => (lastStart.get(key) ?? 0) < (lastAdd.get(key) ?? 0));
  assert.deepEqual(late, [], `keys not processed after their last add (${context})`);
  assert.ok(processed >= KEYS && processed <= ADDS, `processed ${processed} times (${context})`);
  assert.equal(q.len(), 0);
});
