/**
 * Per-flow limits through the server (app.ts, upgrade.ts), against a fake apiserver written here
 * that holds each request until the test answers it: in sidecar mode a connection is the flow
 * (requests pipelined on one connection are limited, another connection is not); in shared mode
 * a user at an address, upgrades holding a request seat for their whole life; past a limit, the
 * apiserver's 429 (plain text, Retry-After), byte for byte.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import type { Identified, SharedAccess } from '../../../../src/auth/shared-access.ts';
import { newProxyServer } from '../../../../src/server/http/app.ts';
import { MAX_IDLE_CONNECTIONS_PER_FLOW } from '../../../../src/server/http/idle-connections.ts';
import { newFlowLimits } from '../../../../src/server/pass-through/flow-limits.ts';
import type { FlowLimitSettings } from '../../../../src/server/pass-through/flow-limits.ts';
import type { Fairness } from '../../../../src/server/pass-through/shared-gate.ts';
import { newAnonymousRefusalLimits } from '../../../../src/server/pass-through/anonymous-refusals.ts';
import { closeUpgradedConnections } from '../../../../src/server/pass-through/upgrade.ts';
import { newUpstreamClient } from '../../../../src/upstream/client.ts';
import { eventually } from '../../../helpers/eventually.ts';

/** The apiserver's APF rejection, as kube-apiserver v1.37.2 writes it (Go's http.Error), less its Date and PF headers. */
const TOO_MANY = [
  'HTTP/1.1 429 Too Many Requests',
  'cache-control: no-cache, private',
  'content-type: text/plain; charset=utf-8',
  'retry-after: 1',
  'x-content-type-options: nosniff',
  'content-length: 43',
];
const TOO_MANY_BODY = 'Too many requests, please try again later.\n';

interface FakeApiserver {
  readonly url: string;
  /** Requests held, in arrival order: answer() ends each with 200. */
  readonly held: ServerResponse[];
  answerAll(): void;
  readonly upgrades: Duplex[];
}

async function startFakeApiserver(t: TestContext): Promise<FakeApiserver> {
  const held: ServerResponse[] = [];
  const upgrades: Duplex[] = [];
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
    held.push(res);
  });
  server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => undefined);
    upgrades.push(socket);
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n');
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of upgrades) socket.destroy();
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  );
  return {
    url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    held,
    upgrades,
    answerAll() {
      for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 }).end('ok');
    },
  };
}

async function startProxy(t: TestContext, upstream: string, fairness: Fairness, access?: SharedAccess): Promise<number> {
  const client = newUpstreamClient({
    server: new URL(upstream),
    tls: { rejectUnauthorized: true },
    authorization: () => Promise.resolve('Bearer proxy'),
    source: 'test',
  });
  const app = newProxyServer({ client, fairness, access });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.after(async () => {
    closeUpgradedConnections(app.server);
    app.server.closeAllConnections();
    await app.close();
    await client.close();
  });
  return (app.server.address() as AddressInfo).port;
}

function limits(settings: Partial<FlowLimitSettings>): Fairness {
  return { flows: newFlowLimits({ maxRequestsInflight: 0, maxWatches: 0, maxReviewsInflight: 0, ...settings }) };
}

/** A raw connection and everything it has received so far. */
async function open(t: TestContext, port: number): Promise<{ socket: Socket; received: () => string }> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  t.after(() => socket.destroy());
  await once(socket, 'connect');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  return { socket, received: () => Buffer.concat(chunks).toString('latin1') };
}

function get(path: string, headers = ''): string {
  return `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}\r\n`;
}

/** The responses in `text`, each as its status line, lower-cased header lines (no Date) and body. */
function responses(text: string): { head: string[]; body: string }[] {
  const out: { head: string[]; body: string }[] = [];
  let rest = text;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const [status = '', ...fields] = rest.slice(0, end).split('\r\n');
    const head = [status, ...fields.map((f) => f.replace(/^([^:]+):/, (name) => name.toLowerCase()))].filter(
      (line) => !/^(date|connection|keep-alive):/.test(line),
    );
    const length = Number(/^content-length: (\d+)$/m.exec(head.join('\n'))?.[1] ?? 0);
    out.push({ head, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}

test('fairness, sidecar mode: requests pipelined on one connection are limited; another connection is a flow of its own', async (t) => {
  const api = await startFakeApiserver(t);
  const fairness = limits({ maxRequestsInflight: 2 });
  const port = await startProxy(t, api.url, fairness);
  const first = await open(t, port);
  const path = '/api/v1/namespaces/default/configmaps/a';
  first.socket.write(get(path) + get(path) + get(path));
  await eventually(
    'two requests upstream and the third refused',
    () => api.held.length === 2 && fairness.flows.rejected()['requests-in-flight'] === 1,
  );
  const second = await open(t, port);
  second.socket.write(get(path));
  await eventually('the other connection served', () => api.held.length === 3);
  api.answerAll();
  await eventually('three answers on the first connection', () => responses(first.received()).length === 3);
  const [a, b, c] = responses(first.received());
  assert.equal(a?.head[0], 'HTTP/1.1 200 OK');
  assert.equal(b?.head[0], 'HTTP/1.1 200 OK');
  assert.deepEqual(c?.head.sort(), [...TOO_MANY].sort());
  assert.equal(c.body, TOO_MANY_BODY);
  await eventually('the second connection answered', () => responses(second.received())[0]?.head[0] === 'HTTP/1.1 200 OK');
  assert.equal(fairness.flows.flows(), 0, 'every seat given back');
});

test('fairness, sidecar mode: watches pipelined on one connection are limited apart from requests; the 429 closes the connection', async (t) => {
  const api = await startFakeApiserver(t);
  const fairness = limits({ maxWatches: 1, maxRequestsInflight: 1 });
  const port = await startProxy(t, api.url, fairness);
  const conn = await open(t, port);
  const closed = once(conn.socket, 'close');
  const watch = '/api/v1/namespaces/default/configmaps?watch=1';
  conn.socket.write(get(watch) + get(watch) + get('/api/v1/namespaces/default/configmaps/a'));
  await eventually(
    'one watch and one request upstream, the second watch refused',
    () => api.held.length === 2 && fairness.flows.rejected().watches === 1,
  );
  assert.deepEqual(fairness.flows.held(), { request: 1, watch: 1, review: 0 });
  api.answerAll();
  // A refused client's connection is not kept: what was pipelined behind the 429 goes with it.
  await closed;
  assert.deepEqual(
    responses(conn.received()).map((r) => r.head[0]),
    ['HTTP/1.1 200 OK', 'HTTP/1.1 429 Too Many Requests'],
  );
  assert.match(conn.received(), /\r\nConnection: close\r\n/);
  await eventually('every seat given back', () => fairness.flows.flows() === 0);
});

/** Shared mode's identification, faked: the bearer token is the user name, no review needed. */
const access: SharedAccess = {
  reviews: () => ({ tokenReviews: 0, subjectAccessReviews: 0 }),
  needsTokenReview: () => false,
  identify(req): Promise<Identified> {
    const username = req.headers.authorization?.slice('Bearer '.length) ?? '';
    return Promise.resolve({
      kind: 'user',
      user: { username, uid: '', groups: ['system:authenticated'], extra: {} },
      as: { kind: 'bearer', authorization: `Bearer ${username}` },
    });
  },
  authorizeRead: () => Promise.resolve({ kind: 'allowed' }),
};

/** `access`, with a request without credentials anonymous: the apiserver's to decide. */
const anonymousOrUser: SharedAccess = {
  ...access,
  identify: (req) =>
    req.headers.authorization === undefined
      ? Promise.resolve({ kind: 'forward', why: 'anonymous', as: { kind: 'anonymous' } })
      : access.identify(req),
};

function upgradeRequest(user: string): string {
  return `POST /api/v1/namespaces/x/pods/y/exec HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${user}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n`;
}

test('fairness, shared mode: an upgrade holds a request seat of its user for its whole life; past the limit, the 429 and the close', async (t) => {
  const api = await startFakeApiserver(t);
  const fairness = limits({ maxRequestsInflight: 1 });
  const port = await startProxy(t, api.url, fairness, access);
  const exec = await open(t, port);
  exec.socket.write(upgradeRequest('alice'));
  await eventually('the session switched', () => exec.received().startsWith('HTTP/1.1 101'));
  // alice's GET on another connection: her one seat is the session's.
  const refused = await open(t, port);
  refused.socket.write(get('/api/v1/namespaces/x/configmaps/a', 'Authorization: Bearer alice\r\n'));
  await eventually('alice refused', () => responses(refused.received()).length === 1);
  assert.equal(responses(refused.received())[0]?.head[0], 'HTTP/1.1 429 Too Many Requests');
  // A second session of hers: refused on the raw connection, which then closes.
  const again = await open(t, port);
  const closed = once(again.socket, 'close');
  again.socket.write(upgradeRequest('alice'));
  await closed;
  const [answer] = responses(again.received());
  assert.equal(answer?.head[0], 'HTTP/1.1 429 Too Many Requests');
  assert.equal(answer.body, TOO_MANY_BODY);
  assert.ok(answer.head.includes('retry-after: 1'));
  // bob is a flow of his own.
  const bob = await open(t, port);
  bob.socket.write(upgradeRequest('bob'));
  await eventually("bob's session switched", () => bob.received().startsWith('HTTP/1.1 101'));
  assert.equal(api.upgrades.length, 2, 'the refused session never reached the apiserver');
  // The session's end gives alice her seat back.
  exec.socket.destroy();
  await eventually("alice's seat free", () => fairness.flows.held().request === 1);
  const after = await open(t, port);
  after.socket.write(get('/api/v1/namespaces/x/configmaps/a', 'Authorization: Bearer alice\r\n'));
  await eventually('alice served', () => api.held.length === 1);
  api.answerAll();
});

test('fairness, shared mode: a flow’s idle keep-alive connections past its bound are let go; the bound’s own stay open for its next requests', async (t) => {
  const api = await startFakeApiserver(t);
  const port = await startProxy(t, api.url, limits({}), access);
  const extra = 2;
  const path = '/api/v1/namespaces/default/configmaps/a';
  const conns = await Promise.all(Array.from({ length: MAX_IDLE_CONNECTIONS_PER_FLOW + extra }, () => open(t, port)));
  // Another identity at the same address, answered last: a flow of its own, not shortened.
  const other = await open(t, port);
  const closed = new Set<Socket>();
  for (const { socket } of [...conns, other]) socket.once('close', () => closed.add(socket));
  for (const { socket } of conns) socket.write(get(path, 'Authorization: Bearer burst\r\n'));
  await eventually('every request upstream', () => api.held.length === conns.length);
  other.socket.write(get(path, 'Authorization: Bearer other\r\n'));
  await eventually('the other request upstream', () => api.held.length === conns.length + 1);
  api.answerAll();
  await eventually('every answer', () => conns.every((c) => responses(c.received()).length === 1));
  await eventually('the connections past the bound closed', () => closed.size === extra);
  // The others are kept: each carries a second request.
  assert.ok(!closed.has(other.socket), 'the other flow’s connection is kept');
  const kept = [...conns, other].filter((c) => !closed.has(c.socket));
  for (const { socket } of kept) socket.write(get(path, `Authorization: Bearer ${socket === other.socket ? 'other' : 'burst'}\r\n`));
  await eventually('every second request upstream', () => api.held.length === kept.length);
  api.answerAll();
  await eventually('every second answer', () => kept.every((c) => responses(c.received()).length === 2));
  assert.equal(closed.size, extra);
});

test('fairness, shared mode: anonymous requests the apiserver refuses spend their address’s bucket; its answers below 400 do not; past it, the 429 and nothing upstream', async (t) => {
  const api = await startFakeApiserver(t);
  const anonymousRefusals = newAnonymousRefusalLimits({ qpsPerAddress: 0.5, burstPerAddress: 2 });
  const port = await startProxy(t, api.url, { ...limits({}), anonymousRefusals }, anonymousOrUser);
  /** One request on a connection of its own, answered by the apiserver with `code` (undefined: not sent upstream). */
  const ask = async (headers: string, code: number | undefined): Promise<string> => {
    const client = await open(t, port);
    client.socket.write(get('/api/v1/junk', headers));
    if (code !== undefined) {
      await eventually('the request upstream', () => api.held.length === 1);
      api.held.splice(0)[0]?.writeHead(code, { 'content-length': 0 }).end();
    }
    await eventually('the answer', () => responses(client.received()).length === 1);
    return responses(client.received())[0]?.head[0] ?? '';
  };
  for (let i = 0; i < 3; i++) assert.equal(await ask('', 200), 'HTTP/1.1 200 OK', 'answers below 400 give their token back');
  assert.equal(await ask('', 403), 'HTTP/1.1 403 Forbidden');
  assert.equal(await ask('', 404), 'HTTP/1.1 404 Not Found');
  const refused = await open(t, port);
  refused.socket.write(get('/api/v1/junk'));
  await eventually('the 429', () => responses(refused.received()).length === 1);
  const [answer] = responses(refused.received());
  assert.equal(answer?.head[0], 'HTTP/1.1 429 Too Many Requests');
  assert.ok(answer.head.includes('retry-after: 2'), answer.head.join('\n'));
  assert.equal(api.held.length, 0, 'nothing sent upstream');
  assert.equal(anonymousRefusals.rejected(), 1);
  assert.equal(
    await ask('Authorization: Bearer alice\r\n', 403),
    'HTTP/1.1 403 Forbidden',
    'a client with credentials meets no such limit',
  );
});
