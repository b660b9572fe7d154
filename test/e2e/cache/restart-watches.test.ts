/**
 * A proxy killed and started again, with client-go informers behind it (tools/goclient's dynamic
 * informer, client-go v0.37.2's own reflector): each informer re-watches from its last RV, older
 * than the new cache's first list. The apiserver, after its own restart, answers such a watch 410
 * and serves the relist from its new watch cache; so does the proxy, and no client's watch goes
 * to the apiserver. The type is a CRD of the test's own, so that the apiserver's
 * apiserver_longrunning_requests counts this proxy's watches and the clients' only.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { anonymousKubeconfig } from '../../helpers/anonymous-kubeconfig.ts';
import type { RunningCli } from '../../helpers/cli.ts';
import { spawnCli } from '../../helpers/cli.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { buildGoClient } from '../../helpers/go-client.ts';
import { startDynamicInformer } from '../../helpers/dynamic-informer.ts';
import type { Meta } from '../../helpers/kube.ts';
import { kube, testCrd } from '../../helpers/kube.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import { freePort } from '../../helpers/pool-harness.ts';

const shared = useSharedAdmin();

const INFORMERS = 5;
/**
 * How long an informer may take to come back. client-go's reflector backs off from 0.8 s, doubling
 * to 30 s with up to 2x jitter, on each refused connection while the proxy is down and once more
 * after the 410: a restart that takes a few seconds on a loaded machine can cost it a minute
 * (reflector.go, defaultBackoff*). That wait is the client's; what the proxy owns is that no
 * watch of theirs reaches the apiserver meanwhile, which the pass-through count proves.
 */
const BACK_WITHIN_MS = 120_000;

test(
  'a proxy killed and restarted: 5 client-go informers re-watch through it, none stays at the apiserver, and each ends with the apiserver state',
  { timeout: 240_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    const crd = await testCrd(t, admin);
    const resource = `${crd.plural}.${crd.group}`;
    const collection = `/apis/${crd.group}/${crd.version}/namespaces/${ns}/${crd.plural}`;
    const create = (name: string): Promise<unknown> =>
      kube(admin, 'POST', collection, { apiVersion: `${crd.group}/${crd.version}`, kind: crd.kind, metadata: { name }, spec: { n: 0 } });
    for (let i = 0; i < 5; i++) await create(`before-${String(i)}`);

    /** The apiserver's watches of the type now, in every scope: the proxy's informer, and any client watch passed through. */
    const apiserverWatches = async (): Promise<number> => {
      const res = await admin.request({ method: 'GET', path: '/metrics', headers: { accept: 'text/plain' } });
      return metricSum(res.body.toString(), 'apiserver_longrunning_requests', { verb: 'WATCH', group: crd.group, resource: crd.plural });
    };
    const port = await freePort();
    const url = `http://127.0.0.1:${String(port)}`;
    const startProxy = async (): Promise<RunningCli> => {
      const cli = spawnCli([
        'proxy',
        '--kubeconfig',
        cp.kubeconfig,
        '--port',
        String(port),
        '--resources',
        resource,
        '--log-level',
        'info',
      ]);
      await eventually('the proxy to serve', () => cli.output().includes('Starting to serve on') || cli.child.exitCode !== null, 30_000);
      assert.equal(cli.child.exitCode, null, cli.output());
      return cli;
    };
    const proxyMetrics = async (): Promise<string> => (await request(`${url}/metrics`)).body.text();
    let proxy = await startProxy();
    t.after(async () => {
      proxy.child.kill('SIGTERM');
      await proxy.exited;
    });

    const dir = mkdtempSync(join(tmpdir(), 'kcp-restart-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, anonymousKubeconfig(url));
    const binary = await buildGoClient();
    const informers = Array.from({ length: INFORMERS }, () =>
      startDynamicInformer(binary, kubeconfig, `${crd.group}/${crd.version}/${crd.plural}`, ns),
    );
    t.after(() => {
      for (const informer of informers) informer.child.kill();
    });
    await Promise.all(informers.map((i) => i.synced));
    await eventually(
      'every informer watching from the cache',
      async () => metricSum(await proxyMetrics(), 'kube_cache_proxy_watchers', { resource }) === INFORMERS,
    );
    await eventually("the apiserver holding the proxy's watch only", async () => (await apiserverWatches()) === 1);
    // An event on every informer's watch: client-go relists at once after a watch that ends having
    // carried nothing within a second ("very short watch"), and re-watches from its RV after any other.
    await kube(admin, 'PATCH', `${collection}/before-2`, { spec: { n: 2 } }, 200);
    await eventually('every informer to see the change', () => informers.every((i) => i.stderr().includes(`MODIFIED ${ns}/before-2 `)));

    // Killed as the OOM killer kills: no goodbye to the clients or the apiserver.
    proxy.child.kill('SIGKILL');
    await proxy.exited;
    await create('while-down');
    await kube(admin, 'DELETE', `${collection}/before-0`);
    proxy = await startProxy();
    const restarted = Date.now();
    await create('after-restart');
    await kube(admin, 'PATCH', `${collection}/before-1`, { spec: { n: 1 } }, 200);

    let watchers = NaN;
    await eventually(
      'every informer back on the cache',
      async () => (watchers = metricSum(await proxyMetrics(), 'kube_cache_proxy_watchers', { resource })) === INFORMERS,
      BACK_WITHIN_MS,
    ).catch((error: unknown) => {
      // What each informer last said (its reflector's errors and backoff), to tell a slow client from a proxy that refuses it.
      const tails = informers.map((i, n) => `informer ${String(n)}: ${i.stderr().split('\n').slice(-6).join(' | ')}`);
      throw new Error(`${String(error)}; ${String(watchers)} of ${String(INFORMERS)} watching from the cache\n${tails.join('\n')}`);
    });
    t.diagnostic(`every informer back ${String(Date.now() - restarted)} ms after the restart`);
    assert.equal(await apiserverWatches(), 1, "the apiserver holds the new proxy's watch only");
    const metrics = await proxyMetrics();
    // None of their watches, relists or re-watches since the restart reached the apiserver.
    assert.equal(metricSum(metrics, 'kube_cache_proxy_pass_through_total', { resource }), 0, 'no read of the type passed through');
    // The last write, seen by every informer, then their stores against the apiserver's.
    await create('last');
    const list = await kube<{ items: { metadata: Meta }[] }>(admin, 'GET', collection);
    const want = new Map(list.items.map((i) => [`${ns}/${i.metadata.name}`, i.metadata.resourceVersion]));
    await eventually('every informer to see the last write', () => informers.every((i) => i.stderr().includes(`ADDED ${ns}/last `)));
    // Each re-watch from before the new cache's list was its 410 ("too old resource version"), and then a relist.
    assert.equal(metricSum(metrics, 'kube_cache_proxy_watches_expired_total', { resource }), INFORMERS);
    for (const informer of informers) {
      const { store } = await informer.finish();
      assert.deepEqual(store, want, informer.stderr());
    }
  },
);
