/**
 * The proxy's HTTP server (Fastify). Requests are never parsed into objects here: bodies stream
 * through untouched, and what the cache answers is built from stored bytes.
 *
 * Each request is offered to the cache first (cached-reads.ts); what it does not answer is
 * passed through to the apiserver.
 */
import { newWriteTurns } from './write-turns.ts';
import { writeBody } from './body-writer.ts';
import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyError, FastifyInstance } from 'fastify';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import type { NodeTlsVersion } from '../tls/tls-settings.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { UpstreamClient } from '../../upstream/client.ts';
import { onlyIfCachedRefusal } from '../serving/cached-reads.ts';
import type { CachedReads, CachedResponse } from '../serving/cached-reads.ts';
import { isOnlyIfCached } from '../../upstream/pool-protocol.ts';
import { MAX_HEADER_BYTES, goClientErrorHandler, goRequestRefusal, writeGoRefusal } from '../../request/client-errors.ts';
import { asksImpersonation, passThrough } from '../pass-through/pass-through.ts';
import type { Observation } from '../pass-through/pass-through.ts';
import type { PassReason } from '../../cache/pass-reason.ts';
import { stderrFaults } from '../../cache/faults.ts';
import type { Faults } from '../../cache/faults.ts';
import { seatKind, sourceAddress } from '../pass-through/shared-gate.ts';
import { newIdleConnections } from './idle-connections.ts';
import { requestHeadBytes } from '../pass-through/request-head-limits.ts';
import type { Fairness } from '../pass-through/shared-gate.ts';
import { FLOW_RETRY_AFTER_SECONDS, NO_SEAT } from '../pass-through/flow-limits.ts';
import type { Seat } from '../pass-through/flow-limits.ts';
import { writeTooManyRequests } from '../pass-through/too-many-requests.ts';
import type { ProxyMetrics, ServedFrom } from './metrics.ts';
import { DEFAULT_TLS_HANDSHAKES_PER_SECOND, paceTlsHandshakes, pacingForRate } from './tls-handshakes.ts';
import { parseRequest } from '../../request/parsed-request.ts';
import type { ParsedRequest } from '../../request/parsed-request.ts';
import { MAX_WRITE_ANSWER_BYTES } from '../serving/written-resource-version.ts';
import { ANSWER_HEAD_BYTES } from '../serving/answer-head.ts';
import { filterRequest, installRequestFilter, logFilterDecision } from '../../request/request-filter.ts';
import type { RequestFilterOptions } from '../../request/request-filter.ts';
import { installUpgradeProxy } from '../pass-through/upgrade.ts';
import { parseEveryHttpVersion } from '../../request/http-versions.ts';
import { HEALTH_ENDPOINTS, healthAnswer, proxyHealthChecks } from './health.ts';
import { firstAccept } from '../../request/negotiation.ts';
import type { HealthCheck } from './health.ts';
import { installStatusRoutes } from '../../status/status-routes.ts';
import type { StatusReporter } from '../../status/status-report.ts';
import type { SharedAccess } from '../../auth/shared-access.ts';
import type { ForwardIdentity } from '../../upstream/client.ts';
import { admit, admitOwnPage } from '../pass-through/shared-gate.ts';
import { writeNegotiatedStatus } from '../serving/negotiated-status.ts';

export interface ProxyServerOptions {
  readonly client: UpstreamClient;
  /** The proxy's logger (pino), made before the server (proxy.ts); none: nothing is logged. */
  readonly logger?: FastifyBaseLogger | undefined;
  /** kubectl proxy's request filter; none when undefined (tests that talk to the app directly). */
  readonly filter?: RequestFilterOptions | undefined;
  /** Reads answered from the watch caches; none: everything is passed through. */
  readonly cachedReads?: CachedReads | undefined;
  /** Served at /metrics; none: /metrics is the apiserver's, passed through. */
  readonly metrics?: ProxyMetrics | undefined;
  /** The status page (/kube-cache-proxy/); none: those paths are passed through. */
  readonly status?: StatusReporter | undefined;
  /** Serve HTTPS with this certificate and key (PEM); none: plain HTTP. */
  readonly tls?: ServingTls | undefined;
  /**
   * Shared mode (shared-gate.ts): every client identified and every cached read authorized, and
   * what goes upstream goes as the client; none: sidecar mode, everything as the proxy.
   */
  readonly access?: SharedAccess | undefined;
  /**
   * Per-flow limits (flow-limits.ts): in shared mode a flow is a user at an address (shared-gate.ts),
   * in sidecar mode a connection; and, in shared mode, the limits on reviews of unknown tokens.
   * None: no limits.
   */
  readonly fairness?: Fairness | undefined;
  /** True once the proxy shuts down: every answer then closes its connection (`Connection: close`). */
  readonly draining?: (() => boolean) | undefined;
  /** The checks of /livez, /readyz and /healthz (health.ts proxyHealthChecks); none: made from memoryState and the caches. */
  readonly healthChecks?: ((endpoint: string) => readonly HealthCheck[]) | undefined;
  /** The memory budget's state (memory-budget.ts), a /readyz check that always passes and says how full it is; none: no such check. */
  readonly memoryState?: (() => string) | undefined;
  /** Where the read-your-writes observer's failures are reported (cache/faults.ts); default: stderr, once each. */
  readonly faults?: Faults | undefined;
}

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

/** Fastify's own refusals of a request's Content-Type (fastify lib/handle-request.js), made before any handler. */
const CONTENT_TYPE_REFUSALS = new Set(['FST_ERR_ROUTE_MISSING_CONTENT_TYPE', 'FST_ERR_CTP_INVALID_MEDIA_TYPE']);

/** Methods that change state: their answers tell read-your-writes which RV a later read must see. */
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

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

/** Gives `seat` back once `res` is done: answered, or its connection gone (perhaps already). */
function holdUntilClosed(res: ServerResponse, seat: Seat): void {
  if (seat === NO_SEAT) return;
  if (res.closed) seat.release();
  else
    res.once('close', () => {
      seat.release();
    });
}

/** The request's line at debug, once it is answered (never its headers: they may carry credentials). */
function logRequest(req: IncomingMessage, res: ServerResponse, log: FastifyBaseLogger): void {
  const started = performance.now();
  res.once('close', () => {
    log.debug({ method: req.method, url: req.url, statusCode: res.statusCode, ms: Math.round(performance.now() - started) }, 'request');
  });
}

export function newProxyServer(options: ProxyServerOptions): FastifyInstance {
  // Shared mode: strangers' idle connections are bounded per flow (idle-connections.ts).
  const idleConnections = options.access === undefined ? undefined : newIdleConnections();
  if (idleConnections !== undefined) options.metrics?.idleConnections(idleConnections);
  const app = Fastify({
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger }),
    // One line per request only at debug (handle() logs it): at info, a busy proxy's log would be
    // nothing but requests, and the lines that matter (upstream failures, relists) lost in them.
    logController: new LogController({ disableRequestLogging: true }),
    // Paths as long as the apiserver takes them: the whole header section is its only limit.
    routerOptions: { maxParamLength: MAX_HEADER_BYTES },
    // Keep-alive sockets of watch clients must not hold shutdown forever.
    forceCloseConnections: 'idle',
    // The apiserver's header limit and its answers to malformed requests (client-errors.ts).
    // Over TLS the same HTTP/1.1 server (node:https is node:http on TLS sockets): the same
    // events (upgrade, checkContinue, clientError) and limits. HTTP/1.1 only, as the ALPN
    // default: exec and port-forward need its Upgrade, and a client that offers h2 gets 1.1.
    serverFactory: (handler) => {
      const listener = (req: IncomingMessage, res: ServerResponse): void => {
        const refusal = goRequestRefusal(req);
        if (refusal !== undefined) {
          writeGoRefusal(res, refusal);
          return;
        }
        // A large head is charged before anything reads it, and held until its answer ends (request-head-limits.ts).
        const seat = options.fairness?.requestHeads?.take(sourceAddress(req), requestHeadBytes(req.url ?? '', req.rawHeaders));
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
      // Handshakes paced in time, so that one client's burst of connections never holds the loop (tls-handshakes.ts).
      const pacing = pacingForRate(options.tls.handshakesPerSecond ?? DEFAULT_TLS_HANDSHAKES_PER_SECOND);
      if (pacing !== undefined) options.metrics?.handshakes(paceTlsHandshakes(server, pacing));
      return parseEveryHttpVersion(server);
    },
    clientErrorHandler: goClientErrorHandler,
    // A path the router cannot decode (FST_ERR_BAD_URL: %ff is not UTF-8) is still the
    // apiserver's to answer, as is anything else the framework would refuse on its own.
    frameworkErrors: (_error, request, reply) => {
      reply.hijack();
      void routeUndecodable(request.raw, reply.raw, request.log);
    },
  });
  let routeUndecodable = (_req: IncomingMessage, _res: ServerResponse, _log: FastifyBaseLogger): Promise<void> => Promise.resolve();
  // Leave every body as the raw stream: the pass-through forwards it byte for byte.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => {
    done(null);
  });
  // While the proxy shuts down (--shutdown-delay-duration), every answer closes its connection,
  // so that clients open their next request's elsewhere (the Service's other endpoints) instead
  // of racing the drain's close of their idle keep-alive connection.
  const { draining } = options;
  if (draining !== undefined) {
    app.addHook('onRequest', (request, reply, done) => {
      if (draining()) reply.raw.setHeader('connection', 'close');
      done();
    });
  }
  if (options.filter !== undefined) installRequestFilter(app, options.filter);
  // Expect: 100-continue. Go sends the interim 100 when a handler first reads the body, so a GET
  // (its body never read) gets none, where Node would send one at once; a write's body is read by
  // the pass-through at once, so its 100 goes now.
  app.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') res.writeContinue();
    app.server.emit('request', req, res);
  });
  // exec, attach, port-forward: Upgrade requests never reach a route (upgrade.ts).
  installUpgradeProxy(app.server, {
    client: options.client,
    filter: options.filter,
    log: app.log,
    access: options.access,
    fairness: options.fairness,
  });
  // The proxy's own health, for the sidecar's probes (health.ts). The apiserver's own checks stay
  // reachable through the pass-through as /livez/<check> and /readyz/<check> (etcd, ...).
  const healthChecks =
    options.healthChecks ?? proxyHealthChecks({ memoryState: options.memoryState, caches: () => options.cachedReads?.checks() ?? [] });
  for (const endpoint of HEALTH_ENDPOINTS) {
    for (const route of [`/${endpoint}`, `/${endpoint}/*`]) {
      app.get(route, (request, reply) => {
        const mark = request.url.indexOf('?');
        const answer = healthAnswer(
          healthChecks,
          mark < 0 ? request.url : request.url.slice(0, mark),
          mark < 0 ? '' : request.url.slice(mark + 1),
        );
        if (answer !== undefined) return reply.code(answer.statusCode).headers(answer.headers).send(answer.body);
        reply.hijack();
        return handle(request.raw, reply.raw, request.log);
      });
    }
  }
  const reads = options.cachedReads;
  const metrics = options.metrics;
  const access = options.access;
  const fairness = options.fairness;
  if (access !== undefined) {
    // The proxy's own pages in shared mode: for whom the apiserver's authorizer lets read them.
    // (Its health endpoints stay open to all, as the apiserver's are by system:public-info-viewer.)
    app.addHook('onRequest', async (request, reply) => {
      const route = request.routeOptions.url ?? '';
      if (route !== '/metrics' && !route.startsWith('/kube-cache-proxy')) return;
      const page = parseRequest(request.raw.method ?? 'GET', request.url);
      if (!(await admitOwnPage(access, request.raw, reply.raw, page, fairness?.tokenReviews))) reply.hijack();
    });
  }
  if (metrics !== undefined) {
    app.get('/metrics', async (_request, reply) =>
      reply
        .code(200)
        .header('content-type', metrics.registry.contentType)
        .send(await metrics.registry.metrics()),
    );
  }
  if (options.status !== undefined) installStatusRoutes(app, options.status);
  const faults = options.faults ?? stderrFaults;
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
   * (a pool follower's, upstream/pool-protocol.ts), refused with a 503 that says why.
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
  const handle = async (req: IncomingMessage, res: ServerResponse, log: FastifyBaseLogger): Promise<void> => {
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
      // more only when pipelined), so the connection is the flow.
      const seat = fairness.flows.take(req.socket, seatKind(request));
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
          { accept: firstAccept(req.rawHeaders), 'user-agent': req.headers['user-agent'], 'cache-control': req.headers['cache-control'] },
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
    res.writeHead(cached.statusCode, { ...cached.headers, 'content-length': cached.length });
    await writeBody(res, cached, turns);
  };
  // Fastify refuses a body's Content-Type on its own before any handler (a QUERY without one, one
  // it cannot parse) with a JSON error of its own. The proxy never parses bodies: such a request
  // is the apiserver's to answer (405 for QUERY, its 415 Status), as any other. Other errors keep
  // Fastify's default handling.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (!CONTENT_TYPE_REFUSALS.has(error.code)) throw error;
    reply.hijack();
    return handle(request.raw, reply.raw, request.log);
  });
  // No onRequest hook runs for a path the router rejected: the filter is applied here.
  routeUndecodable = (req, res, log) => {
    if (options.filter !== undefined) {
      const decision = filterRequest(options.filter, req.method ?? '', req.url ?? '/', req.headers.host ?? '', req.headers.origin);
      logFilterDecision(log, decision);
      if (decision.kind !== 'accept') {
        const { statusCode, headers, body } = decision.answer;
        res.writeHead(statusCode, headers);
        res.end(body);
        return Promise.resolve();
      }
    }
    return handle(req, res, log);
  };
  app.all('/*', (request, reply) => {
    reply.hijack();
    return handle(request.raw, reply.raw, request.log);
  });
  app.all('/', (request, reply) => {
    reply.hijack();
    return handle(request.raw, reply.raw, request.log);
  });
  // Methods the router has no routes for (PROPFIND, ...): the apiserver's to answer as well,
  // never the framework's own 404 body.
  app.setNotFoundHandler((request, reply) => {
    reply.hijack();
    return handle(request.raw, reply.raw, request.log);
  });
  return app;
}
