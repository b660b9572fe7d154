/**
 * The upstream client keeps an idle connection to the apiserver for UPSTREAM_IDLE_MS (50 s): a request
 * after a pause of a few seconds (undici’s own default keeps one 4 s, closed within a few more) reuses it, where a new one
 * would cost a TLS handshake, here and at the apiserver.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { newUpstreamClient } from '../../../src/upstream/client.ts';

/** Past undici’s default keep-alive (4 s, its timers checked every second or so): the pause the option is about. */
const PAUSE_MS = 7_000;

test('upstream client: a request after a pause past undici’s 4 s default reuses the idle connection', { timeout: 30_000 }, async () => {
  const server = createServer((_req, res) => {
    res.end('{}');
  });
  // As the apiserver's: no Keep-Alive header to hint a timeout (Go's server sends none; Node's
  // sends one unless its own idle timeout is off), and no close of an idle connection this soon.
  server.keepAliveTimeout = 0;
  let connections = 0;
  server.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = newUpstreamClient({
    server: new URL(`http://127.0.0.1:${String(port)}`),
    tls: { rejectUnauthorized: true },
    authorization: () => Promise.resolve(undefined),
    source: 'test',
  });
  try {
    assert.equal((await client.request({ method: 'GET', path: '/api' })).statusCode, 200);
    await sleep(PAUSE_MS);
    assert.equal((await client.request({ method: 'GET', path: '/api' })).statusCode, 200);
    assert.equal(connections, 1, 'one connection for both requests');
  } finally {
    await client.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
