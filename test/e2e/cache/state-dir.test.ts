/**
 * --state-dir against the real apiserver: a proxy stopped (SIGTERM) while its type changes, then
 * started again, restores each cache from its saved state and resumes the upstream watch from
 * the saved RV: no LIST of the type reaches the apiserver, `resourceVersion=0` reads are answered
 * from the restored state as soon as the proxy serves, and client-go informers behind it resume
 * their watches from their own RVs, replayed from the restored event window: each sees exactly
 * the events an informer on the apiserver itself saw, none lost, none repeated (a relist would
 * repeat every object as an update). A state file cut short is refused, logged, never served.
 *
 * The type is a CRD of the test's own, so that the apiserver's request counts are this test's.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import { anonymousKubeconfig } from '../../helpers/anonymous-kubeconfig.ts';
import type { RunningCli } from '../../helpers/cli.ts';
import { spawnCli } from '../../helpers/cli.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { buildGoClient } from '../../helpers/go-client.ts';
import { startDynamicInformer } from '../../helpers/dynamic-informer.ts';
import type { TestCrd } from '../../helpers/kube.ts';
import { kube, testCrd } from '../../helpers/kube.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import { freePort } from '../../helpers/pool-harness.ts';

const shared = useSharedAdmin();

const INFORMERS = 3;
/** client-go's reflector backs off up to 30 s (with jitter) while the proxy is down (restart-watches.test.ts). */
const BACK_WITHIN_MS = 120_000;

interface Setup {
  readonly ns: string;
  readonly crd: TestCrd;
  readonly resource: string;
  readonly collection: string;
  readonly port: number;
  readonly url: string;
  readonly stateDir: string;
  write(method: 'POST' | 'PATCH' | 'DELETE', name: string): Promise<unknown>;
  startProxy(): Promise<RunningCli>;
  /** The apiserver's LISTs of the type so far (every scope and code). */
  apiserverLists(): Promise<number>;
  proxyMetrics(): Promise<string>;
}

async function setUp(t: TestContext): Promise<Setup> {
  const { admin, cp } = shared;
  const ns = await testNamespace(t, admin);
  const crd = await testCrd(t, admin);
  const resource = `${crd.plural}.${crd.group}`;
  const collection = `/apis/${crd.group}/${crd.version}/namespaces/${ns}/${crd.plural}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${String(port)}`;
  const stateDir = mkdtempSync(join(tmpdir(), 'kcp-state-dir-'));
  return {
    ns,
    crd,
    resource,
    collection,
    port,
    url,
    stateDir,
    write: (method, name) =>
      method === 'POST'
        ? kube(admin, 'POST', collection, { apiVersion: `${crd.group}/${crd.version}`, kind: crd.kind, metadata: { name }, spec: { n: 0 } })
        : method === 'PATCH'
          ? kube(admin, 'PATCH', `${collection}/${name}`, { spec: { n: Date.now() } }, 200)
          : kube(admin, 'DELETE', `${collection}/${name}`),
    async startProxy() {
      const cli = spawnCli([
        'proxy',
        '--kubeconfig',
        cp.kubeconfig,
        '--port',
        String(port),
        '--resources',
        resource,
        '--state-dir',
        stateDir,
        '--log-level',
        'info',
      ]);
      t.after(async () => {
        cli.child.kill('SIGKILL');
        await cli.exited;
      });
      await eventually('the proxy to serve', () => cli.output().includes('Starting to serve on') || cli.child.exitCode !== null, 30_000);
      assert.equal(cli.child.exitCode, null, cli.output());
      return cli;
    },
    async apiserverLists() {
      const res = await admin.request({ method: 'GET', path: '/metrics', headers: { accept: 'text/plain' } });
      return metricSum(res.body.toString(), 'apiserver_request_total', { verb: 'LIST', group: crd.group, resource: crd.plural });
    },
    proxyMetrics: async () => (await request(`${url}/metrics`)).body.text(),
  };
}

/** The proxy's completed LISTs and WatchLists of the type (its reflector's count), from its metrics text. */
function reflectorLists(metrics: string, plural: string): number {
  let total = 0;
  for (const line of metrics.split('\n')) {
    if (line.startsWith('kube_cache_proxy_reflector_lists_total{') && line.includes(plural)) total += Number(line.split(' ').at(-1));
  }
  return total;
}

/** Stops the proxy as a rollout does (SIGTERM: it drains, saves its caches, exits 0). */
async function terminate(proxy: RunningCli): Promise<void> {
  proxy.child.kill('SIGTERM');
  const code = await proxy.exited;
  assert.equal(code, 0, proxy.output());
}

test(
  '--state-dir: a proxy stopped while its type changes comes back without a LIST, serves RV=0 from the restored state once ready, and its client-go informers resume with no event lost or repeated',
  { timeout: 240_000 },
  async (t) => {
    const s = await setUp(t);
    const binary = await buildGoClient();
    const dir = mkdtempSync(join(tmpdir(), 'kcp-state-clients-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, anonymousKubeconfig(s.url));
    const gvr = `${s.crd.group}/${s.crd.version}/${s.crd.plural}`;
    // The reference: an informer on the apiserver itself, never interrupted.
    const reference = startDynamicInformer(binary, shared.cp.kubeconfig, gvr, s.ns);
    let proxy = await s.startProxy();
    const informers = Array.from({ length: INFORMERS }, () => startDynamicInformer(binary, kubeconfig, gvr, s.ns));
    t.after(() => {
      for (const informer of [reference, ...informers]) informer.child.kill();
    });
    await Promise.all([reference, ...informers].map((i) => i.synced));
    for (let i = 0; i < 5; i++) await s.write('POST', `before-${String(i)}`);
    await s.write('PATCH', 'before-1');
    await eventually('every informer to see the writes', () => informers.every((i) => i.events().length === 6));

    await terminate(proxy);
    assert.match(proxy.output(), /saved the state of 1 caches/);
    assert.equal(readdirSync(s.stateDir).filter((f) => f.endsWith('.state')).length, 1, 'one state file, for the one named cache');
    // While it is down: an add, a change, a delete.
    await s.write('POST', 'while-down');
    await s.write('PATCH', 'before-2');
    await s.write('DELETE', 'before-0');
    const listsBefore = await s.apiserverLists();

    const spawned = performance.now();
    proxy = await s.startProxy();
    // Serving starts before the caches do (discovery, the restore); a read before /readyz would
    // wait for its cache only COLD_READ_WAIT_MS and then pass through, as a rollout never sends one.
    await eventually('the restored cache to be ready', async () => (await request(`${s.url}/readyz`)).statusCode === 200);
    const zero = await request(`${s.url}${s.collection}?resourceVersion=0`);
    const zeroAfterMs = performance.now() - spawned;
    assert.equal(zero.statusCode, 200);
    const items = ((await zero.body.json()) as { items: { metadata: { name: string } }[] }).items.map((i) => i.metadata.name);
    assert.ok(items.includes('before-4'), `the restored state answers RV=0: ${items.join(',')}`);
    t.diagnostic(`ready and an RV=0 LIST answered ${zeroAfterMs.toFixed(0)} ms after the restarted process was spawned`);
    assert.match(proxy.output(), /restored the saved state at resourceVersion \d+: 5 objects/);

    await s.write('POST', 'after-restart');
    await s.write('PATCH', 'before-3');
    await s.write('POST', 'last');
    const restarted = Date.now();
    await eventually(
      'every informer to see the last write',
      () => informers.every((i) => i.events().some((line) => line.startsWith(`ADDED ${s.ns}/last `))),
      BACK_WITHIN_MS,
    );
    t.diagnostic(`every informer caught up ${String(Date.now() - restarted)} ms after the restart`);
    assert.equal((await s.apiserverLists()) - listsBefore, 0, 'no LIST of the type reached the apiserver after the restart');
    const metrics = await s.proxyMetrics();
    assert.equal(reflectorLists(metrics, s.crd.plural), 0, 'nor a WatchList: the cache resumed its watch');
    assert.equal(metricSum(metrics, 'kube_cache_proxy_state_loads_total', { result: 'restored' }), 1);
    assert.equal(
      metricSum(metrics, 'kube_cache_proxy_watches_expired_total', { resource: s.resource }),
      0,
      "no client's watch was refused (410)",
    );
    assert.equal(
      metricSum(metrics, 'kube_cache_proxy_pass_through_total', { resource: s.resource }),
      0,
      `no read of the type passed through: ${metrics
        .split('\n')
        .filter((line) => line.startsWith('kube_cache_proxy_pass_through_total{'))
        .join('; ')}\n${proxy.output()}`,
    );
    await eventually('the reference informer to see the last write', () =>
      reference.events().some((line) => line.startsWith(`ADDED ${s.ns}/last `)),
    );
    const expected = reference.events();
    assert.equal(expected.length, 12);
    for (const informer of informers)
      assert.deepEqual(informer.events(), expected, 'the same events, in the same order: none lost, none repeated');
  },
);

test(
  '--state-dir: a state file cut short mid-write is refused with a log line and never served; the cache lists as at a first start',
  { timeout: 120_000 },
  async (t) => {
    const s = await setUp(t);
    let proxy = await s.startProxy();
    await s.write('POST', 'kept');
    await eventually('the cache to hold it', async () => {
      const res = await request(`${s.url}${s.collection}?resourceVersion=0`);
      return (await res.body.text()).includes('"kept"');
    });
    await terminate(proxy);
    const [file = ''] = readdirSync(s.stateDir).filter((f) => f.endsWith('.state'));
    const path = join(s.stateDir, file);
    const bytes = readFileSync(path);
    writeFileSync(path, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
    await s.write('DELETE', 'kept');
    proxy = await s.startProxy();
    const res = await request(`${s.url}${s.collection}?resourceVersion=0`);
    assert.equal(res.statusCode, 200);
    assert.ok(!(await res.body.text()).includes('"kept"'), 'the refused state is never served: the object deleted meanwhile is not there');
    assert.match(proxy.output(), /saved state refused, not served .*checksum mismatch/);
    assert.equal(readdirSync(s.stateDir).filter((f) => f.endsWith('.state')).length, 0, 'the refused file is deleted');
    await eventually('the cache to list', async () => reflectorLists(await s.proxyMetrics(), s.crd.plural) === 1);
    assert.doesNotMatch(proxy.output(), /restored the saved state/);
    assert.equal(metricSum(await s.proxyMetrics(), 'kube_cache_proxy_state_loads_total', { result: 'refused' }), 1);
  },
);
