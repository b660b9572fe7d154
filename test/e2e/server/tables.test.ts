/**
 * Tables from the cache (kubectl get's Accept), compared with the real apiserver's for the same
 * requests: the same columns and rows, cells equal but for the clock's tick in ages, the same
 * row objects for each includeObject, v1 and v1beta1, GET and paged LIST; and 0 upstream
 * requests once the cache has synced.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { proxyCounter, startCachingProxy } from '../../helpers/caching-proxy.ts';
import { eventually } from '../../helpers/eventually.ts';
import { startSuiteProxy } from '../../helpers/http2.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';
import { readWatchEvents } from '../../helpers/watch-lines.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';
import { sameButForTick } from '../../helpers/table-compare.ts';
import type { Cell } from '../../../src/table/model.ts';

const shared = useSharedAdmin();

interface TableJson {
  kind: string;
  apiVersion: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  columnDefinitions: unknown;
  rows: { cells: Cell[]; conditions?: unknown; object: unknown }[];
}

/** Asserts two Tables equal but for the list RV (each side at its own), the continue token (it embeds the RV) and ages. */
function assertSameTable(ours: TableJson, theirs: TableJson, what: string, list: boolean): void {
  assert.equal(ours.kind, theirs.kind, what);
  assert.equal(ours.apiVersion, theirs.apiVersion, what);
  if (!list) assert.equal(ours.metadata.resourceVersion, theirs.metadata.resourceVersion, `${what}: a GET's Table has the object's RV`);
  assert.equal(ours.metadata.continue === undefined, theirs.metadata.continue === undefined, `${what}: continue`);
  assert.equal(ours.metadata.remainingItemCount, theirs.metadata.remainingItemCount, `${what}: remainingItemCount`);
  assert.deepEqual(ours.columnDefinitions, theirs.columnDefinitions, `${what}: columns`);
  assert.equal(ours.rows.length, theirs.rows.length, `${what}: rows`);
  ours.rows.forEach((row, i) => {
    const other = theirs.rows[i];
    assert.ok(other !== undefined);
    row.cells.forEach((c, j) => {
      assert.ok(
        sameButForTick(c, other.cells[j] ?? null),
        `${what}: row ${String(i)} cell ${String(j)}: ${JSON.stringify(c)} vs ${JSON.stringify(other.cells[j])}`,
      );
    });
    assert.deepEqual(row.conditions, other.conditions, `${what}: row ${String(i)} conditions`);
    // Stringified, key order included: the apiserver's encoding, not just the same content.
    assert.equal(JSON.stringify(row.object), JSON.stringify(other.object), `${what}: row ${String(i)} object`);
  });
}

test(
  'tables: kubectl get’s Tables come from the cache as the apiserver prints them (GET, LIST, paging, includeObject, v1beta1)',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    for (let i = 0; i < 5; i++) {
      await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
        // One annotated as a WatchList's end bookmark is: under includeObject=None its row still gets its metadata.
        metadata: {
          name: `cm-${String(i)}`,
          labels: { i: String(i % 2) },
          ...(i === 4 ? { annotations: { 'k8s.io/initial-events-end': 'true' } } : {}),
        },
        data: { a: '<b & c>' },
      });
    }
    const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS] });
    const v1 = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
    const v1beta1 = 'application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    const cases: readonly { path: string; accept: string; list: boolean }[] = [
      { path: `${base}?limit=500`, accept: v1, list: true },
      { path: `${base}?limit=2`, accept: v1, list: true },
      { path: `${base}?labelSelector=i%3D1`, accept: v1, list: true },
      { path: `${base}?includeObject=None`, accept: v1, list: true },
      { path: `${base}?includeObject=Object`, accept: v1, list: true },
      { path: `${base}?includeObject=Metadata`, accept: v1beta1, list: true },
      { path: `${base}/cm-1`, accept: v1, list: false },
      { path: `${base}/cm-1?includeObject=Object`, accept: v1beta1, list: false },
      { path: `/api/v1/configmaps?limit=3&labelSelector=i`, accept: v1, list: true },
    ];
    for (const c of cases) {
      const before = proxy.forwarded.length;
      const res = await request(`${proxy.url}${c.path}`, { headers: { accept: c.accept, 'user-agent': 'kubectl/v1.37.2' } });
      const ours = (await res.body.json()) as TableJson;
      const direct = await shared.admin.request({
        method: 'GET',
        path: c.path,
        headers: { accept: c.accept, 'user-agent': 'kubectl/v1.37.2' },
      });
      const what = `GET ${c.path} (${c.accept.split(',')[0] ?? ''})`;
      assert.equal(proxy.forwarded.length, before, `${what}: from the cache`);
      assert.equal(res.statusCode, direct.statusCode, what);
      assert.equal(res.headers['content-type'], direct.headers['content-type'], what);
      assertSameTable(ours, JSON.parse(direct.body.toString()) as TableJson, what, c.list);
    }
    // A missing object: the same 404 Status. An includeObject the apiserver refuses: its own 400, passed through.
    for (const path of [`${base}/missing`, `${base}?includeObject=Everything`]) {
      const res = await request(`${proxy.url}${path}`, { headers: { accept: v1 } });
      const direct = await shared.admin.request({ method: 'GET', path, headers: { accept: v1 } });
      assert.equal(res.statusCode, direct.statusCode, path);
      assert.equal(await res.body.text(), direct.body.toString(), path);
    }
    // Continue: the second page from the cache's token equals the apiserver's second page.
    const first = (await (await request(`${proxy.url}${base}?limit=2`, { headers: { accept: v1 } })).body.json()) as TableJson;
    assert.ok(first.metadata.continue !== undefined);
    const second = (await (
      await request(`${proxy.url}${base}?limit=2&continue=${encodeURIComponent(first.metadata.continue)}`, { headers: { accept: v1 } })
    ).body.json()) as TableJson;
    assert.deepEqual(
      second.rows.map((r) => r.cells[0]),
      ['cm-2', 'cm-3'],
    );
  },
);

test(
  'tables: kubectl get -w’s Table watch comes from the cache as the apiserver streams it (columns first only, one row per event, bookmarks)',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    // The cache first, then the object: a watch from its RV is inside the cache's window. (Made
    // before, an RV the cache's LIST is already past, as any write elsewhere in the cluster meanwhile
    // makes it, is the young cache's 410.)
    const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS] });
    const made = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'first' }, data: { a: 'b' } });
    const accept = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    for (const query of [
      `watch=true&resourceVersion=${made.metadata.resourceVersion}`,
      'watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&includeObject=Object',
    ]) {
      const abort = new AbortController();
      t.after(() => {
        abort.abort();
      });
      const before = proxy.forwarded.length;
      const viaProxy = await request(`${proxy.url}${base}?${query}`, { headers: { accept }, signal: abort.signal });
      const direct = await shared.admin.stream({ method: 'GET', path: `${base}?${query}`, headers: { accept }, signal: abort.signal });
      assert.equal(viaProxy.statusCode, 200);
      assert.equal(direct.statusCode, 200);
      const initial = query.includes('sendInitialEvents') ? 2 : 0; // ADDED first, the end bookmark
      // The end bookmark is compared; a later periodic bookmark comes when the apiserver's timers
      // say (its cacher may send one as soon as its RV moves), so neither side's is.
      const notPeriodic = (e: { type: string }, kept: readonly { type: string }[]): boolean =>
        e.type !== 'BOOKMARK' || !kept.some((k) => k.type === 'BOOKMARK');
      const ours = readWatchEvents<{ type: string; object: TableJson }>(viaProxy.body, initial + 3, notPeriodic);
      const theirs = readWatchEvents<{ type: string; object: TableJson }>(direct.body, initial + 3, notPeriodic);
      const second = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
        metadata: { name: `second-${String(initial)}` },
      });
      await kube(shared.admin, 'PATCH', `${base}/${second.metadata.name}`, { data: { x: 'y' } });
      await kube(shared.admin, 'DELETE', `${base}/${second.metadata.name}`);
      const [a, b] = await Promise.all([ours, theirs]);
      abort.abort();
      assert.equal(proxy.forwarded.length, before, `${query}: from the cache`);
      assert.deepEqual(
        a.map((e) => e.type),
        b.map((e) => e.type),
        query,
      );
      a.forEach((e, i) => {
        const other = b[i];
        assert.ok(other !== undefined);
        assertSameTable(e.object, other.object, `${query}: event ${String(i)} (${e.type})`, false);
      });
      assert.notEqual(a[0]?.object.columnDefinitions, null, 'the first event has the columns');
      assert.ok(
        a.slice(1).every((e) => e.object.columnDefinitions === null),
        'the others do not',
      );
    }
  },
);

test(
  'tables: a LIST prints as the apiserver’s list printers do (storageclasses’ effective default, flowschemas’ order)',
  { timeout: 120_000 },
  async (t) => {
    const suffix = Math.random().toString(36).slice(2, 8);
    const classes = [`kcp-a-${suffix}`, `kcp-b-${suffix}`];
    for (const name of classes) {
      await kube(shared.admin, 'POST', '/apis/storage.k8s.io/v1/storageclasses', {
        metadata: { name, labels: { 'kcp-test': suffix }, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
        provisioner: 'example.com/none',
      });
    }
    t.after(async () => {
      for (const name of classes)
        await kube(shared.admin, 'DELETE', `/apis/storage.k8s.io/v1/storageclasses/${name}`, undefined, [200, 404]);
    });
    const args = [
      '--port',
      '0',
      '--resources',
      'storageclasses.storage.k8s.io,flowschemas.flowcontrol.apiserver.k8s.io',
      '--log-level',
      'warn',
    ];
    const proxy = await startSuiteProxy(shared.cp, args, await upstreamConfigFor(shared.cp));
    t.after(() => proxy.stop(0));
    const url = proxy.url ?? assert.fail('the proxy serves on TCP');
    await eventually('the caches to sync', async () => (await request(`${url}/readyz`)).statusCode === 200);
    const accept = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
    for (const path of [
      `/apis/storage.k8s.io/v1/storageclasses?labelSelector=kcp-test%3D${suffix}`,
      '/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas?limit=500',
    ]) {
      const ours = (await (await request(`${url}${path}`, { headers: { accept } })).body.json()) as TableJson;
      const direct = await shared.admin.request({ method: 'GET', path, headers: { accept } });
      assertSameTable(ours, JSON.parse(direct.body.toString()) as TableJson, path, true);
      t.diagnostic(`${path}: ${ours.rows.map((r) => String(r.cells[0])).join(', ')}`);
    }
  },
);

test(
  'tables: a custom resource’s Table comes from the cache with its CRD’s printer columns (every type cached on its first read)',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const group = `kcp-${Math.random().toString(36).slice(2, 8)}.test`;
    const name = `widgets.${group}`;
    const open = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    await kube(shared.admin, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      metadata: { name },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', properties: { spec: open, status: open } } },
            additionalPrinterColumns: [
              { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
              { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
              { name: 'Size', type: 'number', jsonPath: '.spec.size', priority: 1 },
              { name: 'Due', type: 'date', jsonPath: '.spec.due', description: 'When it is due' },
              { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
            ],
          },
        ],
      },
    });
    t.after(async () => {
      await shared.admin.request({ method: 'DELETE', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}` });
    });
    const base = `/apis/${group}/v1/namespaces/${ns}/widgets`;
    await eventually(`${group} served`, async () => (await shared.admin.request({ method: 'GET', path: base })).statusCode === 200);
    await kube(shared.admin, 'POST', base, {
      apiVersion: `${group}/v1`,
      kind: 'Widget',
      metadata: { name: 'a' },
      spec: { replicas: 3, size: 1.5, due: '2026-01-01T00:00:00Z' },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    });
    await kube(shared.admin, 'POST', base, { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'b' }, spec: {} });
    const proxy = await startSuiteProxy(shared.cp, ['--port', '0', '--log-level', 'warn'], await upstreamConfigFor(shared.cp));
    t.after(() => proxy.stop(0));
    const url = proxy.url ?? assert.fail('the proxy serves on TCP');
    const accept = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
    const fromCache = (): Promise<number> =>
      proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { resource: `widgets.${group}`, served_from: 'cache' });
    // The first reads start the caches of the widgets and of the CRDs; then the cache answers.
    await eventually('the widgets’ Table from the cache', async () => {
      const before = await fromCache();
      await (await request(`${url}${base}`, { headers: { accept } })).body.dump();
      return (await fromCache()) > before;
    });
    // Metadata only: a custom resource's ObjectMeta re-encoded in the apiserver's field order, byte for byte.
    for (const [path, metaAccept] of [
      [base, 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1'],
      [`${base}/a`, 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1'],
    ] as const) {
      const ours = await (await request(`${url}${path}`, { headers: { accept: metaAccept } })).body.text();
      const direct = await shared.admin.request({ method: 'GET', path, headers: { accept: metaAccept } });
      const norm = (body: string): string =>
        body.replace(/("kind":"PartialObjectMetadataList","apiVersion":"meta\.k8s\.io\/v1","metadata":\{"resourceVersion":")\d+"/, '$1"');
      assert.equal(norm(ours), norm(direct.body.toString()), `${path} as ${metaAccept}`);
    }
    for (const path of [base, `${base}/a`, `${base}?includeObject=Object`]) {
      const before = await fromCache();
      const ours = (await (await request(`${url}${path}`, { headers: { accept } })).body.json()) as TableJson;
      assert.equal(await fromCache(), before + 1, `${path}: from the cache`);
      const direct = await shared.admin.request({ method: 'GET', path, headers: { accept } });
      assertSameTable(ours, JSON.parse(direct.body.toString()) as TableJson, path, path !== `${base}/a`);
    }
  },
);
