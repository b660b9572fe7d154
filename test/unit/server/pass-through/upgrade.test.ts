/**
 * HTTP Upgrade through the proxy (exec, attach, port-forward) against a fake apiserver written
 * here: a node:http server that answers an Upgrade with 101 and echoes bytes, or refuses it.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { newProxyServer } from '../../../../src/server/http/app.ts';
import { defaultRequestFilterOptions } from '../../../../src/request/request-filter.ts';
import type { RequestFilterOptions } from '../../../../src/request/request-filter.ts';
import { closeUpgradedConnections } from '../../../../src/server/pass-through/upgrade.ts';
import { newUpstreamClient } from '../../../../src/upstream/client.ts';

const PROXY_TOKEN = 'Bearer proxy-token';

/** The apiserver's refusal of exec on a pod that has no node (read off kube-apiserver). */
const REFUSAL =
  '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pod p does not have a host assigned","reason":"BadRequest","code":400}\n';

/** Large enough to be still on its way through the proxy when the apiserver's close reaches it. */
const LAST_WORDS = Buffer.alloc(8 << 20, 'z');

interface FakeApiserver {
  readonly url: string;
  /** Every Upgrade request it received, in order. */
  readonly requests: { readonly url: string; readonly headers: IncomingHttpHeaders }[];
  /** Its side of each connection it switched, in order. */
  readonly sessions: Duplex[];
  /** Resolves with the next session it switches. */
  nextSession(): Promise<Duplex>;
}

/**
 * Paths under /refuse are answered 400 with REFUSAL (/refuse/chunked without a Content-Length);
 * everything else is switched with 101, `welcome` sent right behind the headers in the same
 * write, then every byte echoed back; under /last-words, the first byte is answered with
 * LAST_WORDS and the close instead.
 */
async function startFakeApiserver(t: TestContext): Promise<FakeApiserver> {
  const requests: FakeApiserver['requests'][number][] = [];
  const sessions: Duplex[] = [];
  const waiting: ((socket: Duplex) => void)[] = [];
  const server = createServer();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    requests.push({ url: req.url ?? '', headers: req.headers });
    socket.on('error', () => undefined);
    if (req.url?.startsWith('/refuse/chunked') === true) {
      const size = Buffer.byteLength(REFUSAL).toString(16);
      socket.end(
        `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${size}\r\n${REFUSAL}\r\n0\r\n\r\n`,
      );
      return;
    }
    if (req.url?.startsWith('/refuse') === true) {
      socket.end(
        `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(REFUSAL)}\r\n\r\n${REFUSAL}`,
      );
      return;
    }
    sessions.push(socket);
    waiting.shift()?.(socket);
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${req.headers.upgrade ?? ''}\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\nwelcome`,
    );
    if (req.url?.startsWith('/last-words') === true) {
      // exec's way of ending: a last frame (the exit status), then the close.
      socket.once('data', () => socket.end(LAST_WORDS));
      return;
    }
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => closeServer(server, sessions));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    sessions,
    nextSession: () => new Promise((resolve) => waiting.push(resolve)),
  };
}

function closeServer(server: Server, sockets: readonly Duplex[]): Promise<void> {
  for (const socket of sockets) socket.destroy();
  return new Promise((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
}

interface Proxy {
  readonly port: number;
  readonly server: Server;
  /** Fastify's close(), then the upstream client's; upgraded connections are left to the caller. */
  close(): Promise<void>;
}

async function startProxy(t: TestContext, upstream: string, filter?: RequestFilterOptions): Promise<Proxy> {
  const client = newUpstreamClient({
    server: new URL(upstream),
    tls: { rejectUnauthorized: true },
    authorization: () => Promise.resolve(PROXY_TOKEN),
    source: 'test',
  });
  const app = newProxyServer({ client, filter });
  await app.listen({ host: '127.0.0.1', port: 0 });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= app.close().then(() => client.close());
    return closing;
  };
  t.after(async () => {
    closeUpgradedConnections(app.server);
    await close();
  });
  return { port: (app.server.address() as AddressInfo).port, server: app.server, close };
}

type UpgradeResult =
  | { readonly kind: 'upgraded'; readonly headers: IncomingHttpHeaders; readonly socket: Socket; readonly head: Buffer }
  | { readonly kind: 'response'; readonly statusCode: number; readonly headers: IncomingHttpHeaders; readonly body: string };

/** An Upgrade request as kubectl sends one (POST for exec, SPDY/3.1 unless told). */
function upgrade(port: number, path: string, headers: Record<string, string> = {}): Promise<UpgradeResult> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path,
      method: 'POST',
      agent: false,
      headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': 'v4.channel.k8s.io', ...headers },
    });
    req.on('error', reject);
    req.on('upgrade', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      resolve({ kind: 'upgraded', headers: res.headers, socket, head });
    });
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        resolve({ kind: 'response', statusCode: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() });
      });
    });
    req.end();
  });
}

function upgraded(result: UpgradeResult): Extract<UpgradeResult, { kind: 'upgraded' }> {
  if (result.kind !== 'upgraded') assert.fail(`not switched: ${result.statusCode} ${result.body}`);
  return result;
}

function answered(result: UpgradeResult): Extract<UpgradeResult, { kind: 'response' }> {
  if (result.kind !== 'response') assert.fail('the connection was switched');
  return result;
}

/** Resolves when the socket has closed, by an error or not (events.once would reject on 'error'). */
function closed(socket: Duplex): Promise<void> {
  return new Promise((resolve) =>
    socket.once('close', () => {
      resolve();
    }),
  );
}

/** Reads until `expected` has arrived (after the bytes already in hand), then checks it came exactly. */
async function expectBytes(socket: Duplex, expected: string, already: Buffer = Buffer.alloc(0)): Promise<void> {
  let got = already;
  while (got.length < Buffer.byteLength(expected)) {
    const [chunk] = (await once(socket, 'data')) as [Buffer];
    got = Buffer.concat([got, chunk]);
  }
  assert.equal(got.toString(), expected);
}

test('upgrade: after the 101, bytes flow both ways, the first ones sent with the 101 included', { timeout: 10_000 }, async (t) => {
  const api = await startFakeApiserver(t);
  const proxy = await startProxy(t, api.url);
  const session = upgraded(await upgrade(proxy.port, '/api/v1/namespaces/x/pods/y/portforward?ports=80'));
  session.socket.on('error', () => undefined);
  assert.equal(session.headers['x-stream-protocol-version'], 'v4.channel.k8s.io', "the apiserver's 101 headers reach the client");
  assert.equal(session.headers.upgrade, 'SPDY/3.1');
  await expectBytes(session.socket, 'welcome', session.head);
  session.socket.write('ping');
  await expectBytes(session.socket, 'ping');
  const big = Buffer.alloc(1 << 20, 'x');
  session.socket.write(big);
  await expectBytes(session.socket, big.toString());
  assert.equal(api.requests[0]?.url, '/api/v1/namespaces/x/pods/y/portforward?ports=80');
  session.socket.end();
  await closed(session.socket);
});

test('upgrade: what the apiserver sends before it closes reaches the client in full, then the close', { timeout: 10_000 }, async (t) => {
  const api = await startFakeApiserver(t);
  const proxy = await startProxy(t, api.url);
  const session = upgraded(await upgrade(proxy.port, '/last-words/api/v1/namespaces/x/pods/y/exec'));
  const chunks: Buffer[] = [session.head];
  session.socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = once(session.socket, 'end');
  session.socket.write('bye');
  await ended;
  const got = Buffer.concat(chunks);
  assert.equal(got.length, 'welcome'.length + LAST_WORDS.length);
  assert.ok(got.subarray('welcome'.length).equals(LAST_WORDS));
  session.socket.end();
  await closed(session.socket);
});

test(
  "upgrade: the proxy's credentials replace the client's; Impersonate-* go on for the apiserver to judge; Upgrade is kept",
  { timeout: 10_000 },
  async (t) => {
    const api = await startFakeApiserver(t);
    const proxy = await startProxy(t, api.url);
    const session = upgraded(
      await upgrade(proxy.port, '/api/v1/namespaces/x/pods/y/exec?command=true', {
        authorization: 'Bearer client-token',
        'impersonate-user': 'system:admin',
        'impersonate-group': 'system:masters',
        upgrade: 'websocket',
        'sec-websocket-protocol': 'v5.channel.k8s.io',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'sec-websocket-version': '13',
      }),
    );
    session.socket.destroy();
    const seen = api.requests[0]?.headers ?? {};
    assert.equal(seen.authorization, PROXY_TOKEN);
    // The apiserver grants or refuses the impersonation to the proxy's identity (sidecar mode).
    assert.equal(seen['impersonate-user'], 'system:admin');
    assert.equal(seen['impersonate-group'], 'system:masters');
    assert.equal(seen.upgrade, 'websocket');
    assert.equal(seen.connection?.toLowerCase(), 'upgrade');
    assert.equal(seen['sec-websocket-protocol'], 'v5.channel.k8s.io');
    assert.equal(seen['sec-websocket-key'], 'dGhlIHNhbXBsZSBub25jZQ==');
  },
);

test(
  "upgrade: the apiserver's refusal arrives with its status and body, with or without a Content-Length",
  { timeout: 10_000 },
  async (t) => {
    const api = await startFakeApiserver(t);
    const proxy = await startProxy(t, api.url);
    for (const path of ['/refuse/exec', '/refuse/chunked/exec']) {
      const res = answered(await upgrade(proxy.port, path));
      assert.equal(res.statusCode, 400, path);
      assert.equal(res.body, REFUSAL, path);
      assert.equal(res.headers['content-type'], 'application/json', path);
      assert.equal(res.headers.connection, 'close', path);
    }
  },
);

test(
  'upgrade: the request filter rejects exec (403 "Forbidden\\n") before the apiserver, and lets portforward through',
  { timeout: 10_000 },
  async (t) => {
    const api = await startFakeApiserver(t);
    const proxy = await startProxy(t, api.url, defaultRequestFilterOptions());
    const exec = answered(await upgrade(proxy.port, '/api/v1/namespaces/x/pods/y/exec?command=sh&stdin=true'));
    assert.equal(exec.statusCode, 403);
    assert.equal(exec.body, 'Forbidden\n');
    assert.equal(exec.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(exec.headers['x-content-type-options'], 'nosniff');
    const attach = answered(await upgrade(proxy.port, '/api/v1/namespaces/x/pods/y/attach'));
    assert.equal(attach.statusCode, 403);
    const foreign = answered(await upgrade(proxy.port, '/api/v1/namespaces/x/pods/y/portforward', { host: 'evil.example:8001' }));
    assert.equal(foreign.statusCode, 403, 'a foreign Host is rejected (DNS rebinding)');
    assert.equal(api.requests.length, 0, 'no rejected request reached the apiserver');
    const forward = upgraded(await upgrade(proxy.port, '/api/v1/namespaces/x/pods/y/portforward?ports=80'));
    forward.socket.destroy();
    assert.equal(api.requests.length, 1);
  },
);

test('upgrade: an unreachable apiserver is a 503 Status', { timeout: 10_000 }, async (t) => {
  // A port nothing listens on: connections are refused.
  const proxy = await startProxy(t, 'http://127.0.0.1:1');
  const res = answered(await upgrade(proxy.port, '/api/v1/namespaces/x/pods/y/portforward'));
  assert.equal(res.statusCode, 503);
  assert.equal(res.headers['content-type'], 'application/json');
  const status = JSON.parse(res.body) as { kind: string; code: number; reason: string; message: string };
  assert.deepEqual([status.kind, status.code, status.reason], ['Status', 503, 'ServiceUnavailable']);
  assert.match(status.message, /^error trying to reach service: .*ECONNREFUSED/);
});

test('upgrade: a client that resets mid-stream ends its apiserver connection; the proxy serves on', { timeout: 10_000 }, async (t) => {
  const api = await startFakeApiserver(t);
  const proxy = await startProxy(t, api.url);
  const first = upgraded(await upgrade(proxy.port, '/api/v1/namespaces/x/pods/y/portforward'));
  await expectBytes(first.socket, 'welcome', first.head);
  const upstreamSide = api.sessions[0];
  assert.ok(upstreamSide !== undefined);
  const upstreamClosed = closed(upstreamSide);
  // Unread data in flight when the RST comes: the proxy's writes to the client fail.
  upstreamSide.write(Buffer.alloc(1 << 20, 'y'));
  first.socket.resetAndDestroy();
  await upstreamClosed;
  // An apiserver that resets is the same, the other way round.
  const second = upgraded(await upgrade(proxy.port, '/api/v1/namespaces/x/pods/y/portforward'));
  second.socket.on('error', () => undefined);
  const clientClosed = closed(second.socket);
  (api.sessions[1] as Socket).resetAndDestroy();
  await clientClosed;
  const third = upgraded(await upgrade(proxy.port, '/api/v1/namespaces/x/pods/y/portforward'));
  await expectBytes(third.socket, 'welcome', third.head);
  third.socket.destroy();
});

test(
  'upgrade: an upgraded session outlives the start of close(); closeUpgradedConnections ends it, both sides',
  { timeout: 10_000 },
  async (t) => {
    const api = await startFakeApiserver(t);
    const proxy = await startProxy(t, api.url);
    const session = upgraded(await upgrade(proxy.port, '/api/v1/namespaces/x/pods/y/portforward'));
    session.socket.on('error', () => undefined);
    await expectBytes(session.socket, 'welcome', session.head);
    const upstreamSide = api.sessions[0];
    assert.ok(upstreamSide !== undefined);
    let serverClosed = false;
    const closing = proxy.close().then(() => (serverClosed = true));
    // Like an in-flight request, the session goes on while the server closes…
    session.socket.write('still here');
    await expectBytes(session.socket, 'still here');
    assert.equal(serverClosed, false, 'the server waits for the upgraded connection');
    // …until the grace period is over.
    const ends = [closed(session.socket), closed(upstreamSide)];
    closeUpgradedConnections(proxy.server);
    await Promise.all(ends);
    await closing;
  },
);

test('upgrade: bytes the client sends behind its request reach the apiserver after the switch', { timeout: 10_000 }, async (t) => {
  const api = await startFakeApiserver(t);
  const proxy = await startProxy(t, api.url);
  // A raw client: request and first frame in one write, as a client that does not wait may send.
  const socket = connect(proxy.port, '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  const session = api.nextSession();
  socket.write(
    'GET /api/v1/namespaces/x/pods/y/portforward HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\nearly',
  );
  await session;
  let got = '';
  while (!got.endsWith('welcomeearly')) {
    const [chunk] = (await once(socket, 'data')) as [Buffer];
    got += chunk.toString();
  }
  assert.match(got, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
  socket.destroy();
});
