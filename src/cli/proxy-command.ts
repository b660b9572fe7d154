/**
 * `kube-cache-proxy proxy [flags]`: the proxy in the foreground, like `kubectl proxy`
 * (kubectl's pkg/cmd/proxy/proxy.go, RunProxy): it prints `Starting to serve on ADDRESS`, then
 * serves until SIGTERM or SIGINT, when it stops accepting, lets in-flight requests finish for a
 * bounded grace period, closes what is still open (long watches), and exits 0.
 */
import { lstatSync, readFileSync, unlinkSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { newProxyServer } from '../server/http/app.ts';
import { closeUpgradedConnections } from '../server/pass-through/upgrade.ts';
import { loadUpstreamConfig } from '../upstream/config.ts';
import type { UpstreamConfig } from '../upstream/config.ts';
import { newUpstreamClient } from '../upstream/client.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { newDiscovery } from '../upstream/discovery.ts';
import { newUpstreamHealth } from '../upstream/health.ts';
import { newSharedInformerFactory } from '../informer/factory.ts';
import type { SharedInformerFactory } from '../informer/factory.ts';
import { newCachedReads } from '../server/serving/cached-reads.ts';
import type { CachedReads } from '../server/serving/cached-reads.ts';
import { newCacheRegistry } from '../cache/cache-registry.ts';
import { newConsistencyPolicy, newReadYourWrites } from '../cache/consistency.ts';
import { delegatorFactory } from '../cache/delegator.ts';
import type { CacheRegistryLog } from '../cache/cache-registry.ts';
import { resolveCachedResources } from '../cache/cached-resources.ts';
import type { CachedResourceSpec } from '../cache/cached-resources.ts';
import type { Discovery } from '../upstream/discovery.ts';
import { newUnsentBudget } from '../cache/unsent-budget.ts';
import { readMemoryLimit } from '../cache/memory-limit.ts';
import { MALLOC_MMAP_THRESHOLD_BYTES, newMemoryBudget } from '../cache/memory-budget.ts';
import type { MemoryBudget } from '../cache/memory-budget.ts';
import { limitPiecePool } from '../cache/piece-writer.ts';
import { startCollectionValve } from '../cache/collection-valve.ts';
import { newProxyMetrics } from '../server/http/metrics.ts';
import type { ProxyMetrics } from '../server/http/metrics.ts';
import { newPrometheusInformerMetricsProvider } from '../informer/metrics.ts';
import type { ResolvedResources } from '../cache/cached-resources.ts';
import { newStatusReporter } from '../status/status-report.ts';
import { reviewSelf } from '../upstream/identity.ts';
import { CliError } from './cli-error.ts';
import { appKubeconfig, writeFileAtomically } from './app-kubeconfig.ts';
import { PROXY_FLAGS_USAGE, parseProxyOptions } from './proxy-options.ts';
import { readClientCa, resolveServingTls } from './serving-tls.ts';
import { newSharedAccess } from '../auth/shared-access.ts';
import type { SharedAccess } from '../auth/shared-access.ts';
import { newTokenAuthenticator } from '../auth/token-review.ts';
import { newSubjectAccessReviewAuthorizer } from '../auth/subject-access-review.ts';
import type { ResolvedTls } from './serving-tls.ts';
import type { ProxyOptions, SharedServing } from './proxy-options.ts';
import { qualifiedResource } from '../kube/group-resource.ts';
import { newFaults } from '../cache/faults.ts';
import type { Faults } from '../cache/faults.ts';

export const PROXY_USAGE = `Usage: kube-cache-proxy proxy [options]

Runs the caching proxy in front of the cluster's apiserver, in the foreground, until SIGTERM or
SIGINT. Clients talk to it as to the apiserver: kubectl --server http://127.0.0.1:8001 get ns

Apps whose client refuses plain HTTP (@kubernetes/client-node) get HTTPS and a kubeconfig:
  kube-cache-proxy proxy --tls-generate --write-kubeconfig /var/run/kube-cache-proxy/kubeconfig
  KUBECONFIG=/var/run/kube-cache-proxy/kubeconfig kubectl get pods

${PROXY_FLAGS_USAGE}`;

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
  /**
   * Stops accepting, waits up to graceMs for in-flight requests, then closes the remaining
   * connections and the upstream pool.
   */
  stop(graceMs?: number): Promise<void>;
}

/** Loads the upstream from the options' kubeconfig/context, with an error that says what to do. */
export async function loadUpstream(
  options: Pick<ProxyOptions, 'kubeconfig' | 'context'> & Partial<Pick<ProxyOptions, 'server' | 'certificateAuthority'>>,
): Promise<UpstreamConfig> {
  let config: UpstreamConfig;
  try {
    config = await loadUpstreamConfig({ kubeconfig: options.kubeconfig, context: options.context });
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new CliError(
      `cannot load the cluster's configuration (${options.kubeconfig ?? 'default kubeconfig'}${options.context === undefined ? '' : `, context ${options.context}`}): ${detail}`,
      'Pass --kubeconfig FILE (and --context NAME), set $KUBECONFIG, or run in a pod with a service account.',
    );
  }
  return withServer(config, options.server, options.certificateAuthority);
}

/**
 * kubectl's --server and --certificate-authority over a loaded config: another upstream (a node
 * proxy), reached with the same credentials. The kubeconfig's TLS server name goes with its server.
 */
function withServer(config: UpstreamConfig, server: string | undefined, caFile: string | undefined): UpstreamConfig {
  let ca = config.tls.ca;
  if (caFile !== undefined) {
    try {
      ca = readFileSync(caFile);
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      throw new CliError(
        `--certificate-authority ${caFile}: cannot read it: ${detail}`,
        'Check the path given to --certificate-authority.',
      );
    }
  }
  if (server === undefined) return caFile === undefined ? config : { ...config, tls: { ...config.tls, ca } };
  return {
    ...config,
    server: new URL(server.replace(/\/+$/, '')),
    tls: { ...config.tls, ca, servername: undefined },
    source: `${server} with the credentials of ${config.source}`,
  };
}

/**
 * The proxy's logger: JSON lines for log collectors (a container's stdout is no TTY), and on a
 * terminal one readable line per event (pino-pretty, in pino's worker thread). The level is the
 * same either way; requests are logged at debug only (app.ts).
 */
export function loggerFor(
  level: string,
  tty: boolean,
): { level: string; transport?: { target: string; options: Record<string, unknown> } } {
  if (!tty) return { level };
  return {
    level,
    transport: { target: 'pino-pretty', options: { translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true } },
  };
}

/** Starts the server on the options' address, port or socket. */
export async function startProxy(options: ProxyOptions, upstream: UpstreamConfig): Promise<RunningProxy> {
  // First: a certificate that cannot be read stops the start before anything is opened.
  const served = options.tls === undefined ? undefined : resolveServingTls(options.tls, options.address);
  const clientCaFile = options.shared?.clientCaFile;
  const tls = served === undefined || clientCaFile === undefined ? served : { ...served, clientCa: readClientCa(clientCaFile) };
  const client = newUpstreamClient(upstream);
  const access = options.shared === undefined ? undefined : sharedAccessFor(options.shared, client);
  const metrics = newProxyMetrics();
  // The caches and their informers log through the server's logger, which exists only once the caches are wired.
  let log: CacheRegistryLog = () => undefined;
  // What the proxy holds beyond its cached objects, sized to the container's memory limit.
  const memoryLimit = readMemoryLimit({ flagBytes: options.memoryLimitBytes });
  const memory = newMemoryBudget({
    limit: memoryLimit,
    log: (level, message, fields) => {
      log(level, message, fields);
    },
  });
  limitPiecePool(memory.sizes.piecePoolBytes);
  const { collectAboveBytes } = memory.sizes;
  const valve = collectAboveBytes === undefined ? undefined : startCollectionValve({ thresholdBytes: collectAboveBytes });
  metrics.memory(memory, valve);
  const health = newUpstreamHealth(client);
  const factory = newSharedInformerFactory({
    client,
    metrics: newPrometheusInformerMetricsProvider(metrics.registry),
    reachable: (signal) => health.whenReachable(signal),
    // Upstream watch failures, 410s and relists, with the type in each message (the reflector's name).
    log: (level, message) => {
      log(level, message);
    },
  });
  // A listener's, watcher's or observer's failure: counted, and logged at error once per site and type.
  let logError: (message: string, fields: Readonly<Record<string, unknown>>) => void = () => undefined;
  const faults = newFaults({
    count: (site, resource) => {
      metrics.fault(site, resource);
    },
    log: (message, fields) => {
      logError(message, fields);
    },
  });
  const cachedReads = await resolveCaches(options, client, factory, metrics, memory, faults, (level, message, fields) => {
    log(level, message, fields);
  });
  const status = newStatusReporter({
    registry: metrics.registry,
    caches: () => cachedReads.reads.checks(),
    upstream: { server: upstream.server.origin, source: upstream.source },
    consistency: {
      mode: options.readConsistency,
      strongResources: options.strongResources,
      maxStalenessSeconds: options.maxStalenessMs / 1000,
    },
    identity: () => reviewSelf(client),
    version: PACKAGE_VERSION,
  });
  const app = newProxyServer({
    tls,
    client,
    logger: loggerFor(options.logLevel, process.stdout.isTTY),
    filter: options.filter,
    cachedReads: cachedReads.reads,
    metrics,
    status,
    access,
    memoryState: () => memory.state(),
    faults,
  });
  try {
    if (options.unixSocket === undefined) {
      await app.listen({ host: options.address, port: options.port });
    } else {
      await listenUnix(app, options.unixSocket);
    }
  } catch (error) {
    await app.close();
    await client.close();
    const where = options.unixSocket ?? `${options.address}:${options.port}`;
    const detail = error instanceof Error ? error.message : String(error);
    throw new CliError(`cannot serve on ${where}: ${detail}`, 'Pick another --port (0 picks a free one), --address or --unix-socket.');
  }
  log = (level, message, fields) => {
    app.log[level](fields ?? {}, message);
  };
  logError = (message, fields) => {
    app.log.error(fields, message);
  };
  for (const { name, reason } of cachedReads.skipped)
    app.log.warn({ resource: name }, `not cached: ${reason}; its reads are passed through`);
  cachedReads.reads.start();
  if (cachedReads.cached.length > 0) {
    void factory.waitForCacheSync().then(
      () => {
        app.log.info({ resources: cachedReads.cached }, 'caches synced');
      },
      () => undefined,
    );
  }
  const info = app.server.address();
  const address = typeof info === 'string' ? info : formatAddress(info);
  const url = typeof info === 'string' ? undefined : `${tls === undefined ? 'http' : 'https'}://${address}`;
  if (options.writeKubeconfig !== undefined && tls !== undefined && typeof info !== 'string') {
    try {
      writeAppKubeconfig(options.writeKubeconfig, info, tls, options.namespace);
    } catch (error) {
      await app.close();
      await cachedReads.reads.stop();
      await client.close();
      const detail = error instanceof Error ? error.message : String(error);
      throw new CliError(
        `cannot write the kubeconfig for apps to ${options.writeKubeconfig}: ${detail}`,
        'Point --write-kubeconfig into a writable directory (in a pod, an emptyDir shared with the app).',
      );
    }
    app.log.info({ path: options.writeKubeconfig }, 'wrote the kubeconfig for apps');
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
  app.log.info(
    { upstream: upstream.server.origin, source: upstream.source, mode: access === undefined ? 'sidecar' : 'shared' },
    access === undefined ? 'proxying to the apiserver' : 'proxying to the apiserver, each client as itself (shared mode)',
  );

  let stopping: Promise<void> | undefined;
  const stop = async (graceMs: number): Promise<void> => {
    // Fastify's close stops accepting, closes idle keep-alive sockets and waits for requests.
    const closed = app.close();
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
    await cachedReads.reads.stop();
    await client.close();
    valve?.stop();
  };
  return {
    address,
    url,
    ca: tls?.ca,
    app,
    metrics,
    stop(graceMs = SHUTDOWN_GRACE_MS) {
      stopping ??= stop(graceMs);
      return stopping;
    },
  };
}

/** Shared mode's authenticator and authorizer: the apiserver's reviews, sent with the proxy's own identity. */
function sharedAccessFor(shared: SharedServing, client: UpstreamClient): SharedAccess {
  return newSharedAccess({
    tokens: newTokenAuthenticator({ client, audiences: shared.audiences, ttlMs: shared.tokenCacheTtlMs }),
    authorizer: newSubjectAccessReviewAuthorizer({ client, allowedTtlMs: shared.authorizedTtlMs, deniedTtlMs: shared.unauthorizedTtlMs }),
  });
}

/**
 * The caches, over discovery: the --resources types, resolved now (what cannot be cached is
 * reported as skipped), or, with none named, every cacheable type on its first read.
 */
async function resolveCaches(
  options: ProxyOptions,
  client: UpstreamClient,
  factory: SharedInformerFactory,
  metrics: ProxyMetrics,
  memory: MemoryBudget,
  faults: Faults,
  log: CacheRegistryLog,
): Promise<{ reads: CachedReads; cached: string[]; skipped: ResolvedResources['skipped'] }> {
  const discovery = newDiscovery(client, {
    log: (level, message) => {
      log(level, message);
    },
  });
  // Named types are resolved now, so discovery must answer; with none named the registry's
  // discovery loop reads it (and retries) while reads are passed through.
  if (options.resources.length > 0) {
    try {
      await discovery.refresh();
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      throw new CliError(
        `cannot read the apiserver's discovery to resolve --resources: ${detail}`,
        'Check that the apiserver is reachable with this kubeconfig.',
      );
    }
  }
  const named = options.resources.length === 0 ? undefined : resolveCachedResources(discovery, options.resources);
  return {
    reads: newCachingReads({ ...options, client, factory, discovery, specs: named?.specs, metrics, memory, faults, log }),
    cached: (named?.specs ?? []).map((s) => qualifiedResource(s.group, s.resource)),
    skipped: named?.skipped ?? [],
  };
}

export interface CachingReadsOptions extends Partial<Pick<ProxyOptions, 'readConsistency' | 'strongResources' | 'maxStalenessMs'>> {
  readonly client: UpstreamClient;
  readonly factory: SharedInformerFactory;
  readonly discovery: Discovery;
  /** The --resources types, resolved; undefined: every cacheable type, on its first read. */
  readonly specs?: readonly CachedResourceSpec[] | undefined;
  readonly namespace?: string | undefined;
  readonly metrics?: ProxyMetrics;
  readonly log?: CacheRegistryLog;
  /** How long reads wait for the cache to reach an RV (delegator.ts FRESHNESS_WAIT_MS); tests set it. */
  readonly freshnessWaitMs?: number;
  /** What the proxy may hold (memory-budget.ts); default: no limit, fixed bounds. */
  readonly memory?: MemoryBudget;
  /** Where listener and watcher failures are reported (cache/faults.ts); default: stderr, once each. */
  readonly faults?: Faults;
}

/** The reads the caches answer: the registry of caches, their delegators and the consistency policy, wired. */
export function newCachingReads(options: CachingReadsOptions): CachedReads {
  const mode = options.readConsistency ?? 'bounded';
  const policy = newConsistencyPolicy({
    mode,
    strongTypes: options.strongResources ?? [],
    ...(options.maxStalenessMs === undefined ? {} : { maxStalenessMs: options.maxStalenessMs }),
  });
  // Read-your-writes is bounded mode's: strong reads never come from a cache that could miss a write.
  const writes = mode === 'bounded' ? newReadYourWrites() : undefined;
  const { metrics, memory } = options;
  const unsentBudget = newUnsentBudget(memory?.sizes.unsentWatchBytes);
  memory?.countUnsentOf(() => unsentBudget.total());
  const delegate = delegatorFactory({
    client: options.client,
    policy,
    writes: writes ?? newReadYourWrites(),
    ...(metrics === undefined ? {} : { metrics: (resource: string) => metrics.delegator(resource) }),
    ...(options.freshnessWaitMs === undefined ? {} : { freshnessWaitMs: options.freshnessWaitMs }),
    unsentBudget,
    ...(options.faults === undefined ? {} : { faults: options.faults }),
  });
  const source = newCacheRegistry({
    factory: options.factory,
    delegate,
    discovery: options.discovery,
    resources: options.specs,
    namespace: options.namespace,
    ...(options.log === undefined ? {} : { log: options.log }),
    ...(memory === undefined ? {} : { admitsNewCache: () => memory.admitsNewCache(), maxSnapshots: memory.sizes.snapshots }),
    ...(options.faults === undefined ? {} : { faults: options.faults }),
  });
  memory?.countObjectsOf(() => source.held());
  return newCachedReads({ source, writes, ...(memory === undefined ? {} : { memory }) });
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

/**
 * Resolves at the first SIGTERM or SIGINT. The handlers are once-only: a second signal during
 * shutdown gets the default action and ends the process at once.
 */
export function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    // Signal listeners keep no handle open: this timer keeps the process alive until a signal.
    const keepAlive = setInterval(() => undefined, 1 << 30);
    const onSignal = (signal: NodeJS.Signals): void => {
      clearInterval(keepAlive);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

export async function proxyCommand(argv: readonly string[]): Promise<number> {
  const options = parseProxyOptions(argv);
  if (options.help) {
    console.log(PROXY_USAGE);
    return 0;
  }
  const proxy = await startProxy(options, await loadUpstream(options));
  // kubectl proxy's line (RunProxy), so scripts that read the chosen port (--port 0) keep working.
  console.log(`Starting to serve on ${proxy.address}`);
  const signal = await waitForSignal();
  proxy.app.log.info({ signal }, 'shutting down');
  await proxy.stop();
  return 0;
}
