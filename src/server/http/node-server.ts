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
 *   handshake at a paced rate (tls-handshakes.ts).
 *
 * HTTP/1.1 only over TLS, as the ALPN default: exec and port-forward need its Upgrade, and a
 * client that offers h2 gets 1.1. node:https is node:http on TLS sockets: the same events
 * (upgrade, checkContinue, clientError) and limits either way.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
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
  // A missing Host is refused by goRequestRefusal, in Go's words, not by Node.
  const http = { maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false };
  if (options.tls === undefined) return parseEveryHttpVersion(createServer(http, listener));
  // A client certificate is asked for, never required: a client may present a token instead
  // (or nothing), and one that does not verify is refused by the gate, as the apiserver's x509
  // authenticator refuses it, not by the handshake.
  const clientCertificates = options.tls.clientCa === undefined ? {} : { requestCert: true, rejectUnauthorized: false };
  const server = createHttpsServer({ ...http, ...secureContextOptions(options.tls), ...clientCertificates }, listener);
  const pacing = pacingForRate(options.tls.handshakesPerSecond ?? DEFAULT_TLS_HANDSHAKES_PER_SECOND);
  if (pacing !== undefined) options.metrics?.handshakes(paceTlsHandshakes(server, pacing));
  return parseEveryHttpVersion(server);
}
