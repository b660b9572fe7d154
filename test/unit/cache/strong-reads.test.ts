import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'node:test';
import { IN_FLIGHT_MS, newConsistencyPolicy } from '../../../src/cache/consistency.ts';
import { newReadYourWrites } from '../../../src/cache/read-your-writes.ts';
import type { CacheDelegator, ReadRequest } from '../../../src/cache/delegator.ts';
import { delegatorFactory } from '../../../src/cache/delegator.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import type { WatchCache } from '../../../src/cache/watch-cache.ts';
import type { KubeObject } from '../../../src/informer/object.ts';
import { decodeObject } from '../../../src/informer/object.ts';
import { parseListOptions } from '../../../src/request/list-options.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { FakeWatchStream } from '../../helpers/fake-upstream-client.ts';
import { isConsistencyProbe, jsonResponse, listAt, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';

const BOUND_MS = 60_000;

function cm(name: string, rv: number): KubeObject {
  return decodeObject(
    Buffer.from(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: 'a', resourceVersion: String(rv) } })),
  );
}

/** A proof watch's bookmark at `rv`. */
function bookmark(rv: bigint): string {
  return `${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(rv) } } })}\n`;
}

interface Rig {
  readonly cache: WatchCache;
  readonly clock: FakeClock;
  readonly delegator: CacheDelegator;
  /** The cluster's RV, as the fake apiserver's probes answer it. */
  apiserverRv: bigint;
  /** Whether a proof's watch from the cache's RV is answered at once (a bookmark at apiserverRv, no change) or held. */
  holdProofs: boolean;
  /** The consistency probes sent (one-key consistent LISTs). */
  readonly probes: string[];
  /** The proofs' watches from the cache's RV, held ones among them until answered. */
  readonly proofs: FakeWatchStream[];
  readonly held: FakeWatchStream[];
}

/** A quiet configmap cache at RV 50, strong mode, over a fake apiserver at `apiserverRv`. */
function rig(apiserverRv: bigint): Rig {
  const clock = new FakeClock();
  const cache = newWatchCache({ spec: CONFIGMAPS, fields: selectableFieldsFor('', 'configmaps', true), clock });
  cache.store.replace([cm('x', 50)], '50');
  cache.store.watchConnected?.(true);
  const r: Rig = {
    cache,
    clock,
    delegator: undefined as unknown as CacheDelegator,
    apiserverRv,
    holdProofs: false,
    probes: [],
    proofs: [],
    held: [],
  };
  const upstream = newFakeUpstream({
    respond: (request) => {
      if (!isConsistencyProbe(request.path)) return jsonResponse(500, { kind: 'Status', code: 500 });
      r.probes.push(request.path);
      return listAt(r.apiserverRv);
    },
    onWatch: (stream) => {
      r.proofs.push(stream);
      if (r.holdProofs) r.held.push(stream);
      else stream.write(bookmark(r.apiserverRv));
    },
  });
  const delegator = delegatorFactory({
    client: upstream.client,
    policy: newConsistencyPolicy({ mode: 'strong', maxStalenessMs: BOUND_MS }),
    writes: newReadYourWrites(),
    clock,
    freshnessWaitMs: 0,
  })(cache);
  clock.step(IN_FLIGHT_MS * 2);
  return Object.assign(r, { delegator });
}

const LIST: ReadRequest = { verb: 'list', namespace: 'a', name: '', options: parseListOptions('') };
const GET: ReadRequest = { verb: 'get', namespace: 'a', name: 'x', options: parseListOptions('') };

async function decide(r: Rig, read: ReadRequest): Promise<string> {
  const decision = await r.delegator.decideRead(read);
  return typeof decision === 'string' ? decision : 'kind' in decision ? decision.kind : 'status';
}

/** Lets the proofs running finish their turns (the fake streams answer within a few). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await nextTurn();
}

test("strong: a GET probes as a LIST does: served from the cache at the apiserver's RV, passed through while the cache is known behind", async () => {
  const r = rig(50n);
  assert.equal(await decide(r, GET), 'consistent');
  assert.equal(r.probes.length, 1);
  r.apiserverRv = 60n;
  r.holdProofs = true;
  assert.equal(await decide(r, GET), 'strong-get', 'behind: passed through');
  assert.equal(await decide(r, GET), 'strong-get', 'known behind: passed through');
  assert.equal(r.probes.length, 2, 'known behind: no probe');
  await settle();
  assert.equal(r.proofs.length, 1, 'a proof started');
  r.held.shift()?.write(bookmark(60n));
  await settle();
  assert.equal(await decide(r, GET), 'consistent', 'proven: served');
});

test("strong: a quiet type's LIST at the apiserver's RV is served from the cache after one probe", async () => {
  const r = rig(50n);
  assert.equal(await decide(r, LIST), 'consistent');
  assert.equal(r.probes.length, 1);
  assert.equal(r.proofs.length, 0, 'no proof: the probe alone showed the cache current');
});

test("strong: a quiet type's cache behind the cluster's RV is proven from the probe's RV; LISTs pass meanwhile, unprobed", async () => {
  const r = rig(60n);
  r.holdProofs = true;
  assert.equal(await decide(r, LIST), 'strong-quiet', 'behind: passed through');
  await settle();
  assert.equal(r.probes.length, 1);
  assert.equal(r.proofs.length, 1, 'a proof started');
  assert.match(r.proofs[0]?.path ?? '', /[?&]resourceVersion=50(&|$)/, "the proof's watch is from the cache's RV");
  assert.equal(r.probes.length, 1, "the proof took the read's probe: none of its own");
  for (let i = 0; i < 5; i++) assert.equal(await decide(r, LIST), 'strong-quiet', 'known behind: passed through');
  assert.equal(r.probes.length, 1, 'known behind: no probe');
  r.held.shift()?.write(bookmark(60n));
  await settle();
  assert.equal(r.cache.resourceVersion(), 60n, 'proven: nothing of the type changed in (50, 60]');
  assert.equal(await decide(r, LIST), 'consistent', 'the next LIST probes 60 and is served from the cache');
  assert.equal(r.probes.length, 2);
  assert.equal(r.proofs.length, 1);
});

test('strong: a WatchList of a quiet type behind the cluster waits for the proof and starts from the cache', async () => {
  const r = rig(70n);
  r.holdProofs = true;
  const watchList = r.delegator.decideWatch('a', parseListOptions('watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan'));
  await settle();
  assert.equal(r.proofs.length, 1);
  r.held.shift()?.write(bookmark(70n));
  assert.equal(await watchList, 'cache');
  assert.equal(r.cache.resourceVersion(), 70n);
});

test('strong: proofs that serve no read back off (a busy cluster) after the second, doubling their gap up to the bound; one that serves resets it', async () => {
  const r = rig(60n);
  const starts: number[] = [];
  let seen = 0;
  const start = r.clock.now();
  // The cluster's RV moves before every read: each proof is outrun before a read can use it.
  for (let t = 0; t < 3 * BOUND_MS; t += 100) {
    r.apiserverRv += 1n;
    assert.equal(await decide(r, LIST), 'strong-quiet');
    await settle();
    if (r.proofs.length > seen) {
      seen = r.proofs.length;
      starts.push(r.clock.now() - start);
    }
    r.clock.step(100);
  }
  const gaps = starts.slice(1).map((s, i) => s - (starts[i] ?? 0));
  assert.ok(gaps.length >= 5, `proofs at ${starts.join(', ')} ms`);
  for (let i = 1; i < gaps.length; i++) {
    const gap = gaps[i] ?? 0;
    const before = gaps[i - 1] ?? 0;
    assert.ok(gap >= Math.min(2 * before, BOUND_MS) - 200, `gap ${String(i)}: ${String(gap)} ms after ${String(before)} ms`);
    assert.ok(gap <= BOUND_MS + 200, `gap ${String(i)}: ${String(gap)} ms, within the bound`);
  }
  const proofsBusy = r.proofs.length;
  assert.ok(proofsBusy <= 10, `${String(proofsBusy)} proofs in ${String(3 * BOUND_MS)} ms of a busy cluster`);
  assert.equal(gaps[0], 100, 'one proof that served no read is followed at once by another (writes come in pairs)');
  // The cluster goes quiet: the proof due serves reads, and the next proof starts at once.
  r.clock.step(BOUND_MS);
  assert.equal(await decide(r, LIST), 'strong-quiet');
  await settle();
  assert.equal(await decide(r, LIST), 'consistent', 'proven: served');
  r.apiserverRv += 1n;
  const before = r.proofs.length;
  assert.equal(await decide(r, LIST), 'strong-quiet');
  await settle();
  assert.equal(r.proofs.length, before + 1, 'after a proof that served a read, the next starts at once');
});
