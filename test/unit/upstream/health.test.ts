import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PROBE_INTERVAL_MS, newUpstreamHealth } from '../../../src/upstream/health.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { flush, flushUntil } from '../../helpers/scripted-lister-watcher.ts';

test('UpstreamHealth: one probe of /readyz per interval, however many wait; the first 200 wakes them all', async () => {
  let ready = false;
  const upstream = newFakeUpstream({ respond: () => jsonResponse(ready ? 200 : 500, {}) });
  const clock = new FakeClock();
  const health = newUpstreamHealth(upstream.client, clock);
  let woken = 0;
  for (let i = 0; i < 5; i++) void health.whenReachable(new AbortController().signal).then(() => woken++);
  await flushUntil('the first probe', () => upstream.paths.length === 1);
  assert.deepEqual(upstream.paths, ['/readyz'], 'one probe for five waiters');
  clock.step(PROBE_INTERVAL_MS);
  await flushUntil('the second probe', () => upstream.paths.length === 2);
  assert.equal(woken, 0, 'not ready yet');
  ready = true;
  clock.step(PROBE_INTERVAL_MS);
  await flushUntil('every waiter woken', () => woken === 5);
  assert.equal(upstream.paths.length, 3);
});

test('UpstreamHealth: a waiter that gives up leaves; with none left the probes stop', async () => {
  const upstream = newFakeUpstream({ respond: () => jsonResponse(503, {}) });
  const clock = new FakeClock();
  const health = newUpstreamHealth(upstream.client, clock);
  const abort = new AbortController();
  const waiting = health.whenReachable(abort.signal);
  await flushUntil('the first probe', () => upstream.paths.length === 1);
  abort.abort();
  await waiting;
  for (let i = 0; i < 3; i++) {
    clock.step(PROBE_INTERVAL_MS);
    await flush();
  }
  assert.ok(upstream.paths.length <= 2, `probes after everyone left: ${String(upstream.paths.length)}`);
});
