/**
 * The library's informer (src/library/): the port's informer behind typed objects, AbortSignals
 * and an async iterator, over a scripted upstream (test/helpers/fake-upstream-client.ts) and a
 * fake clock. What the port itself does (delivery order, relists, resync) is tested in
 * test/unit/informer/; here, what the adapter adds.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { DeletedFinalStateUnknown, InformerEvent, SharedInformerFactory } from '../../../src/library/informer.ts';
import { NAMESPACE_INDEX, isDeletedFinalStateUnknown, jsonDecoder } from '../../../src/library/informer.ts';
import { newTypedInformerFactory } from '../../../src/library/typed-factory.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { FakeUpstream, FakeWatchStream } from '../../helpers/fake-upstream-client.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { flushUntil, settles } from '../../helpers/scripted-lister-watcher.ts';

const PODS = { version: 'v1', resource: 'pods' } as const;

function podJson(namespace: string, name: string, rv: number, extra: { node?: string; phase?: string } = {}): Record<string, unknown> {
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { name, namespace, resourceVersion: String(rv), uid: `${namespace}-${name}`, creationTimestamp: '2026-11-20T10:00:00Z' },
    spec: { nodeName: extra.node ?? 'node-1', containers: [{ name: 'c', image: 'busybox' }] },
    status: { phase: extra.phase ?? 'Pending' },
  };
}

function event(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: Record<string, unknown>): string {
  return `${JSON.stringify({ type, object })}\n`;
}

/**
 * An upstream that answers LISTs with `listed()` (at its RV) and gives each WATCH to the test;
 * WatchList is off, so every informer starts with a LIST, as most apiservers of today allow.
 */
function upstream(listed: () => { rv: number; items: Record<string, unknown>[] }): FakeUpstream {
  return newFakeUpstream({
    respond: (request) => {
      if (!request.path.startsWith('/api/v1/')) return jsonResponse(404, { kind: 'Status', code: 404 });
      const { rv, items } = listed();
      return jsonResponse(200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: String(rv) },
        items: items.map(({ kind: _kind, apiVersion: _apiVersion, ...item }) => item),
      });
    },
  });
}

function newFactory(t: TestContext, up: FakeUpstream, clock = new FakeClock()): { factory: SharedInformerFactory; closed: () => boolean } {
  let closed = false;
  const factory = newTypedInformerFactory(up.client, { useWatchList: false, clock }, () => {
    closed = true;
    return Promise.resolve();
  });
  t.after(() => factory.shutdown());
  return { factory, closed: () => closed };
}

async function nextWatch(up: FakeUpstream, count: number): Promise<FakeWatchStream> {
  await flushUntil(`watch #${String(count)}`, () => up.watches.length >= count);
  const watch = up.watches[count - 1];
  assert.ok(watch !== undefined);
  return watch;
}

test('library informer: handlers get client-node models (Dates, V1Pod fields), a fresh copy per call; the Indexer reads them by key and index', async (t) => {
  const up = upstream(() => ({ rv: 10, items: [podJson('a', 'web-0', 9), podJson('b', 'db-0', 8, { node: 'node-2' })] }));
  const { factory } = newFactory(t, up);
  const pods = factory.informerFor<V1Pod>(PODS);
  pods.addIndexers({ byNode: (pod) => (pod.spec?.nodeName === undefined ? [] : [pod.spec.nodeName]) });
  const added: V1Pod[] = [];
  pods.addEventHandler({
    onAdd(pod) {
      added.push(pod);
    },
  });
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  await flushUntil('both adds', () => added.length === 2);

  const first = added.find((p) => p.metadata?.name === 'web-0');
  assert.ok(first !== undefined);
  assert.ok(first.metadata?.creationTimestamp instanceof Date, 'timestamps are Dates, as client-node API calls return them');
  assert.equal(first.metadata.creationTimestamp.toISOString(), '2026-11-20T10:00:00.000Z');
  assert.equal(first.kind, 'Pod', 'list items get their kind back');
  assert.equal(first.spec?.containers[0]?.image, 'busybox');

  const indexer = pods.getIndexer();
  assert.equal(indexer.len(), 2);
  assert.deepEqual(indexer.listKeys().sort(), ['a/web-0', 'b/db-0']);
  assert.deepEqual(indexer.indexKeys(NAMESPACE_INDEX, 'a'), ['a/web-0']);
  assert.deepEqual(
    indexer.byIndex('byNode', 'node-2').map((p) => p.metadata?.name),
    ['db-0'],
    'a caller-given index function indexes the typed object',
  );
  assert.deepEqual(indexer.listIndexFuncValues('byNode').sort(), ['node-1', 'node-2']);
  const read = indexer.getByKey('a/web-0');
  assert.ok(read !== undefined);
  assert.ok(read.metadata !== undefined);
  read.metadata.name = 'changed';
  assert.equal(indexer.getByKey('a/web-0')?.metadata?.name, 'web-0', 'each read is a copy: changing it changes nothing held');
  assert.equal(indexer.get(podJson('b', 'db-0', 0) as V1Pod)?.metadata?.resourceVersion, '8');
  assert.throws(() => indexer.byIndex('unknown', 'x'), /does not exist/);
  assert.throws(() => {
    pods.addIndexers({ late: () => [] });
  }, /cannot add indexers to running index/);

  // A move to another node: the typed index follows.
  const watch = await nextWatch(up, 1);
  watch.write(event('MODIFIED', podJson('a', 'web-0', 11, { node: 'node-2' })));
  await flushUntil('the index to follow', () => indexer.indexKeys('byNode', 'node-2').length === 2);
  assert.deepEqual(indexer.indexKeys('byNode', 'node-1'), []);
});

test('library informer: events() yields add, update and delete in order; one event waits in the iterator, the rest in its handler buffer; ends on abort', async (t) => {
  const up = upstream(() => ({ rv: 10, items: [podJson('a', 'p0', 9)] }));
  const { factory } = newFactory(t, up);
  const pods = factory.informerFor<V1Pod>(PODS, { decode: jsonDecoder });
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  const stop = new AbortController();
  const events = pods.events(stop.signal);

  const describe = (e: InformerEvent<V1Pod>): string => {
    switch (e.type) {
      case 'add':
        return `add ${String(e.object.metadata?.name)}@${String(e.object.metadata?.resourceVersion)}${e.isInInitialList ? ' initial' : ''}`;
      case 'update':
        return `update ${String(e.object.metadata?.name)} ${String(e.oldObject.metadata?.resourceVersion)}->${String(e.object.metadata?.resourceVersion)}`;
      case 'delete':
        return isDeletedFinalStateUnknown(e.object) ? `delete? ${e.object.key}` : `delete ${String(e.object.metadata?.name)}`;
    }
  };
  const first = await settles(events.next(), 'the first event');
  assert.equal(first.done, false);
  assert.equal(describe(first.value), 'add p0@9 initial', 'a late consumer first gets every object held');
  assert.equal(typeof (first.value as { object: V1Pod }).object.metadata?.creationTimestamp, 'string', 'jsonDecoder: the wire JSON');

  const watch = await nextWatch(up, 1);
  watch.write(event('ADDED', podJson('a', 'p1', 11)));
  watch.write(event('MODIFIED', podJson('a', 'p1', 12)));
  watch.write(event('DELETED', podJson('a', 'p0', 13)));
  await flushUntil('the informer to apply all three', () => pods.lastSyncResourceVersion() === '13');
  // Nobody read yet: one event waits in the iterator, the other two in the handler's buffer.
  const seen: string[] = [];
  for (let i = 0; i < 3; i++) {
    const next = await settles(events.next(), `event ${String(i + 2)}`);
    assert.equal(next.done, false);
    seen.push(describe(next.value));
  }
  assert.deepEqual(seen, ['add p1@11', 'update p1 11->12', 'delete p0']);

  const waiting = events.next();
  stop.abort();
  assert.deepEqual(await settles(waiting, 'the pending next() after abort'), { done: true, value: undefined });
  assert.deepEqual(await events.next(), { done: true, value: undefined });
  watch.write(event('ADDED', podJson('a', 'p2', 14)));
  await flushUntil('the informer to apply it', () => pods.lastSyncResourceVersion() === '14');
  assert.deepEqual(await events.next(), { done: true, value: undefined }, 'nothing after the end');
});

test('library informer: the handler behind events() waits for the consumer (its registration counts what waits), and leaving the loop removes it', async (t) => {
  const up = upstream(() => ({ rv: 10, items: [] }));
  const { factory } = newFactory(t, up);
  const pods = factory.informerFor<V1Pod>(PODS);
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  const watch = await nextWatch(up, 1);
  const names: string[] = [];
  let handled = 0;
  pods.addEventHandler({
    onAdd: () => {
      handled++;
    },
  });
  const consumer = (async () => {
    for await (const e of pods.events()) {
      if (e.type === 'add') names.push(e.object.metadata?.name ?? '');
      if (names.length === 2) break;
    }
  })();
  for (let i = 0; i < 5; i++) watch.write(event('ADDED', podJson('a', `p${String(i)}`, 11 + i)));
  await settles(consumer, 'the consumer to leave its loop after two events');
  await flushUntil('the other handler to get all five', () => handled === 5);
  assert.deepEqual(names, ['p0', 'p1']);
  watch.write(event('ADDED', podJson('a', 'p5', 16)));
  await flushUntil('the other handler', () => handled === 6);
  assert.deepEqual(names, ['p0', 'p1'], 'the iterator left: its handler was removed');
});

test('library informer: a deletion missed while the watch was down reaches onDelete as DeletedFinalStateUnknown with the last state decoded', async (t) => {
  let listed = { rv: 10, items: [podJson('a', 'keep', 9), podJson('a', 'gone', 8)] };
  const up = upstream(() => listed);
  const clock = new FakeClock();
  const { factory } = newFactory(t, up, clock);
  const pods = factory.informerFor<V1Pod>(PODS);
  const deleted: (V1Pod | DeletedFinalStateUnknown<V1Pod>)[] = [];
  pods.addEventHandler({
    onDelete(obj) {
      deleted.push(obj);
    },
  });
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  const watch = await nextWatch(up, 1);
  // The apiserver compacted past us: 410 on the watch; the relist no longer has `gone`.
  listed = { rv: 20, items: [podJson('a', 'keep', 9)] };
  watch.write(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } })}\n`);
  await flushUntil('the reflector to wait before relisting', () => clock.waiters() > 0);
  clock.step(1_000);
  await flushUntil('the relist to reach the handler', () => deleted.length === 1);
  const [gone] = deleted;
  assert.ok(gone !== undefined && isDeletedFinalStateUnknown(gone));
  assert.equal(gone.key, 'a/gone');
  assert.ok(gone.obj?.metadata?.creationTimestamp instanceof Date, 'the last state, decoded');
  assert.equal(gone.obj.metadata.resourceVersion, '8');
  assert.deepEqual(pods.getIndexer().listKeys(), ['a/keep']);
});

test('library factory: one informer per scope (the factory namespace as default), start(signal) runs them until the signal aborts, then the connection closes', async (t) => {
  const up = upstream(() => ({ rv: 10, items: [podJson('a', 'p', 9)] }));
  const { factory, closed } = newFactory(t, up);
  const pods = factory.informerFor<V1Pod>(PODS);
  assert.equal(factory.informerFor({ group: '', version: 'v1', resource: 'pods' }), pods);
  const inA = factory.informerFor<V1Pod>({ ...PODS, namespace: 'a' });
  assert.notEqual(inA, pods);
  assert.equal(inA.name, 'pods in a');
  const stop = new AbortController();
  factory.start(stop.signal);
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  assert.deepEqual(
    up.paths.filter((p) => !p.includes('watch=')).map((p) => p.split('?')[0]),
    ['/api/v1/pods', '/api/v1/namespaces/a/pods'],
  );
  const iteration = pods.events().next();
  const run = pods.run(new AbortController().signal);
  stop.abort();
  await flushUntil('the connection to close', closed);
  assert.ok(
    up.watches.every((w) => w.aborted()),
    'every watch ended',
  );
  assert.equal((await settles(iteration, 'the open iteration')).done, true, 'the stop ends an open iteration');
  await settles(run, 'run() of an informer the factory stopped');
  assert.throws(() => factory.informerFor(PODS), /shut down/);

  const scoped = newTypedInformerFactory(up.client, { namespace: 'b', useWatchList: false, clock: new FakeClock() });
  t.after(() => scoped.shutdown());
  assert.equal(scoped.informerFor(PODS).name, 'pods in b');
});

test('library informer: run(signal) of an informer lists, watches and stops when the signal aborts; waitForSync rejects on its own abort', async (t) => {
  const up = upstream(() => ({ rv: 10, items: [podJson('a', 'p', 9)] }));
  const { factory } = newFactory(t, up);
  const pods = factory.informerFor<V1Pod>(PODS);
  const gaveUp = new AbortController();
  const waiting = pods.waitForSync(gaveUp.signal);
  gaveUp.abort();
  await assert.rejects(settles(waiting, 'waitForSync'), /cancelled/);
  const stop = new AbortController();
  const run = pods.run(stop.signal);
  await settles(pods.waitForSync(), 'waitForSync');
  assert.equal(pods.hasSynced(), true);
  assert.equal(pods.lastSyncResourceVersion(), '10');
  const watch = await nextWatch(up, 1);
  stop.abort();
  await settles(run, 'run()');
  assert.equal(watch.aborted(), true);
});
