import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { newIdleConnections } from '../../../../src/server/http/idle-connections.ts';
import { eventually } from '../../../helpers/eventually.ts';

test('idle connections: past a flow’s bound, an idle keep-alive connection is let go within the short time; the bound’s own stay and are reused', async (t) => {
  const max = 3;
  const extra = 2;
  const idle = newIdleConnections({ maxPerFlow: max, excessIdleMs: 200 });
  /** Requests wait here until all have arrived: one connection each. */
  let arrived = 0;
  let release: () => void = () => undefined;
  let all = new Promise<void>((resolve) => (release = resolve));
  const server = createServer((req, res) => {
    idle.track(req, res, req.socket.remoteAddress ?? '');
    arrived++;
    void all.then(() => res.end('ok'));
  });
  // The server's own keep-alive timeout: far past the test.
  server.keepAliveTimeout = 60_000;
  let opened = 0;
  let closed = 0;
  server.on('connection', (socket) => {
    opened++;
    socket.once('close', () => closed++);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const url = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}/`;
  const agent = new Agent({ connections: max + extra, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 });
  t.after(() => agent.close());
  const burst = async (n: number): Promise<void> => {
    arrived = 0;
    all = new Promise<void>((resolve) => (release = resolve));
    const answers = Array.from({ length: n }, () => request(url, { dispatcher: agent }).then((r) => r.body.text()));
    await eventually(`${String(n)} requests in flight`, () => arrived === n);
    release();
    assert.deepEqual(
      await Promise.all(answers),
      Array.from({ length: n }, () => 'ok'),
    );
  };
  await burst(max + extra);
  assert.equal(opened, max + extra, 'a connection each');
  await eventually('the connections past the bound let go', () => closed === extra);
  assert.equal(idle.idle(), max);
  assert.equal(idle.shortened(), extra);
  // The bound's own connections are still open: a new burst of that size reuses them.
  await burst(max);
  assert.equal(opened, max + extra, 'no new connection');
  assert.equal(closed, extra);
});
