/**
 * Protobuf from the cache, against the apiserver's own answers to the same requests, with the
 * Accept headers client-go sends: its typed clients and informers (`application/vnd.kubernetes.
 * protobuf, *\/*`), its metadata client (PartialObjectMetadata[List] in protobuf first). GET, LIST
 * (whole, selected, paged) and WATCH (from an RV, and WatchList) come from the cache; the bytes of
 * every object are the apiserver's; only the list's and the bookmarks' resourceVersions (the
 * cache's own) may differ.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import type { CachingProxy } from '../../helpers/caching-proxy.ts';
import { proxyCounter, startCachingProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { fieldsOf, listOf, unenvelope, watchFramesOf, bytesField } from '../../helpers/protobuf-reader.ts';
import { CONFIGMAPS, PODS } from '../../helpers/resource-specs.ts';

const shared = useSharedAdmin();
const TYPED = 'application/vnd.kubernetes.protobuf, */*';
const METADATA_LIST =
  'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const METADATA_ONE =
  'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
const PROTOBUF = 'application/vnd.kubernetes.protobuf';

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly body: Buffer;
}

async function viaProxy(proxy: CachingProxy, path: string, accept: string): Promise<Answer> {
  const res = await request(`${proxy.url}${path}`, { headers: { accept } });
  return { status: res.statusCode, contentType: String(res.headers['content-type']), body: Buffer.from(await res.body.arrayBuffer()) };
}

async function direct(path: string, accept: string): Promise<Answer> {
  const res = await shared.admin.request({ method: 'GET', path, headers: { accept } });
  return { status: res.statusCode, contentType: String(res.headers['content-type']), body: res.body };
}

/** A namespace with configmaps and pods, written straight to the apiserver, and a proxy that caches both, caught up. */
async function setUp(t: Parameters<typeof testNamespace>[0]): Promise<{ ns: string; proxy: CachingProxy; lastRv: string }> {
  const ns = await testNamespace(t, shared.admin);
  let lastRv = '';
  for (let i = 0; i < 5; i++) {
    const cm = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      metadata: { name: `cm-${String(i)}`, labels: { parity: i % 2 === 0 ? 'even' : 'odd' } },
      data: { i: String(i), text: '<&> ü' },
    });
    lastRv = cm.metadata.resourceVersion;
  }
  const pod = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
    metadata: { name: 'p', labels: { app: 'x' } },
    spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '100m' } } }] },
  });
  lastRv = pod.metadata.resourceVersion;
  const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS, PODS] });
  await eventually(
    'the cache to hold them',
    async () => (await viaProxy(proxy, `/api/v1/namespaces/${ns}/pods/p?resourceVersion=${lastRv}`, TYPED)).status === 200,
  );
  return { ns, proxy, lastRv };
}

test(
  'protobuf from the cache: GET of an object and of a missing one, in protobuf and as PartialObjectMetadata, byte for byte the apiserver',
  { timeout: 60_000 },
  async (t) => {
    const { ns, proxy } = await setUp(t);
    const fromCache = await proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { served_from: 'cache' });
    for (const [path, accept] of [
      [`/api/v1/namespaces/${ns}/configmaps/cm-0`, TYPED],
      [`/api/v1/namespaces/${ns}/pods/p`, TYPED],
      [`/api/v1/namespaces/${ns}/pods/p`, PROTOBUF],
      [`/api/v1/namespaces/${ns}/configmaps/missing`, TYPED],
      [`/api/v1/namespaces/${ns}/pods/p`, METADATA_ONE],
    ] as const) {
      const [ours, theirs] = await Promise.all([viaProxy(proxy, path, accept), direct(path, accept)]);
      assert.equal(ours.status, theirs.status, path);
      assert.equal(ours.contentType, theirs.contentType, `${path}: ${accept}`);
      assert.equal(ours.contentType, PROTOBUF);
      assert.ok(ours.body.equals(theirs.body), `${path} (${accept}): ${ours.body.toString('hex')} vs ${theirs.body.toString('hex')}`);
    }
    assert.equal(
      (await proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { served_from: 'cache' })) - fromCache,
      5,
      'all from the cache',
    );
  },
);

test(
  'protobuf from the cache: LISTs (whole, selected, paged with continue and remainingItemCount, metadata) carry the apiserver items',
  { timeout: 60_000 },
  async (t) => {
    const { ns, proxy } = await setUp(t);
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    for (const [query, accept] of [
      ['', TYPED],
      ['?resourceVersion=0', TYPED],
      ['?labelSelector=parity%3Deven', TYPED],
      ['?limit=2', TYPED],
      ['', METADATA_LIST],
    ] as const) {
      const [ours, theirs] = await Promise.all([viaProxy(proxy, `${base}${query}`, accept), direct(`${base}${query}`, accept)]);
      assert.equal(ours.status, 200);
      assert.equal(ours.contentType, theirs.contentType);
      const a = unenvelope(ours.body);
      const b = unenvelope(theirs.body);
      assert.deepEqual([a.apiVersion, a.kind], [b.apiVersion, b.kind], query);
      const la = listOf(a.raw);
      const lb = listOf(b.raw);
      assert.equal(la.items.length, lb.items.length, `${query}: items`);
      la.items.forEach((item, i) => {
        assert.ok(item.equals(lb.items[i] ?? Buffer.alloc(0)), `${query} ${accept}: item ${String(i)}`);
      });
      assert.equal(la.remainingItemCount, lb.remainingItemCount, `${query}: remainingItemCount`);
      assert.equal(la.continue === '', lb.continue === '', `${query}: continue`);
      if (la.continue !== '') {
        // The next page of each: its own token, the same items.
        const next = (token: string): string => `${base}?limit=2&continue=${encodeURIComponent(token)}`;
        const [pa, pb] = await Promise.all([viaProxy(proxy, next(la.continue), TYPED), direct(next(lb.continue), TYPED)]);
        const na = listOf(unenvelope(pa.body).raw);
        const nb = listOf(unenvelope(pb.body).raw);
        assert.deepEqual(
          na.items.map((i) => i.toString('hex')),
          nb.items.map((i) => i.toString('hex')),
          'the second page',
        );
      }
    }
  },
);

/** Reads a protobuf watch stream until `count` frames arrived. */
async function watchFrames(body: AsyncIterable<Buffer | Uint8Array>, count: number): Promise<{ type: string; object: Buffer }[]> {
  let bytes = Buffer.alloc(0);
  for await (const chunk of body) {
    bytes = Buffer.concat([bytes, Buffer.from(chunk)]);
    const frames = watchFramesOf(bytes);
    if (frames.length >= count) return frames.slice(0, count);
  }
  return watchFramesOf(bytes);
}

test(
  'protobuf from the cache: a watch from an RV and a WatchList send the apiserver frames, bookmarks included',
  { timeout: 60_000 },
  async (t) => {
    const { ns, proxy, lastRv } = await setUp(t);
    const watchPath = `/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=${lastRv}&allowWatchBookmarks=true`;
    const ours = await request(`${proxy.url}${watchPath}`, { headers: { accept: TYPED } });
    const theirs = await shared.admin.stream({ method: 'GET', path: watchPath, headers: { accept: TYPED } });
    assert.equal(ours.headers['content-type'], 'application/vnd.kubernetes.protobuf;stream=watch');
    assert.equal(theirs.headers['content-type'], ours.headers['content-type']);
    await kube(shared.admin, 'PUT', `/api/v1/namespaces/${ns}/configmaps/cm-1`, {
      metadata: { name: 'cm-1', labels: { parity: 'odd' } },
      data: { changed: 'yes' },
    });
    await kube(shared.admin, 'DELETE', `/api/v1/namespaces/${ns}/configmaps/cm-2`);
    const [a, b] = await Promise.all([watchFrames(ours.body, 2), watchFrames(theirs.body, 2)]);
    ours.body.destroy();
    theirs.body.destroy();
    assert.deepEqual(
      a.map((e) => e.type),
      ['MODIFIED', 'DELETED'],
    );
    assert.deepEqual(
      a.map((e) => e.object.toString('hex')),
      b.map((e) => e.object.toString('hex')),
      'the same objects, enveloped as the apiserver envelopes them',
    );

    const list = `/api/v1/namespaces/${ns}/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`;
    const watchList = await request(`${proxy.url}${list}`, { headers: { accept: TYPED } });
    const theirList = await shared.admin.stream({ method: 'GET', path: list, headers: { accept: TYPED } });
    const [la, lb] = await Promise.all([watchFrames(watchList.body, 5), watchFrames(theirList.body, 5)]);
    watchList.body.destroy();
    theirList.body.destroy();
    assert.deepEqual(
      la.map((e) => e.type),
      ['ADDED', 'ADDED', 'ADDED', 'ADDED', 'BOOKMARK'],
    );
    assert.deepEqual(
      la.slice(0, 4).map((e) => e.object.toString('hex')),
      lb.slice(0, 4).map((e) => e.object.toString('hex')),
    );
    // The end bookmark: the type's empty object with its RV and the initial-events-end annotation.
    const bookmark = (frame: { object: Buffer } | undefined): { annotations: string[]; kind: string } => {
      const object = unenvelope(frame?.object ?? Buffer.alloc(0));
      const meta = fieldsOf(bytesField(fieldsOf(object.raw), 1) ?? Buffer.alloc(0));
      return { kind: object.kind, annotations: meta.filter((f) => f.number === 12).map((f) => String(f.value)) };
    };
    assert.deepEqual(bookmark(la[4]), bookmark(lb[4]));
    assert.equal(await proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { served_from: 'apiserver', verb: 'watch' }), 0);
    assert.equal(
      await proxyCounter(proxy.metrics, 'kube_cache_proxy_cache_answers_total', {
        content_type: 'application/vnd.kubernetes.protobuf;stream=watch',
      }),
      2,
      'both watches counted by the Content-Type they were written in',
    );
  },
);

test(
  'protobuf from the cache: a metadata informer watch (PartialObjectMetadata in protobuf) sends the apiserver frames',
  { timeout: 60_000 },
  async (t) => {
    const { ns, proxy, lastRv } = await setUp(t);
    const path = `/api/v1/namespaces/${ns}/pods?watch=1&resourceVersion=${lastRv}&allowWatchBookmarks=true`;
    const ours = await request(`${proxy.url}${path}`, { headers: { accept: METADATA_ONE } });
    const theirs = await shared.admin.stream({ method: 'GET', path, headers: { accept: METADATA_ONE } });
    assert.equal(ours.headers['content-type'], theirs.headers['content-type']);
    await kube(shared.admin, 'PATCH', `/api/v1/namespaces/${ns}/pods/p`, { metadata: { labels: { extra: 'yes' } } });
    const [a, b] = await Promise.all([watchFrames(ours.body, 1), watchFrames(theirs.body, 1)]);
    ours.body.destroy();
    theirs.body.destroy();
    const [ours0] = a;
    const [theirs0] = b;
    assert.ok(ours0 !== undefined && theirs0 !== undefined);
    assert.equal(ours0.type, 'MODIFIED');
    assert.equal(unenvelope(ours0.object).kind, 'PartialObjectMetadata');
    assert.ok(ours0.object.equals(theirs0.object), 'the same PartialObjectMetadata bytes');
    assert.equal(await proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { served_from: 'apiserver', verb: 'watch' }), 0);
  },
);
