/**
 * What the proxy is started with (startProxy): the options the command line and the `KCP_*`
 * variables set (src/cli/proxy-options.ts parses them), as values; and what of the cache the
 * command line reads them with (its default staleness bound, its parser of a `--resources`
 * entry), so that the command reaches the cache through the composition root only.
 */
import type { LoggingFormat } from './logging.ts';
import type { NodeTlsVersion } from '../server/tls/tls-settings.ts';
import type { BindAddress } from '../server/http/metrics-listener.ts';
import type { ReadConsistency } from '../cache/consistency.ts';
export type { ReadConsistency } from '../cache/consistency.ts';
export { DEFAULT_MAX_STALENESS_MS } from '../cache/consistency.ts';
export { DEFAULT_CONSISTENCY_CHECK_PERIOD_MS } from '../cache/consistency-checker.ts';
export { DEFAULT_STATE_SAVE_PERIOD_MS } from '../cache/state-dir.ts';
export { parseScopeEntry } from '../cache/selector-scope.ts';
import type { RequestFilterOptions } from '../request/request-filter.ts';
import type { FlowLimitSettings } from '../server/pass-through/flow-limits.ts';
import type { TokenReviewLimitSettings } from '../server/pass-through/token-review-limits.ts';
import type { RequestHeadLimitSettings } from '../server/pass-through/request-head-limits.ts';
import type { AnonymousRefusalLimitSettings } from '../server/pass-through/anonymous-refusals.ts';
import type { FlowRefusalLimitSettings } from '../server/pass-through/flow-refusals.ts';

/** pino's levels, as Fastify's logger takes them. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface ProxyOptions {
  /** A kubeconfig file; undefined: $KUBECONFIG, ~/.kube/config, then in-cluster. */
  readonly kubeconfig: string | undefined;
  /** A context of the kubeconfig; undefined: its current-context. */
  readonly context: string | undefined;
  /**
   * kubectl's --server: the upstream's URL in place of the kubeconfig's (a node proxy, for a
   * sidecar chained to it), its credentials kept; undefined: the kubeconfig's.
   */
  readonly server: string | undefined;
  /** kubectl's --certificate-authority: the CA file the upstream's certificate is verified against. */
  readonly certificateAuthority: string | undefined;
  /** With --server: while that upstream cannot be reached, use the kubeconfig's apiserver (--fallback-to-apiserver, default true). */
  readonly fallbackToApiserver?: boolean | undefined;
  /** --upstream-http2: the proxy's own requests to its upstream over HTTP/2 (upstream/client.ts); undefined: the default, on. */
  readonly upstreamHttp2?: boolean | undefined;
  readonly address: string;
  /** 0: the system picks a free port. */
  readonly port: number;
  /** A Unix socket to serve on instead of address:port. */
  readonly unixSocket: string | undefined;
  /** --metrics-bind-address: a second listener for /metrics and health only (server/http/metrics-listener.ts); undefined: none. */
  readonly metricsBindAddress?: BindAddress | undefined;
  /** --shutdown-delay-duration: how long the proxy keeps serving, not ready, after SIGTERM before it drains; undefined or 0: none. */
  readonly shutdownDelayMs?: number | undefined;
  readonly filter: RequestFilterOptions;
  /**
   * Resources to cache, as `resource` (core group) or `resource.group`, e.g. `deployments.apps`;
   * empty: every listable and watchable type, cached on its first read (secrets only when named).
   * An entry may name a selector scope after a colon (`pods:spec.nodeName=node-1`,
   * cache/selector-scope.ts): that cache holds only what the scope selects.
   */
  readonly resources: readonly string[];
  /** Cache only this namespace; undefined: all namespaces. */
  readonly namespace: string | undefined;
  /** What is logged at all: --log-level, or debug at -v 4 and above. */
  readonly logLevel: LogLevel;
  /** --logging-format (component-base's): klog's text lines (default) or its JSON. */
  readonly loggingFormat?: LoggingFormat | undefined;
  /** How RV-unset ("most recent") reads are answered (cache/consistency.ts). */
  readonly readConsistency: ReadConsistency;
  /** Types (`resource` or `resource.group`) whose RV-unset reads are strong whatever readConsistency says. */
  readonly strongResources: readonly string[];
  /** Bounded reads: the most time since the cache's watch last proved progress. */
  readonly maxStalenessMs: number;
  /** --consistency-check-period: how often each cache is compared with the apiserver (cache/consistency-checker.ts); 0: never; undefined: the default. */
  readonly consistencyCheckPeriodMs?: number | undefined;
  /** --state-dir: where each cache's state is kept across a restart (cache/state-dir.ts); undefined: nowhere. */
  readonly stateDir?: string | undefined;
  /** --state-save-period: how often the caches' changed states are written while running; 0: only at shutdown; undefined: the default. */
  readonly stateSavePeriodMs?: number | undefined;
  /** HTTPS serving; undefined: plain HTTP (loopback and Unix sockets only). */
  readonly tls: TlsServing | undefined;
  /** --tls-min-version, as Node names it; undefined: TLS 1.2 (the apiserver's default). */
  readonly tlsMinVersion?: NodeTlsVersion | undefined;
  /** --tls-cipher-suites as Node's `ciphers` string (server/tls/tls-settings.ts); undefined: Node's defaults. */
  readonly tlsCiphers?: string | undefined;
  /** --tls-handshakes-per-second: new TLS connections handed to the handshake a second (server/http/tls-handshakes.ts); 0: no pacing; undefined: the default. */
  readonly tlsHandshakesPerSecond?: number | undefined;
  /** --http2-max-streams-per-connection (server/http/http2-sessions.ts); undefined: the default. */
  readonly http2MaxStreamsPerConnection?: number | undefined;
  /**
   * --compress-loopback: gzip cached answers to loopback clients too (server/serving/response-compression.ts);
   * default false: only clients across a network.
   */
  readonly compressLoopback?: boolean | undefined;
  /** Where to write a kubeconfig for apps (HTTPS only); undefined: none. */
  readonly writeKubeconfig: string | undefined;
  /** Shared mode (many clients, each with its own identity); undefined: sidecar mode. */
  readonly shared: SharedServing | undefined;
  /** A node pool this proxy is a member of (--pool); undefined: none, every type watched from the upstream. */
  readonly pool?: PoolMembership | undefined;
  /** --memory-limit in bytes: the limit the memory budget follows, in place of the cgroup's; undefined: the cgroup's. */
  readonly memoryLimitBytes: number | undefined;
  /**
   * Per-flow limits (server/pass-through/flow-limits.ts; 0: none): --max-requests-inflight-per-flow,
   * --max-watches-per-flow and, in shared mode, --max-reviews-inflight-per-flow.
   */
  readonly flowLimits: FlowLimitSettings;
  readonly help: boolean;
}

/**
 * Shared mode's settings, named as the apiserver's webhook authenticator and authorizer flags
 * (and kube-rbac-proxy's) are: who may use the proxy is whom the apiserver accepts, and a read
 * from the cache is allowed when the apiserver's authorizer allows it.
 */
export interface SharedServing {
  /** --client-ca-file: client certificates verified against it identify their users; undefined: tokens only. */
  readonly clientCaFile: string | undefined;
  /** --auth-token-audiences: the audiences a token must be for; empty: the apiserver's own. */
  readonly audiences: readonly string[];
  readonly tokenCacheTtlMs: number;
  readonly authorizedTtlMs: number;
  readonly unauthorizedTtlMs: number;
  /** The limits on TokenReviews of tokens the token cache does not know (server/pass-through/token-review-limits.ts). */
  readonly tokenReviewLimits: TokenReviewLimitSettings;
  /** What large request heads may cost per source address (server/pass-through/request-head-limits.ts). */
  readonly requestHeadLimits: RequestHeadLimitSettings;
  /** What anonymous requests the apiserver refuses may cost per source address (server/pass-through/anonymous-refusals.ts). */
  readonly anonymousRefusalLimits: AnonymousRefusalLimitSettings;
  /** What an identified flow's refused requests may cost (server/pass-through/flow-refusals.ts). */
  readonly flowRefusalLimits: FlowRefusalLimitSettings;
}

/**
 * How the proxy serves HTTPS: with the certificate and key of files (the apiserver's
 * --tls-cert-file and --tls-private-key-file), or with a CA and a certificate it makes at start.
 */
export type TlsServing = { readonly kind: 'files'; readonly certFile: string; readonly keyFile: string } | { readonly kind: 'generate' };

/**
 * A node pool's membership (--pool and its flags): the members elect a leader through the Lease
 * `kube-cache-proxy-pool-NAME`; only the leader watches the apiserver for the pool-wide types
 * (those cached whole), the others read them from it.
 */
export interface PoolMembership {
  readonly name: string;
  /** The Lease's namespace. */
  readonly namespace: string;
  /** The URL the other members reach this proxy at; also its identity in the Lease (holderIdentity). */
  readonly advertise: string;
  /** The CA a leader's serving certificate is verified against (PEM file); undefined: the upstream's CA. */
  readonly certificateAuthority: string | undefined;
  /** The name a leader's serving certificate is verified for (kubeconfig's tls-server-name); undefined: the advertised URL's host. */
  readonly tlsServerName?: string | undefined;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}
