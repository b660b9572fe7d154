import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MATCH_NOTHING, PROBE_NAME, PROBE_NAMESPACE, PROBE_TIMEOUT_MS, newConsistencyProbe } from '../../../src/cache/consistency-probe.ts';
import { PROOF_CATCH_UP_MS, PROOF_TIMEOUT_MS, newFreshnessProof } from '../../../src/cache/freshness-proof.ts';
import type { FreshnessProof } from '../../../src/cache/freshness-proof.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import type { WatchCache } from '../../../src/cache/watch-cache.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import type { KubeObject } from '../../../src/informer/object.ts';
import { decodeObject } from '../../../src/informer/object.ts';
import type { ReflectorStore } from '../../../src/informer/store.ts';
import type { UpstreamResponse } from '../../../src/upstream/client.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { FakeWatchStream } from '../../helpers/fake-upstream-client.ts';
import { isConsistencyProbe, listAt, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';
import { PROOF_AGE_ANNOTATION, PROOF_AGE_HEADER } from '../../../src/protocol/proof-age.ts';

function cm(name: string, rv: number): KubeObject {
  return decodeObject(
    Buffer.from(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: 'a', resourceVersion: String(rv) } })),
  );
}

function bookmark(rv: number, initialEventsEnd = false, proofAgeMs?: number): string {
  const annotations = initialEventsEnd
    ? { annotations: { 'k8s.io/initial-events-end': 'true' } }
    : proofAgeMs === undefined
      ? {}
      : { annotations: { [PROOF_AGE_ANNOTATION]: String(proofAgeMs) } };
  return `${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(rv), ...annotations } } })}\n`;
}

function event(type: string, obj: KubeObject): string {
  return `{"type":"${type}","object":${Buffer.from(`{${obj.typeMeta}${obj.rest}`, 'latin1').toString()}}\n`;
}

interface Rig {
  readonly cache: WatchCache;
  readonly store: ReflectorStore;
  readonly clock: FakeClock;
  readonly proof: FreshnessProof;
  /** Every request's path, in order. */
  readonly paths: string[];
  /** The next watch the proof opens. */
  readonly nextWatch: () => Promise<FakeWatchStream>;
  /** The next consistency probe, held until answered. */
  readonly nextProbe: () => Promise<HeldProbe>;
}

interface HeldProbe {
  readonly path: string;
  /** The apiserver answers: its current RV; or an upstream proxy, from a cache whose proof is `proofAgeMs` old. */
  answer(rv: number, proofAgeMs?: number): void;
  aborted(): boolean;
}

/** Hands out what a fake apiserver opens, in order, to whoever asks next. */
function queue<T>(): { readonly put: (item: T) => void; readonly next: () => Promise<T> } {
  const ready: T[] = [];
  const waiting: ((item: T) => void)[] = [];
  return {
    put: (item) => {
      const take = waiting.shift();
      if (take === undefined) ready.push(item);
      else take(item);
    },
    next: () => {
      const item = ready.shift();
      if (item !== undefined) return Promise.resolve(item);
      return new Promise((resolve) => {
        waiting.push(resolve);
      });
    },
  };
}

/** A synced, watching cache of configmaps at `rv`, and a proof over a fake apiserver. */
function rig(rv: number): Rig {
  const clock = new FakeClock();
  const cache = newWatchCache({ spec: CONFIGMAPS, fields: selectableFieldsFor('', 'configmaps', true), clock });
  cache.store.replace([cm('x', 1)], String(rv));
  cache.store.watchConnected?.(true);
  const watches = queue<FakeWatchStream>();
  const probes = queue<HeldProbe>();
  const upstream = newFakeUpstream({
    respond: (request) =>
      new Promise<UpstreamResponse>((resolve) => {
        assert.ok(isConsistencyProbe(request.path), `only probes are LISTs here: ${request.path}`);
        probes.put({
          path: request.path,
          answer: (at, proofAgeMs) => {
            const list = listAt(at);
            resolve(proofAgeMs === undefined ? list : { ...list, headers: { [PROOF_AGE_HEADER]: String(proofAgeMs) } });
          },
          aborted: () => request.signal?.aborted === true,
        });
      }),
    onWatch: watches.put,
  });
  const probe = newConsistencyProbe(
    upstream.client,
    { group: '', version: 'v1', resource: 'configmaps', namespace: undefined, namespaced: true },
    { clock },
  );
  const proof = newFreshnessProof({ client: upstream.client, cache, probe, clock });
  return { cache, store: cache.store, clock, proof, paths: upstream.paths, nextWatch: watches.next, nextProbe: probes.next };
}

const query = (path: string): URLSearchParams => new URLSearchParams(path.slice(path.indexOf('?') + 1));

test('freshness proof: a cache at the consistent RV is proven by the consistency probe alone', async () => {
  const { cache, clock, proof, paths, nextProbe } = rig(50);
  const askedAt = clock.now();
  clock.step(10_000);
  const result = proof.run();
  (await nextProbe()).answer(50);
  assert.deepEqual(await result, { kind: 'proven', resourceVersion: 50n, consistentResourceVersion: 50n, askedAt: askedAt + 10_000 });
  assert.equal(paths.length, 1, 'one request');
  const q = query(paths[0] ?? '');
  assert.ok(paths[0]?.startsWith(`/api/v1/namespaces/${PROBE_NAMESPACE}/configmaps?`), `one namespace's: ${paths[0] ?? ''}`);
  assert.equal(q.get('fieldSelector'), `metadata.name=${PROBE_NAME}`, "one name's: the apiserver reads one key");
  assert.equal(q.get('labelSelector'), MATCH_NOTHING);
  assert.equal(q.get('watch'), null, 'a LIST');
  assert.equal(q.get('resourceVersion'), null, 'RV unset: a consistent read');
  assert.equal(cache.lastProgressAt(), askedAt + 10_000, 'fresh as of when it asked');
});

test('freshness proof: a quiet type behind the cluster RV is proven by a watch from its RV that shows no change before the bookmark', async () => {
  const { cache, clock, proof, paths, nextWatch, nextProbe } = rig(50);
  const progressed: bigint[] = [];
  cache.addListener({ event: () => undefined, replaced: () => undefined, progressed: (rv) => progressed.push(rv) });
  clock.step(10_000);
  const askedAt = clock.now();
  const result = proof.run();
  (await nextProbe()).answer(90);
  const probe = await nextWatch();
  const q = query(probe.path);
  assert.equal(q.get('resourceVersion'), '50', "from the cache's RV");
  assert.equal(q.get('timeoutSeconds'), '3', 'its pre-timeout bookmark comes a second later');
  assert.equal(q.get('allowWatchBookmarks'), 'true');
  assert.equal(q.get('labelSelector'), null, "the scope's own changes, all of them");
  probe.write(bookmark(93));
  assert.deepEqual(await result, { kind: 'proven', resourceVersion: 93n, consistentResourceVersion: 90n, askedAt });
  assert.equal(cache.resourceVersion(), 93n, 'the cache moved to the bookmark');
  assert.deepEqual(progressed, [93n], "its watchers' bookmarks follow");
  assert.equal(cache.lastProgressAt(), askedAt);
  assert.equal(paths.length, 2);
});

test("freshness proof: changes on the probe watch prove nothing until the cache's own watch delivers them", async () => {
  const { cache, store, clock, proof, nextWatch, nextProbe } = rig(50);
  const result = proof.run();
  (await nextProbe()).answer(90);
  const probe = await nextWatch();
  probe.write(event('ADDED', cm('y', 60)));
  probe.write(bookmark(90));
  // The cache's own watch brings the change a little later.
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(cache.resourceVersion(), 50n, 'not moved over a change it has not applied');
  store.add(cm('y', 60));
  store.updateResourceVersion?.('90');
  const proven = await result;
  assert.equal(proven.kind, 'proven');
  assert.equal(cache.resourceVersion(), 90n);

  // A watch that does not deliver what the probe saw is not fresh.
  const second = proof.run();
  (await nextProbe()).answer(120);
  const probe2 = await nextWatch();
  probe2.write(event('MODIFIED', cm('y', 110)));
  probe2.write(bookmark(120));
  await new Promise((resolve) => setImmediate(resolve));
  clock.step(PROOF_CATCH_UP_MS);
  assert.deepEqual(await second, { kind: 'failed', reason: 'behind', consistentResourceVersion: 120n });
  assert.equal(cache.resourceVersion(), 90n);
});

test('freshness proof: 410 on the probe watch, or no bookmark before its end, fails', async () => {
  const { cache, proof, nextWatch, nextProbe } = rig(50);
  const expired = proof.run();
  (await nextProbe()).answer(90);
  (await nextWatch()).write(
    `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410 } })}\n`,
  );
  assert.deepEqual(await expired, { kind: 'failed', reason: 'probe-failed', consistentResourceVersion: 90n });
  const silent = proof.run();
  (await nextProbe()).answer(90);
  (await nextWatch()).end();
  assert.deepEqual(await silent, { kind: 'failed', reason: 'probe-failed', consistentResourceVersion: 90n });
  assert.equal(cache.resourceVersion(), 50n);
});

test('freshness proof: an apiserver that does not answer fails it after PROOF_TIMEOUT_MS; a cache not watching is not proven', async () => {
  const { cache, clock, proof, nextProbe } = rig(50);
  const result = proof.run();
  const held = await nextProbe();
  clock.step(PROOF_TIMEOUT_MS);
  assert.deepEqual(await result, { kind: 'failed', reason: 'timeout' });
  clock.step(PROBE_TIMEOUT_MS - PROOF_TIMEOUT_MS);
  assert.ok(held.aborted(), 'the probe it waited for is cancelled at its own timeout');
  cache.store.watchConnected?.(false);
  assert.deepEqual(await proof.run(), { kind: 'failed', reason: 'not-watching' });
});

test("freshness proof: through an upstream proxy, the probe's answer proves the cache only as of (asked - its proof age)", async () => {
  const { cache, clock, proof, nextProbe } = rig(50);
  clock.step(30_000);
  const askedAt = clock.now();
  const result = proof.run();
  (await nextProbe()).answer(50, 7_000);
  assert.deepEqual(await result, { kind: 'proven', resourceVersion: 50n, consistentResourceVersion: 50n, askedAt: askedAt - 7_000 });
  assert.equal(cache.lastProgressAt(), askedAt - 7_000, "as old as the upstream proxy's proof");
  // An older proof never moves the cache's progress back.
  const older = proof.run();
  (await nextProbe()).answer(50, 20_000);
  assert.equal((await older).kind, 'proven');
  assert.equal(cache.lastProgressAt(), askedAt - 7_000);
});

test("freshness proof: through an upstream proxy, the probe watch's bookmark proves its RV only as of its own proof age", async () => {
  const { cache, clock, proof, nextWatch, nextProbe } = rig(50);
  clock.step(30_000);
  const askedAt = clock.now();
  const result = proof.run();
  (await nextProbe()).answer(90, 1_000);
  const probe = await nextWatch();
  clock.step(1_000);
  probe.write(bookmark(93, false, 6_000));
  assert.deepEqual(await result, { kind: 'proven', resourceVersion: 93n, consistentResourceVersion: 90n, askedAt: askedAt - 5_000 });
  assert.equal(cache.resourceVersion(), 93n);
  assert.equal(cache.lastProgressAt(), askedAt - 5_000, "the bookmark's proof, older than the probe's");
});
