/**
 * Cheap reads (informerFor's `cacheDecoded`, src/library/object-reader.ts) over a scripted
 * upstream: one decoded, deeply frozen object per stored version, shared by every read and
 * handler until the object changes; the default stays a fresh copy per read.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { SharedInformerFactory } from '../../../src/library/informer.ts';
import { pods } from '../../../src/library/informer.ts';
import { newTypedInformerFactory } from '../../../src/library/typed-factory.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { FakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { flushUntil, settles } from '../../helpers/scripted-lister-watcher.ts';

function podJson(name: string, rv: number, image = 'busybox'): Record<string, unknown> {
  return {
    metadata: { name, namespace: 'a', resourceVersion: String(rv), labels: { app: 'web' }, creationTimestamp: '2026-11-20T10:00:00Z' },
    spec: { containers: [{ name: 'c', image }] },
  };
}

function setUp(t: TestContext): { factory: SharedInformerFactory; up: FakeUpstream } {
  const up = newFakeUpstream({
    respond: () =>
      jsonResponse(200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: '10' },
        items: [podJson('p', 9), podJson('q', 8)],
      }),
  });
  const factory = newTypedInformerFactory(up.client, { useWatchList: false, clock: new FakeClock() });
  t.after(() => factory.shutdown());
  return { factory, up };
}

test('cacheDecoded: every read and handler of one stored version gets one frozen object; a change makes a new one', async (t) => {
  const { factory, up } = setUp(t);
  const informer = factory.informerFor(pods, { cacheDecoded: true });
  const seen: V1Pod[] = [];
  informer.addEventHandler({
    onAdd: (pod) => {
      seen.push(pod);
    },
    onUpdate: (_old, pod) => {
      seen.push(pod);
    },
  });
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  await flushUntil('both adds', () => seen.length === 2);
  const indexer = informer.getIndexer();
  const p = indexer.getByKey('a/p');
  assert.ok(p !== undefined);
  assert.equal(indexer.getByKey('a/p'), p, 'the same object at each read');
  assert.ok(seen.includes(p), 'the one the handler got');
  assert.ok(indexer.list().includes(p));
  assert.ok(indexer.byIndex('namespace', 'a').includes(p));
  assert.ok(Object.isFrozen(p) && Object.isFrozen(p.metadata) && Object.isFrozen(p.spec?.containers[0]), 'frozen, deeply');
  assert.throws(() => {
    (p.metadata as { name?: string }).name = 'changed';
  }, TypeError);
  assert.ok(p.metadata?.creationTimestamp instanceof Date, 'still the client-node model');

  const watch = up.watches[0];
  assert.ok(watch !== undefined);
  watch.write(`${JSON.stringify({ type: 'MODIFIED', object: { kind: 'Pod', apiVersion: 'v1', ...podJson('p', 11, 'nginx') } })}\n`);
  await flushUntil('the update', () => seen.length === 3);
  const changed = indexer.getByKey('a/p');
  assert.notEqual(changed, p, 'a new version, a new object');
  assert.equal(changed?.spec?.containers[0]?.image, 'nginx');
  assert.equal(seen[2], changed);
  assert.equal(p.spec?.containers[0]?.image, 'busybox', 'the old one is unchanged');
});

test("cacheDecoded off (the default): each read is a fresh copy, the caller's to change", async (t) => {
  const { factory } = setUp(t);
  const informer = factory.informerFor(pods);
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  const indexer = informer.getIndexer();
  const p = indexer.getByKey('a/p');
  assert.ok(p?.metadata !== undefined);
  assert.notEqual(indexer.getByKey('a/p'), p);
  assert.equal(Object.isFrozen(p), false);
  p.metadata.name = 'mine';
  assert.equal(indexer.getByKey('a/p')?.metadata?.name, 'p');
});
