/**
 * The proxy's flags, with kubectl proxy's names and defaults (kubectl's pkg/cmd/proxy/proxy.go,
 * NewProxyOptions / NewCmdProxy) plus the cache's own. Every flag can also be given as an
 * environment variable `KCP_<FLAG_IN_UPPER_SNAKE>` (`--accept-hosts` ↔ `KCP_ACCEPT_HOSTS`); a
 * flag wins over its variable, and a variable set to the empty string counts as unset.
 */
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import type { RequestFilterOptions } from '../request/request-filter.ts';
import {
  DEFAULT_ACCEPT_HOSTS,
  DEFAULT_ACCEPT_PATHS,
  DEFAULT_REJECT_METHODS,
  DEFAULT_REJECT_PATHS,
  RegexpSyntaxError,
  makeRegexpArray,
} from '../request/request-filter.ts';
import type { ReadConsistency } from '../cache/consistency.ts';
import { DEFAULT_MAX_STALENESS_MS } from '../cache/consistency.ts';
import { ipBytes } from '../server/tls/serving-certificate.ts';
import { CliError } from './cli-error.ts';
import { DEFAULT_TOKEN_CACHE_TTL_MS } from '../auth/token-review.ts';
import { DEFAULT_ALLOWED_TTL_MS, DEFAULT_DENIED_TTL_MS } from '../auth/subject-access-review.ts';

/** defaultPort (kubectl's cmd/proxy/proxy.go). */
export const DEFAULT_PORT = 8001;
/** defaultAddress (kubectl's cmd/proxy/proxy.go): loopback only. */
export const DEFAULT_ADDRESS = '127.0.0.1';
export const DEFAULT_LOG_LEVEL = 'info';

/** pino's levels, as Fastify's logger takes them. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
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
  readonly address: string;
  /** 0: the system picks a free port. */
  readonly port: number;
  /** A Unix socket to serve on instead of address:port. */
  readonly unixSocket: string | undefined;
  readonly filter: RequestFilterOptions;
  /**
   * Resources to cache, as `resource` (core group) or `resource.group`, e.g. `deployments.apps`;
   * empty: every listable and watchable type, cached on its first read (secrets only when named).
   */
  readonly resources: readonly string[];
  /** Cache only this namespace; undefined: all namespaces. */
  readonly namespace: string | undefined;
  readonly logLevel: LogLevel;
  /** How RV-unset ("most recent") reads are answered (cache/consistency.ts). */
  readonly readConsistency: ReadConsistency;
  /** Types (`resource` or `resource.group`) whose RV-unset reads are strong whatever readConsistency says. */
  readonly strongResources: readonly string[];
  /** Bounded reads: the most time since the cache's watch last proved progress. */
  readonly maxStalenessMs: number;
  /** HTTPS serving; undefined: plain HTTP (loopback and Unix sockets only). */
  readonly tls: TlsServing | undefined;
  /** Where to write a kubeconfig for apps (HTTPS only); undefined: none. */
  readonly writeKubeconfig: string | undefined;
  /** Shared mode (many clients, each with its own identity); undefined: sidecar mode. */
  readonly shared: SharedServing | undefined;
  /** --memory-limit in bytes: the limit the memory budget follows, in place of the cgroup's; undefined: the cgroup's. */
  readonly memoryLimitBytes: number | undefined;
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
}

/**
 * How the proxy serves HTTPS: with the certificate and key of files (the apiserver's
 * --tls-cert-file and --tls-private-key-file), or with a CA and a certificate it makes at start.
 */
export type TlsServing = { readonly kind: 'files'; readonly certFile: string; readonly keyFile: string } | { readonly kind: 'generate' };

export const PROXY_FLAGS_USAGE = `Options (each also as an environment variable KCP_<FLAG_IN_UPPER_SNAKE>, e.g. KCP_PORT; a flag wins):
  --kubeconfig FILE        the cluster's kubeconfig (default: $KUBECONFIG, ~/.kube/config, then in-cluster)
  --context NAME           a context of the kubeconfig (default: its current-context)
  --server URL             the upstream to talk to instead of the kubeconfig's server, with its credentials:
                           another kube-cache-proxy in shared mode, e.g. a node proxy for a sidecar
  --certificate-authority FILE  the CA that --server's certificate is verified against (PEM)
  --address IP             the IP address to serve on; one other than loopback needs HTTPS (default: ${DEFAULT_ADDRESS})
  -p, --port PORT          the port to serve on; 0 picks a free port (default: ${DEFAULT_PORT})
  -u, --unix-socket PATH   serve on a Unix socket instead of address:port
  --tls-cert-file FILE     serve HTTPS with this certificate (PEM; the serving certificate first, then its
                           chain up to the CA that clients trust); needs --tls-private-key-file
  --tls-private-key-file FILE  the certificate's private key (PEM)
  --tls-generate           serve HTTPS with a CA and a certificate for localhost, 127.0.0.1 and ::1 (and
                           --address) made at start; the CA's key is dropped once it has signed
  --write-kubeconfig PATH  once serving, write a kubeconfig for apps there (replaced atomically): the
                           proxy's https URL, the CA to trust, a placeholder token (the proxy uses its own);
                           share its directory with the app's containers and set KUBECONFIG to it
  --shared                 shared mode, for many clients (a proxy per node or per cluster): each request is
                           authenticated (a bearer token by TokenReview, or a client certificate) and each
                           read from the cache authorized (SubjectAccessReview) as the apiserver would;
                           the rest goes upstream with the client's own credentials. Needed on an --address
                           other than loopback, with HTTPS
  --client-ca-file FILE    shared mode: client certificates signed by these CAs (PEM) identify their user (CN)
                           and groups (O), as the apiserver's --client-ca-file (default: tokens only)
  --auth-token-audiences LIST  shared mode: the audiences a token must be for (default: the apiserver's own)
  --authentication-token-webhook-cache-ttl DURATION  shared mode: how long a token's review is kept (default: 2m)
  --authorization-webhook-cache-authorized-ttl DURATION  shared mode: how long an allowed read's review is
                           kept (default: 5m)
  --authorization-webhook-cache-unauthorized-ttl DURATION  shared mode: how long a denied read's review is
                           kept (default: 30s)
  --accept-hosts RE,...    regexps the Host header's hostname must match (default: ${DEFAULT_ACCEPT_HOSTS};
                           in shared mode: any)
  --accept-paths RE,...    regexps for paths to accept (default: ${DEFAULT_ACCEPT_PATHS})
  --reject-paths RE,...    regexps for paths to reject, even if accepted (default: ${DEFAULT_REJECT_PATHS};
                           in shared mode: none, the apiserver authorizes the client)
  --reject-methods RE,...  regexps for HTTP methods to reject, e.g. 'POST,PUT,PATCH' (default: ${DEFAULT_REJECT_METHODS}, none)
  --resources LIST         resources to cache, e.g. configmaps,pods,deployments.apps (default: every listable and
                           watchable type, cached on its first read; secrets only when named)
  --namespace NAME         cache only this namespace (default: all)
  --read-consistency MODE  how reads without a resourceVersion ("most recent") are answered:
                           bounded: from the cache while its upstream watch is open and heard from within
                           --max-staleness, with read-your-writes for writes through the proxy (default);
                           strong: linearizable; a GET goes to the apiserver, a LIST comes from the cache only
                           once proven as fresh as the apiserver (a probe), else from the apiserver
  --strong-resources LIST  resources whose reads are strong whatever --read-consistency says,
                           e.g. leases.coordination.k8s.io (default: none)
  --max-staleness DURATION bounded reads: the longest the cache's watch may be silent (no event, no
                           bookmark) for reads to come from it, e.g. 75s, 2m (default: ${String(DEFAULT_MAX_STALENESS_MS / 1000)}s)
  --memory-limit QUANTITY  the memory the proxy may use, e.g. 256Mi or 268435456 (the downward API's
                           limits.memory); what it holds beyond its cached objects is sized to fit under it
                           (default: its cgroup's limit, memory.max or memory.limit_in_bytes; none: fixed bounds)
  --log-level LEVEL        ${LOG_LEVELS.join(', ')} (default: ${DEFAULT_LOG_LEVEL})
  -h, --help               print this help`;

const OPTIONS = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  server: { type: 'string' },
  'certificate-authority': { type: 'string' },
  address: { type: 'string' },
  port: { type: 'string', short: 'p' },
  'unix-socket': { type: 'string', short: 'u' },
  'tls-cert-file': { type: 'string' },
  'tls-private-key-file': { type: 'string' },
  'tls-generate': { type: 'boolean' },
  'write-kubeconfig': { type: 'string' },
  shared: { type: 'boolean' },
  'client-ca-file': { type: 'string' },
  'auth-token-audiences': { type: 'string' },
  'authentication-token-webhook-cache-ttl': { type: 'string' },
  'authorization-webhook-cache-authorized-ttl': { type: 'string' },
  'authorization-webhook-cache-unauthorized-ttl': { type: 'string' },
  'accept-hosts': { type: 'string' },
  'accept-paths': { type: 'string' },
  'reject-paths': { type: 'string' },
  'reject-methods': { type: 'string' },
  resources: { type: 'string' },
  namespace: { type: 'string' },
  'log-level': { type: 'string' },
  'read-consistency': { type: 'string' },
  'strong-resources': { type: 'string' },
  'max-staleness': { type: 'string' },
  'memory-limit': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type BooleanFlag = 'help' | 'tls-generate' | 'shared';
type ValueFlag = Exclude<keyof typeof OPTIONS, BooleanFlag>;

/** `--accept-hosts` → `KCP_ACCEPT_HOSTS`. */
export function envName(flag: string): string {
  return `KCP_${flag.toUpperCase().replaceAll('-', '_')}`;
}

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
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: false, strict: true });
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
    if (values[flag] === true) return { value: 'true', from: `--${flag}` };
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
  const addressValue = address?.value ?? DEFAULT_ADDRESS;
  const sharedFlag = flagOrEnv('shared');
  const shared = sharedFlag !== undefined && parseBool(sharedFlag) ? parseShared(setting) : undefined;
  if (shared === undefined) {
    const sharedOnly = (
      [
        'client-ca-file',
        'auth-token-audiences',
        'authentication-token-webhook-cache-ttl',
        'authorization-webhook-cache-authorized-ttl',
        'authorization-webhook-cache-unauthorized-ttl',
      ] as const
    )
      .map(setting)
      .find((s) => s !== undefined);
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
    resources: parseResources(setting('resources')),
    namespace: namespace?.value,
    logLevel: parseLogLevel(setting('log-level')),
    readConsistency: parseReadConsistency(setting('read-consistency')),
    strongResources: parseResources(setting('strong-resources')),
    maxStalenessMs: parseMaxStaleness(setting('max-staleness')),
    memoryLimitBytes: parseMemoryLimit(setting('memory-limit')),
    tls,
    writeKubeconfig: writeKubeconfig?.value,
    shared,
    help: values.help === true,
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
    const ms = parseDurationMs(s.value);
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
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(s.value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(s.value)) return false;
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

function parseResources(s: Setting | undefined): string[] {
  if (s === undefined) return [];
  const resources = s.value
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '');
  const bad = resources.filter((r) => !RESOURCE.test(r));
  if (bad.length > 0) {
    throw new CliError(
      `${s.from}: not a resource: ${bad.join(', ')}`,
      'List plural resource names, lower case, with the API group for non-core ones: configmaps,pods,deployments.apps',
    );
  }
  return [...new Set(resources)];
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

/** Go's time.ParseDuration units this flag takes. */
const DURATION_UNITS_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Go duration (`75s`, `1m30s`, `500ms`), as the apiserver's and kubectl's duration flags take them. */
export function parseDurationMs(text: string): number | undefined {
  if (!/^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/.test(text)) return undefined;
  let total = 0;
  for (const [, value = '', unit = ''] of text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/g)) {
    total += Number(value) * (DURATION_UNITS_MS[unit] ?? Number.NaN);
  }
  return Number.isFinite(total) ? total : undefined;
}

function parseMaxStaleness(s: Setting | undefined): number {
  if (s === undefined) return DEFAULT_MAX_STALENESS_MS;
  const ms = parseDurationMs(s.value);
  if (ms === undefined || ms <= 0) {
    throw new CliError(`${s.from}: not a duration`, 'Give a positive duration with a unit, e.g. 75s, 2m or 1m30s.');
  }
  return ms;
}
