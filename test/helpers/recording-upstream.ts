/**
 * A recording forwarder between a proxy and the apiserver: plain HTTP on loopback in front, the
 * apiserver's TLS behind. Every request and Upgrade it receives is recorded (method, target and
 * raw header lines, as they arrived) and forwarded unchanged, its answer streamed back (watches
 * included); an Upgrade's connection is spliced both ways. What a proxy sends upstream is then
 * exactly what `requests` holds.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import type { UpstreamConfig } from '../../src/upstream/config.ts';

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  /** Name, value, name, value... as received (IncomingMessage.rawHeaders). */
  readonly rawHeaders: readonly string[];
  readonly upgrade: boolean;
}

export interface RecordingUpstream {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  readonly requests: readonly RecordedRequest[];
  close(): Promise<void>;
}

/** Connection-specific fields the forwarder's own connections set for themselves. */
const OWN_FIELDS = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding']);

function withoutOwnFields(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !OWN_FIELDS.has(name)));
}

/** Forwards to the apiserver of `target` (its server and CA; the credentials are whatever each request carries). */
export async function startRecordingUpstream(target: UpstreamConfig): Promise<RecordingUpstream> {
  const requests: RecordedRequest[] = [];
  const upstream = { host: target.server.hostname, port: Number(target.server.port), ca: target.tls.ca, servername: 'localhost' };
  const open = new Set<Duplex>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', rawHeaders: [...req.rawHeaders], upgrade: false });
    const forwarded = httpsRequest(
      { ...upstream, method: req.method, path: req.url, headers: withoutOwnFields(req.headers), agent: false },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, withoutOwnFields(answer.headers));
        res.flushHeaders();
        answer.pipe(res);
        res.on('close', () => answer.destroy());
      },
    );
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', rawHeaders: [...req.rawHeaders], upgrade: true });
    socket.on('error', () => undefined);
    const apiserver = tlsConnect(upstream, () => {
      let lines = `${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1\r\nHost: ${target.server.host}\r\n`;
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        if ((req.rawHeaders[i] ?? '').toLowerCase() !== 'host') lines += `${req.rawHeaders[i] ?? ''}: ${req.rawHeaders[i + 1] ?? ''}\r\n`;
      }
      apiserver.write(`${lines}\r\n`);
      if (head.length > 0) apiserver.write(head);
      socket.pipe(apiserver);
      apiserver.pipe(socket);
    });
    apiserver.on('error', () => socket.destroy());
    for (const side of [socket, apiserver]) {
      open.add(side);
      side.once('close', () => {
        open.delete(side);
        socket.destroy();
        apiserver.destroy();
      });
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${String(port)}`,
    requests,
    close: async () => {
      for (const side of open) side.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
