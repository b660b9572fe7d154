/**
 * The library informer's setTransform (client-go SharedIndexInformer.SetTransform) over a scripted
 * upstream: applied before anything stores or hears of an object, refused once started, and
 * never a cause of lost updates (the resourceVersion pitfall of client-go since 0.33).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import type { SharedInformerFactory } from '../../../src/library/informer.ts';
import { transformStripManagedFields } from '../../../src/library/informer.ts';
import { newTypedInformerFactory } from '../../../src/library/typed-factory.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { FakeUpstream, FakeWatchStream } from '../../helpers/fake-upstream-client.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { flushUntil, settles } from '../../helpers/scripted-lister-watcher.ts';

const PODS = { version: 'v1', resource: 'pods' } as const;

function podJson(name: string, rv: number, image = 'busybox'): Record<string, unknown> {
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      name,
      namespace: 'a',
      resourceVersion: String(rv),
      uid: `uid-${name}`,
      managedFields: [{ manager: 'kubectl', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }],
    },
    spec: { containers: [{ name: 'c', image }] },
  };
}

function modified(object: Record<string, unknown>): string {
  return `${JSON.stringify({ type: 'MODIFIED', object })}\n`;
}

function setUp(t: TestContext): { factory: SharedInformerFactory; up: FakeUpstream; logs: string[] } {
  const up = newFakeUpstream({
    respond: () =>
      jsonResponse(200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: '10' },
        items: [podJson('p', 9)].map(({ kind: _kind, apiVersion: _apiVersion, ...item }) => item),
      }),
  });
  const logs: string[] = [];
  const factory = newTypedInformerFactory(up.client, {
    useWatchList: false,
    clock: new FakeClock(),
    log: (_level, message) => logs.push(message),
  });
  t.after(() => factory.shutdown());
  return { factory, up, logs };
}

async function firstWatch(up: FakeUpstream): Promise<FakeWatchStream> {
  await flushUntil('the watch', () => up.watches.length > 0);
  const watch = up.watches[0];
  assert.ok(watch !== undefined);
  return watch;
}

test('setTransform: transformStripManagedFields is applied before the Indexer and every handler; each update still arrives', async (t) => {
  const { factory, up } = setUp(t);
  const pods = factory.informerFor<V1Pod>(PODS);
  pods.setTransform(transformStripManagedFields);
  const images: string[] = [];
  let withManagedFields = 0;
  pods.addEventHandler({
    onAdd: (pod) => {
      if (pod.metadata?.managedFields !== undefined) withManagedFields++;
    },
    onUpdate: (_old, pod) => {
      if (pod.metadata?.managedFields !== undefined) withManagedFields++;
      images.push(pod.spec?.containers[0]?.image ?? '');
    },
  });
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  const watch = await firstWatch(up);
  for (let i = 1; i <= 5; i++) watch.write(modified(podJson('p', 10 + i, `image-${String(i)}`)));
  await flushUntil('five updates', () => images.length === 5);
  assert.deepEqual(images, ['image-1', 'image-2', 'image-3', 'image-4', 'image-5']);
  assert.equal(withManagedFields, 0, 'no handler saw managedFields');
  const stored = pods.getIndexer().getByKey('a/p');
  assert.equal(stored?.metadata?.managedFields, undefined, 'the Indexer holds the transformed object');
  assert.equal(stored?.metadata?.resourceVersion, '15');
  assert.throws(() => {
    pods.setTransform((obj) => obj);
  }, /already started/);
});

test('setTransform: a transform that blanks resourceVersion loses no update (client-go since 0.33 takes each for a resync and drops it)', async (t) => {
  const { factory, up } = setUp(t);
  const pods = factory.informerFor<V1Pod>(PODS);
  pods.setTransform((obj: KubernetesObject) => {
    if (obj.metadata !== undefined) obj.metadata.resourceVersion = '';
    return obj;
  });
  const updates: string[] = [];
  // No resync period: a handler that client-go would give only real changes.
  pods.addEventHandler({
    onUpdate: (_old, pod) => {
      updates.push(pod.spec?.containers[0]?.image ?? '');
    },
  });
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  const watch = await firstWatch(up);
  for (let i = 1; i <= 3; i++) watch.write(modified(podJson('p', 10 + i, `image-${String(i)}`)));
  await flushUntil('the informer to apply all three', () => pods.lastSyncResourceVersion() === '13');
  await flushUntil('three updates', () => updates.length === 3);
  assert.deepEqual(updates, ['image-1', 'image-2', 'image-3'], 'every change reached the handler');
  assert.equal(pods.getIndexer().getByKey('a/p')?.metadata?.resourceVersion, '', 'the object holds what the transform left');
});

test('setTransform: an object the transform throws for, or renames, is stored untransformed and logged', async (t) => {
  const { factory, up, logs } = setUp(t);
  const pods = factory.informerFor<V1Pod>(PODS);
  pods.setTransform((obj: KubernetesObject) => {
    const name = obj.metadata?.name ?? '';
    if (name === 'boom') throw new Error('no such luck');
    if (name === 'p' && obj.metadata !== undefined) obj.metadata.name = 'renamed';
    return transformStripManagedFields(obj);
  });
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  const watch = await firstWatch(up);
  watch.write(`${JSON.stringify({ type: 'ADDED', object: podJson('boom', 11) })}\n`);
  watch.write(`${JSON.stringify({ type: 'ADDED', object: podJson('fine', 12) })}\n`);
  await flushUntil('both', () => pods.getIndexer().len() === 3);
  const indexer = pods.getIndexer();
  assert.deepEqual(indexer.listKeys().sort(), ['a/boom', 'a/fine', 'a/p']);
  assert.notEqual(indexer.getByKey('a/p')?.metadata?.managedFields, undefined, 'renamed: kept as sent');
  assert.notEqual(indexer.getByKey('a/boom')?.metadata?.managedFields, undefined, 'threw: kept as sent');
  assert.equal(indexer.getByKey('a/fine')?.metadata?.managedFields, undefined, 'transformed');
  assert.ok(logs.some((m) => m.includes('changed the key of a/p to a/renamed')));
  assert.ok(logs.some((m) => m.includes('transform failed for a/boom') && m.includes('no such luck')));
});
