/**
 * After the apiserver has been unreachable long enough for the informers' backoff to grow (up to
 * 30 s), the caches come back within about a second of its return: a shared probe of /readyz
 * wakes the reflectors (upstream/health.ts), instead of each waiting out its backoff. Meanwhile
 * the proxy stays ready (its reads pass through) and says what its cache is doing: /readyz?verbose
 * and the reflector_watching gauge.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { proxyCounter } from '../../helpers/caching-proxy.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';

const shared = useSharedAdmin();

test('recovery: after a 15 s outage the cache serves again within seconds of the apiserver’s return', { timeout: 90_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const config = await upstreamConfigFor(shared.cp);
  const link = await startTcpProxy(config.server.hostname, Number(config.server.port));
  t.after(() => link.close());
  const options = parseProxyOptions(['--port', '0', '--resources', 'configmaps', '--log-level', 'warn']);
  const proxy = await startProxy(options, { ...config, server: new URL(`https://127.0.0.1:${String(link.port)}`) });
  t.after(() => proxy.stop(0));
  const url = proxy.url ?? '';
  await eventually('the cache to sync', async () => (await request(`${url}/readyz`)).statusCode === 200);
  const cached = (): Promise<number> =>
    proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { verb: 'get', served_from: 'cache' });
  const get = async (): Promise<number> => {
    const res = await request(`${url}/api/v1/namespaces/${ns}/configmaps/during`);
    await res.body.dump();
    return res.statusCode;
  };
  // The apiserver goes away for 15 s: the reflector's backoff grows past several seconds.
  const watching = (): Promise<number> => proxyCounter(proxy.metrics, 'kube_cache_proxy_reflector_watching', { resource: 'configmaps' });
  const verbose = async (): Promise<{ status: number; body: string }> => {
    const res = await request(`${url}/readyz?verbose`);
    return { status: res.statusCode, body: await res.body.text() };
  };
  assert.equal(await watching(), 1);
  assert.match((await verbose()).body, /^\[\+\]cache-configmaps ok: watching, \d+ objects at RV \d+, heard from \d+ s ago$/m);
  link.setBlocked(true);
  link.cut();
  await eventually('the gauge to say the watch is down', async () => (await watching()) === 0);
  await sleep(15_000);
  const during = await verbose();
  assert.equal(during.status, 200, 'still ready: reads pass through while the watch is down');
  assert.match(
    during.body,
    /^\[\+\]cache-configmaps ok: upstream watch down \(its reads pass through\), \d+ objects at RV \d+, heard from (1[5-9]|[2-9]\d) s ago$/m,
  );
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'during' } });
  const back = performance.now();
  link.setBlocked(false);
  const before = await cached();
  await eventually(
    'a GET answered from the cache, with the object made during the outage',
    async () => (await get()) === 200 && (await cached()) > before,
    20_000,
  );
  const seconds = (performance.now() - back) / 1000;
  assert.equal(await watching(), 1);
  t.diagnostic(`the cache served again ${seconds.toFixed(1)} s after the apiserver was reachable again`);
  assert.ok(seconds <= 5, `back within 5 s (took ${seconds.toFixed(1)} s)`);
});
