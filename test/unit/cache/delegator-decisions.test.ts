/**
 * The delegator's decisions as a table: consistency mode × resourceVersion form × the cache's
 * state → the state a read gets (a ReadPlan's kind) or the reason it goes to the apiserver. On the
 * fake clock, over a real watch cache and a fake apiserver that answers probes and proofs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ReadPlan } from '../../../src/cache/cacher.ts';
import { newConsistencyPolicy } from '../../../src/cache/consistency.ts';
import { newReadYourWrites } from '../../../src/cache/read-your-writes.ts';
import type { ReadConsistency } from '../../../src/cache/consistency.ts';
import { delegatorFactory } from '../../../src/cache/delegator.ts';
import { IN_FLIGHT_MS } from '../../../src/cache/consistency.ts';
import type { CacheDelegator, ReadRequest } from '../../../src/cache/delegator.ts';
import type { PassReason } from '../../../src/cache/pass-reason.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import { decodeObject } from '../../../src/informer/object.ts';
import { encodeContinue } from '../../../src/request/continue-token.ts';
import { parseListOptions } from '../../../src/request/list-options.ts';
import { EXPIRED_LIST_MESSAGE, INCONSISTENT_CONTINUE_MESSAGE, StatusError } from '../../../src/kube/status.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { isConsistencyProbe, jsonResponse, listAt, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';

const BOUND_MS = 60_000;

/**
 * The cache's state: `busy` (watching, a change a moment ago), `quiet` (watching, no change for
 * longer than IN_FLIGHT_MS, within the staleness bound), `down` (its upstream watch broken), `stale`
 * (watching, silent past the bound, and the apiserver refuses the proof that would show it current).
 */
type CacheState = 'busy' | 'quiet' | 'down' | 'stale';

function cm(name: string, rv: number): ReturnType<typeof decodeObject> {
  const json = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: 'a', resourceVersion: String(rv) } };
  return decodeObject(Buffer.from(JSON.stringify(json)));
}

/** A configmap cache at RV 50 in `state`, and its delegator in `mode`. */
function delegatorIn(mode: ReadConsistency, state: CacheState): { delegator: CacheDelegator; clock: FakeClock; close: () => void } {
  const clock = new FakeClock();
  const cache = newWatchCache({ spec: CONFIGMAPS, fields: selectableFieldsFor('', 'configmaps', true), clock });
  cache.store.replace([cm('x', 49)], '49');
  cache.store.watchConnected?.(true);
  const upstream = newFakeUpstream({
    // The apiserver's current RV is the cache's: a probe or proof finds it current, but for `stale`.
    respond: (request) =>
      state !== 'stale' && isConsistencyProbe(request.path)
        ? listAt(cache.resourceVersion() ?? 0n)
        : jsonResponse(500, { kind: 'Status', code: 500 }),
    onWatch: (stream) => {
      const metadata = { resourceVersion: String(cache.resourceVersion() ?? 0n) };
      stream.write(`${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata } })}\n`);
    },
    refuseWatch: () => (state === 'stale' ? jsonResponse(500, { kind: 'Status', code: 500 }) : undefined),
  });
  const delegator = delegatorFactory({
    client: upstream.client,
    policy: newConsistencyPolicy({ mode, maxStalenessMs: BOUND_MS }),
    writes: newReadYourWrites(),
    clock,
    freshnessWaitMs: 0,
  })(cache);
  if (state === 'busy') {
    clock.step(IN_FLIGHT_MS * 2);
    cache.store.add(cm('y', 50));
  } else {
    cache.store.add(cm('y', 50));
    clock.step(IN_FLIGHT_MS * 2);
  }
  if (state === 'down') cache.store.watchConnected?.(false);
  if (state === 'stale') clock.step(BOUND_MS * 2);
  return {
    delegator,
    clock,
    close: () => {
      cache.close();
    },
  };
}

/** A LIST (or GET, with a name) of namespace `a` with this query. */
function read(query: string, name = ''): ReadRequest {
  return { verb: name === '' ? 'list' : 'get', namespace: 'a', name, options: parseListOptions(query) };
}

/** A ReadPlan's kind, the reason, or the Status the cache answers itself (`410 Expired`). */
function outcome(decision: ReadPlan | PassReason | StatusError): string {
  if (decision instanceof StatusError) return `${String(decision.code)} ${decision.status.reason ?? ''}`;
  return typeof decision === 'string' ? decision : decision.kind;
}

/** A continue token of this cache's list key in namespace `a`, at `rv`. */
const token = (rv: number): string => encodeContinue('/r/a/x\u0000', '/r/a', rv);

interface Row {
  readonly mode: ReadConsistency;
  readonly state: CacheState;
  readonly query: string;
  readonly name?: string;
  readonly expect: string;
}

const ROWS: readonly Row[] = [
  // RV unset: the consistency mode decides.
  { mode: 'bounded', state: 'busy', query: '', expect: 'consistent' },
  { mode: 'bounded', state: 'quiet', query: '', expect: 'consistent' },
  { mode: 'bounded', state: 'quiet', query: '', name: 'x', expect: 'consistent' },
  { mode: 'bounded', state: 'down', query: '', expect: 'not-watching' },
  { mode: 'bounded', state: 'stale', query: '', expect: 'stale' },
  { mode: 'strong', state: 'busy', query: '', expect: 'consistent' },
  // Quiet, and the apiserver at the cache's RV: the probe shows the cache current (strong-reads.test.ts has the rest).
  { mode: 'strong', state: 'quiet', query: '', expect: 'consistent' },
  { mode: 'strong', state: 'stale', query: '', expect: 'probe-failed' },
  { mode: 'strong', state: 'busy', query: '', name: 'x', expect: 'consistent' },
  { mode: 'strong', state: 'quiet', query: '', name: 'x', expect: 'consistent' },
  { mode: 'strong', state: 'down', query: '', expect: 'not-watching' },
  // RV=0: any state, in every mode and state of the cache.
  { mode: 'bounded', state: 'down', query: 'resourceVersion=0', expect: 'latest' },
  { mode: 'strong', state: 'quiet', query: 'resourceVersion=0', expect: 'latest' },
  { mode: 'bounded', state: 'stale', query: 'resourceVersion=0&limit=5', expect: 'latest' },
  // RV=N, not older than: once the cache is at N.
  { mode: 'bounded', state: 'quiet', query: 'resourceVersion=50', expect: 'latest' },
  { mode: 'strong', state: 'down', query: 'resourceVersion=50', expect: 'latest' },
  { mode: 'bounded', state: 'quiet', query: 'resourceVersion=51', expect: 'rv-not-reached' },
  { mode: 'bounded', state: 'quiet', query: 'resourceVersion=50&resourceVersionMatch=NotOlderThan', expect: 'latest' },
  { mode: 'bounded', state: 'quiet', query: 'resourceVersion=49', name: 'x', expect: 'latest' },
  { mode: 'bounded', state: 'quiet', query: 'resourceVersion=51', name: 'x', expect: 'rv-not-reached' },
  // Exact N (or a limit with N, or a continue token): the snapshot at N, whatever the mode.
  { mode: 'bounded', state: 'quiet', query: 'resourceVersion=50&resourceVersionMatch=Exact', expect: 'exact' },
  { mode: 'strong', state: 'down', query: 'resourceVersion=49&limit=2', expect: 'exact' },
  { mode: 'bounded', state: 'quiet', query: `limit=1&continue=${token(49)}`, expect: 'exact' },
  { mode: 'bounded', state: 'quiet', query: `limit=1&continue=${token(49)}&resourceVersion=0`, expect: 'exact' },
  { mode: 'bounded', state: 'quiet', query: 'limit=1&continue=garbage', expect: 'bad-continue' },
  // Forms the apiserver words itself.
  { mode: 'bounded', state: 'quiet', query: 'resourceVersion=abc', expect: 'bad-resource-version' },
  { mode: 'strong', state: 'busy', query: 'resourceVersion=007', expect: 'bad-resource-version' },
];

for (const row of ROWS) {
  const what = `${row.name === undefined ? 'LIST' : 'GET'}${row.query === '' ? '' : `?${row.query}`}`;
  test(`delegator decides: ${row.mode}, ${row.state} cache, ${what} → ${row.expect}`, async () => {
    const { delegator, close } = delegatorIn(row.mode, row.state);
    try {
      assert.equal(outcome(await delegator.decideRead(read(row.query, row.name))), row.expect);
    } finally {
      close();
    }
  });
}

interface WatchRow {
  readonly mode: ReadConsistency;
  readonly state: CacheState;
  readonly query: string;
  readonly expect: string;
}

const WATCH_ROWS: readonly WatchRow[] = [
  // A WatchList from "": the most recent state, as a read.
  { mode: 'bounded', state: 'quiet', query: 'watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan', expect: 'cache' },
  { mode: 'bounded', state: 'down', query: 'watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan', expect: 'not-watching' },
  { mode: 'strong', state: 'quiet', query: 'watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan', expect: 'cache' },
  { mode: 'strong', state: 'stale', query: 'watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan', expect: 'probe-failed' },
  // A watch from RV "0" or N: from the window; a WatchList from N needs the cache at N.
  { mode: 'strong', state: 'down', query: 'watch=1&resourceVersion=0', expect: 'cache' },
  { mode: 'bounded', state: 'down', query: 'watch=1&resourceVersion=50', expect: 'cache' },
  {
    mode: 'bounded',
    state: 'quiet',
    query: 'watch=1&resourceVersion=51&sendInitialEvents=true&resourceVersionMatch=NotOlderThan',
    expect: 'rv-not-reached',
  },
  // From before the cache's first list (a restarted proxy): the cache's 410, as the apiserver's after its restart.
  { mode: 'bounded', state: 'quiet', query: 'watch=1&resourceVersion=10', expect: 'cache' },
  { mode: 'bounded', state: 'quiet', query: 'watch=1&resourceVersion=abc', expect: 'bad-resource-version' },
];

for (const row of WATCH_ROWS) {
  test(`delegator decides: ${row.mode}, ${row.state} cache, WATCH?${row.query} → ${row.expect}`, async () => {
    const { delegator, close } = delegatorIn(row.mode, row.state);
    try {
      assert.equal(await delegator.decideWatch('a', parseListOptions(row.query)), row.expect);
    } finally {
      close();
    }
  });
}

test("an exact RV the apiserver answered 410 for: the cache answers the apiserver's 410 for it and every older RV it keeps no snapshot of", async () => {
  const { delegator, close } = delegatorIn('bounded', 'quiet');
  try {
    // Before: an exact RV the cache keeps no snapshot of is planned (the cacher passes it through: no-snapshot).
    assert.equal(outcome(await delegator.decideRead(read(`limit=1&continue=${token(10)}`))), 'exact');
    // Passed through, answered other than 410: nothing learnt.
    delegator.observeExactList(read('resourceVersion=20&resourceVersionMatch=Exact'))?.(200);
    delegator.observeExactList(read('resourceVersion=20&resourceVersionMatch=Exact'))?.(504);
    assert.equal(outcome(await delegator.decideRead(read(`limit=1&continue=${token(10)}`))), 'exact');
    // Neither a read that is not an exact LIST.
    assert.equal(delegator.observeExactList(read('resourceVersion=20')), undefined);
    assert.equal(delegator.observeExactList(read('')), undefined);
    assert.equal(delegator.observeExactList(read('resourceVersion=20&resourceVersionMatch=Exact', 'x')), undefined);
    // The apiserver's 410 at 20.
    const observe = delegator.observeExactList(read('limit=5&resourceVersion=20'));
    assert.ok(observe !== undefined);
    observe(410);
    // A continue token at or below 20: etcd3/errors.go handleCompactedErrorForPaging, a token at -1 from the same key.
    const fromToken = await delegator.decideRead(read(`limit=1&continue=${token(10)}`));
    assert.ok(fromToken instanceof StatusError);
    assert.equal(fromToken.code, 410);
    assert.equal(fromToken.status.reason, 'Expired');
    assert.equal(fromToken.status.message, INCONSISTENT_CONTINUE_MESSAGE);
    // The key relative to the list's key with its slash (etcd3 prepareKey), as the apiserver's own tokens.
    assert.equal(fromToken.status.metadata.continue, encodeContinue('/r/a/x\u0000', '/r/a/', -1));
    // An Exact RV (or a limit with an RV) at or below 20: interpretListError's `expired`.
    for (const query of ['resourceVersion=20&resourceVersionMatch=Exact', 'resourceVersion=3&limit=2']) {
      const exact = await delegator.decideRead(read(query));
      assert.ok(exact instanceof StatusError, query);
      assert.equal(exact.status.message, EXPIRED_LIST_MESSAGE);
      assert.deepEqual(exact.status.metadata, {});
    }
    // A selector the apiserver refuses is its 400 to word, before any 410 (it parses them first).
    assert.equal(outcome(await delegator.decideRead(read(`limit=1&labelSelector=%3D%3D%3D&continue=${token(10)}`))), 'bad-selector');
    // Above it: still the apiserver's to answer (via the cacher's no-snapshot).
    assert.equal(outcome(await delegator.decideRead(read('resourceVersion=21&resourceVersionMatch=Exact'))), 'exact');
    // A 410 at 50, whose state the cache still holds (its current one): the cache serves it, whatever the apiserver keeps.
    delegator.observeExactList(read('resourceVersion=50&resourceVersionMatch=Exact'))?.(410);
    assert.equal(outcome(await delegator.decideRead(read('resourceVersion=50&resourceVersionMatch=Exact'))), 'exact');
    assert.equal(outcome(await delegator.decideRead(read('resourceVersion=48&resourceVersionMatch=Exact'))), '410 Expired');
  } finally {
    close();
  }
});
