import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { newProxyServer } from '../../../src/server/app.ts';
import { goClientErrorResponse } from '../../../src/server/client-errors.ts';
import { newFakeUpstream } from '../../helpers/fake-upstream-client.ts';

function parserError(code: string, rawPacket?: Buffer): Error & { code: string; rawPacket?: Buffer } {
  return Object.assign(new Error(code), { code, ...(rawPacket === undefined ? {} : { rawPacket }) });
}

test("client errors: Go net/http's answers to malformed requests", () => {
  const headers = '\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n';
  assert.equal(goClientErrorResponse(parserError('HPE_INVALID_HEADER_TOKEN')), `HTTP/1.1 400 Bad Request${headers}400 Bad Request`);
  assert.equal(
    goClientErrorResponse(parserError('HPE_HEADER_OVERFLOW')),
    `HTTP/1.1 431 Request Header Fields Too Large${headers}431 Request Header Fields Too Large`,
  );
  const v99 = goClientErrorResponse(parserError('HPE_INVALID_VERSION', Buffer.from('GET / HTTP/9.9\r\nHost: x\r\n\r\n')));
  assert.equal(
    v99,
    `HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version${headers}505 HTTP Version Not Supported: unsupported protocol version`,
  );
  assert.equal(
    goClientErrorResponse(parserError('HPE_INVALID_VERSION', Buffer.from('GET / HTTP/x\r\n\r\n'))),
    `HTTP/1.1 400 Bad Request${headers}400 Bad Request`,
  );
  assert.equal(goClientErrorResponse(parserError('ECONNRESET')), undefined);
});

function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(bytes);
    });
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('end', () => {
      resolve(answer);
    });
    socket.on('error', reject);
  });
}

test('client errors: the server answers a bad request line as Go, and keeps serving', async (t) => {
  const app = newProxyServer({ client: newFakeUpstream().client });
  t.after(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const answer = await rawExchange(port, 'GET /livez HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n');
  assert.match(answer, /^HTTP\/1\.1 505 HTTP Version Not Supported: unsupported protocol version\r\n/);
  // A header section of 100 KB is within the apiserver's 1 MiB limit.
  const big = await rawExchange(
    port,
    `GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(100_000)}\r\nConnection: close\r\n\r\n`,
  );
  assert.match(big, /^HTTP\/1\.1 200 OK\r\n/);
});
