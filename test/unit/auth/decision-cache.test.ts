import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ENTRY_OVERHEAD_BYTES,
  MAX_ENTRY_BYTES,
  PURGE_INTERVAL_MS,
  newDecisionCache,
  stringBytes,
} from '../../../src/auth/decision-cache.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

interface Kept {
  readonly allowed: boolean;
}

const valueBytes = (): number => 10;

test('decision cache: bounded in bytes (key, value and overhead), the least recently used out first', () => {
  const clock = new FakeClock();
  const cache = newDecisionCache<Kept>({ maxBytes: 64 * 1024, valueBytes, clock });
  const entry = (i: number): string => `key-${String(i).padStart(90, '0')}`;
  const each = 94 + 10 + ENTRY_OVERHEAD_BYTES;
  for (let i = 0; i < 1_000; i++) assert.equal(cache.set(entry(i), { allowed: false }, 30_000), true);
  assert.equal(cache.bytes(), Math.floor((64 * 1024) / each) * each);
  assert.ok(cache.bytes() <= cache.maxBytes);
  assert.equal(cache.size(), Math.floor((64 * 1024) / each));
  // The newest are kept, the oldest gone.
  assert.deepEqual(cache.get(entry(999)), { allowed: false });
  assert.equal(cache.get(entry(0)), undefined);
});

test('decision cache: an entry larger than maxEntryBytes is not kept, and displaces nothing', () => {
  const cache = newDecisionCache<Kept>({ maxBytes: 16 * 1024 * 1024, valueBytes, clock: new FakeClock() });
  assert.equal(cache.maxEntryBytes, MAX_ENTRY_BYTES);
  assert.equal(cache.set('small', { allowed: true }, 1_000), true);
  const large = 'n'.repeat(1024 * 1024);
  for (let i = 0; i < 100; i++) assert.equal(cache.set(`${large}${String(i)}`, { allowed: false }, 1_000), false);
  assert.equal(cache.size(), 1);
  assert.equal(cache.bytes(), 5 + 10 + ENTRY_OVERHEAD_BYTES);
  // A small cache keeps no entry above a sixteenth of it.
  const small = newDecisionCache<Kept>({ maxBytes: 16_000, valueBytes, clock: new FakeClock() });
  assert.equal(small.maxEntryBytes, 1_000);
  assert.equal(small.set('k'.repeat(1_000 - 10 - ENTRY_OVERHEAD_BYTES), { allowed: true }, 1_000), true);
  assert.equal(small.set('k'.repeat(1_001 - 10 - ENTRY_OVERHEAD_BYTES), { allowed: true }, 1_000), false);
});

test('decision cache: a key of characters past Latin-1 counts two bytes each, as V8 holds it', () => {
  assert.equal(stringBytes('abc\u00ff'), 4);
  assert.equal(stringBytes('abc\u0100'), 8);
  const cache = newDecisionCache<Kept>({ maxBytes: 1024 * 1024, valueBytes, clock: new FakeClock() });
  cache.set('\u4e2d'.repeat(100), { allowed: true }, 1_000);
  assert.equal(cache.bytes(), 200 + 10 + ENTRY_OVERHEAD_BYTES);
});

test('decision cache: entries expire at their TTL, and an idle cache drops them within the purge interval', () => {
  const clock = new FakeClock();
  const cache = newDecisionCache<Kept>({ maxBytes: 1024 * 1024, valueBytes, clock });
  assert.equal(clock.waiters(), 0, 'nothing kept: no purge scheduled');
  cache.set('denied', { allowed: false }, 30_000);
  cache.set('allowed', { allowed: true }, 300_000);
  assert.equal(cache.set('none', { allowed: true }, 0), false, 'a TTL of none is not kept');
  assert.equal(clock.waiters(), 1, 'one purge scheduled, however many entries');
  clock.step(30_000);
  assert.deepEqual(cache.get('denied'), { allowed: false }, 'kept to the end of its TTL (lruexpirecache: expired once after it)');
  clock.step(1);
  assert.equal(cache.get('denied'), undefined);
  assert.deepEqual(cache.get('allowed'), { allowed: true });
  // Nobody asks from now on: the purges still drop what expired.
  clock.step(300_000 + PURGE_INTERVAL_MS);
  assert.equal(cache.size(), 0);
  assert.equal(cache.bytes(), 0);
  assert.equal(clock.waiters(), 0, 'an empty cache schedules no purge');
  // It is used again as before.
  cache.set('again', { allowed: true }, 1_000);
  assert.deepEqual(cache.get('again'), { allowed: true });
  assert.equal(clock.waiters(), 1);
});
