/**
 * The fleet's layouts: where each simulated node's agents send their requests, and the proxies
 * started for it (each its own process, started a few at a time, run as the image runs it: its
 * JavaScript and the Dockerfile's ENV, so that each proxy's RSS is the one a node would pay).
 *   direct  every agent straight to the apiserver
 *   node    one node proxy per node: its pods scoped to the node, the cluster-wide types whole
 *   tree    the same node proxies chained (--server) to CLUSTER_PROXIES cluster proxies, which
 *           alone watch the apiserver (every pod, the cluster-wide types), half the nodes each
 *   pool    node proxies in pools with an elected leader: not wired yet (layoutUnavailable)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import { PROXY_FLAGS } from '../src/cli/proxy-flags.ts';
import { anonymousKubeconfig } from '../test/helpers/anonymous-kubeconfig.ts';
import { buildImageApp, imageEnv } from '../test/helpers/image.ts';
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

/** The node proxy's caches for node `node`, as README's node mode names them. */
export function nodeResources(node: string): string {
  return `pods:spec.nodeName=${node},services,endpointslices.discovery.k8s.io,nodes,namespaces`;
}

/** Where one node's agents go. */
export interface AgentTarget {
  readonly url: string;
  /** For the Go agent. */
  readonly kubeconfig: string;
  /** For the light clients (a bearer token at the apiserver, none at a proxy). */
  readonly headers: Readonly<Record<string, string>>;
  /** PEM of the CA for an HTTPS target. */
  readonly ca: string | undefined;
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

/**
 * Why the bench cannot run a layout yet, or undefined when it can. Pools (--pool) need node
 * proxies in shared mode (TLS serving, each agent authenticated), which the other layouts' plain
 * loopback proxies are not: the pool layout is not wired yet.
 */
export function layoutUnavailable(name: LayoutName): string | undefined {
  if (name !== 'pool') return undefined;
  return PROXY_FLAGS.some((flag) => (flag.name as string) === 'pool')
    ? 'not wired into the bench yet (pools need shared-mode node proxies)'
    : 'not available in this build (no --pool flag)';
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

export async function startLayout(
  name: LayoutName,
  state: ControlPlaneState,
  nodes: number,
  report: (line: string) => void,
  scope: FleetScope,
): Promise<RunningLayout> {
  const unavailable = layoutUnavailable(name);
  if (unavailable !== undefined) throw new Error(`the ${name} layout: ${unavailable}`);
  const dir = mkdtempSync(join(tmpdir(), 'kcp-fleet-'));
  const targets: Target[] = [];
  const stop = async (): Promise<void> => {
    await Promise.allSettled(targets.map((t) => t.stop()));
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
