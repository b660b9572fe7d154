/**
 * A cache scoped to one node's pods (`--resources pods:spec.nodeName=<node>`), or to a label, against the real
 * apiserver: the reads its scope covers (that node's pods, and narrower selectors) are answered
 * from the cache with the apiserver's bytes; pods that leave the node's scope or enter it reach
 * the proxy's watchers as the apiserver's own filtered watches deliver them; and every read the
 * scope cannot answer (all pods, another node's, one pod by name) is passed through.
 *
 * Node names are the test's own (no kubelet: a pod is bound by being created with its nodeName,
 * or by a Binding), so no other test's pods are in the scope.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { request } from 'undici';
import type { ScopedResourceSpec } from '../../../src/cache/cached-resources.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import { newSelectorScope } from '../../../src/cache/selector-scope.ts';
import { proxyCounter, startCachingProxy } from '../../helpers/caching-proxy.ts';
import type { CachingProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import type { Meta } from '../../helpers/kube.ts';
import { CONFIGMAPS, PODS } from '../../helpers/resource-specs.ts';
import { watchFramesOf } from '../../helpers/protobuf-reader.ts';

const shared = useSharedAdmin();

function nodeScope(node: string): ScopedResourceSpec {
  const scope = newSelectorScope(
    { fieldSelector: `spec.nodeName=${node}`, labelSelector: '' },
    selectableFieldsFor('', 'pods', true).conversion,
  );
  return { spec: PODS, scope };
}

function podManifest(name: string, labels: Record<string, string>, nodeName?: string): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { containers: [{ name: 'c', image: 'example.invalid/none' }], ...(nodeName === undefined ? {} : { nodeName }) },
  };
}

/** Two node names of this test's own (Nodes need not exist: pods are bound by spec.nodeName). */
function twoNodes(): [string, string] {
  const run = randomBytes(3).toString('hex');
  return [`node-a-${run}`, `node-b-${run}`];
}

/** Creates each pod `[name, labels, node]` at the apiserver, in order (no node: unscheduled). */
async function createPods(ns: string, pods: readonly (readonly [string, Record<string, string>, string | undefined])[]): Promise<void> {
  for (const [name, labels, node] of pods) {
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, podManifest(name, labels, node));
  }
}

/** Each proxy's list has its own resourceVersion (and a continue token made with it); nothing else may differ. */
function withoutListMeta(body: string): string {
  return body.replace(/^(\{"kind":"\w+","apiVersion":"[^"]+","metadata":\{"resourceVersion":")\d+"(,"continue":"[^"]*")?/, '$1"');
}

async function getText(url: string, accept?: string): Promise<{ status: number; body: string }> {
  const res = await request(url, accept === undefined ? {} : { headers: { accept } });
  return { status: res.statusCode, body: await res.body.text() };
}

/** The first `count` lines of a watch stream, as sent. */
async function watchLines(body: AsyncIterable<Buffer | Uint8Array>, count: number): Promise<string[]> {
  const lines: string[] = [];
  let pending = '';
  for await (const chunk of body) {
    pending += Buffer.from(chunk).toString();
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      lines.push(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
      if (lines.length === count) return lines;
    }
  }
  return lines;
}

/** Opens a watch on the proxy and one on the apiserver with the same query; resolves each one's first `count` lines. */
async function watchBoth(
  proxy: CachingProxy,
  path: string,
  count: number,
  signal: AbortSignal,
): Promise<{ proxy: Promise<string[]>; apiserver: Promise<string[]> }> {
  const viaProxy = await request(`${proxy.url}${path}`, { signal });
  assert.equal(viaProxy.statusCode, 200, `the proxy's watch ${path}`);
  const direct = await shared.admin.stream({ method: 'GET', path, signal });
  assert.equal(direct.statusCode, 200, `the apiserver's watch ${path}`);
  return { proxy: watchLines(viaProxy.body, count), apiserver: watchLines(direct.body, count) };
}

/** The first `count` frames of a protobuf watch stream, as sent (each a 4-byte length and its message). */
async function watchFrames(body: AsyncIterable<Buffer | Uint8Array>, count: number): Promise<Buffer> {
  let bytes = Buffer.alloc(0);
  for await (const chunk of body) {
    bytes = Buffer.concat([bytes, Buffer.from(chunk)]);
    let end = 0;
    let frames = 0;
    while (end + 4 <= bytes.length && end + 4 + bytes.readUInt32BE(end) <= bytes.length) {
      end += 4 + bytes.readUInt32BE(end);
      if (++frames === count) return bytes.subarray(0, end);
    }
  }
  return bytes;
}

const PROTOBUF = 'application/vnd.kubernetes.protobuf, */*';

const passedThrough = (proxy: CachingProxy, what: string): string[] => proxy.forwarded.filter((p) => p.includes(what));

test(
  'scoped caches: a node-scoped pod cache answers that node’s LISTs, and narrower ones, with the apiserver’s bytes',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const [nodeA, nodeB] = twoNodes();
    await createPods(ns, [
      ['p1', { app: 'web' }, nodeA],
      ['p2', { app: 'db' }, nodeA],
      ['p3', { app: 'web' }, nodeA],
      ['p4', { app: 'web' }, nodeB],
      ['p5', { app: 'web' }, undefined],
    ]);
    const proxy = await startCachingProxy(t, shared.cp, { specs: [], scoped: [nodeScope(nodeA)] });
    const onA = `fieldSelector=${encodeURIComponent(`spec.nodeName=${nodeA}`)}`;
    const onANarrower = `fieldSelector=${encodeURIComponent(`spec.nodeName=${nodeA},status.phase!=Succeeded`)}`;
    const meta = 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io';
    const reads: readonly (readonly [string, string | undefined])[] = [
      [`/api/v1/pods?${onA}&resourceVersion=0`, undefined],
      [`/api/v1/pods?${onA}`, undefined],
      [`/api/v1/namespaces/${ns}/pods?${onA}`, undefined],
      [`/api/v1/namespaces/${ns}/pods?${onANarrower}`, undefined],
      [`/api/v1/namespaces/${ns}/pods?${onA}&labelSelector=app%3Dweb`, undefined],
      [`/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent(`spec.host=${nodeA}`)}`, undefined],
      [`/api/v1/namespaces/${ns}/pods?${onA}&limit=2`, undefined],
      [`/api/v1/namespaces/${ns}/pods?${onA}&resourceVersion=0`, meta],
      [`/api/v1/namespaces/${ns}/pods?${onANarrower}&resourceVersion=0`, 'application/json;as=Table;v=v1;g=meta.k8s.io'],
    ];
    for (const [path, accept] of reads) {
      await eventually(`the proxy to answer ${path} as the apiserver does`, async () => {
        const [viaProxy, direct] = await Promise.all([
          getText(`${proxy.url}${path}`, accept),
          shared.admin.request({ method: 'GET', path, ...(accept === undefined ? {} : { headers: { accept } }) }),
        ]);
        return viaProxy.status === direct.statusCode && withoutListMeta(viaProxy.body) === withoutListMeta(direct.body.toString());
      });
    }
    proxy.forwarded.length = 0;
    for (const [path, accept] of reads) assert.equal((await getText(`${proxy.url}${path}`, accept)).status, 200);
    assert.deepEqual(proxy.forwarded, [], 'every read the scope covers comes from the scoped cache');

    // Paging: the second page follows the cache's own continue token, from the cache.
    const first = JSON.parse((await getText(`${proxy.url}/api/v1/namespaces/${ns}/pods?${onA}&limit=2`)).body) as {
      metadata: { continue?: string };
      items: { metadata: Meta }[];
    };
    assert.deepEqual(
      first.items.map((p) => p.metadata.name),
      ['p1', 'p2'],
    );
    const token = first.metadata.continue ?? '';
    assert.notEqual(token, '');
    const second = JSON.parse(
      (await getText(`${proxy.url}/api/v1/namespaces/${ns}/pods?${onA}&limit=2&continue=${encodeURIComponent(token)}`)).body,
    ) as { metadata: { continue?: string }; items: { metadata: Meta }[] };
    assert.deepEqual(
      second.items.map((p) => p.metadata.name),
      ['p3'],
    );
    assert.equal(second.metadata.continue, undefined, 'the last page');
    assert.deepEqual(proxy.forwarded, [], 'both pages from the cache');

    // A WatchList (client-go's informers): the same initial events, then the end bookmark (each at its own RV).
    const abort = new AbortController();
    t.after(() => {
      abort.abort();
    });
    const watchList = `/api/v1/namespaces/${ns}/pods?watch=1&timeoutSeconds=60&${onA}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`;
    const initial = await watchBoth(proxy, watchList, 4, abort.signal);
    const [proxyLines, directLines] = await Promise.all([initial.proxy, initial.apiserver]);
    const bookmarkRv = (line: string): string => line.replace(/"resourceVersion":"\d+"/, '"resourceVersion":""');
    assert.deepEqual(proxyLines.slice(0, 3), directLines.slice(0, 3), 'the initial events, byte for byte');
    assert.match(proxyLines[3] ?? '', /"k8s.io\/initial-events-end":"true"/);
    assert.equal(bookmarkRv(proxyLines[3] ?? ''), bookmarkRv(directLines[3] ?? ''), 'the end bookmark, but for its RV');
    assert.deepEqual(proxy.forwarded, [], 'the WatchList from the cache');
  },
);

test(
  'scoped caches: pods leaving and entering a node’s scope reach watchers as the apiserver’s filtered watches show them',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const [nodeA, nodeB] = twoNodes();
    await createPods(ns, [
      ['p1', { app: 'web' }, nodeA],
      ['p2', { app: 'db' }, nodeA],
      ['p3', { app: 'web' }, nodeB],
    ]);
    const proxy = await startCachingProxy(t, shared.cp, { specs: [], scoped: [nodeScope(nodeA)] });
    // Every watch starts from the same RV, so each one's events are exactly the changes after it.
    const { metadata } = await kube<{ metadata: { resourceVersion: string } }>(shared.admin, 'GET', `/api/v1/namespaces/${ns}/pods`);
    const from = `resourceVersion=${metadata.resourceVersion}`;
    const field = (selector: string): string => `fieldSelector=${encodeURIComponent(selector)}`;
    const abort = new AbortController();
    t.after(() => {
      abort.abort();
    });
    const watch = (query: string): string => `/api/v1/namespaces/${ns}/pods?watch=1&timeoutSeconds=60&${from}&${query}`;
    const onA = await watchBoth(proxy, watch(field(`spec.nodeName=${nodeA}`)), 5, abort.signal);
    const onAWeb = await watchBoth(proxy, watch(`${field(`spec.nodeName=${nodeA}`)}&labelSelector=app%3Dweb`), 5, abort.signal);
    const onB = await watchBoth(proxy, watch(field(`spec.nodeName=${nodeB}`)), 1, abort.signal);
    // In protobuf, as client-go's informers read: the same frames.
    const protobufPath = watch(field(`spec.nodeName=${nodeA}`));
    const protobufProxy = await request(`${proxy.url}${protobufPath}`, { headers: { accept: PROTOBUF }, signal: abort.signal });
    const protobufDirect = await shared.admin.stream({
      method: 'GET',
      path: protobufPath,
      headers: { accept: PROTOBUF },
      signal: abort.signal,
    });
    assert.equal(protobufProxy.headers['content-type'], 'application/vnd.kubernetes.protobuf;stream=watch');
    const protobufFrames = [watchFrames(protobufProxy.body, 5), watchFrames(protobufDirect.body, 5)] as const;

    // p1 is rescheduled: deleted on A (its deletionTimestamp set, then gone: two events), created again on B.
    await kube(shared.admin, 'DELETE', `/api/v1/namespaces/${ns}/pods/p1?gracePeriodSeconds=0`);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, podManifest('p1', { app: 'web' }, nodeB));
    // p4 is created on A; p2's label moves it into the narrower watch; p5 enters A by its binding.
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, podManifest('p4', { app: 'web' }, nodeA));
    await kube(shared.admin, 'PATCH', `/api/v1/namespaces/${ns}/pods/p2`, { metadata: { labels: { app: 'web' } } });
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, podManifest('p5', { app: 'web' }));
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods/p5/binding`, {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'p5' },
      target: { apiVersion: 'v1', kind: 'Node', name: nodeA },
    });

    const types = (lines: readonly string[]): string[] =>
      lines.map((l) => {
        const e = JSON.parse(l) as { type: string; object: { metadata: Meta } };
        return `${e.type} ${e.object.metadata.name}`;
      });
    const [aProxy, aDirect] = await Promise.all([onA.proxy, onA.apiserver]);
    assert.deepEqual(types(aDirect), ['MODIFIED p1', 'DELETED p1', 'ADDED p4', 'MODIFIED p2', 'ADDED p5'], "the apiserver's own account");
    assert.deepEqual(aProxy, aDirect, 'node A: the same events, byte for byte');
    const [webProxy, webDirect] = await Promise.all([onAWeb.proxy, onAWeb.apiserver]);
    assert.deepEqual(types(webDirect), ['MODIFIED p1', 'DELETED p1', 'ADDED p4', 'ADDED p2', 'ADDED p5']);
    assert.deepEqual(webProxy, webDirect, 'node A and app=web: the same events, byte for byte');
    const [framesProxy, framesDirect] = await Promise.all(protobufFrames);
    assert.equal(watchFramesOf(framesDirect).length, 5);
    assert.ok(framesProxy.equals(framesDirect), 'node A in protobuf: the same frames, byte for byte');
    const [bProxy, bDirect] = await Promise.all([onB.proxy, onB.apiserver]);
    assert.deepEqual(types(bDirect), ['ADDED p1']);
    assert.deepEqual(bProxy, bDirect, 'node B: the same events');

    assert.deepEqual(passedThrough(proxy, encodeURIComponent(nodeA)), [], "node A's watches come from the scoped cache");
    assert.equal(passedThrough(proxy, encodeURIComponent(nodeB)).length, 1, "node B's watch is the apiserver's");
  },
);

test('scoped caches: reads the scope cannot answer are passed through, with the apiserver’s answer', { timeout: 120_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const [nodeA, nodeB] = twoNodes();
  await createPods(ns, [
    ['on-a', { app: 'web' }, nodeA],
    ['on-b', { app: 'web' }, nodeB],
  ]);
  const proxy = await startCachingProxy(t, shared.cp, { specs: [], scoped: [nodeScope(nodeA)] });
  const uncovered = [
    `/api/v1/namespaces/${ns}/pods?resourceVersion=0`,
    `/api/v1/namespaces/${ns}/pods`,
    `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Dweb`,
    `/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${nodeB}`)}`,
    `/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent(`spec.nodeName!=${nodeA}`)}`,
    `/api/v1/namespaces/${ns}/pods/on-a`,
  ];
  const before = await proxyCounter(proxy.metrics, 'kube_cache_proxy_pass_through_total', { reason: 'uncached' });
  for (const path of uncovered) {
    proxy.forwarded.length = 0;
    const [viaProxy, direct] = await Promise.all([getText(`${proxy.url}${path}`), shared.admin.request({ method: 'GET', path })]);
    assert.deepEqual(proxy.forwarded, [path], `${path} is passed through`);
    assert.equal(viaProxy.status, direct.statusCode);
    assert.equal(withoutListMeta(viaProxy.body), withoutListMeta(direct.body.toString()), `${path}: the apiserver's answer`);
  }
  const after = await proxyCounter(proxy.metrics, 'kube_cache_proxy_pass_through_total', { reason: 'uncached' });
  assert.equal(after - before, uncovered.length, 'each one counted as not cached');
  // And a watch of all pods: the apiserver's too.
  proxy.forwarded.length = 0;
  const abort = new AbortController();
  t.after(() => {
    abort.abort();
  });
  const all = await request(`${proxy.url}/api/v1/namespaces/${ns}/pods?watch=1&timeoutSeconds=60&resourceVersion=0`, {
    signal: abort.signal,
  });
  assert.equal(all.statusCode, 200);
  assert.deepEqual(
    (await watchLines(all.body, 2)).map((l) => (JSON.parse(l) as { object: { metadata: Meta } }).object.metadata.name).sort(),
    ['on-a', 'on-b'],
  );
  assert.equal(passedThrough(proxy, '/pods?watch=1').length, 1, 'the watch of all pods is passed through');
});

test(
  'scoped caches: the proxy’s own writes, in the scope or not, are in its next RV-unset LIST of the scope',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const [nodeA, nodeB] = twoNodes();
    const proxy = await startCachingProxy(t, shared.cp, { specs: [], scoped: [nodeScope(nodeA)] });
    const create = async (name: string, node: string): Promise<Meta> => {
      const res = await request(`${proxy.url}/api/v1/namespaces/${ns}/pods`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(podManifest(name, {}, node)),
      });
      assert.equal(res.statusCode, 201);
      return ((await res.body.json()) as { metadata: Meta }).metadata;
    };
    const listA = async (): Promise<{ resourceVersion: bigint; names: string[] }> => {
      const res = await getText(`${proxy.url}/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${nodeA}`)}`);
      assert.equal(res.status, 200);
      const list = JSON.parse(res.body) as { metadata: { resourceVersion: string }; items: { metadata: Meta }[] };
      return { resourceVersion: BigInt(list.metadata.resourceVersion), names: list.items.map((p) => p.metadata.name) };
    };
    // Served from the scoped cache once it has caught up with the write (its event, or a freshness
    // proof of the scope: delegator.test.ts), else passed through; never from a cache behind it.
    for (const [name, node, names] of [
      ['in-scope', nodeA, ['in-scope']],
      ['out-of-scope', nodeB, ['in-scope']],
    ] as const) {
      const written = await create(name, node);
      const list = await listA();
      assert.deepEqual(list.names, names, `after ${name}`);
      assert.ok(list.resourceVersion >= BigInt(written.resourceVersion), `${name}: the list is at least as new as the write`);
    }
  },
);

test(
  'scoped caches: objects relabelled out of and back into a label scope reach watchers as the apiserver’s filtered watches show them',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const team = `team-${randomBytes(3).toString('hex')}`;
    const scope = newSelectorScope(
      { fieldSelector: '', labelSelector: `team=${team}` },
      selectableFieldsFor('', 'configmaps', true).conversion,
    );
    const proxy = await startCachingProxy(t, shared.cp, { specs: [], scoped: [{ spec: CONFIGMAPS, scope }] });
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'a', labels: { team, tier: 'web' } } });
    const { metadata } = await kube<{ metadata: { resourceVersion: string } }>(shared.admin, 'GET', `/api/v1/namespaces/${ns}/configmaps`);
    const abort = new AbortController();
    t.after(() => {
      abort.abort();
    });
    const watch = (labels: string): string =>
      `/api/v1/namespaces/${ns}/configmaps?watch=1&timeoutSeconds=60&resourceVersion=${metadata.resourceVersion}&labelSelector=${encodeURIComponent(labels)}`;
    const inScope = await watchBoth(proxy, watch(`team=${team}`), 4, abort.signal);
    const narrower = await watchBoth(proxy, watch(`tier=web,team in (${team})`), 4, abort.signal);
    const path = `/api/v1/namespaces/${ns}/configmaps/a`;
    await kube(shared.admin, 'PATCH', path, { metadata: { labels: { team: 'other' } } });
    await kube(shared.admin, 'PATCH', path, { metadata: { labels: { team } } });
    await kube(shared.admin, 'PATCH', path, { data: { k: 'v' } });
    await kube(shared.admin, 'DELETE', path);
    const types = (lines: readonly string[]): string[] => lines.map((l) => (JSON.parse(l) as { type: string }).type);
    for (const [what, pair] of [
      ['the scope', inScope],
      ['narrower', narrower],
    ] as const) {
      const [viaProxy, direct] = await Promise.all([pair.proxy, pair.apiserver]);
      assert.deepEqual(types(direct), ['DELETED', 'ADDED', 'MODIFIED', 'DELETED'], `${what}: the apiserver's own account`);
      assert.deepEqual(viaProxy, direct, `${what}: the same events, byte for byte`);
    }
    assert.deepEqual(passedThrough(proxy, 'watch=1'), [], 'both watches from the scoped cache');
  },
);
