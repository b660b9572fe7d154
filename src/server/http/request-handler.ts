/**
 * The handler every API request reaches once past the routes' own paths (health, metrics, the
 * status page): apiserver `pkg/server/config.go` `DefaultBuildHandlerChain` for the filters the
 * proxy keeps, then its handler.
 *
 * - Shared mode: the client identified and authorized (pass-through/shared-gate.ts), a seat of its
 *   flow held until the answer ends (where the apiserver has priority and fairness), and what
 *   goes upstream sent as the client; sidecar mode: the connection is the flow.
 * - A write is passed through, and its answer tells read-your-writes what a later read must see.
 * - A read is offered to the cache first (serving/cached-reads.ts); what it does not answer is
 *   passed through, counted by why (or, when the client accepts cached answers only, refused
 *   with the 503 that says why: protocol/pool-protocol.ts).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SharedAccess } from '../../auth/shared-access.ts';
import { stderrFaults } from '../../cache/faults.ts';
import type { Faults } from '../../cache/faults.ts';
import type { PassReason } from '../../cache/pass-reason.ts';
import { connectionOf } from '../../request/http2-streams.ts';
import { isOnlyIfCached } from '../../protocol/pool-protocol.ts';
import { firstAccept } from '../../request/negotiation.ts';
import { parseRequest } from '../../request/parsed-request.ts';
import type { ParsedRequest } from '../../request/parsed-request.ts';
import type { ForwardIdentity, UpstreamClient } from '../../upstream/client.ts';
import { FLOW_RETRY_AFTER_SECONDS } from '../pass-through/flow-limits.ts';
import { asksImpersonation, passThrough } from '../pass-through/pass-through.ts';
import type { Observation } from '../pass-through/pass-through.ts';
import { admit, seatKind } from '../pass-through/shared-gate.ts';
import type { Fairness } from '../pass-through/shared-gate.ts';
import { writeTooManyRequests } from '../pass-through/too-many-requests.ts';
import { ANSWER_HEAD_BYTES } from '../serving/answer-head.ts';
import { onlyIfCachedRefusal } from '../serving/cached-reads.ts';
import type { CachedReads, CachedResponse } from '../serving/cached-reads.ts';
import { writeNegotiatedStatus } from '../serving/negotiated-status.ts';
import { firstAcceptEncoding } from '../serving/response-compression.ts';
import { MAX_WRITE_ANSWER_BYTES } from '../serving/written-resource-version.ts';
import { writeBody } from './body-writer.ts';
import type { IdleConnections } from './idle-connections.ts';
import type { ProxyMetrics, ServedFrom } from './metrics.ts';
import { holdUntilClosed } from './node-server.ts';
import { newWriteTurns } from './write-turns.ts';

export interface RequestHandlerOptions {
  readonly client: UpstreamClient;
  /** Reads answered from the watch caches; none: everything is passed through. */
  readonly cachedReads?: CachedReads | undefined;
  readonly metrics?: ProxyMetrics | undefined;
  /** Shared mode's authentication and authorization; none: sidecar mode, everything as the proxy. */
  readonly access?: SharedAccess | undefined;
  /** Per-flow limits; none: no limits. */
  readonly fairness?: Fairness | undefined;
  /** Where the read-your-writes observers' failures are reported; default: stderr, once each. */
  readonly faults?: Faults | undefined;
  /**
   * Gzip cached answers to clients on a loopback address too, as the apiserver gzips every
   * client's (serving/response-compression.ts); default: only to clients across a network.
   */
  readonly compressLoopback?: boolean | undefined;
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse, log: FastifyBaseLogger) => Promise<void>;

/** Methods that change state: their answers tell read-your-writes which RV a later read must see. */
export const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function observeWrite(reads: CachedReads, request: ParsedRequest, faults: Faults): Observation {
  return {
    maxBytes: MAX_WRITE_ANSWER_BYTES,
    observer: (statusCode, headers, body) => {
      reads.observeWrite(request, {
        statusCode,
        contentType: headers['content-type'] ?? '',
        contentEncoding: headers['content-encoding'] ?? '',
        body,
      });
    },
    failed: (error) => {
      faults.report('write-observer', request.typeName, error);
    },
  };
}

/** What a LIST or GET passed through tells read-your-writes (its RV settles a doubt), when it can. */
function observeRead(reads: CachedReads, request: ParsedRequest, faults: Faults): Observation | undefined {
  const observer = reads.observeRead(request);
  if (observer === undefined) return undefined;
  return {
    maxBytes: ANSWER_HEAD_BYTES,
    head: true,
    observer: (statusCode, headers, head) => {
      observer(statusCode, headers['content-type'] ?? '', headers['content-encoding'] ?? '', head ?? Buffer.alloc(0));
    },
    failed: (error) => {
      faults.report('read-observer', request.typeName, error);
    },
  };
}

/** The request's line at debug, once it is answered (never its headers: they may carry credentials). */
function logRequest(req: IncomingMessage, res: ServerResponse, log: FastifyBaseLogger): void {
  const started = performance.now();
  res.once('close', () => {
    log.debug({ method: req.method, url: req.url, statusCode: res.statusCode, ms: Math.round(performance.now() - started) }, 'request');
  });
}

/**
 * Whether a client's address is loopback (127.0.0.0/8, ::1, or 127/8 mapped into IPv6): a
 * sidecar's pod, or the host itself, where gzip would cost CPU and save nothing that matters.
 */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

function onLoopback(req: IncomingMessage): boolean {
  return isLoopbackAddress(req.socket.remoteAddress);
}

export function newRequestHandler(options: RequestHandlerOptions, idleConnections: IdleConnections | undefined): RequestHandler {
  const { cachedReads: reads, metrics, access, fairness } = options;
  const faults = options.faults ?? stderrFaults;
  const compressLoopback = options.compressLoopback ?? false;
  // The loop's time this server's writers of large bodies share (write-turns.ts).
  const turns = newWriteTurns();
  const countServed = (request: ParsedRequest, from: ServedFrom): void => {
    metrics?.served(request.verb, request.typeName, from);
  };
  /** A read the apiserver answers: counted as served by it, and by why (logged at debug). */
  const countPassed = (request: ParsedRequest, reason: PassReason, log: FastifyBaseLogger): void => {
    countServed(request, 'apiserver');
    metrics?.passedThrough(request.typeName, reason);
    log.debug({ resource: request.typeName, verb: request.verb, reason }, 'passed through');
  };
  /**
   * A read the cache does not answer, to the apiserver; or, when it accepts cached answers only
   * (a pool follower's, protocol/pool-protocol.ts), refused with a 503 that says why.
   */
  const passRead = (
    req: IncomingMessage,
    res: ServerResponse,
    request: ParsedRequest,
    reason: PassReason,
    log: FastifyBaseLogger,
    as: ForwardIdentity | undefined,
  ): Promise<void> => {
    if (isOnlyIfCached(req.headers['cache-control'])) {
      log.debug({ resource: request.typeName, verb: request.verb, reason }, 'refused: only-if-cached');
      writeNegotiatedStatus(res, onlyIfCachedRefusal(reason), firstAccept(req.rawHeaders), request.query(), req.headers['user-agent']);
      return Promise.resolve();
    }
    countPassed(request, reason, log);
    return passThrough(options.client, req, res, reads === undefined ? undefined : observeRead(reads, request, faults), as);
  };
  return async (req, res, log) => {
    // Parsed once, here: everything below decides on this reading of the request.
    const request = parseRequest(req.method ?? 'GET', req.url ?? '/');
    if (log.level === 'debug' || log.level === 'trace') logRequest(req, res, log);
    // Shared mode: who the client is decides what it may read, and as whom the rest goes upstream.
    // Either mode: the request holds a seat of its flow until its answer ends (flow-limits.ts).
    let as: ForwardIdentity | undefined;
    if (access !== undefined) {
      const admission = await admit(access, req, request, fairness);
      if (admission.kind === 'refused') {
        // The apiserver's 401 or 403 in the encoding it would write it (a kubelet's in protobuf).
        writeNegotiatedStatus(res, admission.error, firstAccept(req.rawHeaders), request.query(), req.headers['user-agent']);
        return;
      }
      if (admission.kind === 'rejected') {
        log.debug({ reason: admission.reason }, 'too many requests');
        writeTooManyRequests(res, admission.retryAfterSeconds, admission.after);
        return;
      }
      as = admission.as;
      holdUntilClosed(res, admission.seat);
      // Only refusals spend an anonymous address's bucket (anonymous-refusals.ts) or a flow's (flow-refusals.ts).
      const answered = admission.answered;
      if (answered !== undefined)
        res.once('close', () => {
          answered(res.statusCode);
        });
      idleConnections?.flowIs(res, admission.flow);
      // Gone while it waited for its flow's turn: nothing to answer.
      if (res.closed) return;
      if (admission.kind === 'forward' && !WRITE_METHODS.has(request.method)) return passRead(req, res, request, 'shared-forward', log, as);
    } else if (fairness !== undefined) {
      // Sidecar mode: every client is the pod itself, one identity upstream; what sets one of its
      // processes apart from the others is its connection (one per request or watch over HTTP/1.1,
      // more only when pipelined; all of a process's over h2), so the connection is the flow.
      const seat = fairness.flows.take(connectionOf(req), seatKind(request));
      if (typeof seat === 'string') {
        log.debug({ reason: seat }, 'too many requests');
        writeTooManyRequests(res, FLOW_RETRY_AFTER_SECONDS, 'close');
        return;
      }
      holdUntilClosed(res, seat);
    }
    if (reads === undefined) {
      if (!WRITE_METHODS.has(request.method) && isOnlyIfCached(req.headers['cache-control']))
        return passRead(req, res, request, 'uncached', log, as);
      countServed(request, 'apiserver');
      return passThrough(options.client, req, res, undefined, as);
    }
    if (WRITE_METHODS.has(request.method)) {
      countServed(request, 'apiserver');
      return passThrough(options.client, req, res, reads.observesWrites ? observeWrite(reads, request, faults) : undefined, as);
    }
    // The cache answers as the proxy's identity (sidecar mode): a read that asks to act as someone
    // else is the apiserver's to grant or refuse. (Shared mode's gate has sent these upstream.)
    if (asksImpersonation(req.headers)) return passRead(req, res, request, 'impersonation', log, as);
    const gone = new AbortController();
    const onClose = (): void => {
      gone.abort();
    };
    res.on('close', onClose);
    let cached: CachedResponse | PassReason;
    try {
      if (request.verb === 'watch') {
        const decision = await reads.tryWatch(request, req, res);
        if (decision === 'cache') {
          countServed(request, 'cache');
          metrics?.answeredIn(request.typeName, String(res.getHeader('content-type') ?? ''));
          return;
        }
        cached = decision;
      } else {
        cached = await reads.tryServe(
          request,
          {
            accept: firstAccept(req.rawHeaders),
            'user-agent': req.headers['user-agent'],
            'cache-control': req.headers['cache-control'],
            'accept-encoding': compressLoopback || !onLoopback(req) ? firstAcceptEncoding(req.rawHeaders) : undefined,
          },
          gone.signal,
        );
      }
    } catch (error) {
      // Never a client's failure: the apiserver answers instead (a bug: logged, and counted as its reason).
      log.warn({ err: error }, 'serving from the cache failed; passing through');
      cached = 'cache-error';
    } finally {
      res.off('close', onClose);
    }
    if (gone.signal.aborted || res.headersSent) {
      // Never written: no socket holds its pieces.
      if (typeof cached !== 'string') cached.written?.(true);
      // A failure after the cache began to answer: the client re-requests; no second answer.
      if (res.headersSent) res.destroy();
      return;
    }
    if (typeof cached === 'string') return passRead(req, res, request, cached, log, as);
    countServed(request, 'cache');
    metrics?.answeredIn(request.typeName, cached.headers['content-type'] ?? '');
    log.debug({ servedFrom: 'cache' }, 'served from cache');
    res.writeHead(cached.statusCode, cached.chunked === true ? cached.headers : { ...cached.headers, 'content-length': cached.length });
    await writeBody(res, cached, turns);
  };
}
