/**
 * The Node HTTP(S) server under Fastify: what a connection and a request's head go through before
 * any route sees them, as Go's net/http server and the apiserver's outermost filters take them.
 *
 * - Go's header limit (1 MiB) and its refusals of malformed requests (request/client-errors.ts),
 *   in Go's words;
 * - a large head charged to its source address before anything reads it, and held until its
 *   answer ends (pass-through/request-head-limits.ts);
 * - shared mode's idle keep-alive connections bounded per flow (idle-connections.ts);
 * - over TLS: a client certificate asked for, never required; new connections handed to the
 *   handshake at a paced rate (tls-handshakes.ts);
 * - over TLS, HTTP/2 and HTTP/1.1 offered by ALPN, as the apiserver offers them (h2 first): a
 *   client's every request and watch on one connection (http2-sessions.ts), each stream read and
 *   answered as Go's h2 server hands it to a handler (http2-streams.ts).
 *
 * A TLS server allowing HTTP/1.1 serves it with node:http's own connection handling: the same
 * events (upgrade for exec, attach and port-forward, which h2 has no Upgrade for; checkContinue;
 * clientError) and limits as a plain server's. Its type is node:http's Server here: Fastify and
 * the proxy use only what both share (listen, close, address, those events, setSecureContext).
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createSecureServer } from 'node:http2';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { SecureContextOptions } from 'node:tls';
import { MAX_HEADER_BYTES, goRequestRefusal, writeGoRefusal } from '../../request/client-errors.ts';
import { parseEveryHttpVersion } from '../../request/http-versions.ts';
import type { Seat } from '../pass-through/flow-limits.ts';
import { NO_SEAT } from '../pass-through/flow-limits.ts';
import { requestHeadBytes } from '../pass-through/request-head-limits.ts';
import type { Fairness } from '../pass-through/shared-gate.ts';
import { sourceAddress } from '../pass-through/shared-gate.ts';
import { writeTooManyRequests } from '../pass-through/too-many-requests.ts';
import type { NodeTlsVersion } from '../tls/tls-settings.ts';
import { DEFAULT_HTTP2_MAX_STREAMS_PER_CONNECTION, http2ServerOptions, trackClientConnections } from './http2-sessions.ts';
import type { ClientConnections } from './http2-sessions.ts';
import { adaptHttp2Stream } from '../../request/http2-streams.ts';
import type { IdleConnections } from './idle-connections.ts';
import type { ProxyMetrics } from './metrics.ts';
import { DEFAULT_TLS_HANDSHAKES_PER_SECOND, paceTlsHandshakes, pacingForRate } from './tls-handshakes.ts';

/** A serving certificate (followed by its chain, if any) and its private key, PEM. */
export interface ServingTls {
  readonly cert: string;
  readonly key: string;
  /** CA certificates that client certificates are verified against (--client-ca-file); none: no client certificate is asked for. */
  readonly clientCa?: string | undefined;
  /** New TLS connections handed to the handshake a second, at most (tls-handshakes.ts); 0: no pacing; undefined: the default. */
  readonly handshakesPerSecond?: number | undefined;
  /** --tls-min-version, Node's name; undefined: TLS 1.2. */
  readonly minVersion?: NodeTlsVersion | undefined;
  /** --tls-cipher-suites as Node's `ciphers` string; undefined: Node's defaults. */
  readonly ciphers?: string | undefined;
  /** --http2-max-streams-per-connection; undefined or 0: the default (http2-sessions.ts). */
  readonly http2MaxStreamsPerConnection?: number | undefined;
}

/**
 * The TLS context options of a server serving `tls` (its certificate, key, client CA, version and
 * suites), as at start and as a reload (setSecureContext) gives them again.
 */
export function secureContextOptions(tls: ServingTls): SecureContextOptions {
  return {
    cert: tls.cert,
    key: tls.key,
    minVersion: tls.minVersion ?? 'TLSv1.2',
    ...(tls.ciphers === undefined ? {} : { ciphers: tls.ciphers }),
    ...(tls.clientCa === undefined ? {} : { ca: tls.clientCa }),
  };
}

/** Gives `seat` back once `res` is done: answered, or its connection gone (perhaps already). */
export function holdUntilClosed(res: ServerResponse, seat: Seat): void {
  if (seat === NO_SEAT) return;
  if (res.closed) seat.release();
  else
    res.once('close', () => {
      seat.release();
    });
}

export interface NodeServerOptions {
  /** Serve HTTPS with this certificate and key; none: plain HTTP. */
  readonly tls?: ServingTls | undefined;
  /** The limits on large request heads (fairness.requestHeads); none: no limits. */
  readonly fairness?: Fairness | undefined;
  /** Where the handshake pacing's counts are served; none: not counted. */
  readonly metrics?: ProxyMetrics | undefined;
  /** Shared mode's idle connections per flow; none: Node's keep-alive timeout for all. */
  readonly idleConnections?: IdleConnections | undefined;
  /** Told the server's count of clients' connections by protocol, once made. */
  readonly connections?: ((connections: ClientConnections) => void) | undefined;
}

/** The server Fastify runs on (its serverFactory): `handler` gets each request that passed the checks above. */
export function newNodeServer(handler: (req: IncomingMessage, res: ServerResponse) => void, options: NodeServerOptions): Server {
  const { fairness, idleConnections } = options;
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const refusal = goRequestRefusal(req);
    if (refusal !== undefined) {
      writeGoRefusal(res, refusal);
      return;
    }
    const seat = fairness?.requestHeads?.take(sourceAddress(req), requestHeadBytes(req.url ?? '', req.rawHeaders));
    if (typeof seat === 'number') {
      writeTooManyRequests(res, seat, 'hold-unread');
      return;
    }
    if (seat !== undefined) holdUntilClosed(res, seat);
    idleConnections?.track(req, res, sourceAddress(req));
    handler(req, res);
  };
  // An h2 stream: its request as Go's h2 server gives it (http2-streams.ts). nghttp2 has refused
  // what is malformed on the wire (stream errors), and the session is the connection: no
  // refusal closes it, no idle keep-alive is tracked, no read is stopped for one stream.
  const streamListener = (h2req: Http2ServerRequest, h2res: Http2ServerResponse): void => {
    const { req, res } = adaptHttp2Stream(h2req, h2res);
    const seat = fairness?.requestHeads?.take(sourceAddress(req), requestHeadBytes(req.url ?? '', req.rawHeaders));
    if (typeof seat === 'number') {
      writeTooManyRequests(res, seat, 'close');
      return;
    }
    if (seat !== undefined) holdUntilClosed(res, seat);
    handler(req, res);
  };
  // A missing Host is refused by goRequestRefusal, in Go's words, not by Node.
  const http = { maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false };
  if (options.tls === undefined) {
    const server = createServer(http, listener);
    options.connections?.(trackClientConnections(server, { tls: false }));
    return parseEveryHttpVersion(server);
  }
  // A client certificate is asked for, never required: a client may present a token instead
  // (or nothing), and one that does not verify is refused by the gate, as the apiserver's x509
  // authenticator refuses it, not by the handshake.
  const clientCertificates = options.tls.clientCa === undefined ? {} : { requestCert: true, rejectUnauthorized: false };
  const streams = options.tls.http2MaxStreamsPerConnection || DEFAULT_HTTP2_MAX_STREAMS_PER_CONNECTION;
  const server = createSecureServer(
    { ...http, ...http2ServerOptions(streams, MAX_HEADER_BYTES), ...secureContextOptions(options.tls), ...clientCertificates },
    (req, res) => {
      if (req.httpVersionMajor === 2) streamListener(req, res);
      else listener(req as unknown as IncomingMessage, res as unknown as ServerResponse);
    },
  );
  const connections = trackClientConnections(server, { tls: true });
  options.connections?.(connections);
  // node:http's closeAllConnections, which Node's h2 server lacks: the end of a shutdown's grace
  // period (proxy.ts) ends every connection, h2 sessions and HTTP/1.1 sockets alike.
  Object.defineProperty(server, 'closeAllConnections', {
    value: () => {
      connections.destroyAll();
    },
  });
  const pacing = pacingForRate(options.tls.handshakesPerSecond ?? DEFAULT_TLS_HANDSHAKES_PER_SECOND);
  if (pacing !== undefined) options.metrics?.handshakes(paceTlsHandshakes(server, pacing));
  return parseEveryHttpVersion(server as unknown as Server);
}
