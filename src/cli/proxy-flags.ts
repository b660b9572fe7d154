/**
 * The proxy's flags, each declared once: kubectl proxy's names and defaults (kubectl's
 * pkg/cmd/proxy/proxy.go, NewProxyOptions / NewCmdProxy) plus the cache's own. The table yields
 * the parser's options (node:util parseArgs), the help text, the environment variable of each
 * flag (`--accept-hosts` ↔ `KCP_ACCEPT_HOSTS`) and the flags that only shared mode takes.
 * Values are read and checked by proxy-options.ts.
 */
import { DEFAULT_HTTP2_MAX_STREAMS_PER_CONNECTION } from '../server/http/http2-sessions.ts';
import { DEFAULT_LEASE_DURATION_MS, DEFAULT_RENEW_DEADLINE_MS, DEFAULT_RETRY_PERIOD_MS } from '../leaderelection/leader-elector.ts';
import {
  DEFAULT_CONSISTENCY_CHECK_PERIOD_MS,
  DEFAULT_MAX_STALENESS_MS,
  DEFAULT_STATE_SAVE_PERIOD_MS,
  LOG_LEVELS,
} from '../proxy/options.ts';
import { DEBUG_VERBOSITY } from '../proxy/logging.ts';
import { DEFAULT_ACCEPT_HOSTS, DEFAULT_ACCEPT_PATHS, DEFAULT_REJECT_METHODS, DEFAULT_REJECT_PATHS } from '../request/request-filter.ts';
import {
  DEFAULT_MAX_REQUESTS_INFLIGHT_PER_FLOW,
  DEFAULT_MAX_REVIEWS_INFLIGHT_PER_FLOW,
  DEFAULT_MAX_WATCHES_PER_FLOW,
} from '../server/pass-through/flow-limits.ts';
import {
  DEFAULT_MAX_TOKEN_REVIEWS_INFLIGHT,
  DEFAULT_TOKEN_REVIEW_BURST,
  DEFAULT_TOKEN_REVIEW_BURST_PER_ADDRESS,
  DEFAULT_TOKEN_REVIEW_QPS,
  DEFAULT_TOKEN_REVIEW_QPS_PER_ADDRESS,
} from '../server/pass-through/token-review-limits.ts';
import {
  DEFAULT_LARGE_HEAD_BURST_BYTES,
  DEFAULT_LARGE_HEAD_BYTES_PER_SECOND,
  DEFAULT_LARGE_HEADS_INFLIGHT_BYTES,
  LARGE_HEAD_BYTES,
} from '../server/pass-through/request-head-limits.ts';
import { DEFAULT_TLS_HANDSHAKES_PER_SECOND } from '../server/http/tls-handshakes.ts';
import { DEFAULT_TLS_MIN_VERSION } from '../server/tls/tls-settings.ts';
import {
  DEFAULT_ANONYMOUS_REFUSALS_BURST_PER_ADDRESS,
  DEFAULT_ANONYMOUS_REFUSALS_QPS_PER_ADDRESS,
} from '../server/pass-through/anonymous-refusals.ts';
import { DEFAULT_REFUSALS_BURST_PER_FLOW, DEFAULT_REFUSALS_QPS_PER_FLOW } from '../server/pass-through/flow-refusals.ts';

export const DEFAULT_PORT = 8001;
/** defaultAddress (kubectl's cmd/proxy/proxy.go): loopback only. */
export const DEFAULT_ADDRESS = '127.0.0.1';
export const DEFAULT_LOG_LEVEL = 'info';
/** Where a pool's Lease is when --pool-namespace is not given. */
export const DEFAULT_POOL_NAMESPACE = 'kube-system';

interface Flag {
  readonly name: string;
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  /** The value's placeholder in the help (`FILE`, `PORT`); none for a boolean. */
  readonly arg?: string;
  /** The help text's lines, as wrapped in the help's second column. */
  readonly help: readonly string[];
  /** Taken in shared mode only: given without --shared, it is an error. */
  readonly sharedOnly?: boolean;
}

/** Every flag, in the order the help lists them. */
export const PROXY_FLAGS = [
  {
    name: 'kubeconfig',
    type: 'string',
    arg: 'FILE',
    help: ["the cluster's kubeconfig (default: $KUBECONFIG, ~/.kube/config, then in-cluster)"],
  },
  { name: 'context', type: 'string', arg: 'NAME', help: ['a context of the kubeconfig (default: its current-context)'] },
  {
    name: 'server',
    type: 'string',
    arg: 'URL',
    help: [
      "the upstream to talk to instead of the kubeconfig's server, with its credentials:",
      'another kube-cache-proxy in shared mode, e.g. a node proxy for a sidecar',
    ],
  },
  { name: 'certificate-authority', type: 'string', arg: 'FILE', help: ["the CA that --server's certificate is verified against (PEM)"] },
  {
    name: 'fallback-to-apiserver',
    type: 'boolean',
    help: [
      "with --server: while that proxy cannot be reached, send every request to the kubeconfig's",
      'apiserver instead (same credentials), and go back once its /readyz answers; on by default,',
      '=false to turn it off',
    ],
  },
  {
    name: 'upstream-http2',
    type: 'boolean',
    help: [
      "the proxy's own requests to its upstream (its caches' lists and watches) over HTTP/2, a",
      'connection or two for every watch as client-go holds; pass-through stays on HTTP/1.1;',
      'on by default, =false for one HTTP/1.1 connection per watch',
    ],
  },
  {
    name: 'address',
    type: 'string',
    arg: 'IP',
    help: [`the IP address to serve on; one other than loopback needs HTTPS (default: ${DEFAULT_ADDRESS})`],
  },
  {
    name: 'port',
    type: 'string',
    short: 'p',
    arg: 'PORT',
    help: [`the port to serve on; 0 picks a free port (default: ${String(DEFAULT_PORT)})`],
  },
  { name: 'unix-socket', type: 'string', short: 'u', arg: 'PATH', help: ['serve on a Unix socket instead of address:port'] },
  {
    name: 'metrics-bind-address',
    type: 'string',
    arg: 'IP:PORT',
    help: [
      'a second listener, plain HTTP, for /metrics, /livez and /readyz only (never the API), so that',
      'a sidecar is scraped and probed from outside its pod: 0.0.0.0:10249 (:PORT: every interface);',
      'empty or 0: none (default)',
    ],
  },
  {
    name: 'shutdown-delay-duration',
    type: 'string',
    arg: 'DURATION',
    help: [
      "the apiserver's flag: on SIGTERM, /readyz fails at once and the proxy serves on for this",
      "long (Endpoints drop it, clients move away), then drains; set it below the pod's",
      'terminationGracePeriodSeconds (default: 0s)',
    ],
  },
  {
    name: 'tls-cert-file',
    type: 'string',
    arg: 'FILE',
    help: [
      'serve HTTPS with this certificate (PEM; the serving certificate first, then its',
      'chain up to the CA that clients trust); needs --tls-private-key-file',
    ],
  },
  { name: 'tls-private-key-file', type: 'string', arg: 'FILE', help: ["the certificate's private key (PEM)"] },
  {
    name: 'tls-generate',
    type: 'boolean',
    help: [
      'serve HTTPS with a CA and a certificate for localhost, 127.0.0.1 and ::1 (and',
      "--address) made at start; the CA's key is dropped once it has signed",
    ],
  },
  {
    name: 'tls-min-version',
    type: 'string',
    arg: 'VERSION',
    help: [
      "the apiserver's flag: the lowest TLS version served: VersionTLS10, VersionTLS11, VersionTLS12",
      `or VersionTLS13 (default: ${DEFAULT_TLS_MIN_VERSION})`,
    ],
  },
  {
    name: 'tls-cipher-suites',
    type: 'string',
    arg: 'LIST',
    help: [
      "the apiserver's flag: TLS 1.2 cipher suites in Go's names, comma-separated, in the server's",
      "order of preference, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (default: Node's); TLS 1.3's",
      'are always on, as in Go',
    ],
  },
  {
    name: 'tls-handshakes-per-second',
    type: 'string',
    arg: 'N',
    help: [
      'new TLS connections handed to the handshake a second, at most, in turn by source address',
      "(each holds the event loop ~2 ms: a burst of them would hold every client's reads);",
      `0: no pacing (default: ${String(DEFAULT_TLS_HANDSHAKES_PER_SECOND)})`,
    ],
  },
  {
    name: 'http2-max-streams-per-connection',
    type: 'string',
    arg: 'N',
    help: [
      "the apiserver's flag: the streams (requests and watches in flight) a client may open at once",
      'on one HTTP/2 connection; past it Go clients open another connection. 0: the default',
      `(${String(DEFAULT_HTTP2_MAX_STREAMS_PER_CONNECTION)}, the generic apiserver's recommended value: one connection for a`,
      "controller manager's every watch)",
    ],
  },
  {
    name: 'compress-loopback',
    type: 'boolean',
    help: [
      'gzip cached answers to clients on a loopback address too, as the apiserver gzips every',
      "client's (over 128 KiB, when asked); by default only clients across a network are gzipped:",
      'on loopback it costs CPU and saves nothing that matters',
    ],
  },
  {
    name: 'write-kubeconfig',
    type: 'string',
    arg: 'PATH',
    help: [
      'once serving, write a kubeconfig for apps there (replaced atomically): the',
      "proxy's https URL, the CA to trust, a placeholder token (the proxy uses its own);",
      "share its directory with the app's containers and set KUBECONFIG to it",
    ],
  },
  {
    name: 'shared',
    type: 'boolean',
    help: [
      'shared mode, for many clients (a proxy per node or per cluster): each request is',
      'authenticated (a bearer token by TokenReview, or a client certificate) and each',
      'read from the cache authorized (SubjectAccessReview) as the apiserver would;',
      "the rest goes upstream with the client's own credentials. Needed on an --address",
      'other than loopback, with HTTPS',
    ],
  },
  {
    name: 'client-ca-file',
    type: 'string',
    arg: 'FILE',
    sharedOnly: true,
    help: [
      'shared mode: client certificates signed by these CAs (PEM) identify their user (CN)',
      "and groups (O), as the apiserver's --client-ca-file (default: tokens only)",
    ],
  },
  {
    name: 'auth-token-audiences',
    type: 'string',
    arg: 'LIST',
    sharedOnly: true,
    help: ["shared mode: the audiences a token must be for (default: the apiserver's own)"],
  },
  {
    name: 'authentication-token-webhook-cache-ttl',
    type: 'string',
    arg: 'DURATION',
    sharedOnly: true,
    help: ["shared mode: how long a token's review is kept (default: 2m)"],
  },
  {
    name: 'authorization-webhook-cache-authorized-ttl',
    type: 'string',
    arg: 'DURATION',
    sharedOnly: true,
    help: ["shared mode: how long an allowed read's review is", 'kept (default: 5m)'],
  },
  {
    name: 'authorization-webhook-cache-unauthorized-ttl',
    type: 'string',
    arg: 'DURATION',
    sharedOnly: true,
    help: ["shared mode: how long a denied read's review is", 'kept (default: 30s)'],
  },
  {
    name: 'max-requests-inflight-per-flow',
    type: 'string',
    arg: 'N',
    help: [
      'requests one flow may have in flight, upgrades (exec, port-forward) included; past',
      "it, the apiserver's 429 with Retry-After. A flow is a user at a source address in",
      'shared mode (an address alone for a client without credentials), a connection in',
      `sidecar mode; 0: no limit (default: ${String(DEFAULT_MAX_REQUESTS_INFLIGHT_PER_FLOW)})`,
    ],
  },
  {
    name: 'max-watches-per-flow',
    type: 'string',
    arg: 'N',
    help: [
      `watches one flow may have open, from the cache or passed through; 0: no limit (default: ${String(DEFAULT_MAX_WATCHES_PER_FLOW)})`,
    ],
  },
  {
    name: 'max-reviews-inflight-per-flow',
    type: 'string',
    arg: 'N',
    sharedOnly: true,
    help: [
      'shared mode: SubjectAccessReviews one flow may wait on at once; 0: no limit',
      `(default: ${String(DEFAULT_MAX_REVIEWS_INFLIGHT_PER_FLOW)})`,
    ],
  },
  {
    name: 'token-review-qps-per-address',
    type: 'string',
    arg: 'QPS',
    sharedOnly: true,
    help: [
      'shared mode: TokenReviews of tokens not in the token cache, per source address, a',
      'second (a token bucket; a review that authenticates its token gives its token back,',
      `so only refused tokens spend it); 0: no limit (default: ${String(DEFAULT_TOKEN_REVIEW_QPS_PER_ADDRESS)})`,
    ],
  },
  {
    name: 'token-review-burst-per-address',
    type: 'string',
    arg: 'N',
    sharedOnly: true,
    help: [`shared mode: the per-address bucket's size (default: ${String(DEFAULT_TOKEN_REVIEW_BURST_PER_ADDRESS)})`],
  },
  {
    name: 'token-review-qps',
    type: 'string',
    arg: 'QPS',
    sharedOnly: true,
    help: ['shared mode: the same for the whole proxy, over every address; 0: no limit', `(default: ${String(DEFAULT_TOKEN_REVIEW_QPS)})`],
  },
  {
    name: 'token-review-burst',
    type: 'string',
    arg: 'N',
    sharedOnly: true,
    help: [`shared mode: the whole proxy's bucket's size (default: ${String(DEFAULT_TOKEN_REVIEW_BURST)})`],
  },
  {
    name: 'max-token-reviews-inflight',
    type: 'string',
    arg: 'N',
    sharedOnly: true,
    help: [`shared mode: TokenReviews in flight at once; 0: no limit (default: ${String(DEFAULT_MAX_TOKEN_REVIEWS_INFLIGHT)})`],
  },
  {
    name: 'anonymous-refusals-qps-per-address',
    type: 'string',
    arg: 'QPS',
    sharedOnly: true,
    help: [
      'shared mode: requests without credentials passed to the apiserver, per source address, a',
      'second (a token bucket; an answer below 400 gives its token back, so only the',
      "apiserver's refusals spend it); past it, its 429; 0: no limit",
      `(default: ${String(DEFAULT_ANONYMOUS_REFUSALS_QPS_PER_ADDRESS)})`,
    ],
  },
  {
    name: 'anonymous-refusals-burst-per-address',
    type: 'string',
    arg: 'N',
    sharedOnly: true,
    help: [`shared mode: that bucket's size (default: ${String(DEFAULT_ANONYMOUS_REFUSALS_BURST_PER_ADDRESS)})`],
  },
  {
    name: 'refusals-qps-per-flow',
    type: 'string',
    arg: 'QPS',
    sharedOnly: true,
    help: [
      "shared mode: an identified client's refused requests (answers of 4xx but 404, 409 and 429,",
      "the proxy's or the apiserver's), per user and source address, a second (a token bucket);",
      `past it, its 429; 0: no limit (default: ${String(DEFAULT_REFUSALS_QPS_PER_FLOW)})`,
    ],
  },
  {
    name: 'refusals-burst-per-flow',
    type: 'string',
    arg: 'N',
    sharedOnly: true,
    help: [`shared mode: that bucket's size (default: ${String(DEFAULT_REFUSALS_BURST_PER_FLOW)})`],
  },
  {
    name: 'large-request-heads-per-address',
    type: 'string',
    arg: 'BYTES',
    sharedOnly: true,
    help: [
      `shared mode: bytes a second of request heads (target and headers) over ${String(LARGE_HEAD_BYTES / 1024)} KiB each, per`,
      "source address (a token bucket; smaller heads are never counted); past it, the apiserver's",
      `429 before the request is read; 0: no limit (default: ${String(DEFAULT_LARGE_HEAD_BYTES_PER_SECOND / 1024)}Ki)`,
    ],
  },
  {
    name: 'large-request-heads-burst-per-address',
    type: 'string',
    arg: 'BYTES',
    sharedOnly: true,
    help: [`shared mode: that bucket's size, at least 1028Ki (default: ${String(DEFAULT_LARGE_HEAD_BURST_BYTES / 1024)}Ki)`],
  },
  {
    name: 'max-large-request-heads-inflight-per-address',
    type: 'string',
    arg: 'BYTES',
    sharedOnly: true,
    help: [
      'shared mode: bytes of such heads one source address may have in flight at once (a watch',
      `holds its head for its life), at least 1028Ki; 0: no limit (default: ${String(DEFAULT_LARGE_HEADS_INFLIGHT_BYTES)})`,
    ],
  },
  {
    name: 'accept-hosts',
    type: 'string',
    arg: 'RE,...',
    help: [`regexps the Host header's hostname must match (default: ${DEFAULT_ACCEPT_HOSTS};`, 'in shared mode: any)'],
  },
  { name: 'accept-paths', type: 'string', arg: 'RE,...', help: [`regexps for paths to accept (default: ${DEFAULT_ACCEPT_PATHS})`] },
  {
    name: 'reject-paths',
    type: 'string',
    arg: 'RE,...',
    help: [
      `regexps for paths to reject, even if accepted (default: ${DEFAULT_REJECT_PATHS};`,
      'in shared mode: none, the apiserver authorizes the client)',
    ],
  },
  {
    name: 'reject-methods',
    type: 'string',
    arg: 'RE,...',
    help: [`regexps for HTTP methods to reject, e.g. 'POST,PUT,PATCH' (default: ${DEFAULT_REJECT_METHODS}, none)`],
  },
  {
    name: 'resources',
    type: 'string',
    arg: 'LIST',
    help: [
      'resources to cache, e.g. configmaps,pods,deployments.apps (default: every listable and',
      'watchable type, cached on its first read; secrets only when named). A resource may be',
      'cached in a selector scope: RESOURCE:FIELDS[;labels=LABELS], the selectors written with',
      '+ for their commas, e.g. pods:spec.nodeName=node-1 or pods:spec.nodeName=n1;labels=app=web;',
      'that cache answers only LISTs and WATCHes whose selectors include every requirement of its',
      'scope (the narrowest such cache answers); other reads of the type go to its whole cache',
      'if named too, else to the apiserver. Scopes are only as named here, never chosen',
      'by the proxy',
    ],
  },
  { name: 'namespace', type: 'string', arg: 'NAME', help: ['cache only this namespace (default: all)'] },
  {
    name: 'read-consistency',
    type: 'string',
    arg: 'MODE',
    help: [
      'how reads without a resourceVersion ("most recent") are answered:',
      'bounded: from the cache while its upstream watch is open and heard from within',
      '--max-staleness, with read-your-writes for writes through the proxy (default);',
      'strong: linearizable; a GET or LIST comes from the cache only once proven as fresh',
      'as the apiserver (a probe, and for a quiet type a freshness proof), else from it',
    ],
  },
  {
    name: 'strong-resources',
    type: 'string',
    arg: 'LIST',
    help: ['resources whose reads are strong whatever --read-consistency says,', 'e.g. leases.coordination.k8s.io (default: none)'],
  },
  {
    name: 'max-staleness',
    type: 'string',
    arg: 'DURATION',
    help: [
      "bounded reads: the longest the cache's watch may be silent (no event, no",
      `bookmark) for reads to come from it, e.g. 75s, 2m (default: ${String(DEFAULT_MAX_STALENESS_MS / 1000)}s)`,
    ],
  },
  {
    name: 'consistency-check-period',
    type: 'string',
    arg: 'DURATION',
    help: [
      "how often each cache is compared with the apiserver's LIST at the cache's",
      'resourceVersion (metadata only); a cache that differs is relisted; 0 turns the',
      `checks off (default: ${String(DEFAULT_CONSISTENCY_CHECK_PERIOD_MS / 60_000)}m, the apiserver's own period)`,
    ],
  },
  {
    name: 'state-dir',
    type: 'string',
    arg: 'DIR',
    help: [
      "where each cache's objects and resourceVersion are kept across a restart (an",
      'emptyDir, or a hostPath for a node proxy): a restarted proxy answers',
      'resourceVersion=0 reads at once and resumes its watches without a LIST',
      "(default: none; needs get on the kube-system namespace, the cluster's identity)",
    ],
  },
  {
    name: 'state-save-period',
    type: 'string',
    arg: 'DURATION',
    help: [
      "how often the caches' changed states are written to --state-dir while running,",
      `besides at shutdown; 0: only at shutdown (default: ${String(DEFAULT_STATE_SAVE_PERIOD_MS / 1000)}s)`,
    ],
  },
  {
    name: 'memory-limit',
    type: 'string',
    arg: 'QUANTITY',
    help: [
      "the memory the proxy may use, e.g. 256Mi or 268435456 (the downward API's",
      'limits.memory); what it holds beyond its cached objects is sized to fit under it',
      "(default: its cgroup's limit, memory.max or memory.limit_in_bytes; none: fixed bounds)",
    ],
  },
  {
    name: 'pool',
    type: 'string',
    arg: 'NAME',
    sharedOnly: true,
    help: [
      'shared mode: join the node pool NAME: its members elect a leader (the Lease',
      'kube-cache-proxy-pool-NAME); only the leader watches the apiserver for the types',
      'cached whole, the others read them from it (the apiserver while none answers)',
    ],
  },
  {
    name: 'pool-namespace',
    type: 'string',
    arg: 'NS',
    sharedOnly: true,
    help: [`the pool's Lease's namespace (default: ${DEFAULT_POOL_NAMESPACE})`],
  },
  {
    name: 'pool-advertise',
    type: 'string',
    arg: 'URL',
    sharedOnly: true,
    help: ["the URL the pool's other members reach this proxy at, e.g. https://$(POD_IP):8443", '(required with --pool)'],
  },
  {
    name: 'pool-certificate-authority',
    type: 'string',
    arg: 'FILE',
    sharedOnly: true,
    help: ["the CA a pool leader's serving certificate is verified against (default: the upstream's)"],
  },
  {
    name: 'pool-tls-server-name',
    type: 'string',
    arg: 'NAME',
    sharedOnly: true,
    help: [
      "the name a pool leader's serving certificate is verified for, e.g. the node",
      "proxies' Service name (default: the host of its advertised URL)",
    ],
  },
  {
    name: 'pool-lease-duration',
    type: 'string',
    arg: 'DURATION',
    sharedOnly: true,
    help: [
      'how long the members wait before taking over an unrenewed lease, whole seconds',
      `(default: ${String(DEFAULT_LEASE_DURATION_MS / 1000)}s); the renew deadline and the retry period follow it`,
      `(${String(DEFAULT_RENEW_DEADLINE_MS / 1000)}s and ${String(DEFAULT_RETRY_PERIOD_MS / 1000)}s at the default, client-go's)`,
    ],
  },
  {
    name: 'logging-format',
    type: 'string',
    arg: 'FORMAT',
    help: ["component-base's: text (klog's lines, the default) or json (its JSON: ts, v, msg, err)"],
  },
  {
    name: 'v',
    type: 'string',
    short: 'v',
    arg: 'LEVEL',
    help: [`klog's verbosity: ${String(DEBUG_VERBOSITY)} and above logs the debug lines, one per request among them (default: 0)`],
  },
  {
    name: 'log-level',
    type: 'string',
    arg: 'LEVEL',
    help: [`what is logged at all: ${LOG_LEVELS.join(', ')} (default: ${DEFAULT_LOG_LEVEL}; -v ${String(DEBUG_VERBOSITY)}: debug)`],
  },
  { name: 'help', type: 'boolean', short: 'h', help: ['print this help'] },
] as const satisfies readonly Flag[];

export type FlagName = (typeof PROXY_FLAGS)[number]['name'];
export type BooleanFlag = Extract<(typeof PROXY_FLAGS)[number], { readonly type: 'boolean' }>['name'];
export type ValueFlag = Exclude<FlagName, BooleanFlag>;

/** The flags taken in shared mode only. */
export const SHARED_ONLY_FLAGS: readonly ValueFlag[] = PROXY_FLAGS.filter(
  (f): f is Extract<typeof f, { sharedOnly: true }> => 'sharedOnly' in f && f.sharedOnly,
).map((f) => f.name);

type TableFlag = (typeof PROXY_FLAGS)[number];

/** node:util parseArgs options, typed per flag (so a string flag's value is a string). */
type ParseOptions = {
  readonly [F in TableFlag as F['name']]: F extends { readonly short: infer S extends string }
    ? { readonly type: F['type']; readonly short: S }
    : { readonly type: F['type'] };
};

/** The table as node:util parseArgs options. */
export const PARSE_OPTIONS = Object.fromEntries(
  PROXY_FLAGS.map((f: TableFlag) => [f.name, 'short' in f ? { type: f.type, short: f.short } : { type: f.type }]),
) as ParseOptions;

/** The boolean flags' names: each also takes `=true` or `=false` (boolean-flags.ts). */
export const BOOLEAN_FLAGS: ReadonlySet<string> = new Set(PROXY_FLAGS.filter((f: TableFlag) => f.type === 'boolean').map((f) => f.name));

/** `--accept-hosts` → `KCP_ACCEPT_HOSTS`. */
export function envName(flag: string): string {
  return `KCP_${flag.toUpperCase().replaceAll('-', '_')}`;
}

/** Where a flag's help text begins: after two spaces and the flag's column. */
const HELP_COLUMN = 27;

/** A flag's lines in the help: `  -p, --port PORT` then its text at HELP_COLUMN (or two spaces after a longer flag). */
function usageLines(flag: Flag): string[] {
  const left = `  ${flag.short === undefined ? '' : `-${flag.short}, `}--${flag.name}${flag.arg === undefined ? '' : ` ${flag.arg}`}`;
  const [first = '', ...more] = flag.help;
  const gap = left.length < HELP_COLUMN ? ' '.repeat(HELP_COLUMN - left.length) : '  ';
  return [`${left}${gap}${first}`, ...more.map((line) => `${' '.repeat(HELP_COLUMN)}${line}`)];
}

export const PROXY_FLAGS_USAGE = [
  'Options (each also as an environment variable KCP_<FLAG_IN_UPPER_SNAKE>, e.g. KCP_PORT; a flag wins):',
  ...PROXY_FLAGS.flatMap((flag: Flag) => usageLines(flag)),
].join('\n');
