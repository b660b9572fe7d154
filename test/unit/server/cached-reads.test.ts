import assert from 'node:assert/strict';
import { test } from 'node:test';
import { acceptsPlainJson, newCachedReads } from '../../../src/server/cached-reads.ts';
import type { CachedReads, CachedReadsOptions, CachedResponse } from '../../../src/server/cached-reads.ts';
import { decodeContinue } from '../../../src/server/continue-token.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import type { CachedResourceSpec, WatchCache } from '../../../src/cache/watch-cache.ts';
import type { KubeObject } from '../../../src/informer/object.ts';
import { decodeObject } from '../../../src/informer/object.ts';
import type { SharedIndexInformer } from '../../../src/informer/shared-informer.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';

test('cached reads: plain JSON is acceptable; Table conversions and other media types are not', () => {
  assert.equal(acceptsPlainJson(undefined), true);
  assert.equal(acceptsPlainJson('application/json'), true);
  assert.equal(acceptsPlainJson('*/*'), true);
  assert.equal(acceptsPlainJson('application/vnd.kubernetes.protobuf, application/json'), true);
  // kubectl get prefers a Table: passed through, so that the apiserver prints it.
  assert.equal(
    acceptsPlainJson('application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json'),
    false,
  );
  assert.equal(acceptsPlainJson('application/json;as=Table;v=v1;g=meta.k8s.io'), false);
  assert.equal(acceptsPlainJson('application/vnd.kubernetes.protobuf'), false);
  assert.equal(acceptsPlainJson('application/yaml'), false);
  assert.equal(acceptsPlainJson('application/json;q=0'), false);
});

const CONFIGMAPS: CachedResourceSpec = {
  group: '',
  version: 'v1',
  resource: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
  unstructured: false,
};

function configMap(namespace: string, name: string, labels: Record<string, string> = {}): KubeObject {
  const json = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace, resourceVersion: '5', labels } };
  return decodeObject(Buffer.from(JSON.stringify(json)));
}

/** A watch cache over a fixed list at a settable RV; snapshots are kept of every RV it was at. */
interface FakeCache extends WatchCache {
  rv: bigint;
}

function fakeCache(objects: KubeObject[], rv: bigint, spec: CachedResourceSpec = CONFIGMAPS): FakeCache {
  const ordered = [...objects].sort((a, b) => (a.key < b.key ? -1 : 1));
  const kept = new Map<bigint, readonly KubeObject[]>();
  const informer = { hasSynced: () => true } as unknown as SharedIndexInformer;
  const cache: FakeCache = {
    rv,
    spec,
    fields: selectableFieldsFor(spec.group, spec.resource, spec.namespaced),
    namespace: undefined,
    informer,
    resourceVersion: () => cache.rv,
    waitUntilFresh: (want) => Promise.resolve(cache.rv >= want ? cache.rv : undefined),
    get: (key) => ordered.find((o) => o.key === key),
    orderedList: () => {
      kept.set(cache.rv, ordered);
      return ordered;
    },
    snapshot: (want) => (want === cache.rv ? cache.orderedList() : kept.get(want)),
    lastProgressAt: () => Date.now(),
    addListener: () => () => undefined,
    bookmarkFrame: () => Buffer.alloc(0),
    since: () => ({ kind: 'events', events: [] }),
    windowStats: () => ({ capacity: 0, size: 0, oldest: undefined }),
    inUse: () => false,
    close: () => undefined,
    isClosed: () => false,
  };
  return cache;
}

function readsOver(
  cache: WatchCache,
  probeRv: string,
  options: Partial<CachedReadsOptions> = {},
): { reads: CachedReads; probes: string[] } {
  const upstream = newFakeUpstream({
    respond: () => jsonResponse(200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: probeRv }, items: [] }),
  });
  const source = {
    cacheFor: () => cache,
    start: () => undefined,
    synced: () => true,
    stop: () => Promise.resolve(),
  };
  return { reads: newCachedReads({ source, client: upstream.client, freshnessWaitMs: 0, ...options }), probes: upstream.paths };
}

interface ListJson {
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: { metadata: { name: string; namespace: string } }[];
}

function listOf(res: CachedResponse | undefined): ListJson {
  assert.ok(res !== undefined, 'served from the cache');
  assert.equal(res.statusCode, 200);
  return JSON.parse(Buffer.concat(res.body).toString()) as ListJson;
}

const names = (list: ListJson): string[] => list.items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`);

const FIVE = [
  configMap('b', 'x', { app: 'web' }),
  configMap('a', 'z'),
  configMap('a', 'y', { app: 'web' }),
  configMap('b', 'w'),
  configMap('a', 'x'),
];

test('cached reads: pages follow key order with the apiserver continue token and remainingItemCount', async () => {
  const cache = fakeCache(FIVE, 100n);
  const { reads } = readsOver(cache, '100');
  const first = listOf(await reads.tryServe('GET', '/api/v1/configmaps?limit=2', undefined));
  assert.deepEqual(names(first), ['a/x', 'a/y']);
  assert.equal(first.metadata.resourceVersion, '100');
  assert.equal(first.metadata.remainingItemCount, 3);
  const token = first.metadata.continue ?? '';
  assert.deepEqual(decodeContinue(token, '/'), { fromKey: '/a/y\u0000', resourceVersion: 100 });
  // The cache moves on; the next pages still read the state at 100.
  cache.rv = 101n;
  const second = listOf(await reads.tryServe('GET', `/api/v1/configmaps?limit=2&continue=${token}`, undefined));
  assert.deepEqual(names(second), ['a/z', 'b/w']);
  assert.equal(second.metadata.resourceVersion, '100');
  const third = listOf(await reads.tryServe('GET', `/api/v1/configmaps?limit=2&continue=${second.metadata.continue ?? ''}`, undefined));
  assert.deepEqual(names(third), ['b/x']);
  assert.equal(third.metadata.continue, undefined, 'the last page has no continue');
  assert.equal(third.metadata.remainingItemCount, undefined);
});

test('cached reads: a namespace pages within its own keys; a selector gives no remainingItemCount', async () => {
  const { reads } = readsOver(fakeCache(FIVE, 100n), '100');
  const ns = listOf(await reads.tryServe('GET', '/api/v1/namespaces/a/configmaps?limit=2', undefined));
  assert.deepEqual(names(ns), ['a/x', 'a/y']);
  assert.equal(ns.metadata.remainingItemCount, 1);
  assert.deepEqual(decodeContinue(ns.metadata.continue ?? '', '/a/'), { fromKey: '/a/y\u0000', resourceVersion: 100 });
  const rest = listOf(
    await reads.tryServe('GET', `/api/v1/namespaces/a/configmaps?limit=2&continue=${ns.metadata.continue ?? ''}`, undefined),
  );
  assert.deepEqual(names(rest), ['a/z']);
  const selected = listOf(await reads.tryServe('GET', '/api/v1/configmaps?limit=1&labelSelector=app%3Dweb', undefined));
  assert.deepEqual(names(selected), ['a/y']);
  assert.equal(selected.metadata.remainingItemCount, undefined, 'unknown with a selector (PrepareContinueToken)');
  assert.ok(selected.metadata.continue !== undefined, 'more items follow, matching or not');
});

test('cached reads: RV=0 ignores the limit; Exact and unknown snapshots are passed through', async () => {
  const { reads } = readsOver(fakeCache(FIVE, 100n), '100');
  const all = listOf(await reads.tryServe('GET', '/api/v1/configmaps?resourceVersion=0&limit=2', undefined));
  assert.equal(all.items.length, 5);
  assert.equal(all.metadata.continue, undefined);
  assert.equal(await reads.tryServe('GET', '/api/v1/configmaps?resourceVersion=99&resourceVersionMatch=Exact', undefined), undefined);
  assert.equal(await reads.tryServe('GET', '/api/v1/configmaps?resourceVersion=99&limit=2', undefined), undefined, 'RV=N + limit is Exact');
  assert.ok((await reads.tryServe('GET', '/api/v1/configmaps?resourceVersion=100&resourceVersionMatch=Exact', undefined)) !== undefined);
  assert.ok((await reads.tryServe('GET', '/api/v1/configmaps?resourceVersion=99', undefined)) !== undefined, 'not older than 99');
  assert.equal(await reads.tryServe('GET', '/api/v1/configmaps?resourceVersion=101', undefined), undefined, 'ahead of the cache');
  const foreign = Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: 42, start: 'a/x' })).toString('base64url');
  assert.equal(await reads.tryServe('GET', `/api/v1/configmaps?limit=2&continue=${foreign}`, undefined), undefined, 'no snapshot at 42');
  assert.equal(await reads.tryServe('GET', '/api/v1/configmaps?continue=garbage', undefined), undefined, 'the apiserver words it');
});

test('cached reads: strong RV-unset reads are served only when the probe shows the cache fresh', async () => {
  const fresh = readsOver(fakeCache(FIVE, 100n), '100');
  const get = await fresh.reads.tryServe('GET', '/api/v1/namespaces/a/configmaps/x', undefined);
  assert.equal(get?.statusCode, 200);
  assert.equal((await fresh.reads.tryServe('GET', '/api/v1/namespaces/a/configmaps/nope', undefined))?.statusCode, 404);
  assert.deepEqual(fresh.probes, ['/api/v1/configmaps?limit=1', '/api/v1/configmaps?limit=1']);
  const behind = readsOver(fakeCache(FIVE, 100n), '120');
  assert.equal(await behind.reads.tryServe('GET', '/api/v1/configmaps', undefined), undefined, 'the apiserver is ahead: passed through');
});

test('cached reads: concurrent RV-unset reads share probes', async () => {
  const { reads, probes } = readsOver(fakeCache(FIVE, 100n), '100');
  const answers = await Promise.all(Array.from({ length: 50 }, () => reads.tryServe('GET', '/api/v1/configmaps', undefined)));
  assert.ok(answers.every((a) => a?.statusCode === 200));
  assert.ok(probes.length <= 2, `50 reads, ${String(probes.length)} probes`);
});

test("cached reads: bounded reads skip the probe but wait for the proxy's own writes", async () => {
  const cache = fakeCache(FIVE, 100n);
  const { reads, probes } = readsOver(cache, '100', { consistency: 'bounded' });
  assert.equal((await reads.tryServe('GET', '/api/v1/configmaps', undefined))?.statusCode, 200);
  assert.deepEqual(probes, [], 'no probe');
  reads.observeWrite('/api/v1/namespaces/a/configmaps', 105n);
  assert.equal(await reads.tryServe('GET', '/api/v1/configmaps', undefined), undefined, 'the write is not in the cache yet');
  cache.rv = 105n;
  assert.equal((await reads.tryServe('GET', '/api/v1/configmaps', undefined))?.statusCode, 200);
  reads.observeWrite('/api/v1/namespaces/a/configmaps/x', undefined);
  assert.equal((await reads.tryServe('GET', '/api/v1/configmaps', undefined))?.statusCode, 200, 'an unknown RV: the probe decides');
  assert.equal(probes.length, 1);
});
