/**
 * The fleet's layouts: where each simulated node's agents send their requests, and the proxies
 * started for it (each its own process, started a few at a time, run as the image runs it: its
 * JavaScript and the Dockerfile's ENV, each node proxy in a memory cgroup limited as deploy/node
 * limits its container, so that each proxy's RSS is the one a node would pay).
 *   direct  every agent straight to the apiserver
 *   node    one node proxy per node: its pods scoped to the node, the cluster-wide types whole
 *   tree    the same node proxies chained (--server) to CLUSTER_PROXIES cluster proxies, which
 *           alone watch the apiserver (every pod, the cluster-wide types), half the nodes each
 *   pool    the same node proxies in shared mode (HTTPS, each agent's requests authenticated by
 *           its bearer token and authorized), in pools of `poolSize` nodes (--pool): each pool's
 *           elected leader alone watches the apiserver for the types cached whole, its followers
 *           list and watch them from it; every member watches its own node's pods from the
 *           apiserver (a selector scope is never pool-wide: src/proxy/pool-member.ts)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import { PROXY_FLAGS } from '../src/cli/proxy-flags.ts';
import { anonymousKubeconfig } from '../test/helpers/anonymous-kubeconfig.ts';
import { signedCertificate } from '../test/helpers/certificates.ts';
import { buildImageApp, imageEnv } from '../test/helpers/image.ts';
import type { MemoryCgroup } from '../test/helpers/memory-cgroup.ts';
import { createMemoryCgroup } from '../test/helpers/memory-cgroup.ts';
import { nodeProxyMemory } from '../test/helpers/node-manifest.ts';
import type { FleetScope } from './fleet-seed.ts';
import { fleetNode } from './fleet-seed.ts';
import type { Target } from './targets.ts';
import { startCacheProxy } from './targets.ts';

export const LAYOUTS = ['direct', 'node', 'tree', 'pool'] as const;
export type LayoutName = (typeof LAYOUTS)[number];

/** The cluster proxies of the tree layout. */
export const CLUSTER_PROXIES = 2;
/** Proxies started at once: each lists its types on start, and the machine has 2 cores. */
const START_CONCURRENCY = 4;
/** What a cluster proxy caches: everything a node proxy reads from it. */
const CLUSTER_RESOURCES = 'pods,services,endpointslices.discovery.k8s.io,nodes,namespaces';
/**
 * Node proxies per pool unless told. The apiserver carries one watch per pool-wide type per pool,
 * a tenth of the node layout's; a leader serves its 9 followers' 4 watches beside its own node's
 * agents, and its loss sends at most those 9 followers' pool-wide reads to the apiserver until a
 * new leader answers. At the fleet's default 50 nodes that is 5 pools: figures of several pools,
 * not of one proxy's fan-out as the tree's cluster proxies are.
 */
export const DEFAULT_POOL_SIZE = 10;

/** The pools of `nodes` nodes, `poolSize` each (the last one may be smaller). */
export function poolCount(nodes: number, poolSize: number): number {
  return Math.ceil(nodes / poolSize);
}

/** The node proxy's caches for node `node`, as README's node mode names them. */
export function nodeResources(node: string): string {
  return `pods:spec.nodeName=${node},services,endpointslices.discovery.k8s.io,nodes,namespaces`;
}

/**
 * Where one node's agents go. Every target of a layout has the same headers and CA: the light
 * watches' processes take one of each for all the URLs they watch.
 */
export interface AgentTarget {
  readonly url: string;
  /** For the Go agent. */
  readonly kubeconfig: string;
  /** For the light clients (a bearer token at the apiserver and at a shared proxy, none at a loopback proxy). */
  readonly headers: Readonly<Record<string, string>>;
  /** PEM of the CA for an HTTPS target. */
  readonly ca: string | undefined;
}

export interface LayoutSizes {
  readonly nodes: number;
  /** Node proxies per pool (the pool layout). */
  readonly poolSize: number;
}

export interface RunningProxy {
  readonly role: 'node' | 'cluster';
  readonly pid: number;
  readonly url: string;
}

export interface RunningLayout {
  readonly name: LayoutName;
  /** Per simulated node, in node order. */
  readonly agents: readonly AgentTarget[];
  readonly proxies: readonly RunningProxy[];
  stop(): Promise<void>;
}

/** Why the bench cannot run a layout, or undefined when it can: pools need a build with --pool. */
export function layoutUnavailable(name: LayoutName): string | undefined {
  if (name !== 'pool') return undefined;
  return PROXY_FLAGS.some((flag) => (flag.name as string) === 'pool') ? undefined : 'not available in this build (no --pool flag)';
}

/**
 * Each node proxy's memory cgroup, limited as deploy/node limits its container (V8 sizes its young
 * generation from the limit, and the proxy its budgets), or none where none can be made (not
 * root): said once, since V8 then sizes a larger young generation and RSS reads higher.
 */
function nodeProxyLimit(report: (line: string) => void): () => { cgroup?: MemoryCgroup } {
  const { limitBytes } = nodeProxyMemory();
  let failed = false;
  return () => {
    if (failed) return {};
    try {
      return { cgroup: createMemoryCgroup(limitBytes) };
    } catch (error) {
      failed = true;
      report(`node proxies run without a memory limit (${error instanceof Error ? error.message : String(error)}): RSS reads higher`);
      return {};
    }
  };
}

async function startAll<T>(count: number, start: (i: number) => Promise<T>, onStarted: (n: number) => void): Promise<T[]> {
  const out: T[] = new Array<T>(count);
  let next = 0;
  let started = 0;
  await Promise.all(
    Array.from({ length: Math.min(START_CONCURRENCY, count) }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await start(i);
        onStarted(++started);
      }
    }),
  );
  return out;
}

/** A kubeconfig (clientcmd's v1 Config, JSON) for `server` over HTTPS trusting `caFile`, with a bearer token. */
function tokenKubeconfig(server: string, caFile: string, token: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'proxy', cluster: { server, 'certificate-authority': caFile } }],
    users: [{ name: 'agent', user: { token } }],
    contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'agent' } }],
    'current-context': 'proxy',
  });
}

/** `count` loopback ports free now, all distinct: each is held until every one is picked. */
async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolve);
      });
    }
    return servers.map((server) => {
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('a listening socket with no port');
      return address.port;
    });
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/**
 * The pool layout's node proxies, node i in pool floor(i / poolSize). One serving certificate of
 * the control plane's CA, for 127.0.0.1, serves them all: the CA the agents trust, and the one
 * the followers verify their leader against (the upstream's, --pool-certificate-authority's
 * default). A member advertises https://127.0.0.1:PORT, on a port picked before it starts. The
 * pools are named afresh per run, so that no Lease an earlier run left held is waited out; the
 * Leases are in --pool-namespace's default (kube-system), at client-go's timings. Each pool's
 * first member is started (and its caches synced) before the others: it takes the Lease, and the
 * others chain to it from their first LIST, so that the start measured is a pool's, not an
 * election's race (the failover is test/e2e/chain/pool-leader.test.ts's).
 */
async function startPools(
  state: ControlPlaneState,
  sizes: LayoutSizes,
  scope: FleetScope,
  image: { readonly script: string; readonly env: Readonly<Record<string, string>> },
  nodeLimit: () => { cgroup?: MemoryCgroup },
  started: (proxy: Target) => void,
  cleanups: (() => void)[],
  report: (line: string) => void,
): Promise<Target[]> {
  const { nodes, poolSize } = sizes;
  const serving = signedCertificate({ after: (fn) => cleanups.push(fn) }, state, { cn: 'kube-cache-proxy', serving: true });
  const ca = readFileSync(state.caFile);
  const ports = await freePorts(nodes);
  const run = Date.now().toString(36);
  const pools = poolCount(nodes, poolSize);
  const startMember = async (i: number): Promise<Target> => {
    const port = String(ports[i]);
    const proxy = await startCacheProxy(state, {
      ...image,
      ...nodeLimit(),
      ca,
      resources: nodeResources(fleetNode(scope, i)),
      args: [
        '--shared',
        `--tls-cert-file=${serving.certFile}`,
        `--tls-private-key-file=${serving.keyFile}`,
        `--port=${port}`,
        `--pool=fleet-${run}-${String(Math.floor(i / poolSize))}`,
        `--pool-advertise=https://127.0.0.1:${port}`,
      ],
    });
    started(proxy);
    return proxy;
  };
  const proxies: Target[] = new Array<Target>(nodes);
  const firsts = Array.from({ length: pools }, (_, p) => p * poolSize);
  const rest = Array.from({ length: nodes }, (_, i) => i).filter((i) => i % poolSize !== 0);
  report(
    `starting ${String(pools)} pool${pools === 1 ? '' : 's'} of up to ${String(poolSize)} node proxies, each pool's first member first`,
  );
  const at = (indices: readonly number[]) => async (k: number) => {
    const i = indices[k] ?? 0;
    proxies[i] = await startMember(i);
  };
  await startAll(firsts.length, at(firsts), () => undefined);
  await startAll(rest.length, at(rest), (n) => {
    if ((n + pools) % 10 === 0 || n === rest.length) report(`${String(n + pools)}/${String(nodes)} node proxies ready`);
  });
  return proxies;
}

export async function startLayout(
  name: LayoutName,
  state: ControlPlaneState,
  sizes: LayoutSizes,
  report: (line: string) => void,
  scope: FleetScope,
): Promise<RunningLayout> {
  const unavailable = layoutUnavailable(name);
  if (unavailable !== undefined) throw new Error(`the ${name} layout: ${unavailable}`);
  const { nodes } = sizes;
  const dir = mkdtempSync(join(tmpdir(), 'kcp-fleet-'));
  const targets: Target[] = [];
  const cleanups: (() => void)[] = [];
  const stop = async (): Promise<void> => {
    await Promise.allSettled(targets.map((t) => t.stop()));
    for (const cleanup of cleanups) cleanup();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    if (name === 'direct') {
      const agent: AgentTarget = {
        url: state.server,
        kubeconfig: state.kubeconfig,
        headers: { authorization: `Bearer ${state.users.admin.token}` },
        ca: readFileSync(state.caFile, 'utf8'),
      };
      return { name, agents: Array.from({ length: nodes }, () => agent), proxies: [], stop };
    }
    const image = { script: await buildImageApp(join(dir, 'app')), env: imageEnv() };
    const nodeLimit = nodeProxyLimit(report);
    if (name === 'pool') {
      const members = await startPools(state, sizes, scope, image, nodeLimit, (proxy) => targets.push(proxy), cleanups, report);
      // Every agent presents the admin's token, as at the direct layout: its node proxy reviews it
      // (TokenReview) and authorizes each kind of read (SubjectAccessReview), each decision kept for its TTL.
      const token = state.users.admin.token;
      const ca = readFileSync(state.caFile, 'utf8');
      const agents = members.map((proxy, i) => {
        const kubeconfig = join(dir, `node-${String(i)}.kubeconfig`);
        writeFileSync(kubeconfig, tokenKubeconfig(proxy.url, state.caFile, token));
        return { url: proxy.url, kubeconfig, headers: { authorization: `Bearer ${token}` }, ca };
      });
      return { name, agents, proxies: members.map((p) => ({ role: 'node' as const, pid: p.pid, url: p.url })), stop };
    }
    const clusters: Target[] = [];
    if (name === 'tree') {
      report(`starting ${String(CLUSTER_PROXIES)} cluster proxies`);
      clusters.push(
        ...(await startAll(
          CLUSTER_PROXIES,
          () => startCacheProxy(state, { ...image, resources: CLUSTER_RESOURCES }),
          () => undefined,
        )),
      );
      targets.push(...clusters);
    }
    const nodeProxies = await startAll(
      nodes,
      async (i) => {
        const upstream = clusters[i % CLUSTER_PROXIES];
        const proxy = await startCacheProxy(state, {
          ...image,
          ...nodeLimit(),
          resources: nodeResources(fleetNode(scope, i)),
          args: upstream === undefined ? [] : [`--server=${upstream.url}`],
        });
        targets.push(proxy);
        return proxy;
      },
      (n) => {
        if (n % 10 === 0 || n === nodes) report(`${String(n)}/${String(nodes)} node proxies ready`);
      },
    );
    const agents = nodeProxies.map((proxy, i) => {
      const kubeconfig = join(dir, `node-${String(i)}.kubeconfig`);
      writeFileSync(kubeconfig, anonymousKubeconfig(proxy.url));
      return { url: proxy.url, kubeconfig, headers: {}, ca: undefined };
    });
    const proxies: RunningProxy[] = [
      ...nodeProxies.map((p) => ({ role: 'node' as const, pid: p.pid, url: p.url })),
      ...clusters.map((p) => ({ role: 'cluster' as const, pid: p.pid, url: p.url })),
    ];
    return { name, agents, proxies, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
