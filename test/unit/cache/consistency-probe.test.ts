import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'node:test';
import { newConsistencyProbe } from '../../../src/cache/consistency-probe.ts';

/** Probes out at once per type (consistency-probe.ts). */
const MAX_PROBES_IN_FLIGHT = 1;
import type { FakeWatchStream } from '../../helpers/fake-upstream-client.ts';
import { newFakeUpstream } from '../../helpers/fake-upstream-client.ts';

function initialEventsEnd(rv: number): string {
  const metadata = { resourceVersion: String(rv), annotations: { 'k8s.io/initial-events-end': 'true' } };
  return `${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata } })}\n`;
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await nextTurn();
}

test('consistency probe: batched, one out at a time; a read waits for a probe sent after it arrived', async () => {
  const open: FakeWatchStream[] = [];
  const upstream = newFakeUpstream({ onWatch: (stream) => open.push(stream) });
  const probe = newConsistencyProbe(upstream.client, { group: '', version: 'v1', resource: 'configmaps', namespaced: true });
  const first = Array.from({ length: 50 }, () => probe.currentResourceVersion());
  await settle();
  assert.equal(open.length, Math.min(MAX_PROBES_IN_FLIGHT, 50), 'the first reads each sent one, up to the bound');
  const more = Array.from({ length: 50 }, () => probe.currentResourceVersion());
  await settle();
  assert.equal(open.length, MAX_PROBES_IN_FLIGHT, 'the rest wait in one batch');
  open[0]?.write(initialEventsEnd(10));
  await settle();
  assert.equal(open.length, MAX_PROBES_IN_FLIGHT + 1, 'the waiting batch is sent once a probe answered');
  open[1]?.write(initialEventsEnd(11));
  const answers = await Promise.all([...first, ...more]);
  assert.equal(probe.sent(), MAX_PROBES_IN_FLIGHT + 1, `100 reads, ${String(probe.sent())} probes`);
  assert.equal(answers[0], 10n, 'the first read: the probe it sent');
  assert.ok(
    answers.slice(1).every((rv) => rv === 11n),
    'the reads that arrived while the probes were out: a probe sent after them',
  );
});
