import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { newProxyServer } from '../../../src/server/http/app.ts';
import { goClientErrorResponse } from '../../../src/request/client-errors.ts';
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
  // Transfer-Encoding: two fields are Go's 501 (too many), whatever they say; one chunked with a
  // Content-Length is llhttp's refusal of the pair (400); on HTTP/1.0 a 400 (Go ignores the header).
  const post = (version: string, fields: string): Error & { code: string } =>
    parserError('HPE_INVALID_TRANSFER_ENCODING', Buffer.from(`POST /x HTTP/${version}\r\nHost: x\r\n${fields}\r\n0\r\n\r\n`));
  const notImplemented = `HTTP/1.1 501 Not Implemented${headers}Unsupported transfer encoding`;
  const badRequest = `HTTP/1.1 400 Bad Request${headers}400 Bad Request`;
  assert.equal(goClientErrorResponse(post('1.1', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n')), notImplemented);
  assert.equal(goClientErrorResponse(post('1.1', 'transfer-encoding: chunked\r\nTransfer-Encoding: gzip\r\n')), notImplemented);
  assert.equal(goClientErrorResponse(post('1.1', 'Transfer-Encoding: gzip, chunked\r\n')), notImplemented);
  assert.equal(goClientErrorResponse(post('1.1', 'Transfer-Encoding: chunked\r\nContent-Length: 4\r\n')), badRequest);
  assert.equal(goClientErrorResponse(post('1.0', 'Transfer-Encoding: gzip\r\n')), badRequest);
  // Go's order: two Hosts before the coding; below HTTP/1.1 the coding is ignored and the version judged.
  assert.equal(goClientErrorResponse(post('1.1', 'Host: y\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n')), badRequest);
  assert.equal(goClientErrorResponse(post('2.0', 'Transfer-Encoding: gzip, chunked\r\n')), notImplemented);
  const versionNotSupported = `HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version${headers}505 HTTP Version Not Supported: unsupported protocol version`;
  assert.equal(goClientErrorResponse(post('2.0', 'Transfer-Encoding: chunked\r\nContent-Length: 4\r\n')), versionNotSupported);
  assert.equal(goClientErrorResponse(post('2.0', 'Transfer-Encoding: chunked\r\nContent-Length: 4x\r\n')), badRequest);
  assert.equal(goClientErrorResponse(post('0.7', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n')), versionNotSupported);
  assert.equal(goClientErrorResponse(post('0.7', 'Transfer-Encoding: gzip\r\nContent-Length: x\r\n')), badRequest);
});

test("client errors: what Go's server refuses before any handler, in its words and order", async (t) => {
  const app = newProxyServer({ client: newFakeUpstream().client });
  t.after(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const statusLine = async (raw: string): Promise<string> => (await rawExchange(port, raw)).split('\r\n', 1)[0] ?? '';
  const host = 'Host: 127.0.0.1\r\n';
  // Every 1.x is served as HTTP/1.1 (llhttp alone would refuse 1.2 to 1.9); other majors are 505.
  for (const version of ['1.0', '1.2', '1.9']) {
    assert.equal(await statusLine(`GET /livez HTTP/${version}\r\n${host}Connection: close\r\n\r\n`), 'HTTP/1.1 200 OK', version);
  }
  for (const version of ['0.5', '2.0', '3.1']) {
    assert.equal(
      await statusLine(`GET /livez HTTP/${version}\r\n${host}\r\n`),
      'HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version',
      version,
    );
  }
  // Two Hosts before the version; a transfer coding before the version too.
  assert.equal(await statusLine(`GET /livez HTTP/2.0\r\n${host}${host}\r\n`), 'HTTP/1.1 400 Bad Request');
  assert.equal(await statusLine(`POST /livez HTTP/2.0\r\n${host}Transfer-Encoding: gzip\r\n\r\n`), 'HTTP/1.1 501 Not Implemented');
  // No Host: from HTTP/1.1 on, Go's 400 with its reason; on HTTP/1.0 none is needed.
  for (const version of ['1.1', '1.2']) {
    assert.equal(await statusLine(`GET /livez HTTP/${version}\r\n\r\n`), 'HTTP/1.1 400 Bad Request: missing required Host header', version);
  }
  assert.equal(await statusLine('GET /livez HTTP/1.0\r\n\r\n'), 'HTTP/1.1 200 OK');
  // HTTP/1.0 with a Transfer-Encoding: Go would read the body by Content-Length, llhttp by chunks.
  assert.equal(
    await statusLine(`POST /livez HTTP/1.0\r\n${host}Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`),
    'HTTP/1.1 400 Bad Request',
  );
  // An upgrade gets the same refusals (llhttp hands it over without a handler).
  assert.equal(
    await statusLine(`GET /x HTTP/3.0\r\n${host}Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n`),
    'HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version',
  );
  assert.equal(
    await statusLine('GET /x HTTP/1.2\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'),
    'HTTP/1.1 400 Bad Request: missing required Host header',
  );
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
