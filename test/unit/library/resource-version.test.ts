/**
 * compareResourceVersion against apimachinery's own table (pkg/util/resourceversion
 * resourceversion_test.go TestCompareResourceVersion), and the Indexer's
 * lastStoreSyncResourceVersion (client-go Store.LastStoreSyncResourceVersion) over a scripted
 * upstream: moved by the list, by events once applied, and by bookmarks.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { compareResourceVersion, InvalidResourceVersionError } from '../../../src/library/informer.ts';
import { newTypedInformerFactory } from '../../../src/library/typed-factory.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { flushUntil, settles } from '../../helpers/scripted-lister-watcher.ts';

const CASES: readonly { readonly name: string; readonly a: string; readonly b: string; readonly expected?: -1 | 0 | 1 }[] = [
  { name: 'a less than b', a: '100', b: '200', expected: -1 },
  { name: 'a is zero, invalid', a: '0', b: '1' },
  { name: 'both zero', a: '0', b: '0' },
  { name: 'a greater than b', a: '200', b: '100', expected: 1 },
  { name: 'b is 0, invalid', a: '1', b: '0' },
  { name: 'a equal to b small', a: '1', b: '1', expected: 0 },
  { name: 'a equal to b', a: '100', b: '100', expected: 0 },
  { name: 'a shorter than b', a: '99', b: '100', expected: -1 },
  { name: 'a longer than b', a: '100', b: '99', expected: 1 },
  { name: 'a with leading zero', a: '0100', b: '100' },
  { name: 'b with leading zero', a: '100', b: '0100' },
  { name: 'a empty', a: '', b: '100' },
  { name: 'b empty', a: '100', b: '' },
  { name: 'a non-digit', a: '100a', b: '100' },
  { name: 'b non-digit', a: '100', b: '100a' },
  {
    name: 'large int a less than b',
    a: '99999999999999999999999999999999999999999999999999',
    b: '100000000000000000000000000000000000000000000000000',
    expected: -1,
  },
  {
    name: 'large int a greater than b',
    a: '100000000000000000000000000000000000000000000000000',
    b: '99999999999999999999999999999999999999999999999999',
    expected: 1,
  },
  {
    name: 'large int a equal to b',
    a: '12345678901234567890123456789012345678901234567890',
    b: '12345678901234567890123456789012345678901234567890',
    expected: 0,
  },
];

for (const c of CASES) {
  test(`compareResourceVersion: ${c.name}`, () => {
    if (c.expected === undefined) {
      assert.throws(
        () => compareResourceVersion(c.a, c.b),
        (error: unknown) => {
          assert.ok(error instanceof InvalidResourceVersionError);
          // The first ill-formed one is named, as CompareResourceVersion checks a first.
          const bad = /^[1-9][0-9]*$/.test(c.a) ? c.b : c.a;
          assert.equal(error.resourceVersion, bad);
          assert.equal(error.message, `resource version is not well formed: ${bad}`);
          return true;
        },
      );
    } else {
      assert.equal(compareResourceVersion(c.a, c.b), c.expected);
    }
  });
}

test('Indexer.lastStoreSyncResourceVersion: empty before the list, then the RV every change is in by: the list, each applied event, each bookmark', async (t) => {
  const up = newFakeUpstream({
    respond: () => jsonResponse(200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '10' }, items: [] }),
  });
  const factory = newTypedInformerFactory(up.client, { useWatchList: false, clock: new FakeClock() });
  t.after(() => factory.shutdown());
  const pods = factory.informerFor<V1Pod>({ version: 'v1', resource: 'pods' });
  const indexer = pods.getIndexer();
  assert.equal(indexer.lastStoreSyncResourceVersion(), '');
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  assert.equal(indexer.lastStoreSyncResourceVersion(), '10', 'an empty list');
  await flushUntil('the watch', () => up.watches.length > 0);
  const watch = up.watches[0];
  assert.ok(watch !== undefined);

  // Read-your-writes: a write answered with RV 12 is visible once the store's RV is not older.
  const written = '12';
  const seen = (): boolean => {
    const rv = indexer.lastStoreSyncResourceVersion();
    return compareResourceVersion(rv, written) >= 0;
  };
  assert.equal(seen(), false);
  const pod = (name: string, rv: string): string =>
    `${JSON.stringify({ type: 'ADDED', object: { kind: 'Pod', apiVersion: 'v1', metadata: { name, namespace: 'a', resourceVersion: rv } } })}\n`;
  watch.write(pod('p1', '11'));
  watch.write(pod('p2', '12'));
  await flushUntil('the store to hold RV 12', seen);
  assert.ok(indexer.getByKey('a/p2') !== undefined, 'the write is readable once the RV says so');
  assert.equal(indexer.lastStoreSyncResourceVersion(), '12');

  watch.write(`${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '40' } } })}\n`);
  await flushUntil('the bookmark to move it', () => indexer.lastStoreSyncResourceVersion() === '40');
});

test('onBookmark: each handler hears the RV a list or a bookmark brought the Indexer to, after every change before it, and never for an event alone', async (t) => {
  const up = newFakeUpstream({
    respond: () =>
      jsonResponse(200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: '10' },
        items: [{ metadata: { name: 'p0', namespace: 'a', resourceVersion: '9' } }],
      }),
  });
  const factory = newTypedInformerFactory(up.client, { useWatchList: false, clock: new FakeClock() });
  t.after(() => factory.shutdown());
  const pods = factory.informerFor<V1Pod>({ version: 'v1', resource: 'pods' });
  const heard: string[] = [];
  pods.addEventHandler({
    onAdd: (pod) => {
      heard.push(`add ${pod.metadata?.name ?? ''}`);
    },
    onBookmark: (rv) => {
      heard.push(`bookmark ${rv}`);
    },
  });
  // A second handler with no onBookmark: nothing breaks, it hears the adds.
  const adds: string[] = [];
  pods.addEventHandler({ onAdd: (pod) => void adds.push(pod.metadata?.name ?? '') });
  factory.start();
  await settles(factory.waitForCacheSync(), 'waitForCacheSync()');
  await flushUntil('the watch', () => up.watches.length > 0);
  const watch = up.watches[0];
  assert.ok(watch !== undefined);
  await flushUntil('the list told', () => heard.length === 2);
  assert.deepEqual(heard, ['add p0', 'bookmark 10'], 'the list, then its RV');

  const pod = (name: string, rv: string): string =>
    `${JSON.stringify({ type: 'ADDED', object: { kind: 'Pod', apiVersion: 'v1', metadata: { name, namespace: 'a', resourceVersion: rv } } })}\n`;
  const bookmark = (rv: string): string =>
    `${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: rv } } })}\n`;
  watch.write(pod('p1', '11'));
  watch.write(pod('p2', '12'));
  watch.write(bookmark('40'));
  await flushUntil('the bookmark told', () => heard.length === 5);
  watch.write(pod('p3', '41'));
  watch.write(bookmark('41'));
  watch.write(bookmark('50'));
  await flushUntil('the last bookmark told', () => heard.at(-1) === 'bookmark 50');
  assert.deepEqual(heard, ['add p0', 'bookmark 10', 'add p1', 'add p2', 'bookmark 40', 'add p3', ...heard.slice(6)]);
  // Bookmarks read by the reflector in one turn may be told as one, at the last RV reached.
  assert.ok(
    heard.slice(6).every((line) => line === 'bookmark 41' || line === 'bookmark 50'),
    heard.join(', '),
  );
  assert.equal(pods.getIndexer().lastStoreSyncResourceVersion(), '50');
  assert.deepEqual(adds, ['p0', 'p1', 'p2', 'p3']);
});
