import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RUNTIME_FLOOR_BYTES, budgetSizes, estimateObjects, newByteBudget, newMemoryBudget } from '../../../src/memory/memory-budget.ts';
import type { HeldObjects } from '../../../src/memory/memory-budget.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

const MiB = 1024 * 1024;

test('memory budget: the working memory (limit less the runtime floor) shared out by the rule', () => {
  const sizes = budgetSizes(160 * MiB);
  const working = 160 * MiB - RUNTIME_FLOOR_BYTES;
  assert.equal(sizes.workingBytes, working);
  assert.equal(sizes.bodiesBytes, Math.floor(working * 0.3));
  assert.equal(sizes.piecePoolBytes, Math.floor(working * 0.05));
  assert.equal(sizes.unsentWatchBytes, Math.floor(working * 0.1));
  assert.equal(sizes.objectsBytes, Math.floor(working * 0.4));
  assert.equal(sizes.snapshots, 4);
  assert.equal(sizes.decisionCachesBytes, Math.floor(working * 0.02));
  assert.equal(sizes.collectAboveBytes, 112 * MiB);
  // Enough room for a 10,000-pod LIST body (16.5 MB) shared by its readers.
  assert.ok(sizes.bodiesBytes > 16.5e6);
  // A large limit: the fixed bounds of no limit at most.
  const large = budgetSizes(64 * 1024 * MiB);
  assert.equal(large.unsentWatchBytes, 128 * MiB);
  assert.equal(large.piecePoolBytes, 256 * MiB);
  assert.equal(large.sharedListsBytes, 256 * MiB);
  assert.equal(large.snapshots, 16);
  // The decision caches have a fixed cap: 8 MiB, reached from deploy/node's 512 MiB limit on.
  assert.equal(large.decisionCachesBytes, 8 * MiB);
  assert.equal(budgetSizes(512 * MiB).decisionCachesBytes, 8 * MiB);
  // A limit below the floor still leaves something to work with.
  assert.equal(budgetSizes(64 * MiB).workingBytes, 16 * MiB);
});

test('memory budget: no limit known keeps the fixed bounds and refuses nothing', () => {
  const sizes = budgetSizes(undefined);
  assert.equal(sizes.bodiesBytes, Number.POSITIVE_INFINITY);
  assert.equal(sizes.objectsBytes, Number.POSITIVE_INFINITY);
  assert.equal(sizes.unsentWatchBytes, 128 * MiB);
  assert.equal(sizes.decisionCachesBytes, 8 * MiB);
  assert.equal(sizes.collectAboveBytes, undefined);
  const budget = newMemoryBudget({ limit: undefined });
  budget.countObjectsOf(() => ({ objects: 1e6, bytes: 2e9, windowEvents: 0 }));
  assert.equal(budget.admitsNewCache(), true);
  assert.equal(budget.bodies.tryTake(1e12), true);
  assert.match(budget.state(), /^no memory limit known; cached objects ~/);
});

test('ByteBudget: takes what fits; a waiter is served first come first served once bytes are given back', async () => {
  const clock = new FakeClock();
  const budget = newByteBudget(100, clock);
  assert.equal(budget.tryTake(60), true);
  assert.equal(budget.tryTake(50), false, 'past the bound');
  const big = budget.take(80, 1_000);
  const small = budget.take(10, 1_000);
  // Nobody overtakes a waiter: 10 would fit, but 80 waits before it.
  assert.equal(budget.tryTake(10), false);
  budget.give(60);
  assert.equal(await big, true);
  assert.equal(await small, true);
  assert.equal(budget.used(), 90);
});

test('ByteBudget: a waiter gives up after its wait (or its signal), and those behind it are served', async () => {
  const clock = new FakeClock();
  const budget = newByteBudget(100, clock);
  budget.force(95);
  const head = budget.take(50, 1_000);
  const behind = budget.take(5, 5_000);
  clock.step(1_000);
  assert.equal(await head, false);
  assert.equal(await behind, true, 'served once the head gave up');
  const aborted = new AbortController();
  const gone = budget.take(50, 10_000, aborted.signal);
  aborted.abort();
  assert.equal(await gone, false);
  assert.equal(await budget.take(101, 10_000), false, 'more than the bound never fits');
  assert.equal(budget.used(), 100);
});

test('memory budget: near the objects’ budget new caches are refused, said once in the log; admitted again below', () => {
  const log: string[] = [];
  const budget = newMemoryBudget({ limit: { bytes: 160 * MiB, source: 'test' }, log: (level, message) => log.push(`${level} ${message}`) });
  let held: HeldObjects = { objects: 0, bytes: 0, windowEvents: 0 };
  budget.countObjectsOf(() => held);
  assert.equal(budget.admitsNewCache(), true);
  const objects = budget.sizes.objectsBytes;
  // 92% of the objects' budget: pressure.
  held = { objects: 10_000, bytes: (objects * 0.92) / 1.0 - 10_000 * 300, windowEvents: 0 };
  assert.ok(Math.abs(estimateObjects(held) - objects * 0.92) < 1);
  assert.equal(budget.admitsNewCache(), false);
  assert.equal(budget.admitsNewCache(), false);
  assert.equal(budget.underPressure(), true);
  assert.equal(budget.refusedCaches(), 2);
  assert.match(budget.state(), /new caches refused/);
  // 85%: still refused (hysteresis), nothing logged again.
  held = { objects: 10_000, bytes: objects * 0.85 - 10_000 * 300, windowEvents: 0 };
  assert.equal(budget.admitsNewCache(), false);
  // 70%: admitted again.
  held = { objects: 10_000, bytes: objects * 0.7 - 10_000 * 300, windowEvents: 0 };
  assert.equal(budget.admitsNewCache(), true);
  assert.deepEqual(
    log.map((l) => l.split(':')[0]),
    ['warn cached objects near their memory budget', 'info cached objects back within their memory budget'],
  );
});

test('memory budget: the objects’ estimate counts window events as versions of the average object', () => {
  assert.equal(estimateObjects({ objects: 0, bytes: 0, windowEvents: 5 }), 0);
  assert.equal(estimateObjects({ objects: 100, bytes: 170_000, windowEvents: 100 }), 200 * (1_700 + 300));
});

test('memory budget: encodings derived from the cached objects (protobuf messages) count in their estimate', () => {
  assert.equal(estimateObjects({ objects: 100, bytes: 170_000, windowEvents: 0, derivedBytes: 130_000 }), 100 * (1_700 + 300) + 130_000);
});
