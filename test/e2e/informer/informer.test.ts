/**
 * The informer machinery against the real apiserver: end states equal a fresh LIST, handlers see
 * every object's changes in resourceVersion order, a cut watch resumes without relisting, a 410
 * relists and reports missed deletions, and a large initial LIST is paginated.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { ensureControlPlaneBinaries } from '../../../src/cli/dev-cluster/build.ts';
import { down, restartApiserver, up } from '../../../src/cli/dev-cluster/control-plane.ts';
import { attachReaper } from '../../../src/cli/dev-cluster/reaper.ts';
import { silentProgress } from '../../../src/cli/progress.ts';
import { newSharedInformerFactory } from '../../../src/informer/factory.ts';
import type { ListOptions, ListerWatcher } from '../../../src/informer/lister-watcher.ts';
import { newListerWatcher } from '../../../src/informer/lister-watcher.ts';
import { objectBytes } from '../../../src/informer/object.ts';
import { newPrometheusInformerMetricsProvider } from '../../../src/informer/prometheus-metrics.ts';
import type { SharedIndexInformer } from '../../../src/informer/shared-informer.ts';
import { newSharedIndexInformer } from '../../../src/informer/shared-informer.ts';
import { loadUpstreamConfig } from '../../../src/upstream/config.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import type { Meta } from '../../helpers/kube.ts';
import { apiserverRequests, forEachConcurrently, kube, testCrd } from '../../helpers/kube.ts';
import { newRecorder } from '../../helpers/recorder.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';

const shared = useSharedAdmin();

/** key -> resourceVersion of a fresh LIST from the apiserver. */
async function listState(client: UpstreamClient, path: string): Promise<Map<string, string>> {
  const list = await kube<{ items: { metadata: Meta }[] }>(client, 'GET', path);
  return new Map(
    list.items.map((i) => [
      i.metadata.namespace === undefined ? i.metadata.name : `${i.metadata.namespace}/${i.metadata.name}`,
      i.metadata.resourceVersion,
    ]),
  );
}

function storeState(informer: SharedIndexInformer): Map<string, string> {
  return new Map(
    informer
      .getIndexer()
      .list()
      .map((o) => [o.key, o.resourceVersion]),
  );
}

function sameState(a: Map<string, string>, b: Map<string, string>): boolean {
  return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
}

async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = await registry.getSingleMetric(name)?.get();
  return (metric?.values ?? [])
    .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((sum, v) => sum + v.value, 0);
}

test(
  'informer: 2,000 ConfigMaps created, updated and deleted concurrently end equal to a fresh LIST, and handlers see RV order',
  { timeout: 180_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const factory = newSharedInformerFactory({ client: shared.admin });
    t.after(() => factory.shutdown());
    const informer = factory.informerFor({ group: '', version: 'v1', resource: 'configmaps', namespace: ns });
    const early = newRecorder();
    const late = newRecorder();
    const earlyRegistration = informer.addEventHandler(early.handler);
    factory.start();
    await informer.waitForSync();

    const base = `/api/v1/namespaces/${ns}/configmaps`;
    let lateRegistration: ReturnType<SharedIndexInformer['addEventHandler']> | undefined;
    await forEachConcurrently(
      Array.from({ length: 2000 }, (_, i) => i),
      16,
      async (i) => {
        const name = `cm-${String(i)}`;
        await kube(shared.admin, 'POST', base, { metadata: { name }, data: { v: '0' } });
        if (i === 700) lateRegistration = informer.addEventHandler(late.handler);
        await kube(shared.admin, 'PATCH', `${base}/${name}`, { data: { v: '1' } });
        if (i % 4 === 0) await kube(shared.admin, 'DELETE', `${base}/${name}`, undefined, 200);
      },
    );

    const want = await listState(shared.admin, base);
    assert.equal(want.size, 1500);
    await eventually('the informer to hold what a fresh LIST returns', () => sameState(storeState(informer), want));
    assert.ok(lateRegistration);
    const registration = lateRegistration;
    await eventually('handlers to drain', () => earlyRegistration.pending() === 0 && registration.pending() === 0);
    for (const recorder of [early, late]) {
      assert.deepEqual(recorder.outOfOrder(), [], 'every key saw increasing resourceVersions');
      assert.ok(sameState(recorder.finalState(), want), 'the handler ends where the apiserver is');
    }
    assert.equal(early.events.size, 2000, 'the early handler heard of every object');

    // The cached bytes are the apiserver's own (not a re-serialization).
    for (const name of ['cm-1', 'cm-999', 'cm-1999']) {
      const res = await shared.admin.request({ method: 'GET', path: `${base}/${name}` });
      const cached = informer.getIndexer().getByKey(`${ns}/${name}`);
      assert.equal(cached === undefined ? undefined : objectBytes(cached).toString(), res.body.toString().trimEnd());
    }
  },
);

test(
  'informer: a watch cut mid-stream resumes from its resourceVersion without a relist, losing no event',
  { timeout: 180_000 },
  async (t) => {
    const crd = await testCrd(t, shared.admin);
    const ns = await testNamespace(t, shared.admin);
    const base = `/apis/${crd.group}/${crd.version}/namespaces/${ns}/${crd.plural}`;
    const create = (name: string): Promise<unknown> =>
      kube(shared.admin, 'POST', base, { apiVersion: `${crd.group}/${crd.version}`, kind: crd.kind, metadata: { name } });
    for (let i = 0; i < 20; i++) await create(`before-${String(i)}`);

    const upstream = new URL(shared.cp.server);
    const proxy = await startTcpProxy(upstream.hostname, Number(upstream.port));
    t.after(() => proxy.close());
    const config = await upstreamConfigFor(shared.cp);
    const client = newUpstreamClient({ ...config, server: new URL(`https://127.0.0.1:${String(proxy.port)}`) });
    t.after(() => client.close());
    const registry = new Registry();
    const factory = newSharedInformerFactory({ client, useWatchList: false, metrics: newPrometheusInformerMetricsProvider(registry) });
    t.after(() => factory.shutdown());
    const informer = factory.informerFor({ group: crd.group, version: crd.version, resource: crd.plural, namespace: ns });
    const recorder = newRecorder();
    informer.addEventHandler(recorder.handler);
    const listsAtStart = await apiserverRequests(shared.admin, 'LIST', crd.plural);
    factory.start();
    await informer.waitForSync();
    assert.equal(informer.getIndexer().size(), 20);

    // Events flow on the watch, then the connection is cut under it and refused for a while.
    for (let i = 0; i < 10; i++) await create(`live-${String(i)}`);
    await eventually('live events to arrive', () => informer.getIndexer().size() === 30);
    const listsBefore = await apiserverRequests(shared.admin, 'LIST', crd.plural);
    assert.equal(listsBefore, listsAtStart + 1, 'the informer made one LIST');

    proxy.setBlocked(true);
    proxy.cut();
    for (let i = 0; i < 10; i++) await create(`during-${String(i)}`);
    for (let i = 0; i < 5; i++) await kube(shared.admin, 'DELETE', `${base}/before-${String(i)}`, undefined, 200);
    proxy.setBlocked(false);

    const indexer = informer.getIndexer();
    await eventually('the informer to catch up', () => indexer.size() === 35 && indexer.getByKey(`${ns}/during-9`) !== undefined);
    assert.equal(await apiserverRequests(shared.admin, 'LIST', crd.plural), listsBefore, 'no relist');
    assert.ok(sameState(storeState(informer), await listState(shared.admin, base)), 'the informer equals a fresh LIST');
    assert.equal(await metricValue(registry, 'kube_cache_proxy_reflector_relists_total'), 0);
    assert.ok((await metricValue(registry, 'kube_cache_proxy_reflector_watches_total')) >= 2, 'the watch was reopened');
    for (let i = 0; i < 10; i++)
      assert.deepEqual(
        recorder.events.get(`${ns}/during-${String(i)}`)?.map((e) => e.type),
        ['add'],
      );
    for (let i = 0; i < 5; i++) {
      const events = recorder.events.get(`${ns}/before-${String(i)}`) ?? [];
      assert.deepEqual(
        events.map((e) => [e.type, e.finalStateUnknown]),
        [
          ['add', false],
          ['delete', false],
        ],
        'the deletion arrived as a real DELETED event',
      );
    }
  },
);

test(
  'informer: a 410 after etcd compaction and an apiserver restart relists and reports missed deletions as DeletedFinalStateUnknown',
  { timeout: 180_000 },
  async (t) => {
    // A control plane of its own: the test restarts its apiserver.
    const cleanups: (() => Promise<unknown>)[] = [];
    t.after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });
    const dir = mkdtempSync(join(tmpdir(), 'kcp-informer-410-'));
    const state = await up({ dir, binaries: await ensureControlPlaneBinaries(silentProgress), progress: silentProgress });
    attachReaper(dir, process.pid);
    cleanups.push(() => down(dir));
    const config = await loadUpstreamConfig({ kubeconfig: state.kubeconfig });
    const direct = newUpstreamClient(config);
    cleanups.push(() => direct.close());
    const ns = 'informer-410';
    await kube(direct, 'POST', '/api/v1/namespaces', { metadata: { name: ns } });
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    for (let i = 0; i < 20; i++) await kube(direct, 'POST', base, { metadata: { name: `cm-${String(i)}` } });

    const upstream = new URL(state.server);
    const proxy = await startTcpProxy(upstream.hostname, Number(upstream.port));
    cleanups.push(() => proxy.close());
    const client = newUpstreamClient({ ...config, server: new URL(`https://127.0.0.1:${String(proxy.port)}`) });
    cleanups.push(() => client.close());
    const registry = new Registry();
    const factory = newSharedInformerFactory({ client, useWatchList: false, metrics: newPrometheusInformerMetricsProvider(registry) });
    cleanups.push(() => factory.shutdown());
    const informer = factory.informerFor({ group: '', version: 'v1', resource: 'configmaps', namespace: ns });
    const recorder = newRecorder();
    informer.addEventHandler(recorder.handler);
    factory.start();
    await informer.waitForSync();
    const syncedAt = informer.lastSyncResourceVersion();

    // While the informer's watch is down: deletions and creations, etcd compacted past its RV,
    // and the apiserver restarted (its watch cache now starts after that RV).
    proxy.setBlocked(true);
    proxy.cut();
    for (let i = 0; i < 5; i++) await kube(direct, 'DELETE', `${base}/cm-${String(i)}`, undefined, 200);
    for (let i = 0; i < 3; i++) await kube(direct, 'POST', base, { metadata: { name: `new-${String(i)}` } });
    const range = (await (
      await fetch(`${state.etcdUrl}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/').toString('base64') }) })
    ).json()) as {
      header: { revision: string };
    };
    assert.ok(BigInt(range.header.revision) > BigInt(syncedAt));
    const compaction = await fetch(`${state.etcdUrl}/v3/kv/compaction`, {
      method: 'POST',
      body: JSON.stringify({ revision: range.header.revision, physical: true }),
    });
    assert.equal(compaction.status, 200);
    await restartApiserver(dir);
    proxy.setBlocked(false);

    const want = await listState(direct, base);
    await eventually('the informer to relist and equal the apiserver', () => sameState(storeState(informer), want), 60_000);
    assert.ok(
      (await metricValue(registry, 'kube_cache_proxy_reflector_relists_total', { reason: 'watch-expired' })) >= 1,
      'the 410 caused a relist',
    );
    assert.equal(await metricValue(registry, 'kube_cache_proxy_reflector_lists_total'), 2);
    await eventually('the deletions to reach the handler', () => recorder.events.get(`${ns}/cm-4`)?.at(-1)?.type === 'delete');
    for (let i = 0; i < 5; i++) {
      const last = recorder.events.get(`${ns}/cm-${String(i)}`)?.at(-1);
      assert.deepEqual(last && [last.type, last.finalStateUnknown], ['delete', true], `cm-${String(i)} deleted with final state unknown`);
    }
    for (let i = 0; i < 3; i++) assert.equal(recorder.events.get(`${ns}/new-${String(i)}`)?.[0]?.type, 'add');
  },
);

test('informer: an initial LIST of 5,000 objects goes through pages of 500 with continue', { timeout: 180_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/api/v1/namespaces/${ns}/configmaps`;
  await forEachConcurrently(
    Array.from({ length: 5000 }, (_, i) => i),
    32,
    async (i) => {
      await kube(shared.admin, 'POST', base, { metadata: { name: `cm-${String(i)}` }, data: { i: String(i) } });
    },
  );

  const lists: ListOptions[] = [];
  const real = newListerWatcher(shared.admin, { group: '', version: 'v1', resource: 'configmaps', namespace: ns });
  const counting: ListerWatcher = {
    list(options) {
      lists.push(options);
      return real.list(options);
    },
    watch: (options) => real.watch(options),
  };
  const informer = newSharedIndexInformer({ name: 'configmaps', listerWatcher: counting, useWatchList: false, pageSize: 500 });
  t.after(() => informer.stop());
  informer.run();
  await informer.waitForSync();

  assert.equal(lists.length, 10);
  assert.deepEqual(lists[0], { resourceVersion: '', limit: 500 });
  for (const page of lists.slice(1)) {
    assert.equal(page.limit, 500);
    assert.ok(page.continue !== undefined && page.continue !== '', 'later pages carry the continue token');
  }
  assert.equal(informer.getIndexer().size(), 5000);
  assert.ok(sameState(storeState(informer), await listState(shared.admin, base)));
});
