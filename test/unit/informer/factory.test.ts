import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SharedInformerFactory } from '../../../src/informer/factory.ts';
import { newSharedInformerFactory, scopeKey } from '../../../src/informer/factory.ts';
import type { ResourceScope } from '../../../src/informer/lister-watcher.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { FakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { settles } from '../../helpers/scripted-lister-watcher.ts';

const PODS: ResourceScope = { group: '', version: 'v1', resource: 'pods' };
const PODS_IN_A: ResourceScope = { ...PODS, namespace: 'a' };

/** An upstream whose watch-list streams send one pod, then the initial-events-end bookmark at RV 7, and stay open. */
function upstream(): FakeUpstream {
  return newFakeUpstream({
    onWatch(stream) {
      stream.write(
        '{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"a","resourceVersion":"6"}}}\n',
      );
      stream.write(
        '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}}}\n',
      );
    },
  });
}

function newFactory(up: FakeUpstream): SharedInformerFactory {
  return newSharedInformerFactory({ client: up.client, clock: new FakeClock() });
}

test('SharedInformerFactory: one informer per scope: the same scope gives the same informer, another namespace or selector another', async () => {
  const factory = newFactory(upstream());
  const pods = factory.informerFor(PODS);
  assert.equal(factory.informerFor({ group: '', version: 'v1', resource: 'pods' }), pods);
  const inA = factory.informerFor(PODS_IN_A);
  assert.notEqual(inA, pods);
  assert.equal(factory.informerFor({ ...PODS, namespace: 'a' }), inA);
  assert.notEqual(factory.informerFor({ ...PODS, namespace: 'b' }), inA);
  assert.notEqual(factory.informerFor({ ...PODS_IN_A, labelSelector: 'app=web' }), inA);
  assert.notEqual(factory.informerFor({ ...PODS_IN_A, fieldSelector: 'spec.nodeName=n1' }), inA);
  assert.notEqual(factory.informerFor({ group: 'apps', version: 'v1', resource: 'pods' }), pods);
  assert.equal(factory.status().length, 6);
  assert.equal(inA.name, 'pods in a');
  assert.notEqual(scopeKey({ ...PODS, labelSelector: 'a=b' }), scopeKey({ ...PODS, fieldSelector: 'a=b' }));
  await factory.shutdown();
});

test('SharedInformerFactory: start() starts every informer not yet started; status() reports each', async () => {
  const up = upstream();
  const factory = newFactory(up);
  const pods = factory.informerFor(PODS);
  const inA = factory.informerFor(PODS_IN_A);
  assert.equal(pods.isRunning(), false);
  assert.deepEqual(
    factory.status().map((s) => s.running),
    [false, false],
  );
  assert.deepEqual(up.paths, [], 'nothing is requested before start()');

  factory.start();
  assert.equal(pods.isRunning(), true);
  assert.equal(inA.isRunning(), true);
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  assert.deepEqual(factory.status(), [
    { key: scopeKey(PODS), running: true, synced: true, resourceVersion: '7', objects: 1 },
    { key: scopeKey(PODS_IN_A), running: true, synced: true, resourceVersion: '7', objects: 1 },
  ]);
  assert.deepEqual(
    up.watches.map((w) => w.path.split('?')[0]),
    ['/api/v1/pods', '/api/v1/namespaces/a/pods'],
  );
  assert.ok(up.watches.every((w) => w.path.includes('sendInitialEvents=true')));

  const later = factory.informerFor({ ...PODS, namespace: 'later' });
  assert.equal(later.isRunning(), false);
  factory.start();
  assert.equal(later.isRunning(), true);
  await settles(factory.waitForCacheSync(), 'waitForCacheSync() for the later informer');
  assert.deepEqual(
    up.watches.map((w) => w.path.split('?')[0]),
    ['/api/v1/pods', '/api/v1/namespaces/a/pods', '/api/v1/namespaces/later/pods'],
    'informers already running are not started again',
  );
  await factory.shutdown();
});

test('SharedInformerFactory: stop(scope) stops and forgets that informer only', async () => {
  const up = upstream();
  const factory = newFactory(up);
  const pods = factory.informerFor(PODS);
  const inA = factory.informerFor(PODS_IN_A);
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');

  await settles(factory.stop({ ...PODS_IN_A }), 'stop(scope)');
  assert.equal(inA.isRunning(), false);
  assert.equal(up.watches[1]?.aborted(), true, 'its watch request is aborted');
  assert.equal(pods.isRunning(), true);
  assert.equal(up.watches[0]?.aborted(), false);
  assert.deepEqual(
    factory.status().map((s) => s.key),
    [scopeKey(PODS)],
  );
  const again = factory.informerFor(PODS_IN_A);
  assert.notEqual(again, inA, 'the next request creates a new informer');
  assert.equal(again.isRunning(), false);
  await settles(factory.stop({ ...PODS, namespace: 'unknown' }), 'stop() of a scope never asked for');
  await factory.shutdown();
});

test('SharedInformerFactory: shutdown stops every informer and refuses new ones', async () => {
  const up = upstream();
  const factory = newFactory(up);
  const pods = factory.informerFor(PODS);
  const inA = factory.informerFor(PODS_IN_A);
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  await settles(factory.shutdown(), 'shutdown()');
  assert.equal(pods.isRunning(), false);
  assert.equal(inA.isRunning(), false);
  assert.ok(up.watches.every((w) => w.aborted()));
  assert.deepEqual(factory.status(), []);
  assert.throws(() => factory.informerFor(PODS), /shut down/);
});
