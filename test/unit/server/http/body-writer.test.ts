/**
 * A cached body written over TLS (body-writer.ts): the connection's unsent bytes are its own
 * encrypted copy, so the writer keeps at most a piece ahead of what the connection has sent. On
 * a real node:https server: a client that stops reading leaves the writer waiting with about one
 * piece unsent, not the body; once it reads again, the whole body arrives, byte for byte.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { writeBody } from '../../../../src/server/http/body-writer.ts';
import { newWriteTurns } from '../../../../src/server/http/write-turns.ts';
import { whole } from '../../../../src/server/serving/cached-response.ts';
import { LOOPBACK_NAMES, generateServingCertificate } from '../../../../src/server/tls/serving-certificate.ts';
import { eventually } from '../../../helpers/eventually.ts';

const PIECE = 64 * 1024;

test('body writer: over TLS a client that stops reading holds about one piece of a 12 MiB body unsent in the proxy, and then gets it whole', async (t) => {
  const pieces = Array.from({ length: 200 }, (_, i) => Buffer.alloc(PIECE, i % 251));
  const expected = Buffer.concat(pieces);
  const made = generateServingCertificate(LOOPBACK_NAMES);
  let mostUnsent = 0;
  let response: ServerResponse | undefined;
  let piecesWritten = 0;
  const done = Promise.withResolvers<boolean>();
  const server = createServer({ cert: made.cert, key: made.key }, (_req, res) => {
    response = res;
    const write = res.write.bind(res) as (chunk: Buffer) => boolean;
    res.write = ((chunk: Buffer) => {
      piecesWritten++;
      const ok = write(chunk);
      mostUnsent = Math.max(mostUnsent, res.writableLength);
      return ok;
    }) as typeof res.write;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': expected.length });
    void writeBody(res, { ...whole(200, pieces), written: done.resolve }, newWriteTurns());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const req = request({ host: '127.0.0.1', port, path: '/', ca: made.ca });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  res.pause();
  // The client reads nothing: the kernel's buffers fill, then the writer waits for a drain.
  await eventually(
    'the writer waits for the connection to drain, or has written every piece',
    () => piecesWritten === pieces.length || (response !== undefined && response.listenerCount('drain') > 0),
  );
  assert.ok(piecesWritten < pieces.length, `the writer stopped at piece ${String(piecesWritten)} of ${String(pieces.length)}`);
  assert.ok(
    mostUnsent <= 2 * PIECE,
    `at most two pieces unsent in the proxy at once (${String(mostUnsent)} bytes): the rest waits in the shared body`,
  );
  const received: Buffer[] = [];
  res.on('data', (chunk: Buffer) => received.push(chunk));
  res.resume();
  await once(res, 'end');
  assert.equal(await done.promise, true, 'the write completed');
  assert.ok(Buffer.concat(received).equals(expected), 'the body arrived whole, byte for byte');
  assert.ok(mostUnsent <= 2 * PIECE, `never more than two pieces unsent (${String(mostUnsent)} bytes)`);
});

test('body writer: a chunked body (no Content-Length, a gzipped answer) arrives whole, its last chunk after every piece', async (t) => {
  const pieces = [Buffer.from('first'), ...Array.from({ length: 40 }, (_, i) => Buffer.alloc(1000 + i, i))];
  const expected = Buffer.concat(pieces);
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    void writeBody(res, { ...whole(200, pieces), chunked: true }, newWriteTurns());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const req = httpRequest({ host: '127.0.0.1', port, path: '/' });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  assert.equal(res.headers['transfer-encoding'], 'chunked');
  const received: Buffer[] = [];
  res.on('data', (chunk: Buffer) => received.push(chunk));
  await once(res, 'end');
  assert.ok(
    Buffer.concat(received).equals(expected),
    `the body arrived whole (${String(Buffer.concat(received).length)} of ${String(expected.length)} bytes)`,
  );
});
