/**
 * The pass-through against the real apiserver: what a client gets through the proxy equals what
 * it gets from the apiserver directly, bodies stream both ways, watches stream as they happen,
 * and an unreachable apiserver is a Status error, never a hung request.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import { splitLines } from '../../../src/informer/lister-watcher.ts';
import { newProxyServer } from '../../../src/server/http/app.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import { runCommand } from '../../helpers/cli.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { sidecarKubectlFlags, listenForSuite, suiteServingTls } from '../../helpers/http2.ts';

const shared = useSharedAdmin();

async function startProxy(t: { after(fn: () => Promise<void>): void }, client: UpstreamClient): Promise<string> {
  const tls = suiteServingTls(shared.cp);
  const app: FastifyInstance = newProxyServer({ client, tls });
  const address = await listenForSuite(app, tls);
  t.after(async () => {
    await app.close();
  });
  return address;
}

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; contentType: unknown }> {
  const res = await request(url, { headers });
  return { status: res.statusCode, body: await res.body.text(), contentType: res.headers['content-type'] };
}

test('pass-through: GET, a missing object and a create answer as the apiserver does', { timeout: 30_000 }, async (t) => {
  const proxy = await startProxy(t, newUpstreamClient(await upstreamConfigFor(shared.cp)));
  const ns = await testNamespace(t, shared.admin);

  const version = await get(`${proxy}/version`);
  const direct = await shared.admin.request({ method: 'GET', path: '/version' });
  assert.equal(version.status, 200);
  assert.equal(version.body, direct.body.toString());

  const missing = await get(`${proxy}/api/v1/namespaces/${ns}/configmaps/nope`);
  const missingDirect = await shared.admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps/nope` });
  assert.equal(missing.status, 404);
  assert.equal(missing.body, missingDirect.body.toString());
  assert.equal(missing.contentType, 'application/json');

  const created = await request(`${proxy}/api/v1/namespaces/${ns}/configmaps`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name: 'through-proxy' }, data: { a: '<b>&' } }),
  });
  assert.equal(created.statusCode, 201);
  await created.body.dump();
  const viaProxy = await get(`${proxy}/api/v1/namespaces/${ns}/configmaps/through-proxy`);
  const viaApiserver = await shared.admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps/through-proxy` });
  assert.equal(viaProxy.body, viaApiserver.body.toString());
  assert.match(viaProxy.body, /\\u003cb\\u003e\\u0026/, "the apiserver's own escaping arrives unchanged");
});

test("pass-through: the client's token is replaced by the proxy's identity (sidecar mode)", { timeout: 30_000 }, async (t) => {
  const proxy = await startProxy(t, newUpstreamClient(await upstreamConfigFor(shared.cp)));
  const ns = await testNamespace(t, shared.admin);
  // bob may not list pods; through the proxy the request is made as the proxy (admin here).
  const res = await get(`${proxy}/api/v1/namespaces/${ns}/pods`, { authorization: `Bearer ${shared.cp.users.bob.token}` });
  assert.equal(res.status, 200);
  assert.equal((JSON.parse(res.body) as { kind: string }).kind, 'PodList');
});

test('pass-through: a watch streams each event as it happens', { timeout: 30_000 }, async (t) => {
  const proxy = await startProxy(t, newUpstreamClient(await upstreamConfigFor(shared.cp)));
  const ns = await testNamespace(t, shared.admin);
  const list = JSON.parse((await shared.admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps` })).body.toString()) as {
    metadata: { resourceVersion: string };
  };
  // Ended inside the test: the server's close (an after hook) waits for open requests.
  const abort = new AbortController();
  const watch = await request(`${proxy}/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=${list.metadata.resourceVersion}`, {
    signal: abort.signal,
  });
  assert.equal(watch.statusCode, 200);
  const lines = splitLines(watch.body);
  // The event is written after the watch is open: it can only arrive if the proxy streams.
  const create = await shared.admin.request({
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/configmaps`,
    body: JSON.stringify({ metadata: { name: 'watched' } }),
  });
  assert.equal(create.statusCode, 201);
  const first = await lines.next();
  assert.ok(first.done !== true, 'an event arrived before the stream ended');
  const event = JSON.parse(first.value.toString()) as { type: string; object: { metadata: { name: string } } };
  abort.abort();
  assert.equal(event.type, 'ADDED');
  assert.equal(event.object.metadata.name, 'watched');
});

test('pass-through: a watch its client leaves is ended upstream too', { timeout: 30_000 }, async (t) => {
  const upstream = newUpstreamClient(await upstreamConfigFor(shared.cp));
  const signals: AbortSignal[] = [];
  const client: UpstreamClient = {
    ...upstream,
    forward(req) {
      if (req.signal !== undefined) signals.push(req.signal);
      return upstream.forward(req);
    },
  };
  const proxy = await startProxy(t, client);
  t.after(() => upstream.close());
  const ns = await testNamespace(t, shared.admin);
  const abort = new AbortController();
  const watch = await request(`${proxy}/api/v1/namespaces/${ns}/configmaps?watch=1`, { signal: abort.signal });
  assert.equal(watch.statusCode, 200);
  watch.body.on('error', () => undefined);
  assert.equal(signals.length, 1, 'one request upstream');
  assert.equal(signals[0]?.aborted, false, 'open while its client reads');
  // Over HTTP/1.1 the client closes its connection; over h2 it resets the stream (CANCEL).
  abort.abort();
  await eventually('the upstream watch to be aborted', () => signals[0]?.aborted === true);
});

test('pass-through: kubectl works against the proxy', { timeout: 60_000 }, async (t) => {
  const proxy = await startProxy(t, newUpstreamClient(await upstreamConfigFor(shared.cp)));
  const ns = await testNamespace(t, shared.admin);
  const cache = mkdtempSync(join(tmpdir(), 'kcp-kubectl-'));
  const kubectl = (...args: string[]): ReturnType<typeof runCommand> =>
    runCommand(shared.cp.binaries.kubectl, [
      '--kubeconfig',
      '/dev/null',
      '--server',
      proxy,
      ...sidecarKubectlFlags(shared.cp, proxy),
      '--cache-dir',
      cache,
      ...args,
    ]);
  const created = await kubectl('create', 'configmap', 'via-kubectl', '-n', ns, '--from-literal=k=v');
  assert.equal(created.code, 0, created.stderr);
  const got = await kubectl('get', 'configmap', 'via-kubectl', '-n', ns, '-o', 'jsonpath={.data.k}');
  assert.equal(got.code, 0, got.stderr);
  assert.equal(got.stdout, 'v');
  const names = await kubectl('get', 'namespaces', '-o', 'name');
  assert.match(names.stdout, new RegExp(`^namespace/${ns}$`, 'm'));
});

test('pass-through: an unreachable apiserver is a 503 Status, not a hung request', { timeout: 30_000 }, async (t) => {
  const config = await upstreamConfigFor(shared.cp);
  // A port nothing listens on: connections are refused.
  const client = newUpstreamClient({ ...config, server: new URL('https://127.0.0.1:1') });
  t.after(() => client.close());
  const proxy = await startProxy(t, client);
  const res = await get(`${proxy}/api/v1/namespaces`);
  assert.equal(res.status, 503);
  const status = JSON.parse(res.body) as { kind: string; code: number; reason: string };
  assert.deepEqual([status.kind, status.code, status.reason], ['Status', 503, 'ServiceUnavailable']);
});
