import assert from 'node:assert/strict';
import { test } from 'node:test';
import { anonymousBytes, startCollectionValve } from '../../../src/memory/collection-valve.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

test('collection valve: collects while anonymous memory is past the threshold, at most twice a second', (t) => {
  const clock = new FakeClock();
  let anon = 100;
  let collected = 0;
  const valve = startCollectionValve({
    thresholdBytes: 150,
    anonymousBytes: () => anon,
    collect: () => {
      collected++;
      anon -= 10;
    },
    clock,
  });
  t.after(() => {
    valve.stop();
  });
  clock.step(1_000);
  assert.equal(collected, 0, 'below the threshold: nothing');
  anon = 200;
  clock.step(100);
  assert.equal(collected, 1);
  clock.step(400);
  assert.equal(collected, 1, 'not again within 500 ms');
  clock.step(100);
  assert.equal(collected, 2);
  anon = 120;
  clock.step(5_000);
  assert.equal(collected, 2, 'back below: no more');
  assert.equal(valve.collections(), 2);
  valve.stop();
  anon = 1_000;
  clock.step(5_000);
  assert.equal(collected, 2, 'stopped');
});

test('collection valve: anonymous memory is read from /proc/self/statm', () => {
  const bytes = anonymousBytes();
  assert.ok(bytes !== undefined && bytes > 1024 * 1024, `this process holds anonymous memory: ${String(bytes)}`);
  assert.ok(bytes < process.memoryUsage.rss(), 'less than its resident set, which counts its code pages too');
});
