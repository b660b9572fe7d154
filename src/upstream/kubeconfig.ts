/**
 * Where the cluster's configuration is and what it says, read as @kubernetes/client-node's
 * KubeConfig reads it (loadFromDefault's search order, loadFromFile, loadFromCluster), its entries
 * parsed by client-node's rules (kubeconfig-entries.ts), but without its KubeConfig class: that module
 * imports the whole generated API client, ~40 MiB of a sidecar's memory that reading a kubeconfig
 * does not need.
 *
 * What this reads alone is what needs no plugin: one kubeconfig file whose user has a token, a
 * token file or a client certificate, and the in-cluster service account. The rest (several
 * files in $KUBECONFIG to merge, an exec or auth-provider plugin, Windows' WSL lookups) is
 * client-node's: `needsClientNode` says when, and config.ts then loads its KubeConfig.
 */
import { accessSync, existsSync, readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import type { Cluster, Context, User } from '@kubernetes/client-node';
import { newClusters, newContexts, newUsers } from './kubeconfig-entries.ts';

/** client-node's SERVICEACCOUNT_ROOT (and the kubelet's mount of the service account's files). */
export const SERVICE_ACCOUNT_ROOT = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Where the configuration comes from, in the order client-node's loadFromDefault looks. */
export type KubeconfigLocation =
  | { readonly kind: 'file'; readonly path: string; readonly source: string }
  | { readonly kind: 'in-cluster'; readonly prefix: string; readonly source: string }
  /** $KUBECONFIG lists several files: client-node merges them. */
  | { readonly kind: 'merged'; readonly paths: readonly string[]; readonly source: string }
  /** Windows: client-node looks into WSL too. */
  | { readonly kind: 'windows'; readonly source: string }
  /** Nothing found: client-node's default, http://localhost:8080 with no user. */
  | { readonly kind: 'none'; readonly source: string };

export interface LocateOptions {
  /** --kubeconfig: wins over everything. */
  readonly kubeconfig?: string | undefined;
  /** The in-cluster files' path prefix (config.ts IN_CLUSTER_PATH_PREFIX_ENV): wins over $KUBECONFIG and ~/.kube/config. */
  readonly inClusterPathPrefix?: string | undefined;
  readonly env?: NodeJS.ProcessEnv;
  readonly platform?: NodeJS.Platform;
}

export function locateKubeconfig(options: LocateOptions): KubeconfigLocation {
  const env = options.env ?? process.env;
  if (options.kubeconfig !== undefined) return { kind: 'file', path: options.kubeconfig, source: options.kubeconfig };
  const prefix = options.inClusterPathPrefix;
  if (prefix !== undefined) return { kind: 'in-cluster', prefix, source: `in-cluster service account in ${prefix}${SERVICE_ACCOUNT_ROOT}` };
  const source = 'default kubeconfig';
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f !== '');
  if (listed.length > 1) return { kind: 'merged', paths: listed, source };
  const [only] = listed;
  if (only !== undefined) return { kind: 'file', path: only, source };
  if ((options.platform ?? process.platform) === 'win32') return { kind: 'windows', source };
  const home = env.HOME;
  if (home !== undefined && home !== '' && accessible(home) && accessible(join(home, '.kube', 'config'))) {
    return { kind: 'file', path: join(home, '.kube', 'config'), source };
  }
  if (existsSync(`${SERVICE_ACCOUNT_ROOT}/token`)) return { kind: 'in-cluster', prefix: '', source };
  return { kind: 'none', source };
}

function accessible(path: string): boolean {
  try {
    accessSync(path);
    return true;
  } catch {
    return false;
  }
}

/** A kubeconfig's entries, as client-node's KubeConfig holds them. */
export interface Kubeconfig {
  readonly clusters: readonly Cluster[];
  readonly users: readonly User[];
  readonly contexts: readonly Context[];
  readonly currentContext: string;
}

/** The entries of a located configuration this module reads alone; undefined for the kinds that are client-node's. */
export async function readKubeconfig(location: KubeconfigLocation, env: NodeJS.ProcessEnv = process.env): Promise<Kubeconfig | undefined> {
  switch (location.kind) {
    case 'file':
      return readKubeconfigFile(location.path);
    case 'in-cluster':
      return inClusterKubeconfig(location.prefix, env);
    case 'none':
      return {
        clusters: [{ name: 'cluster', server: 'http://localhost:8080', skipTLSVerify: false }],
        users: [],
        contexts: [{ name: 'loaded-context', cluster: 'cluster', user: 'user' }],
        currentContext: 'loaded-context',
      };
    case 'merged':
    case 'windows':
      return undefined;
  }
}

/**
 * loadFromFile: YAML (or JSON), entries parsed by client-node, relative file paths made absolute
 * against the file's directory. The YAML parser is loaded here: in a pod (in-cluster) it never is.
 */
async function readKubeconfigFile(path: string): Promise<Kubeconfig> {
  const text = readFileSync(path, 'utf8');
  const { load } = await import('js-yaml');
  const parsed: unknown = load(text);
  const obj = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const root = dirname(path);
  const absolute = (file: string | undefined): string | undefined =>
    file === undefined || file === '' || isAbsolute(file) ? file : join(root, file);
  const clusters = newClusters(obj.clusters).map((c) => ({ ...c, caFile: absolute(c.caFile) }));
  const users = newUsers(obj.users).map((u) => ({ ...u, certFile: absolute(u.certFile), keyFile: absolute(u.keyFile) }));
  const current = obj['current-context'];
  return { clusters, users, contexts: newContexts(obj.contexts), currentContext: typeof current === 'string' ? current : '' };
}

/** loadFromCluster: the service account's CA and token files, the apiserver from the Service variables. */
function inClusterKubeconfig(prefix: string, env: NodeJS.ProcessEnv): Kubeconfig {
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '';
  const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
  const server = `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`;
  const namespaceFile = `${prefix}${SERVICE_ACCOUNT_ROOT}/namespace`;
  const namespace = existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8') : undefined;
  return {
    clusters: [{ name: 'inCluster', caFile: `${prefix}${SERVICE_ACCOUNT_ROOT}/ca.crt`, server, skipTLSVerify: false }],
    users: [
      { name: 'inClusterUser', authProvider: { name: 'tokenFile', config: { tokenFile: `${prefix}${SERVICE_ACCOUNT_ROOT}/token` } } },
    ],
    contexts: [
      { name: 'inClusterContext', cluster: 'inCluster', user: 'inClusterUser', ...(namespace === undefined ? {} : { namespace }) },
    ],
    currentContext: 'inClusterContext',
  };
}

/** The context's cluster and user (client-node's getCurrentCluster and getCurrentUser). */
export function currentEntries(config: Kubeconfig, context: string): { cluster: Cluster | undefined; user: User | undefined } {
  const ctx = config.contexts.find((c) => c.name === context);
  if (ctx === undefined) return { cluster: undefined, user: undefined };
  return { cluster: config.clusters.find((c) => c.name === ctx.cluster), user: config.users.find((u) => u.name === ctx.user) };
}

/** The token file of a `tokenFile` auth provider (loadFromCluster's user), when that is the user's only plugin. */
export function tokenFileOf(user: User): string | undefined {
  const provider: unknown = user.authProvider;
  if (typeof provider !== 'object' || provider === null) return undefined;
  const { name, config } = provider as { name?: unknown; config?: unknown };
  if (typeof config !== 'object' || config === null) return undefined;
  const { tokenFile, exec } = config as { tokenFile?: unknown; exec?: unknown };
  // client-node tries its Azure, GCP and exec authenticators before the token file's.
  if (name === 'azure' || name === 'gcp' || name === 'exec' || name === 'oidc' || exec !== undefined) return undefined;
  return typeof tokenFile === 'string' && tokenFile !== '' ? tokenFile : undefined;
}

/** True when the user's credentials come from one of client-node's plugins (exec, or an auth provider other than a token file). */
export function needsClientNode(user: User | undefined): boolean {
  if (user === undefined) return false;
  if (user.exec !== undefined && user.exec !== null) return true;
  const provider: unknown = user.authProvider;
  if (provider === undefined || provider === null) return false;
  return tokenFileOf(user) === undefined;
}
