import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WatchCache } from '../../../src/cache/watch-cache.ts';
import type { WindowEvent } from '../../../src/cache/window-event.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import type { OrderedView } from '../../../src/cache/ordered-map.ts';
import type { KubeObject } from '../../../src/informer/object.ts';
import { decodeObject } from '../../../src/informer/object.ts';
import type { ReflectorStore } from '../../../src/informer/store.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { CONFIGMAPS as SPEC } from '../../helpers/resource-specs.ts';

function cm(namespace: string, name: string, rv: number, labels: Record<string, string> = {}): KubeObject {
  const json = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace, resourceVersion: String(rv), labels } };
  return decodeObject(Buffer.from(JSON.stringify(json)));
}

/** A watch cache and the store its informer's reflector writes to. */
function cacheWithStore(clock = new FakeClock()): { cache: WatchCache; store: ReflectorStore; clock: FakeClock } {
  const cache = newWatchCache({ spec: SPEC, fields: selectableFieldsFor('', 'configmaps', true), clock });
  return { cache, store: cache.store, clock };
}

const keys = (objects: OrderedView<KubeObject>): string[] => Array.from(objects.values(), (o) => o.key);

test('watch cache: key order after list and changes; a handed-out view never changes', () => {
  const { cache, store } = cacheWithStore();
  assert.equal(cache.resourceVersion(), undefined, 'nothing before the first list');
  store.replace([cm('b', 'x', 3), cm('a', 'y', 2), cm('a', 'x', 1)], '10');
  assert.equal(cache.resourceVersion(), 10n);
  const at10 = cache.current();
  assert.deepEqual(keys(at10), ['a/x', 'a/y', 'b/x']);
  store.add(cm('a', 'z', 11));
  store.update(cm('a', 'x', 12));
  store.delete(cm('b', 'x', 13));
  assert.equal(cache.resourceVersion(), 13n);
  assert.deepEqual(keys(cache.current()), ['a/x', 'a/y', 'a/z']);
  assert.equal(cache.get('a/x')?.resourceVersion, '12');
  assert.equal(cache.get('b/x'), undefined);
  assert.deepEqual(keys(at10), ['a/x', 'a/y', 'b/x'], 'a persistent view');
  assert.equal(at10.at(0)?.resourceVersion, '1');
  assert.equal(cache.snapshot(10n), at10, 'the state at 10 is kept for the next pages');
  assert.equal(cache.snapshot(11n), undefined, 'never listed at 11');
});

test('watch cache: listeners get each change with its previous state, a relist, and bookmarks', () => {
  const { cache, store } = cacheWithStore();
  const seen: string[] = [];
  const events: WindowEvent[] = [];
  cache.addListener({
    event: (e) => {
      events.push(e);
      seen.push(`${e.type} ${e.key} ${String(e.resourceVersion)} prev=${e.prevObject?.resourceVersion ?? '-'}`);
    },
    replaced: (rv) => seen.push(`replaced ${String(rv)}`),
    progressed: (rv) => seen.push(`progressed ${String(rv)}`),
  });
  store.replace([cm('a', 'x', 1)], '5');
  store.add(cm('a', 'y', 6));
  store.updateResourceVersion?.('6'); // the reflector's echo of the event's RV: nothing new
  store.update(cm('a', 'x', 7));
  store.delete(cm('a', 'y', 8));
  store.updateResourceVersion?.('20'); // a bookmark
  assert.deepEqual(seen, ['replaced 5', 'ADDED a/y 6 prev=-', 'MODIFIED a/x 7 prev=1', 'DELETED a/y 8 prev=6', 'progressed 20']);
  assert.equal(cache.resourceVersion(), 20n);
});

test('watch cache: waitUntilFresh resolves when the RV is reached, or with undefined at the timeout', async () => {
  const { cache, store, clock } = cacheWithStore();
  store.replace([], '5');
  assert.equal(await cache.waitUntilFresh(5n, 0), 5n, 'already there');
  const reached = cache.waitUntilFresh(7n, 1000);
  store.add(cm('a', 'x', 6));
  store.add(cm('a', 'y', 7));
  assert.equal(await reached, 7n);
  const late = cache.waitUntilFresh(9n, 1000);
  clock.step(1000);
  assert.equal(await late, undefined);
  const aborted = new AbortController();
  const gone = cache.waitUntilFresh(9n, 1000, aborted.signal);
  aborted.abort();
  assert.equal(await gone, undefined);
  assert.equal(clock.waiters(), 0, 'no timer left behind');
});

test('watch cache: lastProgressAt moves with every change and bookmark', () => {
  const { cache, store, clock } = cacheWithStore();
  const start = cache.lastProgressAt();
  clock.step(5000);
  store.replace([], '5');
  assert.equal(cache.lastProgressAt(), start + 5000);
  clock.step(1000);
  store.updateResourceVersion?.('9');
  assert.equal(cache.lastProgressAt(), start + 6000);
});

test("watch cache: an upstream proxy's proof time (store.provenAt) is the progress of what follows, never later than arrival, never backwards", () => {
  const { cache, store, clock } = cacheWithStore();
  clock.step(60_000);
  const listedAt = clock.now();
  // The first list from an upstream proxy whose proof is 8 s old: older than the cache's creation.
  store.provenAt?.(listedAt - 8_000);
  store.replace([], '5');
  assert.equal(cache.lastProgressAt(), listedAt - 8_000, 'the first list is as old as its proof');
  clock.step(1_000);
  store.provenAt?.(clock.now() - 3_000);
  store.add(cm('a', 'x', 6));
  assert.equal(cache.lastProgressAt(), listedAt - 2_000, 'a replayed event: as of its proof');
  // An older proof never moves it back.
  store.provenAt?.(listedAt - 20_000);
  store.updateResourceVersion?.('7');
  assert.equal(cache.resourceVersion(), 7n, 'the state still moves');
  assert.equal(cache.lastProgressAt(), listedAt - 2_000, 'never backwards');
  // A proof time in the future (another clock) counts as the arrival at most.
  store.provenAt?.(clock.now() + 5_000);
  store.add(cm('a', 'y', 8));
  assert.equal(cache.lastProgressAt(), clock.now());
  // Told undefined: as of arrival again (a live event, the apiserver).
  clock.step(2_000);
  store.provenAt?.(undefined);
  store.update(cm('a', 'y', 9));
  assert.equal(cache.lastProgressAt(), clock.now());
  // A freshness proof through an upstream proxy (askedAt - age) is a max too.
  cache.proven(9n, clock.now() - 10_000);
  assert.equal(cache.lastProgressAt(), clock.now());
});

test("watch cache: a bookmark for a watch that asks carries its RV's proof age; other watches get the apiserver's bytes", () => {
  const { cache, store } = cacheWithStore();
  store.replace([], '5');
  const plain = cache.bookmarkFrame(5n, false).toString();
  assert.equal(plain, '{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"5"}}}\n');
  assert.equal(
    cache.bookmarkFrame(5n, false, 1234.2).toString(),
    '{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"5","annotations":{"kube-cache-proxy.io/proof-age-ms":"1235"}}}}\n',
  );
  assert.equal(
    cache.bookmarkFrame(7n, true, 0).toString(),
    '{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true","kube-cache-proxy.io/proof-age-ms":"0"}}}}\n',
  );
  // A learned template (the apiserver's own bookmark, or an upstream proxy's aged one) keeps no annotation of its own.
  store.observeBookmark?.(
    Buffer.from(
      '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"3","annotations":{"kube-cache-proxy.io/proof-age-ms":"9"}}}',
    ),
  );
  assert.equal(cache.bookmarkFrame(5n, false).toString(), plain);
});

test('watch cache: behind what a probe showed the upstream held, what the watch brings is late: no progress until it reaches it, then as of the probe', () => {
  const { cache, store, clock } = cacheWithStore();
  store.replace([], '10');
  const listedAt = clock.now();
  clock.step(2_000);
  const probedAt = clock.now();
  cache.upstreamAt(20n, probedAt);
  cache.upstreamAt(15n, probedAt + 1);
  // A link that stalled delivers what it held, long after.
  clock.step(20_000);
  store.add(cm('a', 'x', 12));
  store.updateResourceVersion?.('19');
  assert.equal(cache.resourceVersion(), 19n);
  assert.equal(cache.lastProgressAt(), listedAt, 'late: no progress');
  store.update(cm('a', 'x', 20));
  assert.equal(cache.lastProgressAt(), probedAt, 'reaching it: as of the probe, not of its arrival');
  clock.step(1_000);
  store.update(cm('a', 'x', 21));
  assert.equal(cache.lastProgressAt(), clock.now(), 'past it: as of its arrival again');
  // An answer the cache has already reached says nothing; a proof past it clears it.
  cache.upstreamAt(21n, clock.now());
  cache.upstreamAt(30n, clock.now());
  cache.proven(30n, clock.now());
  clock.step(1_000);
  store.update(cm('a', 'x', 31));
  assert.equal(cache.lastProgressAt(), clock.now());
});
