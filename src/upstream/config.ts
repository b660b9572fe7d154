/**
 * Where the apiserver is and how to authenticate to it, from a kubeconfig or the in-cluster
 * service account, through @kubernetes/client-node's KubeConfig (which also runs exec and
 * auth-provider plugins and re-reads rotated service-account tokens).
 *
 * In-cluster (client-node's loadFromCluster, as client-go's rest.InClusterConfig): the apiserver
 * at $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, verified with the service account's
 * ca.crt, authenticated with its token file, which is re-read every 60 s (client-go's period),
 * so a token the kubelet rotates takes effect without a restart.
 */
import { existsSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';

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
/** client-node's SERVICEACCOUNT_ROOT (and the kubelet's mount of the service account's files). */
const SERVICE_ACCOUNT_ROOT = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface LoadUpstreamConfigOptions {
  /** A kubeconfig file; default: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account. */
  readonly kubeconfig?: string | undefined;
  /** A context of that kubeconfig; default: its current-context. */
  readonly context?: string | undefined;
  /** Where the in-cluster files are (see IN_CLUSTER_PATH_PREFIX_ENV); default: that variable, if set. */
  readonly inClusterPathPrefix?: string | undefined;
}

export async function loadUpstreamConfig(options: LoadUpstreamConfigOptions = {}): Promise<UpstreamConfig> {
  const kc = new KubeConfig();
  const prefix = options.inClusterPathPrefix ?? nonEmpty(process.env[IN_CLUSTER_PATH_PREFIX_ENV]);
  let source: string;
  if (options.kubeconfig !== undefined) {
    kc.loadFromFile(options.kubeconfig);
    source = options.kubeconfig;
  } else if (prefix !== undefined) {
    loadInCluster(kc, prefix);
    source = `in-cluster service account in ${prefix}${SERVICE_ACCOUNT_ROOT}`;
  } else {
    kc.loadFromDefault();
    source = 'default kubeconfig';
  }
  if (options.context !== undefined) kc.setCurrentContext(options.context);
  if (kc.getCurrentCluster() === null) {
    throw new Error(`kubeconfig ${options.kubeconfig ?? '(default)'} has no cluster for context ${kc.getCurrentContext()}`);
  }
  return upstreamConfigFromKubeConfig(kc, source);
}

/**
 * The upstream config of a KubeConfig already loaded (its current context): the library's entry
 * points take client-node's KubeConfig as their callers hold it. `source` names where it came from,
 * for logs and errors.
 */
export async function upstreamConfigFromKubeConfig(kc: KubeConfig, source: string): Promise<UpstreamConfig> {
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
  // Re-read at most every few seconds: client-node re-reads files and runs exec plugins (which
  // cache until expiry) on every call, too much per request; rotated tokens still take effect.
  let cached: { value: string | undefined; until: number } | undefined;
  return {
    server: new URL(cluster.server.replace(/\/+$/, '')),
    tls,
    async authorization() {
      const now = Date.now();
      if (cached === undefined || now >= cached.until) {
        const headers = (await applied()).headers;
        const header = headers !== undefined && !Array.isArray(headers) ? (headers as Record<string, unknown>).Authorization : undefined;
        cached = { value: typeof header === 'string' ? header : undefined, until: now + AUTHORIZATION_TTL_MS };
      }
      return cached.value;
    },
    source: `${source}, context ${kc.getCurrentContext()}`,
  };
}

/** loadFromCluster, with what it leaves unchecked said plainly instead of failing later. */
function loadInCluster(kc: KubeConfig, prefix: string): void {
  const missing = ['KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT'].filter((name) => nonEmpty(process.env[name]) === undefined);
  if (missing.length > 0) throw new Error(`in-cluster config needs ${missing.join(' and ')} (${IN_CLUSTER_PATH_PREFIX_ENV} is set)`);
  const token = `${prefix}${SERVICE_ACCOUNT_ROOT}/token`;
  if (!existsSync(token)) throw new Error(`no service-account token at ${token} (${IN_CLUSTER_PATH_PREFIX_ENV}=${prefix})`);
  kc.loadFromCluster(prefix);
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
