import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientProcessesNeeded, clientsWereBottleneck } from '../../../bench/watch-fanout.ts';
import type { ClientSample } from '../../../bench/watch-client.ts';

const sample = (loopP99Ms: number, share: number): ClientSample => ({
  loopP99Ms,
  loopMaxMs: loopP99Ms * 2,
  cpuSeconds: share * 10,
  seconds: 10,
  events: 1000,
});

test('client processes: half a core of events each, at least one', () => {
  assert.equal(clientProcessesNeeded(100, 20e-6), 1);
  assert.equal(clientProcessesNeeded(20_000, 20e-6), 1);
  assert.equal(clientProcessesNeeded(25_001, 20e-6), 2);
  assert.equal(clientProcessesNeeded(100_000, 20e-6), 4);
});

test('the clients were the bottleneck when a loop lagged a quarter of the p99, or a process was nearly busy', () => {
  assert.equal(clientsWereBottleneck([sample(2, 0.3)], 10), false, 'under the 5 ms floor');
  assert.equal(clientsWereBottleneck([sample(6, 0.3)], 100), false, 'a small part of the p99');
  assert.equal(clientsWereBottleneck([sample(2, 0.3), sample(30, 0.3)], 100), true, 'one process lagging is enough');
  assert.equal(clientsWereBottleneck([sample(2, 0.85)], 100), true, 'one process at 0.85 of a core');
});
