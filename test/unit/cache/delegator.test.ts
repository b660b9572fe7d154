import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newConsistencyPolicy } from '../../../src/cache/consistency.ts';
import { newReadYourWrites } from '../../../src/cache/read-your-writes.ts';
import type { ReadYourWrites } from '../../../src/cache/read-your-writes.ts';
import { SCOPED_WRITE_WAIT_MS, SMALL_LIST_OBJECTS, delegatorFactory } from '../../../src/cache/delegator.ts';
import { decodeObject } from '../../../src/informer/object.ts';
import type { CacheDelegator } from '../../../src/cache/delegator.ts';
import { WORTH_PROVING_SHARE, proofDueMs } from '../../../src/cache/freshness-keeper.ts';
import type { ProofOutcome } from '../../../src/cache/freshness-keeper.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import type { WatchCache } from '../../../src/cache/watch-cache.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { isConsistencyProbe, listAt, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { CONFIGMAPS, PODS } from '../../helpers/resource-specs.ts';
import { newSelectorScope } from '../../../src/cache/selector-scope.ts';
import { flush } from '../../helpers/scripted-lister-watcher.ts';
import { recordProofOutcomes } from '../../helpers/proof-outcomes.ts';

const ALL = { group: '', resource: 'configmaps', namespace: '', name: '' };

/** A proof watch's bookmark at `rv`. */
function bookmarkAt(rv: bigint): string {
  return `${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(rv) } } })}\n`;
}

interface Rig {
  readonly clock: FakeClock;
  readonly cache: WatchCache;
  readonly delegator: CacheDelegator;
  readonly outcomes: readonly ProofOutcome[];
  /** Upstream requests so far. */
  readonly paths: string[];
  /** Resolves once the next proof has ended. */
  readonly nextProof: () => Promise<ProofOutcome>;
  readonly writes: ReadYourWrites;
}

/** A synced, watching configmap cache at RV 50, whose apiserver shows it current to every proof. */
function rig(maxStalenessMs: number): Rig {
  const clock = new FakeClock();
  const cache = newWatchCache({ spec: CONFIGMAPS, fields: selectableFieldsFor('', 'configmaps', true), clock });
  cache.store.replace([], '50');
  cache.store.watchConnected?.(true);
  const proofs = recordProofOutcomes();
  const upstream = newFakeUpstream({
    respond: (request) => (isConsistencyProbe(request.path) ? listAt(cache.resourceVersion() ?? 0n) : undefined),
    onWatch: (stream) => {
      stream.write(bookmarkAt(cache.resourceVersion() ?? 0n));
    },
  });
  const writes = newReadYourWrites();
  const delegator = delegatorFactory({
    client: upstream.client,
    policy: newConsistencyPolicy({ maxStalenessMs }),
    writes,
    clock,
    metrics: proofs.metrics,
  })(cache);
  return {
    clock,
    cache,
    delegator,
    outcomes: proofs.outcomes,
    paths: upstream.paths,
    nextProof: proofs.next,
    writes,
  };
}

test('delegator: a quiet type read often is proven fresh before its bound, period after period, with no read waiting', async () => {
  const bound = 75_000;
  const { clock, cache, delegator, outcomes } = rig(bound);
  const gap = bound / 8;
  for (let read = 1; read <= 40; read++) {
    clock.step(gap);
    assert.equal(await delegator.mostRecent(ALL, 'list'), 'cache', `read ${String(read)}: never past the bound`);
    await flush();
    assert.ok(clock.now() - cache.lastProgressAt() <= bound);
  }
  // 40 reads over 5 bounds: a proof each time the next read would find the cache past its due
  // time (60 s): every 6th read, about one a bound, where the reads without the proxy are 8.
  assert.ok(outcomes.length >= 5 && outcomes.length <= 7, `proofs: ${String(outcomes.length)}`);
  assert.ok(outcomes.every((o) => o === 'proven'));
  cache.close();
});

test('delegator: nobody reading costs no proof; a rare read past the bound goes to the apiserver (one request); reads that come often start one proof for those that follow, none waiting', async () => {
  const bound = 10_000;
  const { clock, cache, delegator, paths, nextProof } = rig(bound);
  clock.step(5 * bound);
  assert.deepEqual(paths, [], 'never read: never proven');
  assert.equal(await delegator.mostRecent(ALL, 'list'), 'stale', 'one read in five bounds: passed through, not proven');
  assert.deepEqual(paths, []);
  clock.step(bound * WORTH_PROVING_SHARE);
  const proof = nextProof();
  assert.equal(await delegator.mostRecent(ALL, 'list'), 'stale', 'read again soon: passed through, not kept waiting');
  assert.equal(await proof, 'proven');
  assert.equal(paths.length, 1, 'the proof: the consistency probe, the cache at its RV');
  assert.equal(await delegator.mostRecent(ALL, 'list'), 'cache', 'the reads that follow: from the cache');
  cache.close();
});

test('delegator: a doubted quiet type: its LISTs go to the apiserver at once, its WatchList (an informer starting) waits for a proof, which settles the doubt', async () => {
  const bound = 75_000;
  const { clock, cache, delegator, paths, writes } = rig(bound);
  clock.step(10_000);
  writes.doubt({ group: '', resource: 'configmaps', namespace: 'gone', name: '' });
  assert.equal(await delegator.mostRecent(ALL, 'list'), 'doubted-quiet');
  assert.deepEqual(paths, [], 'no proof for a LIST: one request, as without the proxy');
  assert.equal(await delegator.mostRecent(ALL, 'watch'), 'cache');
  assert.equal(paths.length, 1, 'one proof');
  assert.equal(await delegator.mostRecent(ALL, 'list'), 'cache', 'the doubt settled');
  cache.close();
});

test('delegator: a doubted busy type: a small LIST, and a GET of an object doubted alone, are their own probes (passed at once; their answers settle the doubt), a larger LIST and a GET under a wider doubt probe', async () => {
  const { cache, delegator, paths, writes } = rig(75_000);
  const configMap = (name: string, rv: number): ReturnType<typeof decodeObject> =>
    decodeObject(
      Buffer.from(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: 'a', resourceVersion: String(rv) } })),
    );
  cache.store.add(configMap('x', 51));
  writes.doubt({ group: '', resource: 'configmaps', namespace: 'a', name: '' });
  const sequence = writes.sequence();
  assert.equal(await delegator.mostRecent({ ...ALL, namespace: 'a' }, 'list'), 'doubted');
  assert.deepEqual(paths, [], 'no probe: the LIST goes to the apiserver itself');
  // Its answer, at the apiserver's RV, settles the doubt (the server's observeRead).
  writes.settle('', 'configmaps', sequence, 51n);
  assert.equal(await delegator.mostRecent({ ...ALL, namespace: 'a' }, 'list'), 'cache', 'settled: the cache is there');
  // A GET of an object doubted alone is its own probe too: its answer is the object at its RV.
  const x = { ...ALL, namespace: 'a', name: 'x' };
  writes.doubt(x);
  const beforeGet = writes.sequence();
  assert.equal(await delegator.mostRecent(x, 'get'), 'doubted');
  assert.deepEqual(paths, [], 'no probe: the GET goes to the apiserver itself');
  writes.settleObject(x, beforeGet, 51n);
  assert.equal(await delegator.mostRecent(x, 'get'), 'cache', 'settled by the object’s RV');
  // A GET answered without the object's RV (a 404) leaves the doubt to a probe.
  writes.doubt(x);
  writes.unsettledBy(x, writes.sequence());
  assert.equal(await delegator.mostRecent(x, 'get'), 'cache');
  assert.equal(paths.length, 1, 'one probe for the GET');
  // Under a doubt of its namespace, a GET probes: the object's RV says nothing of the others.
  writes.doubt({ ...ALL, namespace: 'a' });
  writes.doubt(x);
  assert.equal(await delegator.mostRecent(x, 'get'), 'cache');
  assert.equal(paths.length, 2, 'one probe for the GET');
  // A LIST of more than SMALL_LIST_OBJECTS probes: the cache answers it.
  for (let i = 0; i <= SMALL_LIST_OBJECTS; i++) cache.store.add(configMap(`y${String(i)}`, 52 + i));
  writes.doubt({ group: '', resource: 'configmaps', namespace: 'a', name: '' });
  assert.equal(await delegator.mostRecent(ALL, 'list'), 'cache');
  assert.equal(paths.length, 3, 'one probe for the large LIST');
  cache.close();
});

test('delegator: a WatchList past the bound (an informer starting) waits for a proof, however rarely the type is read: passed through, its watch would stay at the apiserver', async () => {
  const bound = 10_000;
  const { clock, cache, delegator, paths } = rig(bound);
  clock.step(5 * bound);
  assert.equal(await delegator.mostRecent(ALL, 'watch'), 'cache');
  assert.equal(paths.length, 1, 'one proof');
  clock.step(5 * bound);
  assert.equal(await delegator.mostRecent(ALL, 'list'), 'stale', 'a LIST as rare: passed through');
  cache.close();
});

test('delegator: a quiet type with client watches (and their bookmarks) but no RV-unset reader is never proven', async () => {
  const bound = 10_000;
  const { clock, cache, paths } = rig(bound);
  const stopped = cache.addListener({ event: () => undefined, replaced: () => undefined, active: () => true });
  for (let i = 0; i < 10; i++) {
    clock.step(proofDueMs(bound));
    await flush();
  }
  assert.deepEqual(paths, [], 'watched, never read: no request upstream');
  stopped();
  cache.close();
});

test("delegator: a selector-scoped cache behind the proxy's own write (perhaps outside its scope) is proven fresh by a watch of its scope", async () => {
  const clock = new FakeClock();
  const fields = selectableFieldsFor('', 'pods', true);
  const selectors = newSelectorScope({ fieldSelector: 'spec.nodeName=n1', labelSelector: '' }, fields.conversion);
  const cache = newWatchCache({ spec: PODS, fields, selectors, clock });
  cache.store.replace([], '50');
  cache.store.watchConnected?.(true);
  const bookmark = `${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '61' } } })}\n`;
  const upstream = newFakeUpstream({
    // The consistent read says 60 (the write's RV); the scope's watch from 50 shows no change up to 61.
    respond: (request) => (isConsistencyProbe(request.path) ? listAt(60n, 'PodList') : undefined),
    onWatch: (stream) => {
      stream.write(bookmark);
    },
  });
  const writes = newReadYourWrites();
  const delegator = delegatorFactory({ client: upstream.client, policy: newConsistencyPolicy(), writes, clock })(cache);
  writes.written('', 'pods', 60n);
  let decision: string | undefined;
  void delegator.mostRecent({ group: '', resource: 'pods', namespace: '', name: '' }, 'list').then((d) => (decision = d));
  for (let i = 0; i < 20 && decision === undefined; i++) {
    await flush(5);
    clock.step(SCOPED_WRITE_WAIT_MS / 5);
  }
  assert.equal(decision, 'cache', 'served from the cache, not passed through');
  assert.equal(cache.resourceVersion(), 61n, 'moved past the write by the proof');
  const scopeWatch = upstream.paths.find((p) => p.includes('resourceVersion=50'));
  assert.equal(
    new URLSearchParams(scopeWatch?.split('?')[1]).get('fieldSelector'),
    'spec.nodeName=n1',
    "the proof watches the cache's own scope",
  );
  cache.close();
});
