/**
 * The proxy's HTTP server (Fastify): its routes and hooks. Requests are never parsed into objects
 * here: bodies stream through untouched, and what the cache answers is built from stored bytes.
 *
 * The Node server under it takes connections and request heads (node-server.ts); the proxy's own
 * paths (health, metrics, the status page) are answered here; every other request, whatever its
 * method or path, goes to the request handler (request-handler.ts): the cache first, else the
 * apiserver.
 */
import Fastify, { LogController } from 'fastify';
import type { FastifyBaseLogger, FastifyError, FastifyInstance } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SharedAccess } from '../../auth/shared-access.ts';
import type { Faults } from '../../cache/faults.ts';
import { MAX_HEADER_BYTES, goClientErrorHandler } from '../../request/client-errors.ts';
import { closeConnectionAfter } from '../../request/http2-streams.ts';
import { parseRequest } from '../../request/parsed-request.ts';
import { filterRequest, installRequestFilter, logFilterDecision } from '../../request/request-filter.ts';
import type { RequestFilterOptions } from '../../request/request-filter.ts';
import { installStatusRoutes } from '../../status/status-routes.ts';
import type { StatusReporter } from '../../status/status-report.ts';
import type { UpstreamClient } from '../../upstream/client.ts';
import { admitOwnPage } from '../pass-through/shared-gate.ts';
import type { Fairness } from '../pass-through/shared-gate.ts';
import { installUpgradeProxy } from '../pass-through/upgrade.ts';
import type { CachedReads } from '../serving/cached-reads.ts';
import { HEALTH_ENDPOINTS, healthAnswer, proxyHealthChecks } from './health.ts';
import type { HealthCheck } from './health.ts';
import { newIdleConnections } from './idle-connections.ts';
import type { ProxyMetrics } from './metrics.ts';
import { newNodeServer } from './node-server.ts';
import type { ServingTls } from './node-server.ts';
import { newRequestHandler } from './request-handler.ts';

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
  /** True once the proxy shuts down: every answer then closes its connection (`Connection: close`; a GOAWAY over h2). */
  readonly draining?: (() => boolean) | undefined;
  /** The checks of /livez, /readyz and /healthz (health.ts proxyHealthChecks); none: made from memoryState and the caches. */
  readonly healthChecks?: ((endpoint: string) => readonly HealthCheck[]) | undefined;
  /** The memory budget's state (memory-budget.ts), a /readyz check that always passes and says how full it is; none: no such check. */
  readonly memoryState?: (() => string) | undefined;
  /** Where the read-your-writes observer's failures are reported (cache/faults.ts); default: stderr, once each. */
  readonly faults?: Faults | undefined;
  /**
   * Gzip cached answers to clients on a loopback address too (`--compress-loopback`), as the
   * apiserver gzips every client's; default: only to clients across a network.
   */
  readonly compressLoopback?: boolean | undefined;
}

/** What Fastify's `request.query` holds: nothing of the proxy reads it. */
const UNREAD_QUERY: Readonly<Record<string, never>> = Object.freeze({});

/** Fastify's own refusals of a request's Content-Type (fastify lib/handle-request.js), made before any handler. */
const CONTENT_TYPE_REFUSALS = new Set(['FST_ERR_ROUTE_MISSING_CONTENT_TYPE', 'FST_ERR_CTP_INVALID_MEDIA_TYPE']);

export function newProxyServer(options: ProxyServerOptions): FastifyInstance {
  // Shared mode: strangers' idle connections are bounded per flow (idle-connections.ts).
  const idleConnections = options.access === undefined ? undefined : newIdleConnections();
  if (idleConnections !== undefined) options.metrics?.idleConnections(idleConnections);
  const handle = newRequestHandler(options, idleConnections);
  const app = Fastify({
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger }),
    // One line per request only at debug (handle() logs it): at info, a busy proxy's log would be
    // nothing but requests, and the lines that matter (upstream failures, relists) lost in them.
    logController: new LogController({ disableRequestLogging: true }),
    // Paths as long as the apiserver takes them: the whole header section is its only limit.
    // The query is the request's to read, once (request/parsed-request.ts): the router's own
    // parse of it is never read, and a 1 MiB labelSelector held the loop 20-80 ms in it.
    routerOptions: { maxParamLength: MAX_HEADER_BYTES, querystringParser: () => UNREAD_QUERY },
    // Keep-alive sockets of watch clients must not hold shutdown forever.
    forceCloseConnections: 'idle',
    // Go's header limit and refusals, large heads charged, TLS paced (node-server.ts).
    serverFactory: (handler) =>
      newNodeServer(handler, {
        tls: options.tls,
        fairness: options.fairness,
        metrics: options.metrics,
        idleConnections,
        connections: (connections) => options.metrics?.clientConnections(connections),
      }),
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
      if (draining()) closeConnectionAfter(reply.raw);
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
  const { metrics, access, fairness } = options;
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
