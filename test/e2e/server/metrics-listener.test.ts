/**
 * --metrics-bind-address: a sidecar's metrics and health served to another host while its API
 * stays on loopback; and --shutdown-delay-duration: on stop, /readyz fails at once on both
 * listeners while the API still serves, then the proxy drains.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { request } from 'undici';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { newNetnsHost } from '../../helpers/netns-host.ts';

const shared = useSharedAdmin();

interface Fetched {
  readonly status?: number;
  readonly body?: string;
  readonly error?: string;
}

/** GETs (or `method`s) each URL from inside the network namespace `netns`: what another host sees. */
function fetchFrom(netns: string, urls: readonly string[], method = 'GET'): Promise<Fetched[]> {
  const source = `
    const urls = ${JSON.stringify(urls)};
    Promise.all(urls.map((url) => fetch(url, { method: ${JSON.stringify(method)}, signal: AbortSignal.timeout(10000) }).then(
      async (res) => ({ status: res.status, body: await res.text() }),
      (error) => ({ error: String(error.cause?.code ?? error.message) }),
    ))).then((results) => console.log(JSON.stringify(results)));`;
  return new Promise((resolve, reject) => {
    execFile('ip', ['netns', 'exec', netns, process.execPath, '-e', source], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${error.message}: ${stderr}`));
      else resolve(JSON.parse(stdout) as Fetched[]);
    });
  });
}

test('--metrics-bind-address: another host scrapes /metrics and probes /readyz; the API listener stays on loopback, and the metrics one serves no API', async (t) => {
  const host = newNetnsHost(t);
  const options = parseProxyOptions([
    '--port',
    '0',
    '--resources',
    'configmaps',
    '--log-level',
    'warn',
    '--metrics-bind-address',
    `${host.outside}:0`,
  ]);
  const proxy = await startProxy(options, await upstreamConfigFor(shared.cp));
  t.after(() => proxy.stop(1_000));
  const api = proxy.url;
  const metricsAddress = proxy.metricsAddress;
  assert.ok(api !== undefined && metricsAddress !== undefined);
  assert.match(api, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.match(metricsAddress, new RegExp(`^${host.outside.replaceAll('.', '\\.')}:\\d+$`));
  await eventually('the caches to sync', async () => (await request(`${api}/readyz`)).statusCode === 200);

  const apiPort = new URL(api).port;
  const [scraped, ready, readyVerbose, livez, check, apiPath, notFound, apiListener] = await fetchFrom(host.name, [
    `http://${metricsAddress}/metrics`,
    `http://${metricsAddress}/readyz`,
    `http://${metricsAddress}/readyz?verbose`,
    `http://${metricsAddress}/livez`,
    `http://${metricsAddress}/readyz/ping`,
    `http://${metricsAddress}/api/v1/namespaces/default/configmaps`,
    `http://${metricsAddress}/readyz/etcd`,
    `http://${host.outside}:${apiPort}/api/v1/namespaces`,
  ]);
  assert.equal(scraped?.status, 200);
  assert.match(scraped.body ?? '', /^# TYPE kube_cache_proxy_requests_total counter$/m);
  assert.match(scraped.body ?? '', /^nodejs_eventloop_lag_p99_seconds/m);
  assert.deepEqual([ready?.status, ready?.body], [200, 'ok']);
  assert.equal(readyVerbose?.status, 200);
  assert.match(readyVerbose.body ?? '', /^\[\+\]shutdown ok$/m);
  assert.match(readyVerbose.body ?? '', /^\[\+\]cache-configmaps ok: /m);
  assert.match(readyVerbose.body ?? '', /readyz check passed\n$/);
  assert.deepEqual([livez?.status, livez?.body], [200, 'ok']);
  assert.deepEqual([check?.status, check?.body], [200, 'ok']);
  // Never the API, and never the apiserver's checks (the API listener passes those through).
  assert.deepEqual([apiPath?.status, apiPath?.body], [404, '404 page not found\n']);
  assert.deepEqual([notFound?.status, notFound?.body], [404, '404 page not found\n']);
  assert.equal(apiListener?.error, 'ECONNREFUSED', 'the API listener is on loopback only');

  const [posted] = await fetchFrom(host.name, [`http://${metricsAddress}/metrics`], 'POST');
  assert.equal(posted?.status, 405);
});

test('--shutdown-delay-duration: on stop /readyz fails at once on both listeners while reads are still served; then the proxy drains and closes', async (t) => {
  const options = parseProxyOptions([
    '--port',
    '0',
    '--resources',
    'configmaps',
    '--log-level',
    'warn',
    '--metrics-bind-address',
    '127.0.0.1:0',
    '--shutdown-delay-duration',
    '8s',
  ]);
  const proxy = await startProxy(options, await upstreamConfigFor(shared.cp));
  // stop() is the same promise however often it is called: this waits for the one below.
  t.after(() => proxy.stop(1_000));
  const api = proxy.url;
  const metricsUrl = `http://${proxy.metricsAddress ?? ''}`;
  assert.ok(api !== undefined);
  await eventually('the caches to sync', async () => (await request(`${api}/readyz`)).statusCode === 200);

  const before = await request(`${api}/api/v1/namespaces/default/configmaps`);
  assert.notEqual(before.headers.connection, 'close', 'kept alive before the stop');
  await before.body.dump();

  let done = false;
  const stopped = proxy.stop(5_000).then(() => {
    done = true;
  });
  for (const base of [api, metricsUrl]) {
    const res = await request(`${base}/readyz`);
    assert.equal(res.statusCode, 500, base);
    const body = await res.body.text();
    assert.match(body, /^\[-\]shutdown failed: reason withheld$/m);
    assert.match(body, /readyz check failed\n$/);
    const livez = await request(`${base}/livez`);
    assert.equal(livez.statusCode, 200, 'alive while it shuts down');
    await livez.body.dump();
  }
  const read = await request(`${api}/api/v1/namespaces/default/configmaps`);
  assert.equal(read.statusCode, 200, 'clients already sent here are still served during the delay');
  // Each answer closes its connection: the client's next request opens one elsewhere.
  assert.equal(read.headers.connection, 'close');
  await read.body.dump();
  assert.equal(done, false, 'the delay still running');

  await stopped;
  await assert.rejects(request(`${api}/readyz`), 'the API listener closed after the delay');
  await assert.rejects(request(`${metricsUrl}/readyz`), 'the metrics listener closed too');
});
