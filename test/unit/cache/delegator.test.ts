import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newConsistencyPolicy, newReadYourWrites } from '../../../src/cache/consistency.ts';
import { delegatorFactory } from '../../../src/cache/delegator.ts';
import type { CacheDelegator } from '../../../src/cache/delegator.ts';
import { KEEP_FRESH_MS, proofDueMs } from '../../../src/cache/freshness-keeper.ts';
import type { ProofOutcome } from '../../../src/cache/freshness-keeper.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import type { WatchCache } from '../../../src/cache/watch-cache.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';
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
