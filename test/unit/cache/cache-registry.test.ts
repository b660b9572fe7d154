import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { newCacheRegistry } from '../../../src/cache/cache-registry.ts';
import { newConsistencyPolicy } from '../../../src/cache/consistency.ts';
import { newReadYourWrites } from '../../../src/cache/read-your-writes.ts';
import { delegatorFactory } from '../../../src/cache/delegator.ts';
import type { CacheRegistryOptions } from '../../../src/cache/cache-registry.ts';
import type { WatchCacheSource } from '../../../src/cache/cache-source.ts';
import { newSharedInformerFactory } from '../../../src/informer/factory.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import type { Discovery } from '../../../src/upstream/discovery.ts';
import { newDiscovery } from '../../../src/upstream/discovery.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { FakeDiscoveryServer } from '../../helpers/fake-discovery.ts';
import { fakeResource, newFakeDiscoveryServer } from '../../helpers/fake-discovery.ts';
import type { FakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { flush, flushUntil } from '../../helpers/scripted-lister-watcher.ts';
import { CONFIGMAPS, PODS } from '../../helpers/resource-specs.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import type { RequestSelectors } from '../../../src/cache/selector-scope.ts';
import { describeSelectors, newSelectorScope } from '../../../src/cache/selector-scope.ts';

const IDLE_MS = 10 * 60_000;
const FORBIDDEN_MS = 5 * 60_000;

/** A cluster: core configmaps/secrets/pods/namespaces, APIServices, a CRD group and an aggregated API. */
function cluster(): FakeDiscoveryServer {
  return newFakeDiscoveryServer([
    {
      name: '',
      versions: [
        {
          version: 'v1',
          resources: [
            fakeResource('', 'v1', 'configmaps', 'ConfigMap'),
            fakeResource('', 'v1', 'secrets', 'Secret'),
            fakeResource('', 'v1', 'pods', 'Pod'),
            fakeResource('', 'v1', 'namespaces', 'Namespace', { scope: 'Cluster' }),
            fakeResource('', 'v1', 'bindings', 'Binding', { verbs: ['create'] }),
          ],
        },
      ],
    },
    {
      name: 'apiregistration.k8s.io',
      versions: [
        { version: 'v1', resources: [fakeResource('apiregistration.k8s.io', 'v1', 'apiservices', 'APIService', { scope: 'Cluster' })] },
      ],
    },
    { name: 'kcp.test', versions: [{ version: 'v1', resources: [fakeResource('kcp.test', 'v1', 'widgets', 'Widget')] }] },
    {
      name: 'metrics.k8s.io',
      versions: [{ version: 'v1beta1', resources: [fakeResource('metrics.k8s.io', 'v1beta1', 'pods', 'PodMetrics')] }],
    },
  ]);
}

const APISERVICES = [
  { metadata: { name: 'v1.', resourceVersion: '3' }, spec: { version: 'v1' } },
  { metadata: { name: 'v1.kcp.test', resourceVersion: '4' }, spec: { group: 'kcp.test', version: 'v1' } },
  {
    metadata: { name: 'v1beta1.metrics.k8s.io', resourceVersion: '5' },
    spec: { group: 'metrics.k8s.io', version: 'v1beta1', service: { namespace: 'kube-system', name: 'metrics-server' } },
  },
];

interface Harness {
  readonly registry: WatchCacheSource;
  readonly clock: FakeClock;
  readonly discovery: Discovery;
  readonly server: FakeDiscoveryServer;
  readonly upstream: FakeUpstream;
  /** Collection paths whose LIST and WATCH answer 403. */
  readonly forbidden: Set<string>;
  /** Requests (LIST or WATCH) to a collection path. */
  requests(collection: string): number;
}

/**
 * The registry over a fake apiserver: discovery from `cluster()`, and every collection answering
 * a watch-list stream with one object (APIServices: the ones above), then staying open.
 */
async function harness(t: TestContext, options: Partial<CacheRegistryOptions> = {}, start = true): Promise<Harness> {
  const clock = new FakeClock();
  const server = cluster();
  const forbidden = new Set<string>();
  const refusal = (path: string): ReturnType<typeof jsonResponse> | undefined => {
    const collection = path.split('?')[0] ?? '';
    if (!forbidden.has(collection)) return undefined;
    return jsonResponse(403, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: 'forbidden' });
  };
  const upstream = newFakeUpstream({
    respond: (req) =>
      refusal(req.path) ?? jsonResponse(200, { kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '9' }, items: [] }),
    refuseWatch: (req) => refusal(req.path),
    onWatch(stream) {
      const collection = stream.path.split('?')[0] ?? '';
      const items = collection.endsWith('/apiservices')
        ? APISERVICES.map((a) => ({ kind: 'APIService', apiVersion: 'apiregistration.k8s.io/v1', ...a }))
        : [{ kind: 'Thing', apiVersion: 'v1', metadata: { name: 'one', namespace: 'a', resourceVersion: '6' } }];
      for (const object of items) stream.write(`${JSON.stringify({ type: 'ADDED', object })}\n`);
      stream.write(
        '{"type":"BOOKMARK","object":{"kind":"Thing","apiVersion":"v1","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}}}\n',
      );
    },
  });
  const isDiscovery = (path: string): boolean => /^\/api(\/[^/]+)?$|^\/apis(\/[^/]+){0,2}$/.test(path.split('?')[0] ?? '');
  const client: UpstreamClient = {
    ...upstream.client,
    request: (req) => (isDiscovery(req.path) ? server.client.request(req) : upstream.client.request(req)),
  };
  const discovery = newDiscovery(client, { clock });
  await discovery.refresh();
  const factory = newSharedInformerFactory({ client, clock });
  const delegate = delegatorFactory({ client, policy: newConsistencyPolicy(), writes: newReadYourWrites(), clock });
  const registry = newCacheRegistry({ factory, delegate, discovery, clock, ...options });
  if (start) registry.start();
  t.after(() => registry.stop());
  const requests = (collection: string): number => upstream.paths.filter((p) => p.split('?')[0] === collection).length;
  return { registry, clock, discovery, server, upstream, forbidden, requests };
}

/** A LIST (not a WATCH) of the collection. */
function isList(path: string, collection: string): boolean {
  return path.split('?')[0] === collection && !path.includes('watch=');
}

/** The watch opened on a collection (the latest). */
function watchOf(h: Harness, collection: string): { aborted(): boolean } | undefined {
  return h.upstream.watches.filter((w) => w.path.split('?')[0] === collection).at(-1);
}

test('CacheRegistry: a type is cached on its first read, which is passed through; later reads are served once synced', async (t) => {
  const h = await harness(t);
  assert.equal(h.registry.cacheFor('', 'v1', 'configmaps', 'a'), undefined, 'the first read is passed through');
  await flushUntil('the configmaps cache to sync', () => h.registry.cacheFor('', 'v1', 'configmaps', 'a') !== undefined);
  const cache = h.registry.cacheFor('', 'v1', 'configmaps', '')?.cache;
  assert.ok(cache !== undefined);
  assert.equal(cache.namespace, undefined, 'one cache for every namespace');
  assert.deepEqual(cache.spec, CONFIGMAPS);
  assert.equal(h.requests('/api/v1/configmaps'), 1, 'one watch-list upstream');
  assert.equal(h.registry.synced(), true, 'lazily started caches do not gate readiness');
  assert.equal(h.registry.cacheFor('', 'v1', 'bindings', 'a'), undefined, 'not listable: never cached');
});

test('CacheRegistry: a read between the listen and start() waits for the start and its cache; the wait is bounded by its own', async (t) => {
  const h = await harness(t, {}, false);
  const early = h.registry.cacheWhenSynced('', 'v1', 'configmaps', 'a', 60_000);
  const late = h.registry.cacheWhenSynced('', 'v1', 'pods', 'a', 1_000);
  await flush(5);
  assert.equal(h.requests('/api/v1/configmaps'), 0, 'nothing is listed before start()');
  h.clock.step(1_000);
  assert.equal(await late, undefined, 'a read whose wait ran out before start() is passed through');
  h.registry.start();
  const delegator = await early;
  assert.equal(delegator?.cache.spec.resource, 'configmaps', 'the read waiting since before start() is served by the cache');
  assert.equal(h.requests('/api/v1/configmaps'), 1);
});

test('CacheRegistry: secrets are cached only when named; with names, only those types are', async (t) => {
  const lazy = await harness(t);
  for (let i = 0; i < 3; i++) assert.equal(lazy.registry.cacheFor('', 'v1', 'secrets', 'a'), undefined);
  await flush(5);
  assert.equal(lazy.registry.cacheFor('', 'v1', 'secrets', 'a'), undefined);
  assert.equal(lazy.requests('/api/v1/secrets'), 0, 'secrets are never listed unless named');

  const secrets = { group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true, unstructured: false };
  const named = await harness(t, { resources: [secrets] });
  assert.equal(named.registry.synced(), false, 'readiness waits for the named caches');
  assert.equal(named.requests('/api/v1/secrets'), 1, 'named caches start with start()');
  await flushUntil('the secrets cache to sync', () => named.registry.synced());
  assert.ok(named.registry.cacheFor('', 'v1', 'secrets', 'a') !== undefined);
  assert.equal(named.registry.cacheFor('', 'v1', 'configmaps', 'a'), undefined);
  await flush(5);
  assert.equal(named.requests('/api/v1/configmaps'), 0, 'a type not named is not cached');
});

test('CacheRegistry: a lazily started cache not read for the idle timeout is stopped; a named one is not', async (t) => {
  const pods = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, unstructured: false };
  const h = await harness(t, { resources: [pods, { ...pods, resource: 'configmaps', kind: 'ConfigMap' }], idleTimeoutMs: IDLE_MS });
  await flushUntil('the named caches to sync', () => h.registry.synced());
  h.clock.step(IDLE_MS / 2);
  assert.ok(h.registry.cacheFor('', 'v1', 'configmaps', 'a') !== undefined, 'read halfway');
  h.clock.step(IDLE_MS);
  await flush(5);
  assert.equal(watchOf(h, '/api/v1/pods')?.aborted(), false, 'named caches are never idle-stopped');
  assert.equal(watchOf(h, '/api/v1/configmaps')?.aborted(), false);

  const lazy = await harness(t, { idleTimeoutMs: IDLE_MS });
  lazy.registry.cacheFor('', 'v1', 'configmaps', 'a');
  await flushUntil('the configmaps cache to sync', () => lazy.registry.cacheFor('', 'v1', 'configmaps', 'a') !== undefined);
  lazy.clock.step(IDLE_MS / 2);
  assert.ok(lazy.registry.cacheFor('', 'v1', 'configmaps', 'a') !== undefined, 'a read resets the idle time');
  lazy.clock.step(IDLE_MS / 2 + 1);
  await flush(5);
  assert.equal(watchOf(lazy, '/api/v1/configmaps')?.aborted(), false, 'read within the timeout: kept');
  lazy.clock.step(IDLE_MS);
  await flushUntil('the idle cache to stop', () => watchOf(lazy, '/api/v1/configmaps')?.aborted() === true);
  assert.equal(lazy.registry.cacheFor('', 'v1', 'configmaps', 'a'), undefined, 'the next read starts it again');
  await flushUntil('the restarted cache to sync', () => lazy.registry.cacheFor('', 'v1', 'configmaps', 'a') !== undefined);
  assert.equal(lazy.requests('/api/v1/configmaps'), 2);
});

test('CacheRegistry: past maxLazyCaches, the least recently read cache is stopped', async (t) => {
  const h = await harness(t, { maxLazyCaches: 2 });
  const read = (resource: string): boolean => h.registry.cacheFor('', 'v1', resource, 'a') !== undefined;
  read('configmaps');
  await flushUntil('configmaps', () => read('configmaps'));
  h.clock.step(1000);
  read('pods');
  await flushUntil('pods', () => read('pods'));
  h.clock.step(1000);
  assert.ok(read('configmaps'), 'configmaps is now the most recently read');
  h.clock.step(1000);
  read('namespaces');
  await flushUntil('namespaces', () => read('namespaces'));
  await flushUntil('pods to be evicted', () => watchOf(h, '/api/v1/pods')?.aborted() === true);
  assert.equal(watchOf(h, '/api/v1/configmaps')?.aborted(), false);
  assert.equal(watchOf(h, '/api/v1/namespaces')?.aborted(), false);
});

test('CacheRegistry: custom resources are cached, aggregated APIs are not; a removed CRD stops its cache', async (t) => {
  const h = await harness(t);
  const widgets = (): ReturnType<WatchCacheSource['cacheFor']> => h.registry.cacheFor('kcp.test', 'v1', 'widgets', 'a');
  assert.equal(widgets(), undefined);
  await flushUntil('the widgets cache to sync', () => widgets() !== undefined);
  assert.equal(widgets()?.cache.spec.unstructured, true, 'custom resources have unstructured lists');
  assert.equal(h.requests('/apis/apiregistration.k8s.io/v1/apiservices'), 1, 'APIServices are watched to tell CRDs from aggregated APIs');

  for (let i = 0; i < 3; i++) assert.equal(h.registry.cacheFor('metrics.k8s.io', 'v1beta1', 'pods', 'a'), undefined);
  await flush(5);
  assert.equal(h.requests('/apis/metrics.k8s.io/v1beta1/pods'), 0, 'an aggregated API is passed through');

  h.server.groups = h.server.groups.filter((g) => g.name !== 'kcp.test');
  await h.discovery.refresh();
  assert.equal(widgets(), undefined);
  await flushUntil('the widgets cache to stop', () => watchOf(h, '/apis/kcp.test/v1/widgets')?.aborted() === true);
});

test('CacheRegistry: a cluster-wide LIST forbidden to the proxy falls back to a cache of the namespace read', async (t) => {
  const h = await harness(t, { forbiddenRetryMs: FORBIDDEN_MS });
  h.forbidden.add('/api/v1/configmaps');
  assert.equal(h.registry.cacheFor('', 'v1', 'configmaps', 'a'), undefined);
  await flushUntil('the cluster-wide LIST to be refused', () => h.upstream.paths.some((p) => isList(p, '/api/v1/configmaps')), 200);
  await flushUntil('the namespace cache of a to sync', () => h.registry.cacheFor('', 'v1', 'configmaps', 'a') !== undefined);
  const inA = h.registry.cacheFor('', 'v1', 'configmaps', 'a')?.cache;
  assert.equal(inA?.namespace, 'a');
  assert.equal(watchOf(h, '/api/v1/namespaces/a/configmaps')?.aborted(), false);
  assert.equal(h.registry.cacheFor('', 'v1', 'configmaps', ''), undefined, 'reads of all namespaces are passed through');
  assert.equal(h.registry.cacheFor('', 'v1', 'configmaps', 'b'), undefined, "a's cache does not answer b");
  await flushUntil('the namespace cache of b to sync', () => h.registry.cacheFor('', 'v1', 'configmaps', 'b')?.cache.namespace === 'b');
  const clusterWide = h.requests('/api/v1/configmaps');
  await flush(5);
  assert.equal(h.requests('/api/v1/configmaps'), clusterWide, 'the forbidden cluster-wide LIST is not retried');
});

test('CacheRegistry: a type forbidden in the namespace too is passed through and remembered, without a request per read', async (t) => {
  const h = await harness(t, { forbiddenRetryMs: FORBIDDEN_MS });
  h.forbidden.add('/api/v1/configmaps');
  h.forbidden.add('/api/v1/namespaces/a/configmaps');
  h.registry.cacheFor('', 'v1', 'configmaps', 'a');
  await flushUntil('the cluster-wide LIST to be refused', () => h.upstream.paths.some((p) => isList(p, '/api/v1/configmaps')), 200);
  await flush(5);
  h.registry.cacheFor('', 'v1', 'configmaps', 'a');
  await flushUntil(
    'the namespaced LIST to be refused',
    () => h.upstream.paths.some((p) => isList(p, '/api/v1/namespaces/a/configmaps')),
    200,
  );
  await flush(5);
  const before = h.upstream.paths.length;
  for (let i = 0; i < 100; i++) assert.equal(h.registry.cacheFor('', 'v1', 'configmaps', 'a'), undefined);
  await flush(5);
  assert.equal(h.upstream.paths.length, before, 'no request per read');

  h.clock.step(FORBIDDEN_MS);
  h.forbidden.clear();
  h.registry.cacheFor('', 'v1', 'configmaps', 'a');
  await flushUntil('a retry after the forbidden memory expired', () => h.registry.cacheFor('', 'v1', 'configmaps', '') !== undefined);
});

test('CacheRegistry: a new lazy cache is not started while the memory budget refuses one (its reads pass through); named ones are', async (t) => {
  let admit = false;
  const pods = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, unstructured: false };
  const h = await harness(t, { resources: [pods], admitsNewCache: () => admit });
  await flushUntil('the named cache to sync', () => h.registry.synced());
  assert.ok(h.registry.cacheFor('', 'v1', 'pods', 'a') !== undefined, 'named: cached whatever the budget says');
  const lazy = await harness(t, { admitsNewCache: () => admit });
  for (let i = 0; i < 3; i++) assert.equal(lazy.registry.cacheFor('', 'v1', 'configmaps', 'a'), undefined);
  await flush(5);
  assert.equal(lazy.requests('/api/v1/configmaps'), 0, 'refused: never listed');
  admit = true;
  lazy.registry.cacheFor('', 'v1', 'configmaps', 'a');
  await flushUntil('the configmaps cache to sync once admitted', () => lazy.registry.cacheFor('', 'v1', 'configmaps', 'a') !== undefined);
  admit = false;
  assert.ok(lazy.registry.cacheFor('', 'v1', 'configmaps', 'a') !== undefined, 'a running cache keeps serving');
  assert.equal(lazy.registry.held().objects, 1, 'what the caches hold, for the estimate');
});

test('CacheRegistry: a scoped cache lists and watches with its selectors, and answers only the reads its scope covers', async (t) => {
  const conversion = selectableFieldsFor('', 'pods', true).conversion;
  const node = { spec: PODS, scope: newSelectorScope({ fieldSelector: 'spec.nodeName=n1', labelSelector: '' }, conversion) };
  const narrower = { spec: PODS, scope: newSelectorScope({ fieldSelector: 'spec.nodeName=n1', labelSelector: 'app=web' }, conversion) };
  const h = await harness(t, { resources: [CONFIGMAPS], scoped: [node, narrower] });
  assert.equal(h.registry.synced(), false, 'readiness waits for the scoped caches too');
  await flushUntil('the named caches to sync', () => h.registry.synced());
  const pods = h.upstream.paths.filter((p) => p.startsWith('/api/v1/pods?'));
  assert.equal(pods.length, 2, 'one watch-list per scope');
  assert.ok(pods.some((p) => new URLSearchParams(p.split('?')[1]).get('fieldSelector') === 'spec.nodeName=n1'));
  assert.ok(pods.every((p) => new URLSearchParams(p.split('?')[1]).get('fieldSelector') === 'spec.nodeName=n1'));
  assert.ok(pods.some((p) => new URLSearchParams(p.split('?')[1]).get('labelSelector') === 'app=web'));

  /** Which cache answers a LIST with these selectors: its scope in words, or undefined for none. */
  const read = (namespace: string, fieldSelector: string, labelSelector = ''): string | undefined =>
    describeOf(h.registry.cacheFor('', 'v1', 'pods', namespace, { fieldSelector, labelSelector })?.cache.selectors);
  assert.equal(read('', 'spec.nodeName=n1'), 'spec.nodeName=n1');
  assert.equal(read('a', 'spec.nodeName=n1,status.phase!=Succeeded'), 'spec.nodeName=n1', 'narrower, in one namespace');
  assert.equal(read('', 'spec.nodeName=n1', 'app=web,tier'), 'spec.nodeName=n1;labels=app=web', 'the narrowest covering scope');
  assert.equal(read('', ''), undefined, 'all pods: no cache holds them');
  assert.equal(read('', 'spec.nodeName=n2'), undefined, "another node's pods");
  assert.equal(h.registry.cacheFor('', 'v1', 'pods', 'a'), undefined, 'a GET (no selectors) never comes from a scope');
  await flush(5);
  assert.equal(h.upstream.paths.filter((p) => p.startsWith('/api/v1/pods?')).length, 2, 'an uncovered read starts no cache');
  const check = h.registry.checks().find((c) => c.name === 'cache-pods-where-spec.nodeName=n1');
  assert.equal(check?.failure, undefined, 'a readiness check per scope');

  // Named whole too: the reads no scope covers go to the whole type's cache.
  const both = await harness(t, { resources: [PODS], scoped: [node] });
  await flushUntil('the named caches to sync', () => both.registry.synced());
  const whole = both.registry.cacheFor('', 'v1', 'pods', '', { fieldSelector: 'spec.nodeName=n2', labelSelector: '' });
  assert.ok(whole !== undefined);
  assert.equal(whole.cache.selectors, undefined, 'the whole type');
  assert.equal(both.registry.cacheFor('', 'v1', 'pods', 'a')?.cache.selectors, undefined, 'a GET: the whole type');
  const scoped = both.registry.cacheFor('', 'v1', 'pods', '', { fieldSelector: 'spec.nodeName=n1', labelSelector: '' });
  assert.equal(describeOf(scoped?.cache.selectors), 'spec.nodeName=n1', 'a scope before the whole type');
});

function describeOf(selectors: RequestSelectors | undefined): string | undefined {
  return selectors === undefined ? undefined : describeSelectors(selectors);
}
