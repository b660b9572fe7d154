/**
 * The example controller's loop (examples/pod-counter/controller.ts) over the library's informers
 * fed by a scripted upstream, with a fake writer and a fake clock: a conflict is requeued after
 * the rate limiter's delay and retried with the informer's copy; resyncs reconcile again without
 * writing what is already there; stopping lets the reconcile in progress finish and starts none.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { ApiException, V1ConfigMap, V1ObjectMeta } from '@kubernetes/client-node';
import type { ConfigMapWriter, Log } from '../../../examples/pod-counter/controller.ts';
import { newTypedInformerFactory } from '../../../src/library/typed-factory.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { FakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import '../../helpers/library-sources.ts';
import { flushUntil, settles } from '../../helpers/scripted-lister-watcher.ts';

// The example imports the library by the package's name: its sources here (library-sources.ts), no build needed.
const { WRITTEN_BY, newPodCounter } = await import('../../../examples/pod-counter/controller.ts');

const RESYNC_MS = 60_000;
const STALE = { total: '1', Pending: '1', Running: '0', Succeeded: '0', Failed: '0', Unknown: '0' };
const COUNTED = { total: '2', Pending: '1', Running: '1', Succeeded: '0', Failed: '0', Unknown: '0' };

/** Namespace `a`: two pods (one Running) and its pod-counts ConfigMap, saying one pod, at RV 5. */
function upstream(): FakeUpstream {
  return newFakeUpstream({
    respond: (request) => {
      if (request.path.startsWith('/api/v1/namespaces/a/pods')) {
        return jsonResponse(200, {
          kind: 'PodList',
          apiVersion: 'v1',
          metadata: { resourceVersion: '9' },
          items: [
            { metadata: { name: 'p0', namespace: 'a', resourceVersion: '3' }, status: { phase: 'Pending' } },
            { metadata: { name: 'p1', namespace: 'a', resourceVersion: '4' }, status: { phase: 'Running' } },
          ],
        });
      }
      if (request.path.startsWith('/api/v1/namespaces/a/configmaps')) {
        assert.match(request.path, /fieldSelector=metadata.name%3Dpod-counts/);
        return jsonResponse(200, {
          kind: 'ConfigMapList',
          apiVersion: 'v1',
          metadata: { resourceVersion: '9' },
          items: [
            {
              metadata: { name: 'pod-counts', namespace: 'a', resourceVersion: '5', creationTimestamp: '2026-11-20T10:00:00Z' },
              data: STALE,
            },
          ],
        });
      }
      return jsonResponse(404, { kind: 'Status', code: 404 });
    },
  });
}

interface Written {
  readonly namespace: string;
  readonly body: V1ConfigMap;
}

/** A writer whose replace() answers with `answers` in turn (an error is thrown), recording each call. */
function writer(answers: (() => Promise<V1ConfigMap>)[]): { readonly writer: ConfigMapWriter; readonly replaced: Written[] } {
  const replaced: Written[] = [];
  return {
    replaced,
    writer: {
      create: () => Promise.reject(new Error('the ConfigMap exists: no create expected')),
      replace: (namespace, _name, body) => {
        replaced.push({ namespace, body });
        const answer = answers.shift();
        if (answer === undefined) return Promise.reject(new Error('no more answers scripted'));
        return answer();
      },
    },
  };
}

function written(resourceVersion: string): () => Promise<V1ConfigMap> {
  return () => {
    const body = new V1ConfigMap();
    body.metadata = Object.assign(new V1ObjectMeta(), { name: 'pod-counts', namespace: 'a', resourceVersion });
    return Promise.resolve(body);
  };
}

function setUp(t: TestContext, answers: (() => Promise<V1ConfigMap>)[]) {
  const clock = new FakeClock();
  const up = upstream();
  const factory = newTypedInformerFactory(up.client, { useWatchList: false, resyncPeriodMs: RESYNC_MS, clock });
  t.after(() => factory.shutdown());
  const lines: { message: string; fields: Readonly<Record<string, unknown>> }[] = [];
  const log: Log = (message, fields = {}) => {
    lines.push({ message, fields });
  };
  const fake = writer(answers);
  const counter = newPodCounter({
    factory,
    writer: fake.writer,
    namespaces: ['a'],
    configMapName: 'pod-counts',
    identity: 'me',
    clock,
    log,
  });
  return { clock, up, factory, counter, lines, replaced: fake.replaced };
}

test('pod counter: a 409 is requeued after the rate limiter’s delay and retried with the informer’s copy, as a compare-and-swap', async (t) => {
  const { clock, factory, counter, lines, replaced } = setUp(t, [
    () => Promise.reject(new ApiException(409, 'Conflict', { reason: 'Conflict' }, {})),
    written('7'),
  ]);
  factory.start();
  await settles(factory.waitForCacheSync(), 'the caches to sync');
  const stop = new AbortController();
  const workers = counter.runWorkers(stop.signal);

  await flushUntil('the first write', () => replaced.length === 1);
  const [first] = replaced;
  assert.ok(first?.body instanceof V1ConfigMap, "client-node's model, as read from the informer");
  assert.deepEqual(first.body.data, COUNTED);
  assert.equal(first.body.metadata?.resourceVersion, '5', 'the version read: a compare-and-swap');
  assert.equal(first.body.metadata.annotations?.[WRITTEN_BY], 'me');
  assert.ok(first.body.metadata.creationTimestamp instanceof Date);
  await flushUntil('the conflict to be logged', () => lines.some((l) => l.message === 'conflict: requeued'));
  assert.equal(counter.queue.numRequeues('a'), 1);
  assert.equal(counter.queue.len(), 0, 'not at once: after the rate limiter’s delay');

  clock.step(5); // defaultControllerRateLimiter: 5 ms for the first requeue (the token bucket had room)
  await flushUntil('the retry', () => replaced.length === 2);
  await flushUntil('the retry to be logged', () => lines.some((l) => l.message === 'reconciled' && l.fields.action === 'updated'));
  assert.equal(counter.queue.numRequeues('a'), 0, 'forgotten once it succeeded');
  stop.abort();
  await settles(workers, 'the workers to stop');
});

test('pod counter: every resync reconciles again, and writes nothing that is already there', async (t) => {
  const { clock, up, factory, counter, lines, replaced } = setUp(t, [written('7')]);
  factory.start();
  await settles(factory.waitForCacheSync(), 'the caches to sync');
  const stop = new AbortController();
  const workers = counter.runWorkers(stop.signal);
  await flushUntil('the write', () => replaced.length === 1);
  // The apiserver's watch tells the informer of the write.
  await flushUntil('the watches', () => up.watches.length === 2);
  const configMaps = up.watches.find((w) => w.path.includes('configmaps'));
  configMaps?.write(
    `${JSON.stringify({ type: 'MODIFIED', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'pod-counts', namespace: 'a', resourceVersion: '7' }, data: COUNTED } })}\n`,
  );
  const reconciles = (): number => lines.filter((l) => l.message === 'reconciled').length;
  await flushUntil('the reconcile of that event', () => lines.some((l) => l.message === 'reconciled' && l.fields.action === 'unchanged'));
  const before = reconciles();
  clock.step(RESYNC_MS);
  await flushUntil('a reconcile at the resync', () => reconciles() > before);
  assert.equal(lines.at(-1)?.fields.action, 'unchanged');
  assert.equal(replaced.length, 1, 'nothing written again');
  stop.abort();
  await settles(workers, 'the workers to stop');
});

test('pod counter: stopping lets the reconcile in progress finish, and starts no other', async (t) => {
  let finish: () => void = () => undefined;
  const { up, factory, counter, replaced } = setUp(t, [
    () =>
      new Promise<V1ConfigMap>((resolve) => {
        finish = () => {
          void written('7')().then(resolve);
        };
      }),
  ]);
  factory.start();
  await settles(factory.waitForCacheSync(), 'the caches to sync');
  const stop = new AbortController();
  const workers = counter.runWorkers(stop.signal);
  await flushUntil('the write in progress', () => replaced.length === 1);
  stop.abort();
  let stopped = false;
  void workers.then(() => (stopped = true));
  await flushUntil('the pods watch', () => up.watches.some((w) => w.path.includes('pods')));
  up.watches
    .find((w) => w.path.includes('pods'))
    ?.write(
      `${JSON.stringify({ type: 'ADDED', object: { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p2', namespace: 'a', resourceVersion: '10' } } })}\n`,
    );
  await flushUntil(
    'the informer to apply it',
    () => factory.informerFor({ version: 'v1', resource: 'pods', namespace: 'a' }).lastSyncResourceVersion() === '10',
  );
  assert.equal(stopped, false, 'the reconcile in progress is waited for');
  finish();
  await settles(workers, 'the workers to stop once it finished');
  assert.equal(replaced.length, 1, 'no reconcile started after the stop');
});
