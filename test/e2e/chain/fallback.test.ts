/**
 * A chained proxy (`--server` another proxy) whose upstream proxy goes away (its port refused,
 * or its packets dropped): its reads, writes and
 * its clients' watches carry on through the apiserver (the kubeconfig's, same credentials), and
 * once the upstream proxy is back (its /readyz answers) it goes back to it; nothing a client
 * asked for fails and its watch loses no event.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { startProxy } from '../../../src/proxy/proxy.ts';
import type { RunningProxy } from '../../../src/proxy/proxy.ts';
import { UPSTREAM_PROXY_CONNECT_TIMEOUT_MS, loadUpstream } from '../../../src/proxy/upstream.ts';
import { STATUS_JSON_PATH } from '../../../src/status/status-routes.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { seededRandom } from '../../helpers/prng.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';
import { startReflectorWatcher } from '../../helpers/reflector-watcher.ts';
import { auditWatch, caughtUp } from '../../helpers/watch-audit.ts';
import type { AcknowledgedWrite } from '../../helpers/watch-audit.ts';

const shared = useSharedAdmin();

async function upstreamProxy(port: number): Promise<RunningProxy> {
  const options = parseProxyOptions([
    '--port',
    String(port),
    '--resources',
    'configmaps',
    '--log-level',
    'error',
    '--kubeconfig',
    shared.cp.kubeconfig,
  ]);
  return startProxy(options, await loadUpstream(options));
}

test(
  'chained proxy: while its upstream proxy is down it reads, writes and keeps its clients watching through the apiserver; it goes back once the upstream is ready',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    let upstream = await upstreamProxy(0);
    const port = Number(new URL(upstream.url ?? '').port);
    t.after(() => upstream.stop(1_000));
    const options = parseProxyOptions([
      '--port',
      '0',
      '--server',
      `http://127.0.0.1:${String(port)}`,
      '--resources',
      'configmaps',
      '--log-level',
      'error',
      '--kubeconfig',
      shared.cp.kubeconfig,
    ]);
    const chained = await startProxy(options, await loadUpstream(options));
    t.after(() => chained.stop(1_000));
    const url = chained.url ?? '';
    await eventually('the chained cache to sync', async () => (await request(`${url}/readyz`)).statusCode === 200);
    const fallback = async (): Promise<{ target: string; fallbacks: number }> => {
      const res = await request(`${url}${STATUS_JSON_PATH}`);
      return ((await res.body.json()) as { upstream: { fallback: { target: string; fallbacks: number } } }).upstream.fallback;
    };
    assert.deepEqual(await fallback(), { ...(await fallback()), target: 'upstream', fallbacks: 0 });

    // A client of the chained proxy watches its namespace's ConfigMaps throughout, as client-go's
    // reflector does (re-watching from its RV, relisting after a 410).
    const dispatcher = new Agent({ connections: null });
    t.after(() => dispatcher.close());
    const watcher = startReflectorWatcher({
      name: 'client',
      url,
      path: `/api/v1/namespaces/${ns}/configmaps`,
      dispatcher,
      random: seededRandom(7),
    });
    t.after(() => watcher.stop());
    await watcher.synced;

    const writes: AcknowledgedWrite[] = [];
    /** A write through the chained proxy: it must succeed whichever way it goes. */
    const create = async (name: string): Promise<void> => {
      const res = await request(`${url}/api/v1/namespaces/${ns}/configmaps`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { name }, data: { at: name } }),
      });
      const text = await res.body.text();
      assert.equal(res.statusCode, 201, text);
      const rv = Number((JSON.parse(text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
      writes.push({ key: `${ns}/${name}`, type: 'ADDED', rv, ackedAt: performance.now() });
    };
    const read = async (name: string): Promise<void> => {
      const res = await request(`${url}/api/v1/namespaces/${ns}/configmaps/${name}`);
      assert.equal(res.statusCode, 200, await res.body.text());
    };
    const seen = (name: string): boolean => watcher.store.has(`${ns}/${name}`);

    await create('before');
    await read('before');
    await eventually('the event before', () => seen('before'));

    // The upstream proxy goes away: its port refuses connections.
    await upstream.stop(1_000);
    await create('during-1');
    await read('during-1');
    await eventually('requests to go to the apiserver', async () => (await fallback()).target === 'apiserver', 15_000);
    /** An unlabelled series of the chained proxy's /metrics. */
    const metric = async (name: string): Promise<number> => {
      const text = await (await request(`${url}/metrics`)).body.text();
      return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    };
    assert.equal(await metric('kube_cache_proxy_upstream_fallback'), 1);
    await create('during-2');
    await read('during-2');
    // The chained proxy's informer watches the apiserver now: its clients' watch goes on.
    await eventually('the events during', () => seen('during-1') && seen('during-2'), 30_000);

    // Back: a new upstream proxy on the same port; within a probe interval or two, requests go to it.
    upstream = await upstreamProxy(port);
    await eventually('requests to go to the upstream again', async () => (await fallback()).target === 'upstream', 30_000);
    assert.equal(await metric('kube_cache_proxy_upstream_fallback'), 0);
    assert.equal(await metric('kube_cache_proxy_upstream_fallbacks_total'), 1);
    await create('after');
    await read('after');
    await eventually('the event after', () => seen('after'), 30_000);
    // Nothing lost, nothing twice, in order: every write delivered by the watch or by a relist (a
    // relist follows the return to a restarted upstream proxy, whose new cache starts after the
    // chained proxy's RV: its 410, as after any proxy restart).
    const list = JSON.parse(
      (await shared.admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps` })).body.toString(),
    ) as {
      items: { metadata: { name: string; resourceVersion: string } }[];
    };
    const final = new Map(list.items.map((c) => [`${ns}/${c.metadata.name}`, Number(c.metadata.resourceVersion)]));
    await eventually('the watcher to reach the apiserver’s state', () => caughtUp(watcher, final), 20_000);
    await watcher.stop();
    const audit = auditWatch(watcher, { writes, final });
    t.diagnostic(
      `client: ${String(audit.delivered)} delivered, ${String(audit.relisted)} by relist, ${String(watcher.counts.rewatches)} re-watches, ${String(watcher.counts.expired)} 410s`,
    );
    assert.deepEqual(audit.problems, []);
    assert.equal(audit.lost, 0);
    assert.equal(audit.duplicated, 0);
    assert.equal(audit.reordered, 0);
    assert.equal(audit.delivered + audit.relisted, writes.length);
    assert.equal(writes.length, 4);
  },
);

test(
  'chained proxy: an upstream proxy that never completes a connection (its packets dropped) is left at the connect timeout given to upstream proxies, and taken again once it answers',
  { timeout: 90_000 },
  async (t) => {
    const upstreamOptions = parseProxyOptions([
      '--port',
      '0',
      '--tls-generate',
      '--resources',
      'configmaps',
      '--log-level',
      'error',
      '--kubeconfig',
      shared.cp.kubeconfig,
    ]);
    const upstream = await startProxy(upstreamOptions, await loadUpstream(upstreamOptions));
    t.after(() => upstream.stop(1_000));
    const dir = mkdtempSync(join(tmpdir(), 'kcp-fallback-'));
    t.after(() => {
      rmSync(dir, { recursive: true, force: true });
    });
    const caFile = join(dir, 'ca.crt');
    writeFileSync(caFile, upstream.ca ?? '');
    // Its packets dropped: the link accepts, but nothing comes back, so no TLS handshake completes.
    const link = await startTcpProxy('127.0.0.1', Number(new URL(upstream.url ?? '').port));
    t.after(() => link.close());
    link.setHeld(true);
    const options = parseProxyOptions([
      '--port',
      '0',
      '--server',
      `https://127.0.0.1:${String(link.port)}`,
      '--certificate-authority',
      caFile,
      '--resources',
      'configmaps',
      '--log-level',
      'error',
      '--kubeconfig',
      shared.cp.kubeconfig,
    ]);
    const config = await loadUpstream(options);
    // Its connections are given 3 s, not undici's 10 s: each request before the fallback waits that long.
    assert.equal(config.connectTimeoutMs, UPSTREAM_PROXY_CONNECT_TIMEOUT_MS);
    assert.equal(config.fallback?.connectTimeoutMs, undefined, "the apiserver's are not");
    const chained = await startProxy(options, config);
    t.after(() => chained.stop(1_000));
    const url = chained.url ?? '';
    const status = async (): Promise<{ target: string; reason: string | null }> => {
      const res = await request(`${url}${STATUS_JSON_PATH}`);
      return ((await res.body.json()) as { upstream: { fallback: { target: string; reason: string | null } } }).upstream.fallback;
    };
    await eventually(
      'the chained cache to sync through the apiserver',
      async () => (await request(`${url}/readyz`)).statusCode === 200,
      30_000,
    );
    assert.deepEqual(await status(), { ...(await status()), target: 'apiserver', reason: 'UND_ERR_CONNECT_TIMEOUT' });
    const read = await request(`${url}/api/v1/namespaces/default/configmaps`);
    assert.equal(read.statusCode, 200);
    await read.body.dump();

    link.setHeld(false);
    await eventually('requests to go to the upstream again', async () => (await status()).target === 'upstream', 30_000);
  },
);
