/**
 * kube-controller-manager v1.37.2 (built from the pinned module, tools/controlplane/components)
 * through a shared proxy serving TLS, authenticated as itself (the admin's token): client-go
 * negotiates h2 by ALPN and multiplexes every request and watch of the process on one connection,
 * as it does with the apiserver. Once its informers have synced, the proxy counts one or two
 * client connections open over h2 and none of KCM's over HTTP/1.1, and KCM's own sockets to the
 * proxy are as many.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { ensureComponentBinaries } from '../../../src/cli/dev-cluster/build.ts';
import { newProgress } from '../../../src/cli/progress.ts';
import { useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import { establishedTo } from '../../helpers/proc-sockets.ts';
import { startSharedProxy } from '../../helpers/shared-proxy.ts';

const shared = useSharedAdmin();

/**
 * KCM's informers are taken as synced once no new "Caches are synced" line came for this long
 * (the bench's rule, bench/controller-manager.ts, with a shorter quiet time: the cluster is small).
 */
const SETTLED_MS = 3_000;

test('kube-controller-manager through a shared TLS proxy holds one or two h2 connections to it', { timeout: 900_000 }, async (t) => {
  const { cp } = shared;
  const binaries = await ensureComponentBinaries(newProgress((line) => process.stderr.write(`[components] ${line}\n`)));
  const proxy = await startSharedProxy(t, cp, []);
  const port = Number(new URL(proxy.url).port);

  const dir = mkdtempSync(join(tmpdir(), 'kcp-kcm-h2-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'proxy', cluster: { server: proxy.url, 'certificate-authority': cp.caFile } }],
      users: [{ name: 'admin', user: { token: cp.users.admin.token } }],
      contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'admin' } }],
      'current-context': 'proxy',
    }),
  );
  const pki = join(cp.dir, 'pki');
  const kcm = spawn(
    binaries.kubeControllerManager,
    [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      '--use-service-account-credentials=false',
      `--service-account-private-key-file=${join(pki, 'sa.key')}`,
      `--root-ca-file=${cp.caFile}`,
      `--cluster-signing-cert-file=${cp.caFile}`,
      `--cluster-signing-key-file=${join(pki, 'ca.key')}`,
      '--bind-address=127.0.0.1',
      '--secure-port=0',
      '--v=1',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<void>((resolve) => {
    kcm.once('exit', () => {
      resolve();
    });
  });
  t.after(async () => {
    if (kcm.exitCode === null && kcm.signalCode === null) kcm.kill('SIGTERM');
    await exited;
  });
  let log = '';
  let syncedLines = 0;
  let lastSyncedAt = 0;
  const onData = (chunk: Buffer): void => {
    const text = chunk.toString();
    log = (log + text).slice(-(1 << 18));
    const lines = text.split('\n').filter((l) => l.includes('Caches are synced')).length;
    if (lines > 0) {
      syncedLines += lines;
      lastSyncedAt = performance.now();
    }
  };
  kcm.stdout.on('data', onData);
  kcm.stderr.on('data', onData);
  const started = performance.now();
  await eventually(
    "kube-controller-manager's caches to be synced",
    () => {
      if (kcm.exitCode !== null) throw new Error(`kube-controller-manager exited (${String(kcm.exitCode)}):\n${log.slice(-3000)}`);
      return syncedLines > 0 && performance.now() - lastSyncedAt > SETTLED_MS;
    },
    180_000,
  );
  t.diagnostic(`KCM synced in ${((lastSyncedAt - started) / 1000).toFixed(1)} s (${String(syncedLines)} "Caches are synced" lines)`);

  try {
    // The proxy's gauges, less this test's own connections (counted in /proc: its scraper's and the
    // readiness probe's, if still open), are KCM's.
    const scraper = new Agent({ connect: { ca: proxy.ca } });
    t.after(() => scraper.close());
    const scrape = async (): Promise<{ h2: number; h1: number; ours: number }> => {
      const ours = establishedTo('self', port);
      const res = await request(`${proxy.url}/metrics`, {
        dispatcher: scraper,
        headers: { authorization: `Bearer ${cp.users.admin.token}` },
      });
      const text = await res.body.text();
      return {
        h2: metricSum(text, 'kube_cache_proxy_client_connections', { protocol: 'h2' }),
        h1: metricSum(text, 'kube_cache_proxy_client_connections', { protocol: 'http/1.1' }),
        ours,
      };
    };
    // Until a scrape during which none of ours opened or closed (the scraper's first, the probe's going idle).
    let counts = await scrape();
    await eventually('a scrape during which this test opened or closed no connection', async () => {
      counts = await scrape();
      return establishedTo('self', port) === counts.ours;
    });
    const { h2, h1, ours } = counts;
    const kcmSockets = establishedTo(kcm.pid ?? 0, port);
    const kcmInProxy = h2 + h1 - ours;
    t.diagnostic(
      `proxy: ${String(h2)} h2 and ${String(h1)} HTTP/1.1 connections open, ${String(ours)} of them this test's; KCM: ${String(kcmSockets)} sockets to the proxy`,
    );
    assert.ok(kcmInProxy >= 1 && kcmInProxy <= 2, `KCM's connections, counted by the proxy: ${String(kcmInProxy)}`);
    assert.equal(kcmSockets, kcmInProxy, `KCM's sockets to the proxy (${String(kcmSockets)}) are the ones the proxy counts for it`);
    // None of KCM's is HTTP/1.1: at most this test's are.
    assert.ok(
      h1 <= ours && h2 >= kcmInProxy,
      `KCM's connections are h2: ${String(h2)} h2 open, ${String(h1)} HTTP/1.1 (${String(ours)} ours)`,
    );
  } finally {
    // Before the proxy's shutdown (after hooks run in the order added, the proxy's first).
    kcm.kill('SIGTERM');
    await exited;
  }
  // KCM gone, the watches it had passed through (secrets, custom resources) were ended upstream
  // with its streams: the proxy's drain waits for none of them (the grace period is 60 s).
  const stopping = performance.now();
  proxy.cli.child.kill('SIGTERM');
  await proxy.cli.exited;
  const stopMs = performance.now() - stopping;
  t.diagnostic(`the proxy stopped ${String(Math.round(stopMs))} ms after SIGTERM`);
  assert.ok(stopMs < 30_000, `the drain waited on no passed-through watch of KCM's (${String(Math.round(stopMs))} ms)`);
});
