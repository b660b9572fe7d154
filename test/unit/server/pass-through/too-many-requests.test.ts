import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { test } from 'node:test';
import { TOO_MANY_REQUESTS_BODY, writeTooManyRequests } from '../../../../src/server/pass-through/too-many-requests.ts';

const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;

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
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  t.after(() => socket.destroy());
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString();
  });
  socket.write(get('/refused'));
  while (!received.includes(TOO_MANY_REQUESTS_BODY.toString())) await once(socket, 'data');
  assert.match(received, /^HTTP\/1\.1 429 Too Many Requests\r\n/);
  assert.match(received, /\r\nRetry-After: 1\r\n/i);
  assert.doesNotMatch(received, /\r\nConnection: close\r\n/i, 'the connection is kept, as the apiserver keeps it');
  socket.write(get('/next'));
  while (!received.includes('ok')) await once(socket, 'data');
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
