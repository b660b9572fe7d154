/**
 * The upstream the proxy talks to: the kubeconfig's (or the in-cluster) configuration, with
 * kubectl's --server and --certificate-authority over it.
 */
import { readFileSync } from 'node:fs';
import { loadUpstreamConfig } from '../upstream/config.ts';
import type { UpstreamConfig } from '../upstream/config.ts';
import { CliError } from './cli-error.ts';
import type { ProxyOptions } from './options.ts';

/**
 * A chained proxy's connection to its upstream proxy: on the same node or in the cluster, made in
 * milliseconds when it is there; past this it is taken as gone, and the apiserver is used.
 */
export const UPSTREAM_PROXY_CONNECT_TIMEOUT_MS = 3_000;

/** Loads the upstream from the options' kubeconfig/context, with an error that says what to do. */
export async function loadUpstream(
  options: Pick<ProxyOptions, 'kubeconfig' | 'context'> &
    Partial<Pick<ProxyOptions, 'server' | 'certificateAuthority' | 'fallbackToApiserver' | 'upstreamHttp2'>>,
): Promise<UpstreamConfig> {
  let config: UpstreamConfig;
  try {
    const loaded = await loadUpstreamConfig({ kubeconfig: options.kubeconfig, context: options.context });
    config = options.upstreamHttp2 === undefined ? loaded : { ...loaded, http2: options.upstreamHttp2 };
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new CliError(
      `cannot load the cluster's configuration (${options.kubeconfig ?? 'default kubeconfig'}${options.context === undefined ? '' : `, context ${options.context}`}): ${detail}`,
      'Pass --kubeconfig FILE (and --context NAME), set $KUBECONFIG, or run in a pod with a service account.',
    );
  }
  const chained = withServer(config, options.server, options.certificateAuthority);
  // A chained proxy (--server) keeps the kubeconfig's apiserver to fall back on (fallback-client.ts).
  if (options.server === undefined || options.fallbackToApiserver === false) return chained;
  return { ...chained, connectTimeoutMs: UPSTREAM_PROXY_CONNECT_TIMEOUT_MS, fallback: config };
}

/**
 * kubectl's --server and --certificate-authority over a loaded config: another upstream (a node
 * proxy), reached with the same credentials. The kubeconfig's TLS server name goes with its server.
 */
export function withServer(config: UpstreamConfig, server: string | undefined, caFile: string | undefined): UpstreamConfig {
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
