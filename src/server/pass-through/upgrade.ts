/**
 * HTTP/1.1 Upgrade through the proxy: exec, attach and port-forward over SPDY/3.1 or WebSocket
 * (`v5.channel.k8s.io`, `SPDY/3.1+portforward.k8s.io`), as kubectl proxy's UpgradeAwareHandler
 * (apimachinery/pkg/util/proxy/upgradeaware.go) passes them on.
 *
 * Node never routes an Upgrade request: it emits the server's 'upgrade' event with the raw
 * connection, which is ours from then on. Here it gets what Go's server refuses before any
 * handler (client-errors.ts goRequestRefusal) and the request filter's decision
 * (request-filter.ts), as every other request does, then the apiserver's answer: a 101 and its
 * headers followed by bytes spliced both ways until both sides are done, or a refusal (most
 * often the apiserver's error Status) relayed with its body before the connection closes.
 *
 * Node's server stops tracking a connection when it emits 'upgrade' (closeAllConnections does
 * not reach it) but its close() still waits for it: closeUpgradedConnections is the missing half.
 *
 * CONNECT takes the same road. Node never routes it either (its 'connect' event; without a
 * listener the connection is dropped unanswered), while the apiserver answers it as any other
 * method: 405 MethodNotAllowed on API paths, 200 on `/` and `/livez`, 404 on an unknown path or
 * an authority (`CONNECT host:443`). So a CONNECT with a path goes to the apiserver with
 * `Connection: close` and its answer comes back byte for byte until the apiserver closes: the
 * client's connection can never become a tunnel past the proxy's filter and cache.
 */
import type { IncomingMessage, OutgoingHttpHeaders, Server } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyBaseLogger } from 'fastify';
import { isConnectionError } from '../../upstream/api-error.ts';
import type { ForwardIdentity, RefusedUpgradeResponse, UpgradeResponse, UpstreamClient } from '../../upstream/client.ts';
import type { SharedAccess } from '../../auth/shared-access.ts';
import { closingRefusalBytes, goRequestRefusal } from '../../request/client-errors.ts';
import { admit, sourceAddress } from './shared-gate.ts';
import { requestHeadBytes } from './request-head-limits.ts';
import type { Fairness } from './shared-gate.ts';
import { FLOW_RETRY_AFTER_SECONDS, NO_SEAT } from './flow-limits.ts';
import type { Seat } from './flow-limits.ts';
import { TOO_MANY_REQUESTS_BODY, tooManyRequestsHeaders } from './too-many-requests.ts';
import { requestHeadersForUpstream, responseHeadersForClient } from './pass-through.ts';
import { filterRequest, logFilterDecision } from '../../request/request-filter.ts';
import type { RequestFilterOptions } from '../../request/request-filter.ts';
import { badGateway, serviceUnavailable } from '../../kube/status.ts';

/**
 * rstAvoidanceDelay (Go's net/http/server.go, closeWriteAndWait): after our last byte and FIN,
 * how long the peer gets to close first. Closing a socket with unread input sends a TCP RST,
 * which can make the peer drop the answer it has not read yet.
 */
export const RST_AVOIDANCE_DELAY_MS = 500;

export interface UpgradeProxyOptions {
  readonly client: UpstreamClient;
  /** kubectl proxy's request filter; none when undefined. */
  readonly filter?: RequestFilterOptions | undefined;
  readonly log: FastifyBaseLogger;
  /** Shared mode: the client identified first, and its connection made upstream as the client. */
  readonly access?: SharedAccess | undefined;
  /**
   * Per-flow limits: an upgraded connection holds a request seat of its flow (shared-gate.ts; in
   * sidecar mode the connection is the flow) until it closes; none: no limits.
   */
  readonly fairness?: Fairness | undefined;
}

/** Per server: every connection it handed over at 'upgrade' and the apiserver's side of each, until closed. */
const upgraded = new WeakMap<Server, Set<Duplex>>();

/** Answers the server's Upgrade requests from now on. */
export function installUpgradeProxy(server: Server, options: UpgradeProxyOptions): void {
  const sockets = new Set<Duplex>();
  upgraded.set(server, sockets);
  const handOver = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    track(sockets, socket);
    // Node took its own listeners off at 'upgrade': without ours a reset would crash the process.
    socket.on('error', (error) => {
      options.log.debug({ err: error }, 'upgrade: client connection failed');
    });
    // What Go's server refuses before any handler (a version other than 1.x, two Hosts, ...).
    const refusal = goRequestRefusal(req);
    if (refusal !== undefined) {
      if (refusal.close) {
        socket.write(closingRefusalBytes(refusal));
        lingeringClose(socket);
      } else {
        respondAndClose(socket, refusal.statusCode, refusal.headers, Buffer.from(refusal.body));
      }
      return;
    }
    // A large head is charged before anything reads it, and held for the connection's life (request-head-limits.ts).
    const headSeat = options.fairness?.requestHeads?.take(sourceAddress(req), requestHeadBytes(req.url ?? '', req.rawHeaders));
    if (typeof headSeat === 'number') {
      respondAndClose(socket, 429, tooManyRequestsHeaders(headSeat), TOO_MANY_REQUESTS_BODY);
      return;
    }
    if (headSeat !== undefined && headSeat !== NO_SEAT) {
      socket.once('close', () => {
        headSeat.release();
      });
    }
    if (req.method === 'CONNECT' && !(req.url ?? '').startsWith('/')) {
      // An authority, not a path: Go's mux finds no route (the proxy is no forward proxy).
      respondAndClose(socket, 404, NOT_FOUND_HEADERS, Buffer.from('404 page not found\n'));
      return;
    }
    if (options.filter !== undefined) {
      const decision = filterRequest(options.filter, req.method ?? '', req.url ?? '/', req.headers.host ?? '', req.headers.origin);
      logFilterDecision(options.log, decision);
      if (decision.kind !== 'accept') {
        const { statusCode, headers, body } = decision.answer;
        respondAndClose(socket, statusCode, headers, body === undefined ? undefined : Buffer.from(body));
        return;
      }
    }
    proxyUpgrade(options, sockets, req, socket, head).catch((error: unknown) => {
      // A bug of ours, not the peers': this connection is lost, the process is not.
      options.log.error({ err: error }, 'upgrade: proxying failed');
      socket.destroy();
    });
  };
  server.on('upgrade', handOver);
  server.on('connect', handOver);
}

/** Go's http.NotFound. */
const NOT_FOUND_HEADERS = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' } as const;

/**
 * Destroys every upgraded connection of the server, both sides: for a shutdown's grace period
 * that is over (server.closeAllConnections() does the same for the others).
 */
export function closeUpgradedConnections(server: Server): void {
  for (const socket of upgraded.get(server) ?? []) socket.destroy();
}

function track(sockets: Set<Duplex>, socket: Duplex): void {
  sockets.add(socket);
  socket.once('close', () => sockets.delete(socket));
}

/** Resolves once the connection is handed over or answered; peers' failures do not reject it. */
async function proxyUpgrade(
  options: UpgradeProxyOptions,
  sockets: Set<Duplex>,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  // The client went away before the apiserver answered: stop waiting for it.
  const abort = new AbortController();
  const onClientClose = (): void => {
    abort.abort();
  };
  socket.once('close', onClientClose);
  let response: UpgradeResponse;
  let as: ForwardIdentity | undefined;
  let seat: Seat | string | undefined;
  if (options.access !== undefined) {
    const admission = await admit(options.access, req, undefined, options.fairness);
    if (admission.kind === 'refused') {
      socket.off('close', onClientClose);
      const { error } = admission;
      respondAndClose(socket, error.code, { ...error.headers, 'content-type': 'application/json' }, error.body());
      return;
    }
    if (admission.kind === 'rejected') {
      socket.off('close', onClientClose);
      options.log.debug({ reason: admission.reason, address: sourceAddress(req) }, 'upgrade: too many requests');
      respondAndClose(socket, 429, tooManyRequestsHeaders(admission.retryAfterSeconds), TOO_MANY_REQUESTS_BODY);
      return;
    }
    as = admission.as;
    seat = admission.seat;
  } else {
    seat = options.fairness?.flows.take(socket, 'request');
    if (typeof seat === 'string') {
      socket.off('close', onClientClose);
      respondAndClose(socket, 429, tooManyRequestsHeaders(FLOW_RETRY_AFTER_SECONDS), TOO_MANY_REQUESTS_BODY);
      return;
    }
  }
  // The seat is held for the connection's life, spliced or answered.
  if (seat !== undefined) {
    const held = seat;
    if (socket.destroyed) held.release();
    else
      socket.once('close', () => {
        held.release();
      });
  }
  const connect = req.method === 'CONNECT';
  const headers = requestHeadersForUpstream(req.headers, as);
  // CONNECT: one answer, then the apiserver closes (see the top of this file).
  if (connect) headers.connection = 'close';
  try {
    response = await options.client.upgrade({
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      protocol: connect ? '' : (req.headers.upgrade ?? ''),
      headers,
      signal: abort.signal,
      as,
    });
  } catch (error) {
    if (!abort.signal.aborted) upstreamFailure(socket, error);
    return;
  } finally {
    socket.off('close', onClientClose);
  }
  if (!response.upgraded) {
    await relayRefusal(socket, response);
    return;
  }
  const upstream = response.socket;
  track(sockets, upstream);
  upstream.on('error', (error) => {
    options.log.debug({ err: error }, 'upgrade: apiserver connection failed');
  });
  if (socket.destroyed) {
    upstream.destroy();
    return;
  }
  // The 101 with every header the apiserver sent, Connection and Upgrade included: the client
  // checks them (Sec-WebSocket-Accept, the negotiated X-Stream-Protocol-Version or subprotocol).
  socket.write(responseHead(response.statusCode, STATUS_CODES[response.statusCode] ?? 'Switching Protocols', response.headers));
  // Bytes the client sent right behind its request belong to the new protocol.
  if (head.length > 0) upstream.write(head);
  splice(socket, upstream);
}

/**
 * Bytes both ways. A side that ends (FIN) ends the other once what was written to it has gone
 * (pipe's end()), so a last frame, such as exec's exit status, is never cut off; a side that
 * closes without ending (a reset, an error, a destroy at shutdown) destroys the other at once.
 */
function splice(a: Duplex, b: Duplex): void {
  a.pipe(b);
  b.pipe(a);
  const onClose = (from: Duplex, to: Duplex) => (): void => {
    if (to.destroyed) return;
    if (from.readableEnded) lingeringClose(to);
    else to.destroy();
  };
  a.once('close', onClose(a, b));
  b.once('close', onClose(b, a));
}

/** The apiserver's answer other than 101, status and body, on a connection that then closes. */
async function relayRefusal(socket: Duplex, response: RefusedUpgradeResponse): Promise<void> {
  // After 'upgrade' the connection cannot go back to Node's HTTP parser: it ends with this answer.
  // A body without Content-Length (chunked upstream) is then delimited by the close.
  const headers: OutgoingHttpHeaders = { ...responseHeadersForClient(response.headers), connection: 'close' };
  const statusText = response.statusText === '' ? (STATUS_CODES[response.statusCode] ?? '') : response.statusText;
  socket.write(responseHead(response.statusCode, statusText, headers));
  try {
    await pipeline(response.body, socket, { end: false });
  } catch {
    // Either side closed mid-body: pipeline destroyed the other.
    return;
  }
  lingeringClose(socket);
}

/** pass-through.ts's answer when the apiserver cannot be reached: 503 when it refuses, 502 otherwise. */
function upstreamFailure(socket: Duplex, error: unknown): void {
  const detail = error instanceof Error ? error.message : String(error);
  const status = isConnectionError(error) ? serviceUnavailable(`error trying to reach service: ${detail}`) : badGateway(detail);
  respondAndClose(socket, status.status.code, { ...status.headers, 'content-type': 'application/json' }, status.body());
}

/** A whole response on a raw connection, then the close (the filter's answers, the 503). */
function respondAndClose(socket: Duplex, statusCode: number, headers: OutgoingHttpHeaders, body: Buffer | undefined): void {
  if (socket.destroyed) return;
  const all: OutgoingHttpHeaders = { ...headers, 'content-length': body?.length ?? 0, connection: 'close' };
  socket.write(responseHead(statusCode, STATUS_CODES[statusCode] ?? '', all));
  if (body !== undefined && body.length > 0) socket.write(body);
  lingeringClose(socket);
}

/** The status line and header block. Values come from the apiserver (parsed) or from us: no CR/LF in them. */
function responseHead(statusCode: number, statusText: string, headers: OutgoingHttpHeaders): string {
  let head = `HTTP/1.1 ${statusCode} ${statusText}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) head += `${name}: ${v}\r\n`;
  }
  return `${head}\r\n`;
}

/**
 * closeWriteAndWait (Go's net/http/server.go): our FIN after the last byte, then what the peer
 * still sends is read and dropped until it closes too, or RST_AVOIDANCE_DELAY_MS have passed.
 */
function lingeringClose(socket: Duplex): void {
  if (socket.destroyed) return;
  let timer: NodeJS.Timeout | undefined;
  const wait = (): void => {
    timer = setTimeout(() => socket.destroy(), RST_AVOIDANCE_DELAY_MS);
    // Nothing to wait for at exit: the process ending closes the socket all the same.
    timer.unref();
  };
  socket.once('close', () => {
    clearTimeout(timer);
  });
  socket.resume();
  // pipe() may have ended it already (the other side of a splice ended first).
  if (socket.writableFinished) wait();
  else socket.once('finish', wait).end();
}
