/**
 * Where the apiserver is and how to authenticate to it, from a kubeconfig or the in-cluster
 * service account, as @kubernetes/client-node's KubeConfig finds and applies them. The common
 * cases (a kubeconfig file with a token, a token file or a client certificate; the in-cluster
 * service account) are read by kubeconfig.ts without loading client-node's KubeConfig, whose
 * module holds the generated API client (~40 MiB); a kubeconfig that needs more (exec or
 * auth-provider plugins, several files to merge) loads it, and it runs them.
 *
 * In-cluster (client-node's loadFromCluster, as client-go's rest.InClusterConfig): the apiserver
 * at $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, verified with the service account's
 * ca.crt, authenticated with its token file, which is re-read every 60 s (client-go's period, and
 * client-node's FileAuth's), so a token the kubelet rotates takes effect without a restart.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import type { Cluster, KubeConfig, User } from '@kubernetes/client-node';
import { SERVICE_ACCOUNT_ROOT, currentEntries, locateKubeconfig, needsClientNode, readKubeconfig, tokenFileOf } from './kubeconfig.ts';
import type { KubeconfigLocation } from './kubeconfig.ts';
import { realClock } from '../clock/clock.ts';
import type { Clock } from '../clock/clock.ts';

export interface UpstreamTls {
  readonly ca?: Buffer | undefined;
  readonly cert?: Buffer | undefined;
  readonly key?: Buffer | undefined;
  /** false only when the kubeconfig says insecure-skip-tls-verify. */
  readonly rejectUnauthorized: boolean;
  readonly servername?: string | undefined;
}

export interface UpstreamConfig {
  /** The apiserver's base URL, e.g. https://127.0.0.1:6443 (no trailing slash). */
  readonly server: URL;
  readonly tls: UpstreamTls;
  /** The Authorization header for the next request (tokens can rotate), or undefined for none. */
  authorization(): Promise<string | undefined>;
  /** For logs and errors: which kubeconfig and context, or in-cluster. */
  readonly source: string;
  /**
   * How long making a connection (TCP and TLS) may take before it counts as failed; undefined:
   * undici's 10 s. A chained proxy's upstream proxy is given less (fallback-client.ts): a node
   * proxy that is gone behind a Service with `internalTrafficPolicy: Local` drops the packets, and
   * every request would otherwise wait 10 s before going to the apiserver.
   */
  readonly connectTimeoutMs?: number | undefined;
  /**
   * Offer HTTP/2 by ALPN (client.ts): every request and watch multiplexed on a few connections,
   * as client-go does; false: HTTP/1.1, one connection per request or watch in flight.
   * Undefined: client.ts's UPSTREAM_HTTP2_DEFAULT.
   */
  readonly http2?: boolean | undefined;
  /**
   * Where to go while `server` cannot be reached (fallback-client.ts): the kubeconfig's own
   * apiserver when `server` is another proxy (kubectl's --server); undefined: nowhere.
   */
  readonly fallback?: UpstreamConfig | undefined;
}

/** How long an Authorization header is reused before asking the kubeconfig's auth again. */
const AUTHORIZATION_TTL_MS = 5_000;

/**
 * A path prefix for the in-cluster service-account files: with it set, they are read from
 * `${prefix}/var/run/secrets/kubernetes.io/serviceaccount/` (token, ca.crt, namespace) instead
 * of the pod's mount, and in-cluster config is used even where a kubeconfig would be found
 * (`--kubeconfig` still wins). For running the proxy as a given service account outside a pod.
 */
export const IN_CLUSTER_PATH_PREFIX_ENV = 'KCP_IN_CLUSTER_PATH_PREFIX';

export interface LoadUpstreamConfigOptions {
  /** A kubeconfig file; default: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account. */
  readonly kubeconfig?: string | undefined;
  /** A context of that kubeconfig; default: its current-context. */
  readonly context?: string | undefined;
  /** Where the in-cluster files are (see IN_CLUSTER_PATH_PREFIX_ENV); default: that variable, if set. */
  readonly inClusterPathPrefix?: string | undefined;
  /** The clock of the credentials' reuse (AUTHORIZATION_TTL_MS); default: the real one. */
  readonly clock?: Clock | undefined;
}

export async function loadUpstreamConfig(options: LoadUpstreamConfigOptions = {}): Promise<UpstreamConfig> {
  const prefix = options.inClusterPathPrefix ?? nonEmpty(process.env[IN_CLUSTER_PATH_PREFIX_ENV]);
  if (options.kubeconfig === undefined && prefix !== undefined) checkInCluster(prefix);
  const location = locateKubeconfig({ kubeconfig: options.kubeconfig, inClusterPathPrefix: prefix });
  const config = await readKubeconfig(location);
  if (config !== undefined) {
    const context = options.context ?? config.currentContext;
    const { cluster, user } = currentEntries(config, context);
    if (!needsClientNode(user)) {
      if (cluster === undefined) throw new Error(`kubeconfig ${options.kubeconfig ?? '(default)'} has no cluster for context ${context}`);
      return staticConfig(cluster, user, `${location.source}, context ${context}`, options.clock ?? realClock);
    }
  }
  return clientNodeConfig(location, options);
}

/**
 * A user whose credentials need no plugin: client-node's applyHTTPSOptions and
 * applyAuthorizationHeader for the TLS files and the bearer token (a `token` wins over a token
 * file, as there).
 */
function staticConfig(cluster: Cluster, user: User | undefined, source: string, clock: Clock): UpstreamConfig {
  const tls: UpstreamTls = {
    ca: fileOrData(cluster.caFile, cluster.caData),
    cert: fileOrData(user?.certFile, user?.certData),
    key: fileOrData(user?.keyFile, user?.keyData),
    rejectUnauthorized: !cluster.skipTLSVerify,
    servername: cluster.tlsServerName,
  };
  const token = user?.token;
  const tokenFile = user === undefined ? undefined : tokenFileOf(user);
  let authorization: () => Promise<string | undefined>;
  if (token !== undefined && token !== '') {
    const header = `Bearer ${token}`;
    authorization = () => Promise.resolve(header);
  } else if (tokenFile !== undefined) {
    authorization = cachedFor(TOKEN_FILE_REREAD_MS, () => Promise.resolve(tokenFileHeader(tokenFile)), clock);
  } else {
    authorization = () => Promise.resolve(undefined);
  }
  return {
    server: new URL(cluster.server.replace(/\/+$/, '')),
    tls,
    authorization: cachedFor(AUTHORIZATION_TTL_MS, authorization, clock),
    source,
  };
}

/**
 * client-node's FileAuth (file_auth.ts): the token file's contents as they are, re-read when the
 * last read is older than this (its comment: "what the client-go library does"), so that a
 * token the kubelet rotates is taken up. FileAuth is not exported from client-node's root.
 */
const TOKEN_FILE_REREAD_MS = 60_000;

/** FileAuth.applyAuthentication's header: none for an empty file. */
function tokenFileHeader(path: string): string | undefined {
  const token = readFileSync(path).toString('utf8');
  return token === '' ? undefined : `Bearer ${token}`;
}

/** client-node's KubeConfig, loaded now: its plugins (exec, auth providers) and its merging of several files. */
async function clientNodeConfig(location: KubeconfigLocation, options: LoadUpstreamConfigOptions): Promise<UpstreamConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (location.kind === 'file') kc.loadFromFile(location.path);
  else if (location.kind === 'in-cluster') kc.loadFromCluster(location.prefix);
  else kc.loadFromDefault();
  if (options.context !== undefined) kc.setCurrentContext(options.context);
  if (kc.getCurrentCluster() === null) {
    throw new Error(`kubeconfig ${options.kubeconfig ?? '(default)'} has no cluster for context ${kc.getCurrentContext()}`);
  }
  return upstreamConfigFromKubeConfig(kc, location.source, options.clock ?? realClock);
}

/**
 * The upstream config of a KubeConfig already loaded (its current context): the library's entry
 * points take client-node's KubeConfig as their callers hold it. `source` names where it came from,
 * for logs and errors; `clock` times the credentials' reuse.
 */
export async function upstreamConfigFromKubeConfig(kc: KubeConfig, source: string, clock: Clock = realClock): Promise<UpstreamConfig> {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error(`kubeconfig ${source} has no cluster for context ${kc.getCurrentContext()}`);

  const applied = async (): Promise<RequestOptions> => {
    const opts: RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    return opts;
  };
  const first = await applied();
  const tls: UpstreamTls = {
    ca: asBuffer(first.ca),
    cert: asBuffer(first.cert),
    key: asBuffer(first.key),
    rejectUnauthorized: first.rejectUnauthorized ?? true,
    servername: first.servername,
  };
  const authorization = async (): Promise<string | undefined> => {
    const headers = (await applied()).headers;
    const header = headers !== undefined && !Array.isArray(headers) ? (headers as Record<string, unknown>).Authorization : undefined;
    return typeof header === 'string' ? header : undefined;
  };
  return {
    server: new URL(cluster.server.replace(/\/+$/, '')),
    tls,
    authorization: cachedFor(AUTHORIZATION_TTL_MS, authorization, clock),
    source: `${source}, context ${kc.getCurrentContext()}`,
  };
}

/**
 * The header reused for `ttlMs`: client-node re-reads files and runs exec plugins (which cache
 * until expiry) on every call, too much per request; rotated tokens still take effect.
 */
function cachedFor(ttlMs: number, read: () => Promise<string | undefined>, clock: Clock): () => Promise<string | undefined> {
  let cached: { value: string | undefined; until: number } | undefined;
  return async () => {
    const now = clock.now();
    if (cached === undefined || now >= cached.until) cached = { value: await read(), until: now + ttlMs };
    return cached.value;
  };
}

/** client-node's bufferFromFileOrString: a file wins over base64 data. */
function fileOrData(file: string | undefined, data: string | undefined): Buffer | undefined {
  if (file !== undefined && file !== '') return readFileSync(file);
  if (data !== undefined && data !== '') return Buffer.from(data, 'base64');
  return undefined;
}

/** What loadFromCluster leaves unchecked, said plainly instead of failing later. */
function checkInCluster(prefix: string): void {
  const missing = ['KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT'].filter((name) => nonEmpty(process.env[name]) === undefined);
  if (missing.length > 0) throw new Error(`in-cluster config needs ${missing.join(' and ')} (${IN_CLUSTER_PATH_PREFIX_ENV} is set)`);
  const token = `${prefix}${SERVICE_ACCOUNT_ROOT}/token`;
  if (!existsSync(token)) throw new Error(`no service-account token at ${token} (${IN_CLUSTER_PATH_PREFIX_ENV}=${prefix})`);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function asBuffer(value: unknown): Buffer | undefined {
  if (value === undefined || value === null) return undefined;
  if (Buffer.isBuffer(value)) return value;
  if (typeof value === 'string') return Buffer.from(value);
  throw new TypeError('unexpected TLS option type from the kubeconfig');
}
