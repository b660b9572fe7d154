/**
 * Where the apiserver is and how to authenticate to it, from a kubeconfig or the in-cluster
 * service account, through @kubernetes/client-node's KubeConfig (which also runs exec and
 * auth-provider plugins and re-reads rotated service-account tokens).
 */
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

export interface LoadUpstreamConfigOptions {
  /** A kubeconfig file; default: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account. */
  readonly kubeconfig?: string | undefined;
  /** A context of that kubeconfig; default: its current-context. */
  readonly context?: string | undefined;
}

export async function loadUpstreamConfig(options: LoadUpstreamConfigOptions = {}): Promise<UpstreamConfig> {
  const kc = new KubeConfig();
  if (options.kubeconfig !== undefined) kc.loadFromFile(options.kubeconfig);
  else kc.loadFromDefault();
  if (options.context !== undefined) kc.setCurrentContext(options.context);
  const cluster = kc.getCurrentCluster();
  if (cluster === null) {
    throw new Error(`kubeconfig ${options.kubeconfig ?? '(default)'} has no cluster for context ${kc.getCurrentContext()}`);
  }

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
    source: `${options.kubeconfig ?? 'default kubeconfig'}, context ${kc.getCurrentContext()}`,
  };
}

function asBuffer(value: unknown): Buffer | undefined {
  if (value === undefined || value === null) return undefined;
  if (Buffer.isBuffer(value)) return value;
  if (typeof value === 'string') return Buffer.from(value);
  throw new TypeError('unexpected TLS option type from the kubeconfig');
}
