/**
 * The proxy, composed: the one place where its parts are made and wired (the composition root).
 * The command (src/cli/), the tests, the bench and the chaos runs start it here. The logger is
 * made first, so that everything said during start-up (discovery, the caches, the memory budget)
 * is logged, and Fastify is given the same logger.
 */
import { lstatSync, readFileSync, unlinkSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { newProxyServer } from '../server/http/app.ts';
import { secureContextOptions } from '../server/http/node-server.ts';
import { closeUpgradedConnections } from '../server/pass-through/upgrade.ts';
import type { UpstreamConfig } from '../upstream/config.ts';
import { newUpstreamClient } from '../upstream/client.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { newUpstreamHealth } from '../upstream/health.ts';
import { newSharedInformerFactory } from '../informer/factory.ts';
import { newPrometheusInformerMetricsProvider } from '../informer/prometheus-metrics.ts';
import type { CacheRegistryLog } from '../cache/cache-registry.ts';
import { readMemoryLimit } from '../memory/memory-limit.ts';
import { MALLOC_MMAP_THRESHOLD_BYTES, newMemoryBudget } from '../memory/memory-budget.ts';
import type { MemoryBudget } from '../memory/memory-budget.ts';
import { startCollectionValve } from '../memory/collection-valve.ts';
import { newPiecePool } from '../cache/piece-writer.ts';
import { newFaults } from '../cache/faults.ts';
import { newProxyMetrics } from '../server/http/metrics.ts';
import { listenMetrics } from '../server/http/metrics-listener.ts';
import type { MetricsListener } from '../server/http/metrics-listener.ts';
import { proxyHealthChecks } from '../server/http/health.ts';
import type { ServingTls } from '../server/http/node-server.ts';
import type { Server as TlsServer } from 'node:tls';
import { watchServingFiles } from './certificate-reload.ts';
import { newProxyLogger } from './logging.ts';
import { serverVersion, versionWarning } from '../upstream/server-version.ts';
import { newFallbackClient } from '../upstream/fallback-client.ts';
import type { FallbackClient } from '../upstream/fallback-client.ts';
import type { FallbackStatus } from '../status/status-report.ts';
import type { ProxyMetrics } from '../server/http/metrics.ts';
import { newStatusReporter } from '../status/status-report.ts';
import { reviewSelf } from '../upstream/identity.ts';
import { newSharedAccess } from '../auth/shared-access.ts';
import type { SharedAccess } from '../auth/shared-access.ts';
import { newTokenAuthenticator } from '../auth/token-review.ts';
import { newSubjectAccessReviewAuthorizer } from '../auth/subject-access-review.ts';
import { newFlowLimits } from '../server/pass-through/flow-limits.ts';
import { newTokenReviewLimits } from '../server/pass-through/token-review-limits.ts';
import { newRequestHeadLimits } from '../server/pass-through/request-head-limits.ts';
import { newAnonymousRefusalLimits } from '../server/pass-through/anonymous-refusals.ts';
import { newFlowRefusalLimits } from '../server/pass-through/flow-refusals.ts';
import { newFlowTurns } from '../server/pass-through/flow-turns.ts';
import type { Fairness } from '../server/pass-through/shared-gate.ts';
import { rejectedByReason } from '../server/pass-through/shared-gate.ts';
import { CliError } from './cli-error.ts';
import { appKubeconfig, writeFileAtomically } from './app-kubeconfig.ts';
import { readClientCa, resolveServingTls } from './serving-tls.ts';
import type { ResolvedTls } from './serving-tls.ts';
import { resolveCaches } from './caching-reads.ts';
import type { ProxyOptions, SharedServing } from './options.ts';
import { startPoolMember } from './pool-member.ts';

/** The package's version, for the status page. */
const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * How long in-flight requests get to finish after SIGTERM/SIGINT. Watches never finish on their
 * own: they are closed after it, and their clients re-watch elsewhere from their last RV. Under
 * the 30 s default terminationGracePeriodSeconds of a pod, so the exit is ours, not a SIGKILL.
 */
export const SHUTDOWN_GRACE_MS = 10_000;

export interface RunningProxy {
  /** Where it serves: `127.0.0.1:8001`, `[::1]:8001` or a socket path (as kubectl prints it). */
  readonly address: string;
  /** A base URL for clients (`http://127.0.0.1:8001`, `https://...` over TLS); undefined on a Unix socket. */
  readonly url: string | undefined;
  /** The CA clients trust when it serves HTTPS (PEM); undefined in plain HTTP. */
  readonly ca: string | undefined;
  readonly app: FastifyInstance;
  /** The proxy's metrics, also served at its /metrics. */
  readonly metrics: ProxyMetrics;
  /** Where --metrics-bind-address's listener serves (`IP:PORT`); undefined: none. */
  readonly metricsAddress: string | undefined;
  /**
   * Fails /readyz at once, keeps serving for --shutdown-delay-duration, then stops accepting,
   * waits up to graceMs for in-flight requests, then closes the remaining connections and the
   * upstream pool.
   */
  stop(graceMs?: number): Promise<void>;
}

/** Starts the server on the options' address, port or socket. */
export async function startProxy(options: ProxyOptions, upstream: UpstreamConfig): Promise<RunningProxy> {
  // First: a certificate that cannot be read stops the start before anything is opened.
  const served = options.tls === undefined ? undefined : resolveServingTls(options.tls, options.address);
  const clientCaFile = options.shared?.clientCaFile;
  const tls = served === undefined || clientCaFile === undefined ? served : { ...served, clientCa: readClientCa(clientCaFile) };
  // The logger before anything that logs: discovery, the caches and the memory budget speak at start-up.
  const logger = newProxyLogger({ level: options.logLevel, format: options.loggingFormat ?? 'text' });
  const log: CacheRegistryLog = (level, message, fields) => {
    logger[level](fields ?? {}, message);
  };
  // A chained proxy's upstream (--server), with the apiserver behind it while it cannot be reached.
  const fallback =
    upstream.fallback === undefined
      ? undefined
      : newFallbackClient({
          upstream: newUpstreamClient(upstream),
          apiserver: newUpstreamClient(upstream.fallback),
          log: (level, fields, message) => {
            logger[level](fields, message);
          },
        });
  const client: UpstreamClient = fallback ?? newUpstreamClient(upstream);
  const metrics = newProxyMetrics();
  if (fallback !== undefined) metrics.upstreamFallback(() => fallback.state());
  // Per-flow limits (a user at an address in shared mode, a connection in sidecar mode), and in
  // shared mode the limits on reviews of unknown tokens.
  const fairness: Fairness = {
    flows: newFlowLimits(options.flowLimits),
    tokenReviews: options.shared === undefined ? undefined : newTokenReviewLimits(options.shared.tokenReviewLimits),
    requestHeads: options.shared === undefined ? undefined : newRequestHeadLimits(options.shared.requestHeadLimits),
    anonymousRefusals: options.shared === undefined ? undefined : newAnonymousRefusalLimits(options.shared.anonymousRefusalLimits),
    flowRefusals: options.shared === undefined ? undefined : newFlowRefusalLimits(options.shared.flowRefusalLimits),
    turns: options.shared === undefined ? undefined : newFlowTurns(),
  };
  // What the proxy holds beyond its cached objects, sized to the container's memory limit.
  const memoryLimit = readMemoryLimit({ flagBytes: options.memoryLimitBytes });
  const memory = newMemoryBudget({
    limit: memoryLimit,
    log,
  });
  const access = options.shared === undefined ? undefined : sharedAccessFor(options.shared, client, memory);
  metrics.fairness(fairness, access === undefined ? undefined : () => access.reviews());
  // The pieces LIST bodies are copied into, kept for the next bodies within the budget's share.
  const pool = newPiecePool(memory.sizes.piecePoolBytes);
  const { collectAboveBytes } = memory.sizes;
  const valve = collectAboveBytes === undefined ? undefined : startCollectionValve({ thresholdBytes: collectAboveBytes });
  metrics.memory(memory, valve, pool);
  const health = newUpstreamHealth(client);
  // A node pool's member reads the pool-wide types from the elected leader (pool-member.ts).
  const poolMember =
    options.pool === undefined
      ? undefined
      : startPoolMember({
          pool: options.pool,
          client,
          upstream,
          registry: metrics.registry,
          log: (level, message, fields) => {
            logger[level](fields ?? {}, message);
          },
        });
  const factory = newSharedInformerFactory({
    client,
    ...(poolMember === undefined ? {} : { listerWatcherFor: poolMember.listerWatcherFor }),
    metrics: newPrometheusInformerMetricsProvider(metrics.registry),
    reachable: (signal) => health.whenReachable(signal),
    // Upstream watch failures, 410s and relists, with the type in each message (the reflector's name).
    log: (level, message) => {
      log(level, message);
    },
  });
  // A listener's, watcher's or observer's failure: counted, and logged at error once per site and type.
  const faults = newFaults({
    count: (site, resource) => {
      metrics.fault(site, resource);
    },
    log: (message, fields) => {
      logger.error(fields, message);
    },
  });
  const cachedReads = await resolveCaches(options, client, factory, metrics, { memory, pool, faults, log, proxyVersion: PACKAGE_VERSION });
  metrics.compressions(() => cachedReads.reads.compressions);
  const status = newStatusReporter({
    registry: metrics.registry,
    caches: () => cachedReads.reads.checks(),
    upstream: { server: upstream.server.origin, source: upstream.source },
    fallback:
      fallback === undefined || upstream.fallback === undefined ? undefined : fallbackStatus(fallback, upstream.fallback.server.origin),
    consistency: {
      mode: options.readConsistency,
      strongResources: options.strongResources,
      maxStalenessSeconds: options.maxStalenessMs / 1000,
    },
    identity: () => reviewSelf(client),
    version: PACKAGE_VERSION,
    pool: poolMember?.status,
    limits: () => {
      const { flows, tokenReviews } = fairness;
      return {
        flow: access === undefined ? 'connection' : 'user at address',
        maxRequestsInflightPerFlow: flows.settings.maxRequestsInflight,
        maxWatchesPerFlow: flows.settings.maxWatches,
        maxReviewsInflightPerFlow: access === undefined ? null : flows.settings.maxReviewsInflight,
        tokenReviews: tokenReviews?.settings ?? null,
        flows: flows.flows(),
        rejected: rejectedByReason(fairness),
      };
    },
  });
  /** Set once the proxy stops: /readyz fails from then on, on both listeners. */
  let shuttingDown: string | undefined;
  const healthChecks = proxyHealthChecks({
    memoryState: () => memory.state(),
    caches: () => cachedReads.reads.checks(),
    shuttingDown: () => shuttingDown,
  });
  const servingTls: ServingTls | undefined =
    tls === undefined
      ? undefined
      : {
          ...tls,
          handshakesPerSecond: options.tlsHandshakesPerSecond,
          minVersion: options.tlsMinVersion,
          ciphers: options.tlsCiphers,
          http2MaxStreamsPerConnection: options.http2MaxStreamsPerConnection,
        };
  const app = newProxyServer({
    tls: servingTls,
    healthChecks,
    draining: () => shuttingDown !== undefined,
    client,
    logger,
    filter: options.filter,
    cachedReads: cachedReads.reads,
    metrics,
    status,
    access,
    fairness,
    faults,
    compressLoopback: options.compressLoopback,
  });
  try {
    if (options.unixSocket === undefined) {
      await app.listen({ host: options.address, port: options.port });
    } else {
      await listenUnix(app, options.unixSocket);
    }
  } catch (error) {
    await app.close();
    await poolMember?.stop();
    await poolMember?.close();
    await client.close();
    const where = options.unixSocket ?? `${options.address}:${options.port}`;
    const detail = error instanceof Error ? error.message : String(error);
    throw new CliError(`cannot serve on ${where}: ${detail}`, 'Pick another --port (0 picks a free one), --address or --unix-socket.');
  }
  for (const { name, reason } of cachedReads.skipped)
    app.log.warn({ resource: name }, `not cached: ${reason}; its reads are passed through`);
  // The first watches open on the pool's leader, if there is one, rather than moving to it at once.
  await poolMember?.settled;
  cachedReads.reads.start();
  if (cachedReads.cached.length > 0) {
    void factory.waitForCacheSync().then(
      () => {
        app.log.info({ resources: cachedReads.cached }, 'caches synced');
      },
      () => undefined,
    );
  }
  /** Undoes a start that fails once the caches run: the server, the caches, the pool, the upstream. */
  const abandonStart = async (): Promise<void> => {
    await app.close();
    await cachedReads.reads.stop();
    await poolMember?.stop();
    await poolMember?.close();
    await client.close();
  };
  const info = app.server.address();
  const address = typeof info === 'string' ? info : formatAddress(info);
  const url = typeof info === 'string' ? undefined : `${tls === undefined ? 'http' : 'https'}://${address}`;
  if (options.writeKubeconfig !== undefined && tls !== undefined && typeof info !== 'string') {
    try {
      writeAppKubeconfig(options.writeKubeconfig, info, tls, options.namespace);
    } catch (error) {
      await abandonStart();
      const detail = error instanceof Error ? error.message : String(error);
      throw new CliError(
        `cannot write the kubeconfig for apps to ${options.writeKubeconfig}: ${detail}`,
        'Point --write-kubeconfig into a writable directory (in a pod, an emptyDir shared with the app).',
      );
    }
    app.log.info({ path: options.writeKubeconfig }, 'wrote the kubeconfig for apps');
  }
  // After the apps' kubeconfig: a sidecar's startup probe on this listener passing means the
  // file its apps read is there.
  let metricsListener: MetricsListener | undefined;
  if (options.metricsBindAddress !== undefined) {
    try {
      metricsListener = await listenMetrics(options.metricsBindAddress, metrics.registry, healthChecks, (error) => {
        app.log.error({ err: error }, 'metrics listener');
      });
    } catch (error) {
      await abandonStart();
      const { host, port } = options.metricsBindAddress;
      const detail = error instanceof Error ? error.message : String(error);
      throw new CliError(
        `cannot serve metrics on ${host ?? ''}:${String(port)}: ${detail}`,
        'Pick another --metrics-bind-address (port 0 picks a free one), or drop it.',
      );
    }
    app.log.info({ address: metricsListener.address }, 'serving /metrics, /livez and /readyz (--metrics-bind-address)');
  }
  const { sizes } = memory;
  app.log.info(
    memoryLimit === undefined
      ? { unsentWatchBytes: sizes.unsentWatchBytes, piecePoolBytes: sizes.piecePoolBytes }
      : {
          limitBytes: memoryLimit.bytes,
          from: memoryLimit.source,
          bodiesBytes: sizes.bodiesBytes,
          piecePoolBytes: sizes.piecePoolBytes,
          unsentWatchBytes: sizes.unsentWatchBytes,
          objectsBytes: sizes.objectsBytes,
          snapshots: sizes.snapshots,
        },
    memoryLimit === undefined
      ? 'no memory limit known: fixed bounds, nothing refused (set a container limit or --memory-limit)'
      : 'memory budget sized to the limit',
  );
  if (memoryLimit !== undefined && process.env.MALLOC_MMAP_THRESHOLD_ === undefined) {
    app.log.warn(
      { MALLOC_MMAP_THRESHOLD_: MALLOC_MMAP_THRESHOLD_BYTES },
      'MALLOC_MMAP_THRESHOLD_ is not set: memory the proxy frees may stay resident; set it as the image does',
    );
  }
  // The apiserver's version, said once; a release older than the proxy is made for, warned of.
  void serverVersion(client).then((version) => {
    if (version === undefined) return;
    const warning = versionWarning(version);
    if (warning === undefined) app.log.info({ version: version.gitVersion }, 'apiserver version');
    else app.log.warn({ version: version.gitVersion }, warning);
  });
  app.log.info(
    { upstream: upstream.server.origin, source: upstream.source, mode: access === undefined ? 'sidecar' : 'shared' },
    access === undefined ? 'proxying to the apiserver' : 'proxying to the apiserver, each client as itself (shared mode)',
  );

  // Certificate, key and client CA files followed as they change (certificate-reload.ts).
  const pair = options.tls?.kind === 'files' ? { certFile: options.tls.certFile, keyFile: options.tls.keyFile } : undefined;
  const reload =
    servingTls !== undefined && (pair !== undefined || clientCaFile !== undefined)
      ? watchServingFiles({
          files: { pair, clientCaFile },
          generated: pair === undefined ? servingTls : undefined,
          install: (material) => {
            (app.server as unknown as TlsServer).setSecureContext(
              secureContextOptions({ ...servingTls, cert: material.cert, key: material.key, clientCa: material.clientCa }),
            );
          },
          log: (level, fields, message) => {
            app.log[level](fields, message);
          },
        })
      : undefined;

  let stopping: Promise<void> | undefined;
  const stop = async (graceMs: number): Promise<void> => {
    // The apiserver's --shutdown-delay-duration: not ready at once, so that Endpoints and load
    // balancers stop sending new clients, while those already sent are still served.
    shuttingDown = 'the proxy is shutting down';
    if (options.shutdownDelayMs !== undefined && options.shutdownDelayMs > 0) {
      app.log.info({ delayMs: options.shutdownDelayMs }, 'not ready; serving on for --shutdown-delay-duration');
      await new Promise((resolve) => setTimeout(resolve, options.shutdownDelayMs));
    }
    // Fastify's close stops accepting, closes idle keep-alive sockets and waits for requests.
    const closed = app.close();
    // A pool leader hands the Lease over at once, so that its followers move on while it drains.
    const left = poolMember?.stop();
    const timer = setTimeout(() => {
      app.log.info({ graceMs }, 'grace period over: closing the remaining connections');
      app.server.closeAllConnections();
      // exec and port-forward sessions too, which Node's server no longer tracks once upgraded.
      closeUpgradedConnections(app.server);
    }, graceMs);
    try {
      await closed;
    } finally {
      clearTimeout(timer);
    }
    await left;
    await cachedReads.reads.stop();
    await poolMember?.close();
    await client.close();
    await metricsListener?.close();
    reload?.stop();
    valve?.stop();
  };
  return {
    address,
    url,
    ca: tls?.ca,
    app,
    metrics,
    metricsAddress: metricsListener?.address,
    stop(graceMs = SHUTDOWN_GRACE_MS) {
      stopping ??= stop(graceMs);
      return stopping;
    },
  };
}

/**
 * Shared mode's authenticator and authorizer: the apiserver's reviews, sent with the proxy's own
 * identity, their answers kept within the memory budget's share for decision caches (half each).
 */
function sharedAccessFor(shared: SharedServing, client: UpstreamClient, memory: MemoryBudget): SharedAccess {
  const half = Math.floor(memory.sizes.decisionCachesBytes / 2);
  const tokens = newTokenAuthenticator({ client, audiences: shared.audiences, ttlMs: shared.tokenCacheTtlMs, maxBytes: half });
  const authorizer = newSubjectAccessReviewAuthorizer({
    client,
    allowedTtlMs: shared.authorizedTtlMs,
    deniedTtlMs: shared.unauthorizedTtlMs,
    maxBytes: half,
  });
  memory.countDecisionCachesOf(() => tokens.cachedBytes() + authorizer.cachedBytes());
  return newSharedAccess({ tokens, authorizer });
}

/**
 * The apps' kubeconfig, naming the address the proxy listens on; on every interface (0.0.0.0,
 * ::) the apps of its pod reach it on loopback.
 */
function writeAppKubeconfig(path: string, info: AddressInfo | null, tls: ResolvedTls, namespace: string | undefined): void {
  if (info === null) return;
  const host = info.address === '0.0.0.0' ? '127.0.0.1' : info.address === '::' ? '::1' : info.address;
  const server = `https://${formatAddress({ ...info, address: host })}`;
  writeFileAtomically(path, appKubeconfig({ server, ca: tls.ca, namespace }));
}

/** Go's net.Addr String(): `host:port`, IPv6 in brackets. */
function formatAddress(info: AddressInfo | null): string {
  if (info === null) return '';
  return info.family === 'IPv6' ? `[${info.address}]:${info.port}` : `${info.address}:${info.port}`;
}

/**
 * ListenUnix (kubectl's pkg/proxy/proxy_server.go): removes a socket left at the path (stale or
 * not) but never another kind of file, and creates the socket accessible to its user only.
 */
async function listenUnix(app: FastifyInstance, path: string): Promise<void> {
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await app.ready();
  const old = process.umask(0o077);
  try {
    await app.listen({ path });
  } finally {
    process.umask(old);
  }
}

/** The status page's view of a chained proxy's fallback. */
function fallbackStatus(client: FallbackClient, apiserver: string): () => FallbackStatus {
  return () => {
    const { target, sinceMs, reason, fallbacks } = client.state();
    return { target, apiserver, since: new Date(sinceMs).toISOString(), reason: reason ?? null, fallbacks };
  };
}
