import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, createServer as createNetServer } from 'node:net';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { TOO_MANY_REQUESTS_BODY, holdUnread, writeTooManyRequests } from '../../../../src/server/pass-through/too-many-requests.ts';

const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;

/** `server` listening on loopback, a client connection to it, and what the client has received so far. */
async function connected(t: TestContext, server: Server): Promise<{ socket: Socket; received: () => string }> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  t.after(() => socket.destroy());
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString();
  });
  return { socket, received: () => received };
}

test('writeTooManyRequests: the 429 keeps its connection, and nothing more is read from it until Retry-After', async (t) => {
  // The first request is refused with Retry-After 1; the next, sent on the same connection at
  // once, is served.
  const seen: { path: string; at: number; bytesRead: number }[] = [];
  let refusedAt = 0;
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', at: performance.now(), bytesRead: req.socket.bytesRead });
    if (req.url === '/refused') {
      refusedAt = performance.now();
      writeTooManyRequests(res, 1, 'hold-unread');
      return;
    }
    res.end('ok');
  });
  const { socket, received } = await connected(t, server);
  socket.write(get('/refused'));
  while (!received().includes(TOO_MANY_REQUESTS_BODY.toString())) await once(socket, 'data');
  assert.match(received(), /^HTTP\/1\.1 429 Too Many Requests\r\n/);
  assert.match(received(), /\r\nRetry-After: 1\r\n/i);
  assert.doesNotMatch(received(), /\r\nConnection: close\r\n/i, 'the connection is kept, as the apiserver keeps it');
  socket.write(get('/next'));
  while (!received().includes('ok')) await once(socket, 'data');
  assert.deepEqual(
    seen.map((s) => s.path),
    ['/refused', '/next'],
  );
  const [first, next] = seen;
  assert.ok(first !== undefined && next !== undefined);
  // Held by a timer of 1 s: the next request was not read before it (Node's timers never fire early).
  assert.ok(next.at - refusedAt >= 999, `the next request read ${String(Math.round(next.at - refusedAt))} ms after the 429`);
  assert.ok(next.bytesRead > first.bytesRead, 'read only after the hold');
});

test('writeTooManyRequests: a hold longer than the server keeps idle connections still ends in the next request read, not in the connection closed', async (t) => {
  const server = createServer({ keepAliveTimeout: 100, keepAliveTimeoutBuffer: 0 }, (req, res) => {
    if (req.url === '/refused') {
      writeTooManyRequests(res, 1, 'hold-unread');
      return;
    }
    res.end('ok');
  });
  const { socket, received } = await connected(t, server);
  const closed = once(socket, 'close');
  socket.write(get('/refused'));
  while (!received().includes(TOO_MANY_REQUESTS_BODY.toString())) await once(socket, 'data');
  socket.write(get('/next'));
  // The server's keep-alive timeout is back once the hold is over: the idle connection is closed,
  // after the request sent during the hold was answered.
  await closed;
  assert.match(received(), /\r\n\r\nok$/, 'the request sent during the hold was answered before the close');
});

test('writeTooManyRequests: a connection closed during its hold is let go when the hold ends', async (t) => {
  const server = createServer((_req, res) => {
    writeTooManyRequests(res, 1, 'hold-unread');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  socket.write(get('/refused'));
  await once(socket, 'data');
  const connections = (): Promise<number> =>
    new Promise((resolve) => {
      server.getConnections((_e, n) => {
        resolve(n);
      });
    });
  assert.equal(await connections(), 1);
  socket.end();
  // The held socket reads nothing, not even its end: that is seen when reading resumes.
  while ((await connections()) > 0) await new Promise((resolve) => setImmediate(resolve));
});

test('holdUnread: holds one after another on a connection leave no close listener behind', async (t) => {
  const server = createNetServer();
  const accepted = new Promise<Socket>((resolve) => {
    server.once('connection', resolve);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
  t.after(() => client.destroy());
  const socket = await accepted;
  const listeners = socket.listenerCount('close');
  for (let i = 0; i < 20; i++) {
    holdUnread(socket, 5);
    await sleep(15);
  }
  assert.equal(socket.listenerCount('close'), listeners);
  // The connection still reads once its last hold has ended.
  client.write('after the holds');
  const [chunk] = (await once(socket, 'data')) as [Buffer];
  assert.equal(chunk.toString(), 'after the holds');
});

test('writeTooManyRequests: a held connection does not keep its refused request (a head of up to 1 MiB) for the hold', async (t) => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  let refused: WeakRef<object> | undefined;
  const server = createServer((req, res) => {
    refused = new WeakRef(req);
    writeTooManyRequests(res, 60, 'hold-unread');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  t.after(() => socket.destroy());
  socket.write(get('/refused'));
  await once(socket, 'data');
  // The hold (60 s) has begun; let the response's own listeners run, then collect.
  await sleep(50);
  gc();
  await sleep(0);
  gc();
  assert.ok(refused !== undefined);
  assert.equal(refused.deref(), undefined, 'the refused request was collected during the hold');
});
