/**
 * The proxy's server over TLS (newProxyServer with `tls`): the same server as in plain HTTP, so
 * requests pass through, Upgrades (exec, port-forward) are spliced both ways, and malformed
 * requests get Go's answers, all inside the TLS session; a client that does not trust the CA is
 * refused at the handshake.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { connect } from 'node:tls';
import type { TLSSocket } from 'node:tls';
import { newProxyServer } from '../../../../src/server/http/app.ts';
import { newProxyMetrics } from '../../../../src/server/http/metrics.ts';
import { closeUpgradedConnections } from '../../../../src/server/pass-through/upgrade.ts';
import { LOOPBACK_NAMES, generateServingCertificate } from '../../../../src/server/tls/serving-certificate.ts';
import { newUpstreamClient } from '../../../../src/upstream/client.ts';

const made = generateServingCertificate(LOOPBACK_NAMES);

/** A fake apiserver in plain HTTP: GETs answered with their path, Upgrades switched and echoed. */
async function startFakeApiserver(t: TestContext): Promise<string> {
  const sockets: Duplex[] = [];
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ path: req.url, authorization: req.headers.authorization }));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${req.headers.upgrade ?? ''}\r\n\r\n`);
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(async () => {
    for (const socket of sockets) socket.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function startHttpsProxy(t: TestContext, upstream: string): Promise<number> {
  const client = newUpstreamClient({
    server: new URL(upstream),
    tls: { rejectUnauthorized: true },
    authorization: () => Promise.resolve('Bearer proxy-token'),
    source: 'test',
  });
  const app = newProxyServer({ client, tls: { cert: made.cert, key: made.key } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.after(async () => {
    closeUpgradedConnections(app.server);
    await app.close();
    await client.close();
  });
  return (app.server.address() as AddressInfo).port;
}

function get(port: number, path: string, ca: string | undefined): Promise<{ statusCode: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, ca, agent: false, headers: { authorization: 'Bearer app' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        resolve({ statusCode: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function tlsConnect(port: number): Promise<TLSSocket> {
  const socket = connect({ host: '127.0.0.1', port, ca: made.ca, servername: 'localhost' });
  await once(socket, 'secureConnect');
  return socket;
}

/** Reads from the socket until `until` matches what arrived. */
async function readUntil(socket: Duplex, until: RegExp): Promise<string> {
  let text = '';
  while (!until.test(text)) {
    const [chunk] = (await once(socket, 'data')) as [Buffer];
    text += chunk.toString('latin1');
  }
  return text;
}

test("https: a request passes through with the proxy's credentials; a client without the CA is refused", async (t) => {
  const port = await startHttpsProxy(t, await startFakeApiserver(t));
  const res = await get(port, '/api/v1/namespaces?limit=1', made.ca);
  assert.equal(res.statusCode, 200);
  assert.deepEqual(JSON.parse(res.body), { path: '/api/v1/namespaces?limit=1', authorization: 'Bearer proxy-token' });
  await assert.rejects(get(port, '/api', undefined), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
});

test('https: an Upgrade (exec, port-forward) switches and carries bytes both ways inside TLS', async (t) => {
  const port = await startHttpsProxy(t, await startFakeApiserver(t));
  const socket = await tlsConnect(port);
  t.after(() => socket.destroy());
  socket.write(
    'POST /api/v1/namespaces/x/pods/y/portforward HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n',
  );
  const head = await readUntil(socket, /\r\n\r\n/);
  assert.match(head, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
  socket.write('ping over tls');
  assert.equal(await readUntil(socket, /ping over tls/), 'ping over tls');
});

test("https: a malformed request gets the apiserver's (Go's) 400 inside the TLS session", async (t) => {
  const port = await startHttpsProxy(t, await startFakeApiserver(t));
  const socket = await tlsConnect(port);
  t.after(() => socket.destroy());
  socket.write('GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n');
  const answer = await readUntil(socket, /\r\n\r\n[\s\S]*Bad Request/);
  assert.match(
    answer,
    /^HTTP\/1\.1 400 Bad Request\r\nContent-Type: text\/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request/,
  );
});

test('https: new TLS connections are paced by default (their gauge on /metrics), and not at all with handshakesPerSecond 0', async (t) => {
  const upstream = await startFakeApiserver(t);
  for (const [handshakesPerSecond, paced] of [
    [undefined, true],
    [0, false],
  ] as const) {
    const client = newUpstreamClient({
      server: new URL(upstream),
      tls: { rejectUnauthorized: true },
      authorization: () => Promise.resolve('Bearer proxy-token'),
      source: 'test',
    });
    const metrics = newProxyMetrics();
    const app = newProxyServer({ client, metrics, tls: { cert: made.cert, key: made.key, handshakesPerSecond } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    t.after(async () => {
      await app.close();
      await client.close();
    });
    const port = (app.server.address() as AddressInfo).port;
    assert.equal((await get(port, '/api', made.ca)).statusCode, 200, 'served either way');
    assert.equal(
      (await metrics.registry.metrics()).includes('kube_cache_proxy_tls_handshakes_waiting 0'),
      paced,
      String(handshakesPerSecond),
    );
  }
});
