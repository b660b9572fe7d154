import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'node:test';
import { MATCH_NOTHING, PROBE_NAME, PROBE_NAMESPACE, newConsistencyProbe } from '../../../src/cache/consistency-probe.ts';
import type { UpstreamResponse } from '../../../src/upstream/client.ts';
import { isConsistencyProbe, listAt, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { PROOF_AGE_HEADER } from '../../../src/protocol/proof-age.ts';

/** Probes out at once per type (consistency-probe.ts). */
const MAX_PROBES_IN_FLIGHT = 1;

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await nextTurn();
}

interface Held {
  readonly path: string;
  answer(rv: number): void;
}

test('consistency probe: batched, one out at a time; a read waits for a probe sent after it arrived', async () => {
  const open: Held[] = [];
  const upstream = newFakeUpstream({
    respond: (request) =>
      new Promise<UpstreamResponse>((resolve) => {
        open.push({
          path: request.path,
          answer: (rv) => {
            resolve(listAt(rv));
          },
        });
      }),
  });
  const probe = newConsistencyProbe(upstream.client, { group: '', version: 'v1', resource: 'configmaps', namespaced: true });
  const first = Array.from({ length: 50 }, () => probe.currentResourceVersion());
  await settle();
  assert.equal(open.length, Math.min(MAX_PROBES_IN_FLIGHT, 50), 'the first reads each sent one, up to the bound');
  const more = Array.from({ length: 50 }, () => probe.currentResourceVersion());
  await settle();
  assert.equal(open.length, MAX_PROBES_IN_FLIGHT, 'the rest wait in one batch');
  open[0]?.answer(10);
  await settle();
  assert.equal(open.length, MAX_PROBES_IN_FLIGHT + 1, 'the waiting batch is sent once a probe answered');
  open[1]?.answer(11);
  const answers = await Promise.all([...first, ...more]);
  assert.equal(probe.sent(), MAX_PROBES_IN_FLIGHT + 1, `100 reads, ${String(probe.sent())} probes`);
  assert.equal(answers[0], 10n, 'the first read: the probe it sent');
  assert.ok(
    answers.slice(1).every((rv) => rv === 11n),
    'the reads that arrived while the probes were out: a probe sent after them',
  );
});

test("consistency probe: a consistent LIST of one name that matches nothing, in the cache's namespace or the default one", async () => {
  const upstream = newFakeUpstream({ respond: () => listAt(42) });
  const across = newConsistencyProbe(upstream.client, { group: '', version: 'v1', resource: 'configmaps', namespaced: true });
  const oneNamespace = newConsistencyProbe(upstream.client, {
    group: '',
    version: 'v1',
    resource: 'configmaps',
    namespace: 'a',
    namespaced: true,
  });
  const clusterScoped = newConsistencyProbe(upstream.client, { group: '', version: 'v1', resource: 'nodes', namespaced: false });
  assert.equal(await across.currentResourceVersion(), 42n);
  assert.equal(await oneNamespace.currentResourceVersion(), 42n);
  assert.equal(await clusterScoped.currentResourceVersion(), 42n);
  const paths = upstream.paths.map((p) => p.slice(0, p.indexOf('?')));
  assert.deepEqual(paths, [`/api/v1/namespaces/${PROBE_NAMESPACE}/configmaps`, '/api/v1/namespaces/a/configmaps', '/api/v1/nodes']);
  for (const path of upstream.paths) {
    const q = new URLSearchParams(path.slice(path.indexOf('?') + 1));
    assert.ok(isConsistencyProbe(path), path);
    assert.equal(q.get('fieldSelector'), `metadata.name=${PROBE_NAME}`, "one name's: the apiserver reads one key");
    assert.equal(q.get('labelSelector'), MATCH_NOTHING, 'no object, whatever that name holds');
    assert.equal(q.get('resourceVersion'), null, 'RV unset: a consistent read');
    assert.equal(q.get('watch'), null, 'a LIST: it reuses a kept-alive connection, where a watch ends by closing its own');
  }
});

test('consistency probe: a refusal or an answer without an RV is a failed probe (the read passes through)', async () => {
  let answer: UpstreamResponse = listAt('');
  const upstream = newFakeUpstream({ respond: () => answer });
  const probe = newConsistencyProbe(upstream.client, { group: '', version: 'v1', resource: 'configmaps', namespaced: true });
  assert.equal(await probe.currentResourceVersion(), undefined, 'no RV');
  answer = { statusCode: 429, headers: {}, body: Buffer.from('{"kind":"Status","code":429}') };
  assert.equal(await probe.currentResourceVersion(), undefined, 'refused');
  answer = listAt(7);
  assert.equal(await probe.currentResourceVersion(), 7n, 'the next probe is asked anew');
  assert.equal(probe.sent(), 3);
});

test("consistency probe: an upstream proxy's answer carries its proof age (0 from the apiserver); an unreadable age proves nothing", async () => {
  let answer: UpstreamResponse = listAt(7);
  const upstream = newFakeUpstream({ respond: () => answer });
  const probe = newConsistencyProbe(upstream.client, { group: '', version: 'v1', resource: 'configmaps', namespaced: true });
  assert.deepEqual(await probe.current(), { resourceVersion: 7n, proofAgeMs: 0 }, "the apiserver's: fresh");
  answer = { ...listAt(8), headers: { [PROOF_AGE_HEADER]: '2500' } };
  assert.deepEqual(await probe.current(), { resourceVersion: 8n, proofAgeMs: 2500 });
  assert.equal(await probe.currentResourceVersion(), 8n);
  answer = { ...listAt(9), headers: { [PROOF_AGE_HEADER]: 'soon' } };
  assert.deepEqual(await probe.current(), { resourceVersion: 9n, proofAgeMs: Number.POSITIVE_INFINITY });
});
