import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientProcessesNeeded, clientsWereBottleneck } from '../../../bench/watch-fanout.ts';
import type { ClientSample } from '../../../bench/watch-client.ts';

/** 10 s at 1 ms per loop turn, `stalls` of them late by `lateMs`. */
const sample = (lateMs: number, stalls: number, share: number): ClientSample => ({
  loopP99Ms: 1,
  loopMaxMs: 1 + lateMs,
  cpuSeconds: share * 10,
  seconds: 10,
  events: 1000,
  delays: [
    [1, 10_000 - stalls],
    [1 + lateMs, stalls],
  ],
});

test('client processes: half a core of events each, at least one', () => {
  assert.equal(clientProcessesNeeded(100, 20e-6), 1);
  assert.equal(clientProcessesNeeded(20_000, 20e-6), 1);
  assert.equal(clientProcessesNeeded(25_001, 20e-6), 2);
  assert.equal(clientProcessesNeeded(100_000, 20e-6), 4);
});

test('the clients were the bottleneck when a loop was a quarter of the p99 late for 1 % of the time, or a process was nearly busy', () => {
  assert.equal(clientsWereBottleneck([sample(4, 5000, 0.3)], 10), false, 'under the 5 ms floor, however often');
  assert.equal(clientsWereBottleneck([sample(20, 100, 0.3)], 100), false, '25 ms late never');
  assert.equal(clientsWereBottleneck([sample(30, 10, 0.3)], 100), false, '5 ms beyond it in 10 stalls: 0.05 s of 10 s');
  assert.equal(
    clientsWereBottleneck([sample(0, 0, 0.3), sample(700, 1, 0.3)], 500),
    true,
    'one 700 ms stall in one process: 0.575 s of 10 s',
  );
  assert.equal(clientsWereBottleneck([sample(0, 0, 0.85)], 100), true, 'one process at 0.85 of a core');
});
