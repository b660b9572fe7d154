import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cacheStatus } from '../../../src/cache/cache-checks.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import { decodeObject } from '../../../src/informer/object.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { CONFIGMAPS as SPEC } from '../../helpers/resource-specs.ts';

test('cache status: a restored cache not proven current yet says so, with no staleness figure; once proven, how long ago', () => {
  const clock = new FakeClock();
  const fields = selectableFieldsFor('', 'configmaps', true);
  const saved = newWatchCache({ spec: SPEC, fields, clock });
  const cm = decodeObject(
    Buffer.from('{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"5"}}'),
  );
  saved.store.replace([cm], '7');
  const state = saved.savedState();
  assert.ok(state !== undefined);
  const restored = newWatchCache({ spec: SPEC, fields, clock });
  restored.restore(state);
  const before = cacheStatus('cache-configmaps', restored, undefined, clock.now());
  assert.equal(before.heardAgoMs, undefined);
  assert.match(before.state, /1 objects at RV 7, not proven current yet$/);
  restored.proven(7n, clock.now());
  clock.step(3000);
  const after = cacheStatus('cache-configmaps', restored, undefined, clock.now());
  assert.equal(after.heardAgoMs, 3000);
  assert.match(after.state, /heard from 3 s ago$/);
});
