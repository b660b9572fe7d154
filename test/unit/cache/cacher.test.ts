import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { test } from 'node:test';
import { MAX_PENDING_BYTES } from '../../../src/cache/cache-watcher.ts';
import type { WatcherFilter } from '../../../src/cache/cache-watcher.ts';
import { newCacher } from '../../../src/cache/cacher.ts';
import { newUnsentBudget } from '../../../src/memory/unsent-budget.ts';
import type { UnsentBudget } from '../../../src/memory/unsent-budget.ts';
import type { Cacher, WatchRequest } from '../../../src/cache/cacher.ts';
import { everythingFieldSelector, parseFieldSelector } from '../../../src/selector/field-selector.ts';
import { everythingLabelSelector, parseLabelSelector } from '../../../src/selector/label-selector.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import type { WatchCache } from '../../../src/cache/watch-cache.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import type { KubeObject } from '../../../src/informer/object.ts';
import { decodeObject } from '../../../src/informer/object.ts';
import type { ReflectorStore } from '../../../src/informer/store.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { PROOF_AGE_ANNOTATION } from '../../../src/protocol/proof-age.ts';

function cm(namespace: string, name: string, rv: number, labels: Record<string, string> = {}, size = 0): KubeObject {
  const data = size > 0 ? { blob: 'x'.repeat(size) } : undefined;
  return decodeObject(
    Buffer.from(
      JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace, resourceVersion: String(rv), labels }, data }),
    ),
  );
}

interface Harness {
  cache: WatchCache;
  store: ReflectorStore;
  cacher: Cacher;
  clock: FakeClock;
}

function harness(resource: 'configmaps' | 'pods' = 'configmaps', budget?: UnsentBudget): Harness {
  const clock = new FakeClock();
  const kind = resource === 'pods' ? 'Pod' : 'ConfigMap';
  const spec = { group: '', version: 'v1', resource, kind, namespaced: true, unstructured: false };
  const cache = newWatchCache({ spec, fields: selectableFieldsFor('', resource, true), clock });
  return { cache, store: cache.store, cacher: newCacher(cache, { clock, ...(budget === undefined ? {} : { budget }) }), clock };
}

/** A client that stopped reading: its writes never complete; `destroyed` is called when the proxy cuts it. */
function stuckSink(destroyed: () => void, highWaterMark?: number): Writable {
  return new Writable({
    ...(highWaterMark === undefined ? {} : { highWaterMark }),
    write(_chunk, _encoding, _callback) {
      // never calls back
    },
    destroy(_error, callback) {
      destroyed();
      callback(null);
    },
  });
}

const ALL: WatcherFilter = { namespace: '', labels: everythingLabelSelector(), fields: everythingFieldSelector() };

/** A watch whose received lines are collected as {type, name, rv}. */
function watch(
  h: Harness,
  request: Partial<WatchRequest> = {},
): { lines: () => string[]; text: () => string; sink: PassThrough; ended: () => boolean } {
  const sink = new PassThrough();
  let text = '';
  let ended = false;
  sink.on('data', (chunk: Buffer) => (text += chunk.toString()));
  sink.on('end', () => (ended = true));
  const start = h.cacher.watch({
    sink,
    filter: ALL,
    resourceVersion: '0',
    sendInitialEvents: false,
    allowWatchBookmarks: false,
    timeoutMs: 60_000,
    ...request,
  });
  if (start.kind === 'too-old')
    sink.end(
      `{"type":"ERROR","object":{"metadata":{},"message":"too old resource version: ${String(start.requested)} (${String(start.oldest)})"}}\n`,
    );
  return {
    sink,
    text: () => text,
    ended: () => ended,
    lines: () =>
      text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => {
          const e = JSON.parse(l) as {
            type: string;
            object: { metadata: { name?: string; resourceVersion?: string; annotations?: Record<string, string> }; message?: string };
          };
          const end = e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true' ? 'end' : '';
          return [e.type, e.object.metadata.name ?? e.object.message ?? '', e.object.metadata.resourceVersion ?? '', end]
            .filter((p) => p !== '')
            .join(' ');
        }),
  };
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('cacher: a selector watch sees objects enter (ADDED), change (MODIFIED) and leave (DELETED at the event RV)', async () => {
  const h = harness();
  h.store.replace([cm('a', 'x', 1)], '10');
  const w = watch(h, { filter: { ...ALL, labels: parseLabelSelector('app=web') } });
  h.store.update(cm('a', 'x', 11, { app: 'web' }));
  h.store.update(cm('a', 'x', 12, { app: 'web', v: '2' }));
  h.store.update(cm('a', 'x', 13));
  h.store.add(cm('a', 'y', 14));
  await flush();
  assert.deepEqual(w.lines(), ['ADDED x 11', 'MODIFIED x 12', 'DELETED x 13']);
});

test('cacher: a namespace watch gets nothing from other namespaces; deletes carry the previous state', async () => {
  const h = harness();
  h.store.replace([], '10');
  const b = watch(h, { filter: { ...ALL, namespace: 'b' } });
  const all = watch(h);
  h.store.add(cm('a', 'x', 11));
  h.store.add(cm('b', 'y', 12, { k: 'v' }));
  h.store.delete(cm('b', 'y', 13));
  await flush();
  assert.deepEqual(b.lines(), ['ADDED y 12', 'DELETED y 13']);
  assert.deepEqual(all.lines(), ['ADDED x 11', 'ADDED y 12', 'DELETED y 13']);
  assert.equal(h.cacher.watcherCount(), 2);
});

test('cacher: from an RV in the window, exactly the events after it; below the window, one 410 ERROR', async () => {
  const h = harness();
  h.store.replace([], '10');
  for (let rv = 11; rv <= 15; rv++) h.store.add(cm('a', `o${String(rv)}`, rv));
  const replay = watch(h, { resourceVersion: '13' });
  h.store.add(cm('a', 'live', 16));
  const old = watch(h, { resourceVersion: '5' });
  await flush();
  assert.deepEqual(replay.lines(), ['ADDED o14 14', 'ADDED o15 15', 'ADDED live 16']);
  assert.deepEqual(old.lines(), ['ERROR too old resource version: 5 (10)']);
  assert.equal(old.ended(), true);
});

test('cacher: a WatchList gets the state, the annotated bookmark in the learned shape, then changes', async () => {
  const h = harness();
  h.store.observeBookmark?.(
    Buffer.from(
      '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}},"extra":{}}',
    ),
  );
  h.store.replace([cm('b', 'y', 2), cm('a', 'x', 1)], '10');
  const w = watch(h, { resourceVersion: '', sendInitialEvents: true, allowWatchBookmarks: true });
  h.store.add(cm('a', 'z', 11));
  await flush();
  assert.deepEqual(w.lines(), ['ADDED x 1', 'ADDED y 2', 'BOOKMARK 10 end', 'ADDED z 11']);
  assert.match(
    w.text(),
    /\{"type":"BOOKMARK","object":\{"kind":"ConfigMap","apiVersion":"v1","metadata":\{"resourceVersion":"10","annotations":\{"k8s\.io\/initial-events-end":"true"\}\},"extra":\{\}\}\}\n/,
  );
});

test('cacher: the timeout ends the stream; bookmarks only when asked, 2 s before the end', async () => {
  const h = harness();
  h.store.replace([], '10');
  const plain = watch(h, { timeoutMs: 10_000 });
  const marked = watch(h, { timeoutMs: 10_000, allowWatchBookmarks: true });
  h.store.updateResourceVersion?.('20');
  h.clock.step(8_000);
  await flush();
  assert.deepEqual(marked.lines(), ['BOOKMARK 20']);
  assert.deepEqual(plain.lines(), []);
  h.clock.step(2_000);
  await flush();
  assert.equal(plain.ended(), true);
  assert.equal(marked.ended(), true);
  assert.equal(h.cacher.watcherCount(), 0);
});

test('cacher: a relist ends every watch', async () => {
  const h = harness();
  h.store.replace([], '10');
  const w = watch(h);
  h.store.replace([cm('a', 'x', 30)], '30');
  await flush();
  assert.equal(w.ended(), true);
  assert.equal(h.cacher.watcherCount(), 0);
});

test('cacher: a watch that ends with the upstream watch ends when it closes, with its heartbeats before; the others stay', async () => {
  const h = harness();
  h.store.replace([], '10');
  h.store.watchConnected?.(true);
  const follower = watch(h, { resourceVersion: '10', allowWatchBookmarks: true, endsWithUpstream: true, heartbeatMs: 2_000 });
  const client = watch(h, { resourceVersion: '10', allowWatchBookmarks: true });
  // Nothing to send for a period: a heartbeat at the RV the watch reached (not moved), for the follower only.
  h.clock.step(2_000);
  await flush();
  assert.deepEqual(follower.lines(), ['BOOKMARK 10']);
  // A period with a frame in it needs no heartbeat.
  h.store.add(cm('a', 'x', 11));
  h.clock.step(2_000);
  await flush();
  assert.deepEqual(follower.lines(), ['BOOKMARK 10', 'ADDED x 11']);
  h.clock.step(2_000);
  await flush();
  assert.deepEqual(follower.lines(), ['BOOKMARK 10', 'ADDED x 11', 'BOOKMARK 11']);
  assert.deepEqual(client.lines(), ['ADDED x 11'], 'no heartbeat for a client that did not ask');
  // The upstream watch closes: the follower's watch ends (cleanly), the client's waits for it to resume.
  h.store.watchConnected?.(false);
  await flush();
  assert.equal(follower.ended(), true);
  assert.equal(client.ended(), false);
  assert.equal(h.cacher.watcherCount(), 1);
  h.clock.step(10_000);
  await flush();
  assert.deepEqual(follower.lines(), ['BOOKMARK 10', 'ADDED x 11', 'BOOKMARK 11'], 'no heartbeat once ended');
});

test('cacher: a watcher that does not read is closed past its byte bound; the others go on', async () => {
  const h = harness();
  h.store.replace([], '10');
  let destroyed = false;
  const stuck = stuckSink(() => {
    destroyed = true;
  });
  h.cacher.watch({
    sink: stuck,
    filter: ALL,
    resourceVersion: '0',
    sendInitialEvents: false,
    allowWatchBookmarks: false,
    timeoutMs: 60_000,
  });
  const reader = watch(h);
  const size = 1024 * 1024;
  const count = Math.ceil(MAX_PENDING_BYTES / size) + 2;
  for (let i = 0; i < count; i++) h.store.add(cm('a', `big-${String(i)}`, 11 + i, {}, size));
  await flush();
  assert.equal(destroyed, true, 'the stuck watcher was closed');
  assert.equal(reader.lines().length, count, 'the reading watcher got every event');
  assert.equal(h.cacher.watcherCount(), 1);
});

test('cacher: watchers that do not read are bounded together by the unsent budget: the largest holders are closed, the readers go on', async () => {
  const budget = newUnsentBudget(5 * 1024 * 1024);
  const h = harness('configmaps', budget);
  h.store.replace([], '10');
  const destroyed: number[] = [];
  for (let i = 0; i < 4; i++) {
    const stuck = stuckSink(() => destroyed.push(i), 1);
    h.cacher.watch({
      sink: stuck,
      filter: ALL,
      resourceVersion: '0',
      sendInitialEvents: false,
      allowWatchBookmarks: false,
      timeoutMs: 60_000,
    });
  }
  const reader = watch(h);
  // 4 stuck watchers x 2 MiB each = 8 MiB unsent, each under its own 16 MiB cap: only the budget bounds them.
  for (let i = 0; i < 2; i++) {
    h.store.add(cm('a', `big-${String(i)}`, 11 + i, {}, 1024 * 1024));
    await flush();
  }
  assert.equal(destroyed.length, 2, `two closed to fit 5 MiB, closed: ${JSON.stringify(destroyed)}`);
  assert.ok(budget.total() <= budget.maxBytes, `the total (${String(budget.total())}) fits`);
  assert.equal(reader.lines().length, 2, 'the reading watcher got every event');
  assert.equal(h.cacher.watcherCount(), 3);
  // Closing the rest gives their share back.
  h.cacher.stop();
  assert.equal(budget.total(), 0);
});

test('cacher: a watcher the budget closes while it writes its initial events is never registered (no leak, no pinned snapshot)', () => {
  const budget = newUnsentBudget(2 * 1024 * 1024);
  const other = { unsentBytes: () => 1024 * 1024, closeForSlowness: () => undefined };
  budget.report(other, 1024 * 1024);
  const { cacher, store } = harness('configmaps', budget);
  store.replace(
    [0, 1, 2, 3].map((i) => cm('a', `big-${String(i)}`, 10 + i, {}, 800 * 1024)),
    '20',
  );
  let destroyed = false;
  const stuck = stuckSink(() => {
    destroyed = true;
  }, 1);
  const start = cacher.watch({
    sink: stuck,
    filter: ALL,
    resourceVersion: '',
    sendInitialEvents: true,
    allowWatchBookmarks: true,
    timeoutMs: 60_000,
  });
  assert.equal(start.kind, 'started');
  assert.equal(destroyed, true, 'closed for slowness while writing its initial events');
  assert.equal(cacher.watcherCount(), 0, 'not counted, not kept');
});

test('cacher: a keyed representation (metadata-only) renders each event once for all its watchers; an unkeyed one per watcher', async () => {
  for (const [key, expected] of [
    ['PartialObjectMetadata/v1', 2],
    [undefined, 6],
  ] as const) {
    const h = harness();
    h.store.replace([], '10');
    let rendered = 0;
    const representation = {
      ...(key === undefined ? {} : { key }),
      object: (raw: Buffer): Buffer => {
        rendered++;
        return raw;
      },
      bookmark: (raw: Buffer): Buffer => raw,
    };
    const watchers = [0, 1, 2].map(() => watch(h, { representation }));
    h.store.add(cm('a', 'x', 11));
    h.store.add(cm('a', 'y', 12));
    await flush();
    for (const w of watchers) assert.equal(w.lines().length, 2);
    assert.equal(rendered, expected, `key ${String(key)}`);
  }
});

function pod(name: string, rv: number, nodeName: string): KubeObject {
  const json = { kind: 'Pod', apiVersion: 'v1', metadata: { name, namespace: 'a', resourceVersion: String(rv) }, spec: { nodeName } };
  return decodeObject(Buffer.from(JSON.stringify(json)), selectableFieldsFor('', 'pods', true).extract);
}

test('cacher: pods watched by spec.nodeName see their node only, including a pod moving away', async () => {
  const h = harness('pods');
  h.store.replace([], '10');
  const nodeA = watch(h, {
    filter: { ...ALL, fields: parseFieldSelector('spec.nodeName=node-a', selectableFieldsFor('', 'pods', true).conversion) },
  });
  const everyPod = watch(h);
  h.store.add(pod('p1', 11, 'node-a'));
  h.store.add(pod('p2', 12, 'node-b'));
  h.store.update(pod('p1', 13, 'node-b'));
  await flush();
  assert.deepEqual(nodeA.lines(), ['ADDED p1 11', 'DELETED p1 13']);
  assert.deepEqual(everyPod.lines(), ['ADDED p1 11', 'ADDED p2 12', 'MODIFIED p1 13']);
});

test('cacher: open watches keep the cache in use; closing the cache ends them', async () => {
  const h = harness();
  h.store.replace([], '10');
  assert.equal(h.cache.inUse(), false);
  const w = watch(h);
  assert.equal(h.cache.inUse(), true, 'an open watch');
  h.cache.close();
  await flush();
  assert.equal(w.ended(), true);
  assert.equal(h.cache.inUse(), false);
});

test('cacher: watchers with the same selection share one conversion; selections that print alike are not conflated', async () => {
  const h = harness();
  h.store.replace([], '10');
  // `n=x\,b\=c` (one term, the value "x,b=c") and `n=x,b=c` (two terms) print alike unescaped.
  const { conversion } = h.cache.fields;
  const one = watch(h, { filter: { ...ALL, fields: parseFieldSelector('metadata.name=x\\,metadata.namespace\\=a', conversion) } });
  const two = watch(h, { filter: { ...ALL, fields: parseFieldSelector('metadata.name=x,metadata.namespace=a', conversion) } });
  const same = [watch(h, { filter: { ...ALL, namespace: 'a' } }), watch(h, { filter: { ...ALL, namespace: 'a' } })];
  h.store.add(cm('a', 'x', 11));
  h.store.add(cm('a', 'x,metadata.namespace=a', 12));
  await flush();
  assert.equal(
    parseFieldSelector('metadata.name=x\\,metadata.namespace\\=a', conversion).toString(),
    parseFieldSelector('metadata.name=x,metadata.namespace=a', conversion).toString(),
    'the two selections print alike',
  );
  assert.deepEqual(one.lines(), ['ADDED x,metadata.namespace=a 12']);
  assert.deepEqual(two.lines(), ['ADDED x 11']);
  for (const w of same) assert.deepEqual(w.lines(), ['ADDED x 11', 'ADDED x,metadata.namespace=a 12']);
  // One of two watchers of a shared selection ends: the other still gets every change.
  same[0]?.sink.destroy();
  await flush();
  h.store.update(cm('a', 'x', 13, { v: '2' }));
  await flush();
  assert.deepEqual(same[1]?.lines(), ['ADDED x 11', 'ADDED x,metadata.namespace=a 12', 'MODIFIED x 13']);
  assert.equal(h.cacher.watcherCount(), 3);
});

test('cacher: the distinct selections its watches hold are counted, with what they hold, as they come and go', async () => {
  let filters = 0;
  let bytes = 0;
  const clock = new FakeClock();
  const spec = { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, unstructured: false };
  const cache = newWatchCache({ spec, fields: selectableFieldsFor('', 'configmaps', true), clock });
  const metrics = {
    watchers: () => undefined,
    sent: () => undefined,
    events: () => undefined,
    closedSlow: () => undefined,
    expired: () => undefined,
    window: () => undefined,
    filters: (delta: number, held: number) => {
      filters += delta;
      bytes += held;
    },
  };
  const h: Harness = { cache, store: cache.store, cacher: newCacher(cache, { clock, metrics }), clock };
  h.store.replace([], '10');
  const web = { ...ALL, labels: parseLabelSelector('app=web') };
  const watches = [watch(h, { filter: web }), watch(h, { filter: { ...ALL, labels: parseLabelSelector('app=web') } }), watch(h)];
  assert.equal(filters, 2, 'two distinct selections: app=web (shared by two watches) and everything');
  const two = bytes;
  assert.ok(two > 0 && two < 4096, `a few hundred bytes each: ${String(two)}`);
  const wide = watch(h, {
    filter: { ...ALL, labels: parseLabelSelector(Array.from({ length: 64 }, (_, i) => `key-${String(i)}`).join(',')) },
  });
  assert.equal(filters, 3);
  assert.ok(bytes - two > 8 * 1024, `64 requirements hold kilobytes: ${String(bytes - two)}`);
  for (const w of [...watches, wide]) w.sink.destroy();
  await flush();
  assert.equal(filters, 0);
  assert.equal(bytes, 0);
});

test("cacher: a watch that asks gets each bookmark with its RV's proof age when written; the others get the apiserver's bytes", async () => {
  const h = harness();
  h.store.replace([], '10');
  const listedAt = h.clock.now();
  const aged = watch(h, { timeoutMs: 10_000, allowWatchBookmarks: true, proofAges: true });
  const plain = watch(h, { timeoutMs: 10_000, allowWatchBookmarks: true });
  // The upstream watch moved the cache's RV (as of its arrival), 1.5 s before the early pre-timeout bookmark (at 6.5 s).
  h.clock.step(5_000);
  h.store.updateResourceVersion?.('20');
  assert.equal(h.cache.lastProgressAt(), listedAt + 5_000);
  h.clock.step(3_000);
  await flush();
  const bookmarkObject = (text: string): { metadata: { resourceVersion: string; annotations?: Record<string, string> } } =>
    (JSON.parse(text.trim()) as { object: { metadata: { resourceVersion: string; annotations?: Record<string, string> } } }).object;
  assert.deepEqual(bookmarkObject(aged.text()).metadata, {
    resourceVersion: '20',
    annotations: { [PROOF_AGE_ANNOTATION]: '1500' },
  });
  assert.equal(plain.text(), '{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"20"}}}\n');
});
