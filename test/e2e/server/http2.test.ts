/**
 * HTTP/2 on the proxy's TLS listener, seen by a client that multiplexes (node:http2, as client-go
 * over TLS does): the session's streams are watches and requests of their own, a stream the
 * client stops reading is bounded and closed alone, a connection's streams are bounded together,
 * and a request body of unknown length (no Content-Length, as h2 allows) goes through, as the
 * apiserver over h2 takes it.
 */
import assert from 'node:assert/strict';
import { connect, constants } from 'node:http2';
import type { ClientHttp2Session, ClientHttp2Stream, IncomingHttpHeaders } from 'node:http2';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { MAX_PENDING_BYTES } from '../../../src/cache/cache-watcher.ts';
import { DEFAULT_MAX_UNSENT_BYTES_PER_CONNECTION } from '../../../src/memory/unsent-budget.ts';
import { EXCESS_IDLE_MS, MAX_IDLE_CONNECTIONS_PER_FLOW } from '../../../src/server/http/idle-connections.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { metricSum } from '../../helpers/metrics-text.ts';

const shared = useSharedAdmin();

/** A TLS proxy of configmaps (its CA generated), and an h2 session to it. */
async function startH2Proxy(
  t: TestContext,
): Promise<{ url: string; ca: string; session: ClientHttp2Session; metrics: () => Promise<string> }> {
  const options = parseProxyOptions(['--port', '0', '--resources', 'configmaps', '--log-level', 'warn', '--tls-generate']);
  const proxy = await startProxy(options, await upstreamConfigFor(shared.cp));
  t.after(() => proxy.stop(1_000));
  const url = proxy.url;
  assert.ok(url !== undefined && proxy.ca !== undefined);
  const session = connect(url, { ca: proxy.ca });
  t.after(() => {
    session.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => {
      resolve();
    });
    session.once('error', reject);
  });
  assert.equal(session.alpnProtocol, 'h2');
  const metrics = async (): Promise<string> => (await get(session, '/metrics')).body;
  await eventually('the caches to sync', async () => (await get(session, '/readyz')).status === 200);
  return { url, ca: proxy.ca, session, metrics };
}

/** A whole answer over `session`. */
function get(session: ClientHttp2Session, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path });
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (headers: IncomingHttpHeaders) => {
      status = Number(headers[':status']);
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      resolve({ status, body: Buffer.concat(chunks).toString() });
    });
    stream.on('error', reject);
  });
}

/** A watch on its own stream of `session`, its ADDED events' names collected as they come (unless paused). */
function watch(session: ClientHttp2Session, path: string): { stream: ClientHttp2Stream; names: string[]; ended: () => boolean } {
  const stream = session.request({ ':path': path });
  const names: string[] = [];
  let ended = false;
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const name = /"type":"ADDED","object":\{"kind":"ConfigMap","apiVersion":"v1","metadata":\{"name":"([^"]+)"/.exec(line)?.[1];
      if (name !== undefined) names.push(name);
    }
  });
  stream.on('close', () => (ended = true));
  stream.on('error', () => (ended = true));
  // A paused stream's 'close' waits for its buffered data to be read; its RST_STREAM closes it at once.
  return { stream, names, ended: () => ended || stream.closed };
}

test('h2: streams a client stops reading are bounded per stream and per connection; the largest closes alone, the others and the session go on and lose nothing', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const { session, metrics } = await startH2Proxy(t);
  const path = `/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=0`;
  const reader = watch(session, path);
  const slow = [watch(session, path), watch(session, path), watch(session, path)];
  await eventually('the watches to open', async () => metricSum(await metrics(), 'kube_cache_proxy_watchers') >= 4);
  // No slow stream is read from now on: its window (64 KiB) fills, and the rest waits in the proxy.
  for (const s of slow) s.stream.pause();
  // 512 KiB objects, enough that the three slow streams together pass the connection's bound
  // while each stays under its own cap: only the connection's bound closes one, and then the
  // other two fit.
  const objectBytes = 512 * 1024;
  const count = Math.ceil((DEFAULT_MAX_UNSENT_BYTES_PER_CONNECTION / 3 + 1024 * 1024) / objectBytes);
  assert.ok(count * objectBytes < MAX_PENDING_BYTES, 'each slow stream stays under its own cap');
  assert.ok(3 * count * objectBytes > DEFAULT_MAX_UNSENT_BYTES_PER_CONNECTION, 'together they pass the connection bound');
  assert.ok(2 * count * objectBytes + 4 * 1024 * 1024 < DEFAULT_MAX_UNSENT_BYTES_PER_CONNECTION, 'two of them fit');
  const names = Array.from({ length: count }, (_, i) => `big-${String(i)}`);
  for (const name of names) {
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      metadata: { name },
      data: { payload: 'x'.repeat(objectBytes) },
    });
  }
  await eventually('the reading stream to get every event', () => names.every((name) => reader.names.includes(name)), 60_000);
  await eventually('one slow stream closed for slowness', () => slow.some((s) => s.ended()), 60_000);
  assert.equal(reader.ended(), false, 'the stream that reads goes on');
  assert.equal(session.closed || session.destroyed, false, 'the session goes on');
  const survivors = slow.filter((s) => !s.ended());
  assert.equal(survivors.length, 2, 'one slow stream closed, only one');
  // The slow streams left open are whole: read again, they get every event.
  for (const s of survivors) s.stream.resume();
  await eventually(
    'the surviving slow streams to catch up',
    () => survivors.every((s) => names.every((name) => s.names.includes(name))),
    60_000,
  );
  // Still one connection for all of it.
  const text = await metrics();
  assert.equal(metricSum(text, 'kube_cache_proxy_client_connections', { protocol: 'h2' }), 1);
  assert.equal(metricSum(text, 'kube_cache_proxy_client_connections_total', { protocol: 'h2' }), 1);
});

test('h2: a request body of unknown length (no Content-Length) is passed through as the apiserver over h2 takes it', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const { session } = await startH2Proxy(t);
  const post = (s: ClientHttp2Session, name: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const stream = s.request({
        ':method': 'POST',
        ':path': `/api/v1/namespaces/${ns}/configmaps`,
        'content-type': 'application/json',
        ...headers,
      });
      let status = 0;
      const chunks: Buffer[] = [];
      stream.on('response', (h: IncomingHttpHeaders) => (status = Number(h[':status'])));
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        resolve({ status, body: Buffer.concat(chunks).toString() });
      });
      stream.on('error', reject);
      // Two DATA frames, no length said.
      stream.write(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}"},`);
      stream.end('"data":{"a":"b"}}');
    });
  const direct = connect(shared.cp.server, { ca: readFileSync(shared.cp.caFile) });
  t.after(() => {
    direct.destroy();
  });
  const apiserver = await post(direct, 'direct', { authorization: `Bearer ${shared.cp.users.admin.token}` });
  const proxied = await post(session, 'proxied');
  assert.equal(apiserver.status, 201, apiserver.body);
  assert.equal(proxied.status, apiserver.status, proxied.body);
  const stored = await kube<{ data?: Record<string, string> }>(shared.admin, 'GET', `/api/v1/namespaces/${ns}/configmaps/proxied`);
  assert.deepEqual(stored.data, { a: 'b' });
});

test('h2: a client that opens and resets streams as fast as it can (rapid reset) has its connection closed; another client reads on', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const { url, ca, session: good, metrics } = await startH2Proxy(t);
  const openH2 = async (): Promise<number> => metricSum(await metrics(), 'kube_cache_proxy_client_connections', { protocol: 'h2' });
  const attacker = connect(url, { ca });
  t.after(() => {
    attacker.destroy();
  });
  attacker.on('error', () => undefined);
  await new Promise<void>((resolve) => {
    attacker.once('connect', () => {
      resolve();
    });
  });
  assert.equal(await openH2(), 2);
  // The good client reads all along, on a connection of its own.
  let reads = 0;
  let failures = 0;
  const attack = { on: true };
  const reader = (async () => {
    while (attack.on) {
      const answer = await get(good, `/api/v1/namespaces/${ns}/configmaps`).catch(() => ({ status: 0, body: '' }));
      if (answer.status === 200) reads++;
      else failures++;
    }
  })();
  let opened = 0;
  try {
    // Resets sent until the proxy has closed the attacker's connection (its socket gone on the
    // proxy's side; this client may not notice at once), at most 50,000.
    for (let i = 0; i < 50_000; i++) {
      if (i % 200 === 0) {
        // Lets the session write what it queued, and the good client's reads go on in this process.
        await new Promise((resolve) => setImmediate(resolve));
        if (attacker.destroyed || (await openH2()) < 2) break;
      }
      const stream = attacker.request({ ':path': `/api/v1/namespaces/${ns}/configmaps` });
      stream.on('error', () => undefined);
      stream.close(constants.NGHTTP2_CANCEL);
      opened++;
    }
    await eventually('the attacker cut off', async () => (await openH2()) === 1, 30_000);
  } finally {
    attack.on = false;
    await reader;
  }
  t.diagnostic(
    `${String(opened)} streams opened and reset before the connection was closed; the good client read ${String(reads)} times meanwhile`,
  );
  assert.ok(opened < 50_000, 'the attacker was cut off before it was done');
  assert.equal(failures, 0, 'every read of the good client answered');
  assert.ok(reads > 0);
  const after = await get(good, `/api/v1/namespaces/${ns}/configmaps`);
  assert.equal(after.status, 200, 'the proxy serves on');
});

test("h2: an address's idle connections past its bound are let go at once; its first ones keep the idle timeout", async (t) => {
  const { url, ca } = await startH2Proxy(t);
  // The test's own session (startH2Proxy's) has streams now and then; these never have one.
  const sessions = await Promise.all(
    Array.from(
      { length: MAX_IDLE_CONNECTIONS_PER_FLOW + 6 },
      () =>
        new Promise<ClientHttp2Session>((resolve, reject) => {
          const session = connect(url, { ca });
          session.once('connect', () => {
            resolve(session);
          });
          session.once('error', reject);
        }),
    ),
  );
  t.after(() => {
    for (const session of sessions) session.destroy();
  });
  const closed = (): number => sessions.filter((s) => s.closed || s.destroyed).length;
  for (const session of sessions)
    session.on('goaway', () => {
      session.close();
    });
  await eventually('the idle connections past the bound let go', () => closed() >= 6, 30_000);
  // Three times as long again as those were kept: the others stay (they have 90 s).
  await sleep(3 * EXCESS_IDLE_MS);
  assert.ok(closed() <= 7, `the first ${String(MAX_IDLE_CONNECTIONS_PER_FLOW)} kept (${String(closed())} closed)`);
});
