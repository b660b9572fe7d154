import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DeletedFinalStateUnknown, KubeObject } from '../../../src/informer/object.ts';
import { isDeletedFinalStateUnknown } from '../../../src/informer/object.ts';
import type { ResourceEventHandler } from '../../../src/informer/processor-listener.ts';
import type { SharedIndexInformer, SharedIndexInformerOptions } from '../../../src/informer/shared-informer.ts';
import { newSharedIndexInformer } from '../../../src/informer/shared-informer.ts';
import type { InformerStore } from '../../../src/informer/store.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import {
  ScriptedListerWatcher,
  added,
  bookmark,
  deleted,
  errorEvent,
  flush,
  flushUntil,
  isPending,
  modified,
  obj,
  page,
  settles,
} from '../../helpers/scripted-lister-watcher.ts';

/** The longest first backoff of the reflector: 800 ms with full jitter (the informer's random() is Math.random). */
const FIRST_BACKOFF_MAX_MS = 1600;

function newInformer(lw: ScriptedListerWatcher, clock: FakeClock, options: Partial<SharedIndexInformerOptions> = {}): SharedIndexInformer {
  return newSharedIndexInformer({ name: 'pods', listerWatcher: lw, clock, useWatchList: false, ...options });
}

function describeDeleted(o: KubeObject | DeletedFinalStateUnknown): string {
  return isDeletedFinalStateUnknown(o) ? `${o.key}@?${o.obj?.resourceVersion ?? 'none'}` : `${o.key}@${o.resourceVersion}`;
}

/** A handler recording what it is told as `add ns/a@5 initial`, `update ns/a 5->6`, `delete ns/a@6` (`@?6`: final state unknown). */
function recorder(): { readonly handler: ResourceEventHandler; readonly seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    handler: {
      onAdd(o, isInInitialList) {
        seen.push(`add ${o.key}@${o.resourceVersion}${isInInitialList ? ' initial' : ''}`);
      },
      onUpdate(old, o) {
        seen.push(`update ${o.key} ${old.resourceVersion}->${o.resourceVersion}`);
      },
      onDelete(o) {
        seen.push(`delete ${describeDeleted(o)}`);
      },
    },
  };
}

function deferred(): { readonly promise: Promise<void>; readonly resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

async function seenLength(seen: readonly string[], n: number): Promise<void> {
  await flushUntil(`${String(n)} notifications (have ${JSON.stringify(seen)})`, () => seen.length >= n);
  await flush();
  assert.equal(seen.length, n, JSON.stringify(seen));
}

test('SharedIndexInformer: handlers get add, update and delete, after the indexer holds the change', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [obj('ns', 'a', '5')]));
  const informer = newInformer(lw, new FakeClock());
  const indexer = informer.getIndexer();
  const seen: string[] = [];
  const inIndexer = (key: string): string => indexer.getByKey(key)?.resourceVersion ?? 'none';
  informer.addEventHandler({
    onAdd(o, initial) {
      seen.push(`add ${o.key}@${o.resourceVersion} initial=${String(initial)} indexer=${inIndexer(o.key)}`);
    },
    onUpdate(old, o) {
      seen.push(`update ${o.key} ${old.resourceVersion}->${o.resourceVersion} indexer=${inIndexer(o.key)}`);
    },
    onDelete(o) {
      seen.push(`delete ${describeDeleted(o)} indexer=${inIndexer(o.key)}`);
    },
  });
  informer.run();
  await settles(informer.waitForSync(), 'waitForSync()');
  const { watch } = await lw.nextWatch();
  await seenLength(seen, 1);

  watch.emit(added(obj('ns', 'b', '11')));
  await seenLength(seen, 2);
  watch.emit(modified(obj('ns', 'b', '12')));
  await seenLength(seen, 3);
  watch.emit(deleted(obj('ns', 'b', '13')));
  await seenLength(seen, 4);
  assert.deepEqual(seen, [
    'add ns/a@5 initial=true indexer=5',
    'add ns/b@11 initial=false indexer=11',
    'update ns/b 11->12 indexer=12',
    'delete ns/b@13 indexer=none',
  ]);
  assert.equal(informer.lastSyncResourceVersion(), '13');
  await informer.stop();
});

test('SharedIndexInformer: a Replaced delta with an unchanged RV is a resync, not delivered to handlers without a resync period', async () => {
  const lw = new ScriptedListerWatcher().scriptList(
    page('10', [obj('ns', 'a', '5'), obj('ns', 'b', '6')]),
    page('20', [obj('ns', 'a', '5'), obj('ns', 'b', '21')]),
  );
  const clock = new FakeClock();
  const informer = newInformer(lw, clock);
  const r = recorder();
  informer.addEventHandler(r.handler);
  informer.run();
  const { watch } = await lw.nextWatch();
  await seenLength(r.seen, 2);

  watch.emit(errorEvent(410, 'Expired'));
  await flush();
  clock.step(FIRST_BACKOFF_MAX_MS);
  await lw.nextWatch();
  await seenLength(r.seen, 3);
  assert.deepEqual(r.seen, ['add ns/a@5 initial', 'add ns/b@6 initial', 'update ns/b 6->21']);
  assert.equal(informer.getIndexer().getByKey('ns/b')?.resourceVersion, '21');
  await informer.stop();
});

test('SharedIndexInformer: resync on the fake clock gives known objects as updates only to handlers due', async () => {
  const lw = new ScriptedListerWatcher().scriptList(
    page('10', [obj('ns', 'a', '5'), obj('ns', 'b', '6')]),
    page('20', [obj('ns', 'a', '5'), obj('ns', 'b', '21')]),
  );
  const clock = new FakeClock();
  const informer = newInformer(lw, clock);
  const resyncing = recorder();
  const quiet = recorder();
  informer.addEventHandler(resyncing.handler, { resyncPeriodMs: 10_000 });
  informer.addEventHandler(quiet.handler);
  informer.run();
  const { watch } = await lw.nextWatch();
  await seenLength(resyncing.seen, 2);

  clock.step(9_999);
  await seenLength(resyncing.seen, 2);
  clock.step(1);
  await seenLength(resyncing.seen, 4);
  assert.deepEqual(resyncing.seen.slice(2), ['update ns/a 5->5', 'update ns/b 6->6']);

  // While its resync is due, a relist's unchanged objects (Replaced, same RV) go to it as updates too.
  watch.emit(errorEvent(410, 'Expired'));
  await flush();
  clock.step(FIRST_BACKOFF_MAX_MS);
  await lw.nextWatch();
  await seenLength(resyncing.seen, 6);
  assert.deepEqual(resyncing.seen.slice(4), ['update ns/a 5->5', 'update ns/b 6->21']);
  await seenLength(quiet.seen, 3);
  assert.deepEqual(quiet.seen, ['add ns/a@5 initial', 'add ns/b@6 initial', 'update ns/b 6->21']);

  // The next resync comes a period after the last one.
  clock.step(10_000 - FIRST_BACKOFF_MAX_MS - 1);
  await seenLength(resyncing.seen, 6);
  clock.step(1);
  await seenLength(resyncing.seen, 8);
  assert.equal(quiet.seen.length, 3);
  await informer.stop();
  assert.equal(clock.waiters(), 0, 'no resync timer left');
});

test('SharedIndexInformer: a handler added after start first gets an add for every object held, then later changes', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [obj('ns', 'a', '5'), obj('ns', 'b', '6')]));
  const informer = newInformer(lw, new FakeClock());
  informer.run();
  await settles(informer.waitForSync(), 'waitForSync()');
  const { watch } = await lw.nextWatch();

  const late = recorder();
  const registration = informer.addEventHandler(late.handler);
  assert.equal(registration.hasSynced(), false, 'its initial adds are not handled yet');
  watch.emit(modified(obj('ns', 'a', '11')));
  await seenLength(late.seen, 3);
  assert.deepEqual(late.seen, ['add ns/a@5 initial', 'add ns/b@6 initial', 'update ns/a 5->11']);
  assert.equal(registration.hasSynced(), true);
  await informer.stop();
});

test('SharedIndexInformer: a registration has synced only once its handler has handled the initial list', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [obj('ns', 'a', '5')]));
  const informer = newInformer(lw, new FakeClock());
  const hold = deferred();
  const registration = informer.addEventHandler({ onAdd: () => hold.promise });
  informer.run();
  await settles(informer.waitForSync(), 'waitForSync()');
  await flush();
  assert.equal(informer.hasSynced(), true);
  assert.equal(registration.hasSynced(), false);
  hold.resolve();
  await flushUntil('the registration to sync', () => registration.hasSynced());
  await informer.stop();
});

test('SharedIndexInformer: a slow async handler does not delay another; pending() and maxPending() measure its buffer', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', []));
  const informer = newInformer(lw, new FakeClock());
  const holds: ReturnType<typeof deferred>[] = [];
  const slowSeen: string[] = [];
  const slow = informer.addEventHandler({
    onAdd(o) {
      slowSeen.push(o.key);
      const hold = deferred();
      holds.push(hold);
      return hold.promise;
    },
  });
  const fast = recorder();
  const fastRegistration = informer.addEventHandler(fast.handler);
  informer.run();
  const { watch } = await lw.nextWatch();

  watch.emit(added(obj('ns', 'x1', '11')));
  await seenLength(fast.seen, 1);
  assert.deepEqual(slowSeen, ['ns/x1']);
  watch.emit(added(obj('ns', 'x2', '12')), added(obj('ns', 'x3', '13')));
  await seenLength(fast.seen, 3);
  assert.deepEqual(slowSeen, ['ns/x1'], 'the slow handler is still on its first notification');
  assert.equal(slow.pending(), 2);
  assert.equal(slow.maxPending(), 2);
  assert.equal(fastRegistration.pending(), 0);

  holds[0]?.resolve();
  await flushUntil('the slow handler to reach x2', () => slowSeen.length === 2);
  assert.equal(slow.pending(), 1);
  holds[1]?.resolve();
  await flushUntil('the slow handler to reach x3', () => slowSeen.length === 3);
  holds[2]?.resolve();
  await flush();
  assert.deepEqual(slowSeen, ['ns/x1', 'ns/x2', 'ns/x3']);
  assert.equal(slow.pending(), 0);
  assert.equal(slow.maxPending(), 2);
  await informer.stop();
});

test('SharedIndexInformer: waitForSync resolves once the initial list was processed, an empty one included', async () => {
  const empty = new ScriptedListerWatcher().scriptList(page('3', []));
  const emptyInformer = newInformer(empty, new FakeClock());
  emptyInformer.run();
  await settles(emptyInformer.waitForSync(), 'waitForSync() with an empty list');
  assert.equal(emptyInformer.hasSynced(), true);
  assert.equal(emptyInformer.lastSyncResourceVersion(), '3');
  await emptyInformer.stop();

  const lw = new ScriptedListerWatcher();
  const informer = newInformer(lw, new FakeClock());
  assert.equal(informer.hasSynced(), false);
  informer.run();
  const synced = informer.waitForSync();
  const list = await lw.nextList();
  assert.equal(await isPending(synced), true);
  assert.equal(informer.hasSynced(), false);
  list.respond(page('10', [obj('ns', 'a', '5')]));
  await settles(synced, 'waitForSync() after the list');
  assert.equal(informer.hasSynced(), true);
  assert.equal(informer.getIndexer().getByKey('ns/a')?.resourceVersion, '5');
  await settles(informer.waitForSync(), 'waitForSync() once synced');

  await informer.stop();

  // A waiter can give up.
  const slowLw = new ScriptedListerWatcher();
  const slowInformer = newInformer(slowLw, new FakeClock());
  slowInformer.run();
  const abort = new AbortController();
  const waiting = slowInformer.waitForSync(abort.signal);
  const slowList = await slowLw.nextList();
  abort.abort();
  await assert.rejects(settles(waiting, 'an aborted waitForSync()'), /cancelled/);
  slowList.respond(page('1', []));
  await settles(slowInformer.waitForSync(), 'waitForSync() after the list');
  await slowInformer.stop();
});

test('SharedIndexInformer: stop() ends the loops, stops the watch and rejects a pending waitForSync', async () => {
  const lw = new ScriptedListerWatcher();
  const clock = new FakeClock();
  const informer = newInformer(lw, clock, { useWatchList: true, resyncPeriodMs: 30_000 });
  const r = recorder();
  informer.addEventHandler(r.handler);
  informer.run();
  assert.equal(informer.isRunning(), true);
  const synced = informer.waitForSync();
  const { watch } = await lw.nextWatch();
  watch.emit(added(obj('ns', 'a', '5')));
  await flush();
  assert.equal(await isPending(synced), true);

  await settles(informer.stop(), 'stop()');
  await assert.rejects(settles(synced, 'waitForSync() after stop()'), /stopped before it synced/);
  assert.equal(watch.isStopped(), true);
  assert.equal(informer.isRunning(), false);
  assert.equal(clock.waiters(), 0, 'no resync timer left');
  await assert.rejects(informer.waitForSync(), /is stopped/);
  informer.run();
  assert.equal(informer.isRunning(), false, 'a stopped informer does not start again');
  assert.equal(lw.watchCalls.length, 1);
  assert.deepEqual(r.seen, []);
});

test('SharedIndexInformer: a deletion missed during a relist reaches handlers as DeletedFinalStateUnknown', async () => {
  const lw = new ScriptedListerWatcher().scriptList(
    page('10', [obj('ns', 'a', '5'), obj('ns', 'b', '6')]),
    page('20', [obj('ns', 'a', '5')]),
  );
  const clock = new FakeClock();
  const informer = newInformer(lw, clock);
  const deletedObjects: (KubeObject | DeletedFinalStateUnknown)[] = [];
  const r = recorder();
  informer.addEventHandler(r.handler);
  informer.addEventHandler({ onDelete: (o) => void deletedObjects.push(o) });
  informer.run();
  const { watch } = await lw.nextWatch();
  watch.emit(errorEvent(410, 'Expired'));
  await flush();
  clock.step(FIRST_BACKOFF_MAX_MS);
  await lw.nextWatch();
  await seenLength(r.seen, 3);
  assert.deepEqual(r.seen, ['add ns/a@5 initial', 'add ns/b@6 initial', 'delete ns/b@?6']);
  const [gone] = deletedObjects;
  assert.ok(gone !== undefined && isDeletedFinalStateUnknown(gone));
  assert.equal(gone.key, 'ns/b');
  assert.equal(gone.obj?.resourceVersion, '6');
  assert.equal(informer.getIndexer().getByKey('ns/b'), undefined);
  assert.deepEqual(informer.getIndexer().listKeys(), ['ns/a']);
  await informer.stop();
});

test('SharedIndexInformer: with WatchList, the initial events sync it and live events follow', async () => {
  const lw = new ScriptedListerWatcher();
  const informer = newInformer(lw, new FakeClock(), { useWatchList: true });
  const r = recorder();
  informer.addEventHandler(r.handler);
  informer.run();
  const { watch } = await lw.nextWatch();
  watch.emit(added(obj('ns', 'a', '5')), bookmark('8', true), modified(obj('ns', 'a', '9')));
  await settles(informer.waitForSync(), 'waitForSync()');
  await seenLength(r.seen, 2);
  assert.deepEqual(r.seen, ['add ns/a@5 initial', 'update ns/a 5->9']);
  assert.equal(lw.listCalls.length, 0);
  await informer.stop();
});

test('SharedIndexInformer: removeEventHandler stops deliveries to that handler', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', []));
  const informer = newInformer(lw, new FakeClock());
  const kept = recorder();
  const removed = recorder();
  informer.addEventHandler(kept.handler);
  const registration = informer.addEventHandler(removed.handler);
  informer.run();
  const { watch } = await lw.nextWatch();
  watch.emit(added(obj('ns', 'a', '5')));
  await seenLength(removed.seen, 1);
  informer.removeEventHandler(registration);
  watch.emit(added(obj('ns', 'b', '6')));
  await seenLength(kept.seen, 2);
  assert.deepEqual(removed.seen, ['add ns/a@5']);
  await informer.stop();
});

/** A plain InformerStore over a Map, for the direct mode: what the watch cache is to the proxy. */
function mapStore(): InformerStore & { readonly changes: string[] } {
  const items = new Map<string, KubeObject>();
  let synced = false;
  const changes: string[] = [];
  return {
    changes,
    add: (o) => {
      changes.push(`add ${o.key}@${o.resourceVersion}`);
      items.set(o.key, o);
    },
    update: (o) => {
      changes.push(`update ${o.key}@${o.resourceVersion}`);
      items.set(o.key, o);
    },
    delete: (o) => {
      changes.push(`delete ${o.key}@${o.resourceVersion}`);
      items.delete(o.key);
    },
    replace: (list, rv) => {
      changes.push(`replace ${String(list.length)}@${rv}`);
      items.clear();
      for (const o of list) items.set(o.key, o);
      synced = true;
    },
    getByKey: (key) => items.get(key),
    listKeys: () => [...items.keys()],
    list: () => items.values(),
    size: () => items.size,
    hasSynced: () => synced,
  };
}

test('SharedIndexInformer (direct): the reflector writes the store in the watch order; handlers hear each change with the state it replaced', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [obj('ns', 'a', '5'), obj('ns', 'b', '6')]));
  const store = mapStore();
  const informer = newInformer(lw, new FakeClock(), { store });
  const early = recorder();
  informer.addEventHandler(early.handler);
  informer.run();
  const { watch } = await lw.nextWatch();
  assert.equal(informer.hasSynced(), true, 'synced by the store: its first replace');
  assert.throws(() => informer.getIndexer(), /no Indexer/);
  assert.equal(informer.getStore().size(), 2);
  // Two objects' changes interleaved: a DeltaFIFO would batch b's; the store sees them as sent.
  watch.emit(modified(obj('ns', 'b', '11')), modified(obj('ns', 'a', '12')), modified(obj('ns', 'b', '13')), deleted(obj('ns', 'a', '14')));
  await seenLength(early.seen, 6);
  assert.deepEqual(store.changes, ['replace 2@10', 'update ns/b@11', 'update ns/a@12', 'update ns/b@13', 'delete ns/a@14']);
  assert.deepEqual(early.seen, [
    'add ns/a@5 initial',
    'add ns/b@6 initial',
    'update ns/b 6->11',
    'update ns/a 5->12',
    'update ns/b 11->13',
    'delete ns/a@14',
  ]);
  // A late handler gets the objects held now, then what follows.
  const late = recorder();
  informer.addEventHandler(late.handler);
  watch.emit(added(obj('ns', 'c', '15')));
  await seenLength(late.seen, 2);
  assert.deepEqual(late.seen, ['add ns/b@13 initial', 'add ns/c@15']);
  await informer.stop();
});

test('SharedIndexInformer (direct): a relist is told as adds, updates and deletes against what the store held', async () => {
  const lw = new ScriptedListerWatcher().scriptList(
    page('10', [obj('ns', 'a', '5'), obj('ns', 'b', '6'), obj('ns', 'd', '7')]),
    page('20', [obj('ns', 'd', '7'), obj('ns', 'c', '18'), obj('ns', 'a', '19')]),
  );
  const store = mapStore();
  const clock = new FakeClock();
  const informer = newInformer(lw, clock, { store });
  const r = recorder();
  informer.addEventHandler(r.handler);
  informer.run();
  const first = await lw.nextWatch();
  first.watch.emit(errorEvent(410, 'Expired'));
  await flush();
  clock.step(FIRST_BACKOFF_MAX_MS);
  await lw.nextWatch();
  await seenLength(r.seen, 6);
  // d unchanged (a resync, told to no handler without a resync period); c new; a changed; b gone.
  assert.deepEqual(r.seen, [
    'add ns/a@5 initial',
    'add ns/b@6 initial',
    'add ns/d@7 initial',
    'add ns/c@18',
    'update ns/a 5->19',
    'delete ns/b@6',
  ]);
  await informer.stop();
});
