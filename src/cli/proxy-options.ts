/**
 * The proxy's options read from its flags (declared in proxy-flags.ts) and their environment
 * variables `KCP_<FLAG_IN_UPPER_SNAKE>` (`--accept-hosts` ↔ `KCP_ACCEPT_HOSTS`): a flag wins over
 * its variable, and a variable set to the empty string counts as unset. Each value is checked here,
 * with an error that says where it came from, and so are the combinations kubectl and the
 * apiserver refuse.
 */
import { DEFAULT_HTTP2_MAX_STREAMS_PER_CONNECTION } from '../server/http/http2-sessions.ts';
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import {
  DEFAULT_ACCEPT_HOSTS,
  DEFAULT_ACCEPT_PATHS,
  DEFAULT_REJECT_METHODS,
  DEFAULT_REJECT_PATHS,
  RegexpSyntaxError,
  makeRegexpArray,
} from '../request/request-filter.ts';
import { ipBytes } from '../server/tls/serving-certificate.ts';
import { CliError } from '../proxy/cli-error.ts';
import { DEFAULT_MAX_STALENESS_MS, LOG_LEVELS, parseScopeEntry } from '../proxy/options.ts';
import {
  DEFAULT_ADDRESS,
  DEFAULT_LOG_LEVEL,
  DEFAULT_POOL_NAMESPACE,
  DEFAULT_PORT,
  BOOLEAN_FLAGS,
  PARSE_OPTIONS,
  SHARED_ONLY_FLAGS,
  envName,
} from './proxy-flags.ts';
import { DEFAULT_LEASE_DURATION_MS, DEFAULT_RENEW_DEADLINE_MS, DEFAULT_RETRY_PERIOD_MS } from '../leaderelection/leader-elector.ts';
import type { BooleanFlag, ValueFlag } from './proxy-flags.ts';
import type { LogLevel, PoolMembership, ProxyOptions, ReadConsistency, SharedServing, TlsServing } from '../proxy/options.ts';
import type { BindAddress } from '../server/http/metrics-listener.ts';
import { DEBUG_VERBOSITY, LOGGING_FORMATS } from '../proxy/logging.ts';
import type { LoggingFormat } from '../proxy/logging.ts';
import { DEFAULT_TLS_MIN_VERSION, TLS_CIPHER_SUITE_NAMES, TLS_VERSIONS, tlsCiphers, tlsMinVersion } from '../server/tls/tls-settings.ts';
import type { NodeTlsVersion } from '../server/tls/tls-settings.ts';
import { DEFAULT_TOKEN_CACHE_TTL_MS } from '../auth/token-review.ts';
import { DEFAULT_ALLOWED_TTL_MS, DEFAULT_DENIED_TTL_MS } from '../auth/subject-access-review.ts';
import {
  DEFAULT_MAX_REQUESTS_INFLIGHT_PER_FLOW,
  DEFAULT_MAX_REVIEWS_INFLIGHT_PER_FLOW,
  DEFAULT_MAX_WATCHES_PER_FLOW,
} from '../server/pass-through/flow-limits.ts';
import type { FlowLimitSettings } from '../server/pass-through/flow-limits.ts';
import {
  DEFAULT_MAX_TOKEN_REVIEWS_INFLIGHT,
  DEFAULT_TOKEN_REVIEW_BURST,
  DEFAULT_TOKEN_REVIEW_BURST_PER_ADDRESS,
  DEFAULT_TOKEN_REVIEW_QPS,
  DEFAULT_TOKEN_REVIEW_QPS_PER_ADDRESS,
} from '../server/pass-through/token-review-limits.ts';
import type { TokenReviewLimitSettings } from '../server/pass-through/token-review-limits.ts';
import {
  DEFAULT_ANONYMOUS_REFUSALS_BURST_PER_ADDRESS,
  DEFAULT_ANONYMOUS_REFUSALS_QPS_PER_ADDRESS,
} from '../server/pass-through/anonymous-refusals.ts';
import { DEFAULT_REFUSALS_BURST_PER_FLOW, DEFAULT_REFUSALS_QPS_PER_FLOW } from '../server/pass-through/flow-refusals.ts';
import type { FlowRefusalLimitSettings } from '../server/pass-through/flow-refusals.ts';
import type { AnonymousRefusalLimitSettings } from '../server/pass-through/anonymous-refusals.ts';
import type { RequestHeadLimitSettings } from '../server/pass-through/request-head-limits.ts';
import {
  DEFAULT_LARGE_HEAD_BURST_BYTES,
  DEFAULT_LARGE_HEAD_BYTES_PER_SECOND,
  DEFAULT_LARGE_HEADS_INFLIGHT_BYTES,
} from '../server/pass-through/request-head-limits.ts';
import { MAX_HEADER_BYTES } from '../request/client-errors.ts';
import { parseGoDurationMs } from '../kube/go-duration.ts';
import { goParseBool, takeBooleanValues } from './boolean-flags.ts';
import { DEFAULT_TLS_HANDSHAKES_PER_SECOND } from '../server/http/tls-handshakes.ts';

/** A value and where it came from, for error messages (`--port 70000` or `KCP_PORT=70000`). */
interface Setting {
  readonly value: string;
  readonly from: string;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A resource (plural, lower case) and an optional API group, both DNS-1123 names. */
const RESOURCE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function parseProxyOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ProxyOptions {
  let parsed;
  const booleans = takeBooleanValues(argv, BOOLEAN_FLAGS);
  try {
    parsed = parseArgs({ args: booleans.args, options: PARSE_OPTIONS, allowPositionals: false, strict: true });
  } catch (error) {
    if (error instanceof TypeError) throw new CliError(error.message, 'See kube-cache-proxy proxy --help.');
    throw error;
  }
  const { values } = parsed;
  const setting = (flag: ValueFlag): Setting | undefined => {
    const fromFlag = values[flag];
    if (fromFlag !== undefined) return { value: fromFlag, from: `--${flag} ${JSON.stringify(fromFlag)}` };
    const name = envName(flag);
    const fromEnv = env[name];
    if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, from: `${name}=${JSON.stringify(fromEnv)}` };
    return undefined;
  };

  /** A boolean flag, or its variable as Go's strconv.ParseBool reads it. */
  const flagOrEnv = (flag: Exclude<BooleanFlag, 'help'>): Setting | undefined => {
    const given = booleans.given.get(flag);
    if (given !== undefined) return { value: String(given.value), from: given.arg };
    const name = envName(flag);
    const fromEnv = env[name];
    if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, from: `${name}=${JSON.stringify(fromEnv)}` };
    return undefined;
  };

  const port = parsePort(setting('port'));
  const unixSocket = setting('unix-socket')?.value;
  // Validate (kubectl's cmd/proxy/proxy.go): only a port other than the default conflicts.
  if (unixSocket !== undefined && port !== DEFAULT_PORT) {
    throw new CliError('cannot set --unix-socket and --port at the same time', 'Drop one of them (or KCP_UNIX_SOCKET / KCP_PORT).');
  }
  const address = setting('address');
  if (address?.value.trim() === '')
    throw new CliError(`${address.from}: the address must not be blank`, `Use e.g. --address ${DEFAULT_ADDRESS}.`);

  const tls = parseTls(setting('tls-cert-file'), setting('tls-private-key-file'), flagOrEnv('tls-generate'));
  const handshakes = setting('tls-handshakes-per-second');
  const http2Streams = setting('http2-max-streams-per-connection');
  const httpsOnly = [handshakes, setting('tls-min-version'), setting('tls-cipher-suites'), http2Streams].find((s) => s !== undefined);
  if (httpsOnly !== undefined && tls === undefined)
    throw new CliError(
      `${httpsOnly.from}: only for HTTPS serving`,
      'Add --tls-cert-file and --tls-private-key-file (or --tls-generate), or drop it.',
    );
  const addressValue = address?.value ?? DEFAULT_ADDRESS;
  const sharedFlag = flagOrEnv('shared');
  const shared = sharedFlag !== undefined && parseBool(sharedFlag) ? parseShared(setting) : undefined;
  if (shared === undefined) {
    const sharedOnly = SHARED_ONLY_FLAGS.map(setting).find((s) => s !== undefined);
    if (sharedOnly !== undefined) throw new CliError(`${sharedOnly.from}: only for shared mode`, 'Add --shared, or drop it.');
  }
  if (unixSocket === undefined && !isLoopback(addressValue)) {
    // Beyond its own host the proxy serves whoever connects: over HTTPS only (tokens cross the
    // network), and only as each client's own identity, never with its credentials for all.
    if (tls === undefined) {
      throw new CliError(
        `${address?.from ?? '--address'}: not a loopback address, and the proxy would serve plain HTTP there`,
        'Serve HTTPS (--tls-cert-file and --tls-private-key-file, or --tls-generate) with --shared, or keep --address on loopback (127.0.0.1, ::1, localhost).',
      );
    }
    if (shared === undefined) {
      throw new CliError(
        `${address?.from ?? '--address'}: not a loopback address, and the proxy would serve everyone who connects with its own credentials`,
        'Add --shared (each client authenticated and authorized as the apiserver would), or keep --address on loopback (127.0.0.1, ::1, localhost).',
      );
    }
  }
  if (shared?.clientCaFile !== undefined && tls === undefined) {
    throw new CliError(
      '--client-ca-file: client certificates need HTTPS',
      'Add --tls-cert-file and --tls-private-key-file (or --tls-generate).',
    );
  }
  const writeKubeconfig = setting('write-kubeconfig');
  if (writeKubeconfig !== undefined && shared !== undefined) {
    throw new CliError(
      `${writeKubeconfig.from}: the kubeconfig for apps is for sidecar mode, where the proxy lends its pod's identity`,
      "In shared mode each client brings its own credentials: give apps the proxy's URL and CA in a kubeconfig with their own user.",
    );
  }
  if (writeKubeconfig !== undefined && tls === undefined) {
    throw new CliError(
      `${writeKubeconfig.from}: the kubeconfig for apps is written for HTTPS only`,
      'Add --tls-generate (or --tls-cert-file and --tls-private-key-file): clients such as @kubernetes/client-node refuse a plain-HTTP server.',
    );
  }
  if (writeKubeconfig !== undefined && unixSocket !== undefined) {
    throw new CliError(`${writeKubeconfig.from}: a kubeconfig cannot name a Unix socket`, 'Serve on --address and --port instead.');
  }

  const namespace = setting('namespace');
  if (namespace !== undefined && !DNS1123_LABEL.test(namespace.value)) {
    throw new CliError(
      `${namespace.from}: not a valid namespace name`,
      'A namespace is a DNS-1123 label: lower case letters, digits and -.',
    );
  }

  return {
    kubeconfig: setting('kubeconfig')?.value,
    context: setting('context')?.value,
    server: parseServer(setting('server')),
    certificateAuthority: setting('certificate-authority')?.value,
    address: addressValue,
    port,
    unixSocket,
    // Shared mode: kubectl proxy's filter guards a proxy that lends its own identity; the
    // apiserver's authorizer now decides for each client, and the proxy is reached by any name.
    filter: {
      acceptHosts: regexps(setting('accept-hosts'), shared === undefined ? DEFAULT_ACCEPT_HOSTS : SHARED_ACCEPT_HOSTS),
      acceptPaths: regexps(setting('accept-paths'), DEFAULT_ACCEPT_PATHS),
      rejectPaths: regexps(setting('reject-paths'), shared === undefined ? DEFAULT_REJECT_PATHS : SHARED_REJECT_PATHS),
      rejectMethods: regexps(setting('reject-methods'), DEFAULT_REJECT_METHODS),
    },
    resources: parseResources(setting('resources'), true),
    namespace: namespace?.value,
    logLevel: parseVerbosity(setting('v')) >= DEBUG_VERBOSITY ? 'debug' : parseLogLevel(setting('log-level')),
    loggingFormat: parseLoggingFormat(setting('logging-format')),
    readConsistency: parseReadConsistency(setting('read-consistency')),
    strongResources: parseResources(setting('strong-resources')),
    maxStalenessMs: parseMaxStaleness(setting('max-staleness')),
    consistencyCheckPeriodMs: parseCheckPeriod(setting('consistency-check-period')),
    stateDir: parseStateDir(setting('state-dir')),
    stateSavePeriodMs: parseSavePeriod(setting('state-save-period')),
    memoryLimitBytes: parseMemoryLimit(setting('memory-limit')),
    flowLimits: parseFlowLimits(setting),
    fallbackToApiserver: parseFallback(flagOrEnv('fallback-to-apiserver'), setting('server')),
    upstreamHttp2: parseUpstreamHttp2(flagOrEnv('upstream-http2')),
    metricsBindAddress: parseBindAddress(setting('metrics-bind-address')),
    shutdownDelayMs: parseShutdownDelay(setting('shutdown-delay-duration')),
    pool: parsePool(setting),
    tls,
    tlsHandshakesPerSecond: parseQps(handshakes, DEFAULT_TLS_HANDSHAKES_PER_SECOND),
    http2MaxStreamsPerConnection: parseStreams(http2Streams),
    compressLoopback: parseCompressLoopback(flagOrEnv('compress-loopback')),
    tlsMinVersion: parseTlsMinVersion(setting('tls-min-version')),
    tlsCiphers: parseTlsCipherSuites(setting('tls-cipher-suites')),
    writeKubeconfig: writeKubeconfig?.value,
    shared,
    help: values.help === true && booleans.given.get('help')?.value !== false,
  };
}

/** Kubernetes quantity suffixes a memory limit is written with (resource.Quantity), and their factors. */
const QUANTITY_SUFFIXES: Readonly<Record<string, number>> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

/** A memory quantity as Kubernetes writes it (`256Mi`, `1.5Gi`, `268435456`, `300M`) in bytes; undefined if it is none. */
export function parseMemoryQuantity(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(text.trim());
  if (match === null) return undefined;
  const bytes = Math.ceil(Number(match[1]) * (QUANTITY_SUFFIXES[match[2] ?? ''] ?? 1));
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined;
}

function parseMemoryLimit(s: Setting | undefined): number | undefined {
  if (s === undefined) return undefined;
  const bytes = parseMemoryQuantity(s.value);
  if (bytes === undefined) {
    throw new CliError(`${s.from}: not a memory quantity`, 'Give bytes or a Kubernetes quantity, e.g. 256Mi, 1Gi or 268435456.');
  }
  return bytes;
}

/** Shared mode's filter defaults: any Host, no path refused. */
const SHARED_ACCEPT_HOSTS = '^.*$';
const SHARED_REJECT_PATHS = '^$';

function parseShared(setting: (flag: ValueFlag) => Setting | undefined): SharedServing {
  const duration = (flag: ValueFlag, fallback: number): number => {
    const s = setting(flag);
    if (s === undefined) return fallback;
    const ms = parseGoDurationMs(s.value);
    if (ms === undefined || ms <= 0)
      throw new CliError(`${s.from}: not a duration`, 'Give a positive duration with a unit, e.g. 30s, 2m or 1m30s.');
    return ms;
  };
  const audiences = setting('auth-token-audiences');
  return {
    clientCaFile: setting('client-ca-file')?.value,
    audiences:
      audiences === undefined
        ? []
        : [
            ...new Set(
              audiences.value
                .split(',')
                .map((a) => a.trim())
                .filter((a) => a !== ''),
            ),
          ],
    tokenCacheTtlMs: duration('authentication-token-webhook-cache-ttl', DEFAULT_TOKEN_CACHE_TTL_MS),
    authorizedTtlMs: duration('authorization-webhook-cache-authorized-ttl', DEFAULT_ALLOWED_TTL_MS),
    unauthorizedTtlMs: duration('authorization-webhook-cache-unauthorized-ttl', DEFAULT_DENIED_TTL_MS),
    tokenReviewLimits: parseTokenReviewLimits(setting),
    requestHeadLimits: parseRequestHeadLimits(setting),
    anonymousRefusalLimits: parseAnonymousRefusalLimits(setting),
    flowRefusalLimits: parseFlowRefusalLimits(setting),
  };
}

/** The limits on large request heads: a rate of bytes (0: none) and a bucket that holds the largest head the server takes. */
function parseRequestHeadLimits(setting: (flag: ValueFlag) => Setting | undefined): RequestHeadLimitSettings {
  const bytes = (flag: ValueFlag, fallback: number, zero: boolean): number => {
    const s = setting(flag);
    if (s === undefined) return fallback;
    if (zero && s.value.trim() === '0') return 0;
    const n = parseMemoryQuantity(s.value);
    if (n === undefined)
      throw new CliError(`${s.from}: not a quantity of bytes`, 'Give bytes or a Kubernetes quantity, e.g. 1Mi or 1048576.');
    return n;
  };
  const bytesPerSecond = bytes('large-request-heads-per-address', DEFAULT_LARGE_HEAD_BYTES_PER_SECOND, true);
  const burstBytes = bytes('large-request-heads-burst-per-address', DEFAULT_LARGE_HEAD_BURST_BYTES, false);
  const maxInflightBytes = bytes('max-large-request-heads-inflight-per-address', DEFAULT_LARGE_HEADS_INFLIGHT_BYTES, true);
  for (const [flag, value, limited] of [
    ['large-request-heads-burst-per-address', burstBytes, bytesPerSecond > 0],
    ['max-large-request-heads-inflight-per-address', maxInflightBytes, maxInflightBytes > 0],
  ] as const) {
    const s = setting(flag);
    if (limited && value < MAX_HEADER_BYTES && s !== undefined) {
      throw new CliError(
        `${s.from}: less than the largest head the proxy takes (1028Ki) would refuse such a head for good`,
        'Give 1028Ki or more, or 0 to --large-request-heads-per-address or --max-large-request-heads-inflight-per-address for no limit.',
      );
    }
  }
  return { bytesPerSecond, burstBytes, maxInflightBytes };
}

/** A count flag: a whole number, 0 or more (0: no limit). */
function parseCount(s: Setting | undefined, fallback: number): number {
  if (s === undefined) return fallback;
  const n = /^\d{1,9}$/.test(s.value) ? Number(s.value) : NaN;
  if (!Number.isSafeInteger(n)) throw new CliError(`${s.from}: not a whole number`, 'Give 0 or more (0: no limit).');
  return n;
}

/** --http2-max-streams-per-connection: 0 (the default's value) or a stream count h2 can advertise (SETTINGS_MAX_CONCURRENT_STREAMS, 31 bits). */
function parseStreams(s: Setting | undefined): number {
  if (s === undefined) return DEFAULT_HTTP2_MAX_STREAMS_PER_CONNECTION;
  const n = /^\d{1,10}$/.test(s.value) ? Number(s.value) : NaN;
  if (!(n <= 2 ** 31 - 1))
    throw new CliError(`${s.from}: not a stream count`, 'Give 0 (the default) or a whole number of streams, e.g. 1000.');
  return n === 0 ? DEFAULT_HTTP2_MAX_STREAMS_PER_CONNECTION : n;
}

/** A rate flag (tokens a second): a number, 0 or more (0: no limit), as Go's float32 QPS flags take it. */
function parseQps(s: Setting | undefined, fallback: number): number {
  if (s === undefined) return fallback;
  const qps = /^\d{1,9}(\.\d{1,9})?$/.test(s.value) ? Number(s.value) : NaN;
  if (!Number.isFinite(qps)) throw new CliError(`${s.from}: not a rate`, 'Give requests a second, 0 or more, e.g. 1 or 0.5 (0: no limit).');
  return qps;
}

function parseFlowLimits(setting: (flag: ValueFlag) => Setting | undefined): FlowLimitSettings {
  return {
    maxRequestsInflight: parseCount(setting('max-requests-inflight-per-flow'), DEFAULT_MAX_REQUESTS_INFLIGHT_PER_FLOW),
    maxWatches: parseCount(setting('max-watches-per-flow'), DEFAULT_MAX_WATCHES_PER_FLOW),
    maxReviewsInflight: parseCount(setting('max-reviews-inflight-per-flow'), DEFAULT_MAX_REVIEWS_INFLIGHT_PER_FLOW),
  };
}

/** A bucket's size: one that limits must hold a token, a burst of 0 would refuse everything (rate.Limiter's Allow at burst 0). */
function parseBurst(s: Setting | undefined, fallback: number, limited: boolean): number {
  const n = parseCount(s, fallback);
  if (limited && n < 1 && s !== undefined) {
    throw new CliError(
      `${s.from}: a burst of 0 would refuse every request`,
      'Give 1 or more, or set the matching qps flag to 0 for no limit.',
    );
  }
  return n;
}

function parseAnonymousRefusalLimits(setting: (flag: ValueFlag) => Setting | undefined): AnonymousRefusalLimitSettings {
  const qpsPerAddress = parseQps(setting('anonymous-refusals-qps-per-address'), DEFAULT_ANONYMOUS_REFUSALS_QPS_PER_ADDRESS);
  return {
    qpsPerAddress,
    burstPerAddress: parseBurst(
      setting('anonymous-refusals-burst-per-address'),
      DEFAULT_ANONYMOUS_REFUSALS_BURST_PER_ADDRESS,
      qpsPerAddress > 0,
    ),
  };
}

function parseFlowRefusalLimits(setting: (flag: ValueFlag) => Setting | undefined): FlowRefusalLimitSettings {
  const qpsPerFlow = parseQps(setting('refusals-qps-per-flow'), DEFAULT_REFUSALS_QPS_PER_FLOW);
  return {
    qpsPerFlow,
    burstPerFlow: parseBurst(setting('refusals-burst-per-flow'), DEFAULT_REFUSALS_BURST_PER_FLOW, qpsPerFlow > 0),
  };
}

function parseTokenReviewLimits(setting: (flag: ValueFlag) => Setting | undefined): TokenReviewLimitSettings {
  const qpsPerAddress = parseQps(setting('token-review-qps-per-address'), DEFAULT_TOKEN_REVIEW_QPS_PER_ADDRESS);
  const qps = parseQps(setting('token-review-qps'), DEFAULT_TOKEN_REVIEW_QPS);
  const burst = (flag: ValueFlag, fallback: number, limited: boolean): number => parseBurst(setting(flag), fallback, limited);
  return {
    qpsPerAddress,
    burstPerAddress: burst('token-review-burst-per-address', DEFAULT_TOKEN_REVIEW_BURST_PER_ADDRESS, qpsPerAddress > 0),
    qps,
    burst: burst('token-review-burst', DEFAULT_TOKEN_REVIEW_BURST, qps > 0),
    maxInflight: parseCount(setting('max-token-reviews-inflight'), DEFAULT_MAX_TOKEN_REVIEWS_INFLIGHT),
  };
}

/** The pool flags (shared mode only, checked with the other shared-only flags). */
function parsePool(setting: (flag: ValueFlag) => Setting | undefined): PoolMembership | undefined {
  const pool = setting('pool');
  const others = (
    ['pool-namespace', 'pool-advertise', 'pool-certificate-authority', 'pool-tls-server-name', 'pool-lease-duration'] as const
  )
    .map(setting)
    .find((s) => s !== undefined);
  if (pool === undefined) {
    if (others !== undefined) throw new CliError(`${others.from}: only with --pool`, 'Add --pool NAME, or drop it.');
    return undefined;
  }
  if (!DNS1123_LABEL.test(pool.value)) {
    throw new CliError(`${pool.from}: not a valid pool name`, 'A pool name is a DNS-1123 label: lower case letters, digits and -.');
  }
  const namespace = setting('pool-namespace');
  if (namespace !== undefined && !DNS1123_LABEL.test(namespace.value)) {
    throw new CliError(
      `${namespace.from}: not a valid namespace name`,
      'A namespace is a DNS-1123 label: lower case letters, digits and -.',
    );
  }
  const advertise = setting('pool-advertise');
  if (advertise === undefined) {
    throw new CliError(
      `${pool.from}: the pool's members need this proxy's URL`,
      'Add --pool-advertise https://IP:PORT (in a DaemonSet, the pod IP from the downward API).',
    );
  }
  const url = parseServer(advertise);
  if (url === undefined || !url.startsWith('https:')) {
    throw new CliError(`${advertise.from}: not an https URL`, 'The members send their credentials to it: give https://IP:PORT.');
  }
  const duration = setting('pool-lease-duration');
  let leaseDurationMs = DEFAULT_LEASE_DURATION_MS;
  if (duration !== undefined) {
    const ms = parseGoDurationMs(duration.value);
    // The Lease stores whole seconds; below 3 s the renew deadline and retry period would be under a second.
    if (ms === undefined || ms % 1000 !== 0 || ms < 3000) {
      throw new CliError(`${duration.from}: not a duration of whole seconds, at least 3s`, 'Give e.g. 15s (the default) or 1m.');
    }
    leaseDurationMs = ms;
  }
  // client-go's ratios (15 s, 10 s, 2 s) kept at any lease duration: leaseDuration > renewDeadline
  // > 1.2 × retryPeriod, and renewDeadline + retryPeriod < leaseDuration (leaderelection/README.md).
  return {
    name: pool.value,
    namespace: namespace?.value ?? DEFAULT_POOL_NAMESPACE,
    advertise: url.replace(/\/+$/, ''),
    certificateAuthority: setting('pool-certificate-authority')?.value,
    tlsServerName: setting('pool-tls-server-name')?.value,
    leaseDurationMs,
    renewDeadlineMs: (leaseDurationMs * DEFAULT_RENEW_DEADLINE_MS) / DEFAULT_LEASE_DURATION_MS,
    retryPeriodMs: (leaseDurationMs * DEFAULT_RETRY_PERIOD_MS) / DEFAULT_LEASE_DURATION_MS,
  };
}

function parseServer(s: Setting | undefined): string | undefined {
  if (s === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(s.value);
  } catch {
    throw new CliError(`${s.from}: not a URL`, 'Give the upstream as https://HOST[:PORT].');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new CliError(`${s.from}: not an http(s) URL`, 'Give the upstream as https://HOST[:PORT].');
  // The proxy's credentials go to it: in plain HTTP, only to this host.
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (url.protocol === 'http:' && !isLoopback(host)) {
    throw new CliError(
      `${s.from}: plain HTTP to another host would send the proxy's credentials in the clear`,
      'Use https://, with --certificate-authority for its CA.',
    );
  }
  return s.value;
}

/** Go's strconv.ParseBool. */
function parseBool(s: Setting): boolean {
  const value = goParseBool(s.value);
  if (value !== undefined) return value;
  throw new CliError(`${s.from}: not a boolean`, 'Use true or false.');
}

function parseTls(cert: Setting | undefined, key: Setting | undefined, generate: Setting | undefined): TlsServing | undefined {
  const generated = generate !== undefined && parseBool(generate);
  if (cert === undefined && key === undefined) return generated ? { kind: 'generate' } : undefined;
  if (cert === undefined || key === undefined) {
    const given = (cert ?? key)?.from ?? '';
    throw new CliError(`${given}: --tls-cert-file and --tls-private-key-file go together`, 'Give both, or --tls-generate instead.');
  }
  if (generated) {
    throw new CliError(
      `${generate.from}: cannot generate a certificate and use ${cert.from} at the same time`,
      'Drop --tls-generate (or KCP_TLS_GENERATE) to serve the given certificate.',
    );
  }
  return { kind: 'files', certFile: cert.value, keyFile: key.value };
}

/** A name or an address that only the host itself reaches: 127.0.0.0/8, ::1, localhost. */
export function isLoopback(address: string): boolean {
  if (address === 'localhost') return true;
  const version = isIP(address);
  if (version === 4) return address.startsWith('127.');
  if (version !== 6) return false;
  const bytes = ipBytes(address);
  const mappedV4 = bytes.subarray(0, 12).equals(Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]));
  return mappedV4 ? bytes[12] === 127 : bytes.equals(ipBytes('::1'));
}

function parsePort(s: Setting | undefined): number {
  if (s === undefined) return DEFAULT_PORT;
  const port = /^\d{1,5}$/.test(s.value) ? Number(s.value) : NaN;
  if (!(port >= 0 && port <= 65535)) {
    throw new CliError(`${s.from}: the port must be a number from 0 to 65535`, 'Use 0 to let the system pick a free port.');
  }
  return port;
}

/**
 * --metrics-bind-address as kube-proxy reads it (an IP and a port, `[IPv6]:PORT`), plus
 * controller-runtime's `:PORT` (every interface) and its `0` (none); empty: none.
 */
function parseBindAddress(s: Setting | undefined): BindAddress | undefined {
  if (s === undefined || s.value === '' || s.value === '0') return undefined;
  const match = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(s.value);
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (match === null || host === undefined || !(port >= 0 && port <= 65535) || (host !== '' && isIP(host) === 0)) {
    throw new CliError(`${s.from}: not an IP:PORT`, 'Use e.g. 0.0.0.0:10249, [::]:10249 or :10249 (every interface), or 0 for none.');
  }
  return { host: host === '' ? undefined : host, port };
}

function parseTlsMinVersion(s: Setting | undefined): NodeTlsVersion {
  const version = tlsMinVersion(s?.value ?? DEFAULT_TLS_MIN_VERSION);
  if (!(version instanceof Error)) return version;
  throw new CliError(`${s?.from ?? ''}: ${version.message}`, `Use one of ${Object.keys(TLS_VERSIONS).join(', ')}.`);
}

/** pflag's StringSlice: comma-separated, each name trimmed of nothing (Go's csv reader keeps spaces). */
function parseTlsCipherSuites(s: Setting | undefined): string | undefined {
  if (s === undefined) return undefined;
  const ciphers = tlsCiphers(s.value.split(','));
  if (!(ciphers instanceof Error)) return ciphers;
  throw new CliError(
    `${s.from}: ${ciphers.message}`,
    `Use Go's names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256; all: ${TLS_CIPHER_SUITE_NAMES.join(', ')}.`,
  );
}

/** --upstream-http2: on by default (upstream/client.ts, UPSTREAM_HTTP2_DEFAULT). */
function parseUpstreamHttp2(s: Setting | undefined): boolean | undefined {
  return s === undefined ? undefined : parseBool(s);
}

/** --compress-loopback: off by default. */
function parseCompressLoopback(s: Setting | undefined): boolean {
  return s === undefined ? false : parseBool(s);
}

/** --fallback-to-apiserver: on by default with --server, meaningless without it. */
function parseFallback(s: Setting | undefined, server: Setting | undefined): boolean {
  if (s === undefined) return true;
  if (server === undefined) throw new CliError(`${s.from}: only with --server`, 'Add --server URL (another proxy), or drop it.');
  return parseBool(s);
}

function parseShutdownDelay(s: Setting | undefined): number {
  if (s === undefined) return 0;
  const ms = parseGoDurationMs(s.value);
  if (ms === undefined || ms < 0) throw new CliError(`${s.from}: not a duration`, 'Give a duration with a unit, e.g. 5s or 0s (none).');
  return ms;
}

function regexps(s: Setting | undefined, fallback: string): RegExp[] {
  if (s === undefined) return makeRegexpArray(fallback);
  try {
    return makeRegexpArray(s.value);
  } catch (error) {
    if (!(error instanceof RegexpSyntaxError)) throw error;
    throw new CliError(
      `${s.from}: ${error.message}`,
      'Give a comma-separated list of regular expressions (commas split it: none may appear inside one).',
    );
  }
}

/** `scoped`: entries may name a selector scope (`pods:spec.nodeName=n1`, cache/selector-scope.ts). */
function parseResources(s: Setting | undefined, scoped = false): string[] {
  if (s === undefined) return [];
  const resources = s.value
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '');
  const bad = resources.filter((r) => !RESOURCE.test(scoped ? (r.split(':', 1)[0] ?? r) : r));
  if (bad.length > 0) {
    throw new CliError(
      `${s.from}: not a resource: ${bad.join(', ')}`,
      'List plural resource names, lower case, with the API group for non-core ones: configmaps,pods,deployments.apps',
    );
  }
  if (scoped) {
    for (const r of resources) {
      try {
        parseScopeEntry(r);
      } catch (error) {
        throw new CliError(
          `${s.from}: ${r}: ${error instanceof Error ? error.message : String(error)}`,
          "A scope follows the resource after a colon: a field selector, then optionally ;labels= and a label selector, with + for the selectors' commas: pods:spec.nodeName=node-1;labels=app=web+tier",
        );
      }
    }
  }
  return [...new Set(resources)];
}

/** klog's -v: a level, a non-negative integer (klog.Level is an int32). */
function parseVerbosity(s: Setting | undefined): number {
  if (s === undefined) return 0;
  const v = /^\d{1,9}$/.test(s.value) ? Number(s.value) : NaN;
  if (Number.isNaN(v))
    throw new CliError(`${s.from}: not a verbosity`, `Give a level, e.g. -v 2 (${String(DEBUG_VERBOSITY)} and above: debug lines).`);
  return v;
}

function parseLoggingFormat(s: Setting | undefined): LoggingFormat {
  if (s === undefined) return 'text';
  const format = LOGGING_FORMATS.find((f) => f === s.value);
  // component-base's words (logs/api/v1 validate: unsupported log format).
  if (format === undefined) throw new CliError(`${s.from}: unsupported log format`, `Use ${LOGGING_FORMATS.join(' or ')}.`);
  return format;
}

function parseLogLevel(s: Setting | undefined): LogLevel {
  if (s === undefined) return DEFAULT_LOG_LEVEL;
  const level = LOG_LEVELS.find((l) => l === s.value);
  if (level === undefined) throw new CliError(`${s.from}: unknown log level`, `Use one of: ${LOG_LEVELS.join(', ')}.`);
  return level;
}

function parseReadConsistency(s: Setting | undefined): ReadConsistency {
  if (s === undefined) return 'bounded';
  if (s.value === 'strong' || s.value === 'bounded') return s.value;
  throw new CliError(`${s.from}: unknown read consistency`, 'Use bounded (the default) or strong.');
}

function parseCheckPeriod(s: Setting | undefined): number | undefined {
  if (s === undefined) return undefined;
  const ms = s.value === '0' ? 0 : parseGoDurationMs(s.value);
  if (ms === undefined || ms < 0) {
    throw new CliError(`${s.from}: not a duration`, 'Give a duration with a unit, e.g. 5m or 90s, or 0 to turn the checks off.');
  }
  return ms;
}

function parseStateDir(s: Setting | undefined): string | undefined {
  if (s === undefined) return undefined;
  if (s.value === '') throw new CliError(`${s.from}: empty`, 'Give a directory the proxy may write, e.g. an emptyDir volume.');
  return s.value;
}

function parseSavePeriod(s: Setting | undefined): number | undefined {
  if (s === undefined) return undefined;
  const ms = s.value === '0' ? 0 : parseGoDurationMs(s.value);
  if (ms === undefined || ms < 0) {
    throw new CliError(`${s.from}: not a duration`, 'Give a duration with a unit, e.g. 1m or 30s, or 0 to save only at shutdown.');
  }
  return ms;
}

function parseMaxStaleness(s: Setting | undefined): number {
  if (s === undefined) return DEFAULT_MAX_STALENESS_MS;
  const ms = parseGoDurationMs(s.value);
  if (ms === undefined || ms <= 0) {
    throw new CliError(`${s.from}: not a duration`, 'Give a positive duration with a unit, e.g. 75s, 2m or 1m30s.');
  }
  return ms;
}
