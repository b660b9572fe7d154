/**
 * A reflector whose upstream is another proxy (protocol/proof-age.ts), over the real
 * ListerWatcher, in a shared informer whose only store is a watch cache (as running-caches.ts
 * runs them): the list, the replayed events and the bookmarks count as progress as of the
 * upstream's proof, the live events as of their arrival; an upstream without ages (the
 * apiserver) changes nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import type { WatchCache } from '../../../src/cache/watch-cache.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import { newListerWatcher } from '../../../src/informer/lister-watcher.ts';
import { newSharedIndexInformer } from '../../../src/informer/shared-informer.ts';
import {
  PROOF_AGES_BOOKMARKS,
  PROOF_AGES_REQUEST_HEADER,
  PROOF_AGE_ANNOTATION,
  PROOF_AGE_HEADER,
  PROOF_RESOURCE_VERSION_HEADER,
} from '../../../src/protocol/proof-age.ts';
import type { UpstreamRequest } from '../../../src/upstream/client.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { FakeWatchStream } from '../../helpers/fake-upstream-client.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { flush, flushUntil } from '../../helpers/scripted-lister-watcher.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';

function cm(name: string, rv: number): Record<string, unknown> {
  return { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: 'a', resourceVersion: String(rv) } };
}

function line(type: string, object: unknown): string {
  return `${JSON.stringify({ type, object })}\n`;
}

function bookmark(rv: number, annotations: Record<string, string> = {}): string {
  return line('BOOKMARK', { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(rv), annotations } });
}

interface Rig {
  readonly cache: WatchCache;
  readonly clock: FakeClock;
  readonly watches: FakeWatchStream[];
  readonly watchRequests: UpstreamRequest[];
  readonly stop: () => void;
}

/**
 * An informer over a fake upstream, its watch cache the store: its LIST at RV 10 answered with
 * `listHeaders`, its watches opened with `watchHeaders`.
 */
function rig(listHeaders: Record<string, string>, watchHeaders: Record<string, string>, useWatchList = false): Rig {
  const clock = new FakeClock();
  const cache = newWatchCache({ spec: CONFIGMAPS, fields: selectableFieldsFor('', 'configmaps', true), clock });
  const watchRequests: UpstreamRequest[] = [];
  const upstream = newFakeUpstream({
    respond: () =>
      jsonResponse(200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '10' }, items: [] }, listHeaders),
    watchHeaders: (request) => {
      watchRequests.push(request);
      return watchHeaders;
    },
  });
  const informer = newSharedIndexInformer({
    name: 'configmaps',
    listerWatcher: newListerWatcher(upstream.client, { group: '', version: 'v1', resource: 'configmaps' }),
    store: cache.store,
    clock,
    useWatchList,
  });
  informer.run();
  return {
    cache,
    clock,
    watches: upstream.watches,
    watchRequests,
    stop: () => {
      void informer.stop();
    },
  };
}

test("reflector: an upstream proxy's list, replayed events and bookmarks prove progress as of its proofs; live events as of arrival", async () => {
  const { cache, clock, watches, watchRequests, stop } = rig(
    { [PROOF_AGE_HEADER]: '3000' },
    { [PROOF_AGE_HEADER]: '2000', [PROOF_RESOURCE_VERSION_HEADER]: '12' },
  );
  const t0 = clock.now();
  await flushUntil('the watch to open', () => watches.length === 1);
  await flush(3); // its head has arrived
  assert.equal(cache.resourceVersion(), 10n);
  assert.equal(cache.lastProgressAt(), t0 - 3000, "the list: as old as the upstream's proof");
  assert.equal(watchRequests[0]?.headers?.[PROOF_AGES_REQUEST_HEADER], PROOF_AGES_BOOKMARKS, 'the watch asks for its bookmarks’ ages');
  const watch = watches[0];
  assert.ok(watch !== undefined);
  clock.step(5000);
  // Replayed at once, up to the head's RV: as old as the head's proof, whenever they arrive.
  watch.write(line('ADDED', cm('x', 11)));
  watch.write(line('MODIFIED', cm('x', 12)));
  await flushUntil('the replay', () => cache.resourceVersion() === 12n);
  assert.equal(cache.lastProgressAt(), t0 - 2000, 'replayed events: the watch head’s proof, not their arrival');
  // Live: after the head's RV.
  watch.write(line('ADDED', cm('y', 13)));
  await flushUntil('the live event', () => cache.resourceVersion() === 13n);
  assert.equal(cache.lastProgressAt(), t0 + 5000, 'a live event: as of its arrival');
  // A bookmark on the upstream's timer, at an RV it reached long ago: as of its proof; never backwards.
  clock.step(10_000);
  watch.write(bookmark(14, { [PROOF_AGE_ANNOTATION]: '12000' }));
  await flushUntil('the bookmark', () => cache.resourceVersion() === 14n);
  assert.equal(cache.lastProgressAt(), t0 + 5000, 'an older proof moves nothing back');
  watch.write(bookmark(15, { [PROOF_AGE_ANNOTATION]: '1000' }));
  await flushUntil('the bookmark', () => cache.resourceVersion() === 15n);
  assert.equal(cache.lastProgressAt(), t0 + 14_000, 'a fresher proof moves it on');
  // Then a live event again: as of its arrival.
  clock.step(1000);
  watch.write(line('DELETED', cm('y', 16)));
  await flushUntil('the live event', () => cache.resourceVersion() === 16n);
  assert.equal(cache.lastProgressAt(), t0 + 16_000);
  stop();
});

test('reflector: without proof ages (the apiserver), the list, events and bookmarks prove progress as of their arrival', async () => {
  const { cache, clock, watches, stop } = rig({}, {});
  const t0 = clock.now();
  await flushUntil('the watch to open', () => watches.length === 1);
  assert.equal(cache.lastProgressAt(), t0);
  const watch = watches[0];
  assert.ok(watch !== undefined);
  clock.step(5000);
  watch.write(line('ADDED', cm('x', 11)));
  await flushUntil('the event', () => cache.resourceVersion() === 11n);
  assert.equal(cache.lastProgressAt(), t0 + 5000);
  clock.step(5000);
  watch.write(bookmark(12));
  await flushUntil('the bookmark', () => cache.resourceVersion() === 12n);
  assert.equal(cache.lastProgressAt(), t0 + 10_000);
  stop();
});

test("reflector: a WatchList's initial state from an upstream proxy is as old as the watch head's proof", async () => {
  const { cache, clock, watches, stop } = rig({}, { [PROOF_AGE_HEADER]: '4000', [PROOF_RESOURCE_VERSION_HEADER]: '20' }, true);
  const t0 = clock.now();
  await flushUntil('the watch-list to open', () => watches.length === 1);
  await flush(3); // its head has arrived
  const watch = watches[0];
  assert.ok(watch !== undefined);
  clock.step(1000);
  watch.write(line('ADDED', cm('x', 18)));
  watch.write(bookmark(20, { 'k8s.io/initial-events-end': 'true' }));
  await flushUntil('the initial state', () => cache.hasSynced());
  assert.equal(cache.resourceVersion(), 20n);
  assert.equal(cache.lastProgressAt(), t0 - 4000, 'as of the upstream’s proof when the watch opened');
  clock.step(1000);
  watch.write(line('MODIFIED', cm('x', 21)));
  await flushUntil('the live event', () => cache.resourceVersion() === 21n);
  assert.equal(cache.lastProgressAt(), t0 + 2000, 'a live event: as of its arrival');
  stop();
});
