import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SharingTable } from '../../../src/informer/sharing-table.ts';

test('SharingTable: a key seen again gets the first value; values in use stay shared across generations; memory stays bounded', () => {
  const table = new SharingTable<{ v: string }>(3);
  const a = { v: 'a' };
  assert.equal(table.share('a', a), a);
  assert.equal(table.share('a', { v: 'a' }), a, 'shared');
  // Values seen once flow through: the young generation turns over, the table never holds more than 2 x 3 keys.
  for (let i = 0; i < 100; i++) table.share(`unique-${String(i)}`, { v: String(i) });
  assert.ok(table.size <= 6, `size ${String(table.size)}`);
  assert.notEqual(table.share('a', { v: 'a' }), a, 'a value not used for two generations is no longer kept');
  // A value used at least once a generation stays shared.
  const b = { v: 'b' };
  table.share('b', b);
  for (let i = 0; i < 20; i++) {
    table.share(`x-${String(i)}`, { v: '' });
    assert.equal(table.share('b', { v: 'b' }), b, `still shared after ${String(i + 1)} others`);
  }
});
