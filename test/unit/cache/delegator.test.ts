import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newConsistencyPolicy, newReadYourWrites } from '../../../src/cache/consistency.ts';
import { SCOPED_WRITE_WAIT_MS, delegatorFactory } from '../../../src/cache/delegator.ts';
import type { CacheDelegator } from '../../../src/cache/delegator.ts';
import { KEEP_FRESH_MS, proofDueMs } from '../../../src/cache/freshness-keeper.ts';
import type { ProofOutcome } from '../../../src/cache/freshness-keeper.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import type { WatchCache } from '../../../src/cache/watch-cache.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { CONFIGMAPS, PODS } from '../../helpers/resource-specs.ts';
import { newSelectorScope } from '../../../src/cache/selector-scope.ts';
import { flush } from '../../helpers/scripted-lister-watcher.ts';
import { recordProofOutcomes } from '../../helpers/proof-outcomes.ts';

const ALL = { group: '', resource: 'configmaps', namespace: '', name: '' };

function endBookmark(rv: bigint): string {
  const metadata = { resourceVersion: String(rv), annotations: { 'k8s.io/initial-events-end': 'true' } };
  return `${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata } })}\n`;
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
}

/** A synced, watching configmap cache at RV 50, whose apiserver shows it current to every proof. */
function rig(maxStalenessMs: number): Rig {
  const clock = new FakeClock();
  const cache = newWatchCache({ spec: CONFIGMAPS, fields: selectableFieldsFor('', 'configmaps', true), clock });
  cache.store.replace([], '50');
  cache.store.watchConnected?.(true);
  const proofs = recordProofOutcomes();
  const upstream = newFakeUpstream({
    onWatch: (stream) => {
      stream.write(endBookmark(cache.resourceVersion() ?? 0n));
    },
  });
  const delegator = delegatorFactory({
    client: upstream.client,
    policy: newConsistencyPolicy({ maxStalenessMs }),
    writes: newReadYourWrites(),
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
  };
}

test('delegator: a quiet type that is read is proven fresh before its bound, period after period, with no read waiting', async () => {
  const bound = 10_000;
  const { clock, cache, delegator, outcomes, nextProof } = rig(bound);
  assert.equal(await delegator.mostRecent(ALL, 'list'), 'cache');
  for (let period = 1; period <= 5; period++) {
    const proof = nextProof();
    clock.step(proofDueMs(bound));
    assert.equal(await proof, 'proven', `period ${String(period)}`);
    assert.equal(clock.now() - cache.lastProgressAt(), 0, 'fresh as of the proof');
    assert.equal(await delegator.mostRecent(ALL, 'get'), 'cache', 'served: never past the bound');
  }
  assert.equal(outcomes.length, 5, 'one proof per period, no more');
  cache.close();
});

test('delegator: a cache nobody reads or watches costs no proof; reads stopping for KEEP_FRESH_MS stop them', async () => {
  const bound = 10_000;
  const { clock, cache, delegator, paths, nextProof } = rig(bound);
  clock.step(5 * bound);
  assert.deepEqual(paths, [], 'never read: never proven');
  // The first read past the bound waits for one proof, and is served.
  const read = delegator.mostRecent(ALL, 'list');
  assert.equal(await read, 'cache');
  assert.equal(paths.length, 1);
  const proof = nextProof();
  clock.step(proofDueMs(bound));
  assert.equal(await proof, 'proven');
  clock.step(KEEP_FRESH_MS + bound);
  const before = paths.length;
  clock.step(5 * bound);
  assert.equal(paths.length, before, 'unread for KEEP_FRESH_MS: no more proofs');
  cache.close();
});

test('delegator: a quiet type with client watches is kept fresh, so its watchers get bookmarks', async () => {
  const bound = 10_000;
  const { clock, cache, delegator, nextProof } = rig(bound);
  const stopped = cache.addListener({ event: () => undefined, replaced: () => undefined, active: () => true });
  const proof = nextProof();
  clock.step(proofDueMs(bound));
  assert.equal(await proof, 'proven', 'watched, though never read');
  stopped();
  assert.equal(await delegator.mostRecent(ALL, 'get'), 'cache');
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
    onWatch: (stream) => {
      stream.write(stream.path.includes('sendInitialEvents=true') ? endBookmark(60n) : bookmark);
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
