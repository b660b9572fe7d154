/**
 * A kubeconfig's clusters, users and contexts as @kubernetes/client-node's KubeConfig holds them
 * (its public `Cluster`, `User` and `Context` types), parsed by the rules of client-node's
 * config_types.ts newClusters, newUsers and newContexts: an entry without its required fields
 * throws, a trailing `/` of the server is dropped, `token-file` is read at once. Written here
 * because client-node exports those functions from no public entry point (its package root
 * exports only the types), and importing its internal files binds us to what its semver does not
 * cover; its root module would load the whole generated API client.
 */
import { readFileSync } from 'node:fs';
import type { Cluster, Context, User } from '@kubernetes/client-node';

type Entry = Record<string, unknown>;

function entries(list: unknown): Entry[] {
  return Array.isArray(list) ? list.map((e: unknown) => (typeof e === 'object' && e !== null ? (e as Entry) : {})) : [];
}

function section(entry: Entry, key: string): Entry | undefined {
  const value = entry[key];
  return typeof value === 'object' && value !== null ? (value as Entry) : undefined;
}

/** A string field as written: client-node copies values through without checking their type. */
function field(entry: Entry | undefined, key: string): string | undefined {
  return entry?.[key] as string | undefined;
}

/** config_types.ts newClusters (ActionOnInvalid.THROW). */
export function newClusters(list: unknown): Cluster[] {
  return entries(list).map((elt, i) => {
    const name = field(elt, 'name');
    if (!name) throw new Error(`clusters[${String(i)}].name is missing`);
    const cluster = section(elt, 'cluster');
    if (cluster === undefined) throw new Error(`clusters[${String(i)}].cluster is missing`);
    const server = field(cluster, 'server');
    if (!server) throw new Error(`clusters[${String(i)}].cluster.server is missing`);
    return {
      caData: field(cluster, 'certificate-authority-data'),
      caFile: field(cluster, 'certificate-authority'),
      name,
      server: server.replace(/\/$/, ''),
      skipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
      tlsServerName: field(cluster, 'tls-server-name'),
      proxyUrl: field(cluster, 'proxy-url'),
    } satisfies Cluster;
  });
}

/**
 * config_types.ts newUsers (ActionOnInvalid.THROW). A user entry without `user` gets undefined
 * fields where client-node puts null (its types say undefined).
 */
export function newUsers(list: unknown): User[] {
  return entries(list).map((elt, i) => {
    const name = field(elt, 'name');
    if (!name) throw new Error(`users[${String(i)}].name is missing`);
    const user = section(elt, 'user');
    return {
      authProvider: user?.['auth-provider'],
      certData: field(user, 'client-certificate-data'),
      certFile: field(user, 'client-certificate'),
      exec: user?.exec,
      keyData: field(user, 'client-key-data'),
      keyFile: field(user, 'client-key'),
      name,
      token: findToken(user),
      password: field(user, 'password'),
      username: field(user, 'username'),
      impersonateUser: field(user, 'as'),
    } satisfies User;
  });
}

/** config_types.ts findToken: `token`, else the contents of `token-file`, read now. */
function findToken(user: Entry | undefined): string | undefined {
  if (user === undefined) return undefined;
  const token = field(user, 'token');
  if (token) return token;
  const tokenFile = field(user, 'token-file');
  if (tokenFile) return readFileSync(tokenFile).toString();
  return undefined;
}

/** config_types.ts newContexts (ActionOnInvalid.THROW). */
export function newContexts(list: unknown): Context[] {
  return entries(list).map((elt, i) => {
    const name = field(elt, 'name');
    if (!name) throw new Error(`contexts[${String(i)}].name is missing`);
    const context = section(elt, 'context');
    if (context === undefined) throw new Error(`contexts[${String(i)}].context is missing`);
    const cluster = field(context, 'cluster');
    if (!cluster) throw new Error(`contexts[${String(i)}].context.cluster is missing`);
    return {
      cluster,
      name,
      user: field(context, 'user') || undefined,
      namespace: field(context, 'namespace') || undefined,
    } as Context;
  });
}
