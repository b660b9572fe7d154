/**
 * The fleet (`npm run bench -- fleet`): simulated nodes, each with a node's agents (fleet-agents.ts),
 * over one apiserver holding the nodes' pods and a cluster's Services and EndpointSlices
 * (fleet-seed.ts), under the same churn (fleet-churn.ts) in each layout (fleet-layouts.ts) in
 * turn. Per layout: what the apiserver carried (fleet-apiserver.ts) while the layout started and
 * its agents synced, then over the churn; each proxy's RSS at the churn's end; the agents' event
 * latency (a write's answer to the event's arrival at the node's agent, CLOCK_MONOTONIC) and
 * every event lost or duplicated. Then, from the per-node costs measured, the same on paper at
 * PAPER_NODES nodes. Figures only: the targets of the issue are printed beside them, not asserted.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import type { AgentRecords, RunningAgents } from './fleet-agents.ts';
import { startAgents } from './fleet-agents.ts';
import type { ApiserverDelta, ApiserverSnapshot } from './fleet-apiserver.ts';
import { apiserverDelta, apiserverSnapshot, FLEET_RESOURCES } from './fleet-apiserver.ts';
import type { ChurnLog } from './fleet-churn.ts';
import { startChurn } from './fleet-churn.ts';
import type { LayoutName } from './fleet-layouts.ts';
import { DEFAULT_POOL_SIZE, layoutUnavailable, startLayout } from './fleet-layouts.ts';
import type { FleetScope, FleetSizes } from './fleet-seed.ts';
import { BENCH_FLEET_SCOPE, seedFleet } from './fleet-seed.ts';
import { proxyUpstreamWatches } from './fleet-proxy-watches.ts';
import type { Progress } from '../src/cli/progress.ts';
import { buildGoClient } from '../test/helpers/go-client.ts';
import { cpuSeconds, median, quantile, rssBytes } from './stats.ts';

/** The fleet the paper figures are for. */
export const PAPER_NODES = 5000;
export const PAPER_PODS_PER_NODE = 30;
/**
 * After the churn stops, events still on their way are waited for: at least DRAIN_MS, then until
 * the light watches have recorded nothing new for SETTLED_MS (at most DRAIN_MAX_MS in all).
 */
const DRAIN_MS = 3_000;
const SETTLED_MS = 2_000;
const DRAIN_MAX_MS = 30_000;
/** How long the apiserver may take to close a stopped layout's watches. */
const WATCHES_CLOSE_MS = 30_000;

export interface FleetSpec extends FleetSizes {
  readonly layouts: readonly LayoutName[];
  readonly seconds: number;
  /** Churn writes per second. */
  readonly churn: number;
  /** Each node's RV-unset LIST of its pods, every this many seconds. */
  readonly listSeconds: number;
  /** Light agents per node (Service, EndpointSlice and Namespace readers). */
  readonly lightAgents: number;
  /** Node proxies per pool in the pool layout (default DEFAULT_POOL_SIZE). */
  readonly poolSize?: number;
}

export interface Spread {
  readonly min: number;
  readonly median: number;
  readonly max: number;
}

export interface FleetRow {
  readonly layout: LayoutName;
  /** Why the layout was not run (not available in this build, or failed). */
  readonly skipped?: string;
  /** Watches open at the apiserver at the churn's end, per type, beyond those open before the layout. */
  readonly watches?: Readonly<Record<string, number>>;
  /**
   * Per node proxy, its upstream watches at the churn's end, per type, by its own /metrics
   * (fleet-proxy-watches.ts): its own alone, whoever else watches the apiserver. Empty for pools.
   */
  readonly nodeProxyWatches?: readonly Readonly<Record<string, number>>[];
  /** The apiserver while the layout started and its agents synced, then over the churn and drain. */
  readonly startup?: ApiserverDelta;
  readonly churn?: ApiserverDelta;
  readonly churnSeconds?: number;
  readonly nodeProxyRss?: Spread;
  readonly clusterProxyRss?: Spread;
  /** CPU seconds every node proxy together, and every cluster proxy together, used over the churn and drain. */
  readonly proxyCpu?: { readonly node: number; readonly cluster: number };
  readonly agents?: AgentFigures;
}

export interface AgentFigures {
  /** Events the agents had to see (each pod write at its node's agent, each EndpointSlice update at every node). */
  readonly expected: number;
  readonly delivered: number;
  readonly lost: number;
  /** Of those lost, the pod informers' (the rest the EndpointSlice watches'). */
  readonly lostPods: number;
  /** EndpointSlice updates some watch missed (each missed by how many: lost − lostPods over this). */
  readonly lostSliceWrites: number;
  readonly duplicated: number;
  readonly p50: number;
  readonly p99: number;
  /** p99 of the pod informers' events alone, and of the EndpointSlice watches'. */
  readonly podP99: number;
  readonly sliceP99: number;
  readonly writes: number;
  readonly failedWrites: number;
  readonly watchErrors: number;
  readonly closedWatches: number;
  readonly lists: number;
  readonly listFailures: number;
}

export interface FleetResult {
  readonly spec: FleetSpec;
  /** The churn alone, no agent: what every layout's churn figures include. */
  readonly baseline?: { readonly apiserver: ApiserverDelta; readonly seconds: number };
  readonly rows: readonly FleetRow[];
}

/** Builds tools/goclient (the node agent) with the project's Go toolchain, offline; returns the binary. */
export function buildAgent(): Promise<string> {
  return buildGoClient();
}

function spread(values: readonly number[]): Spread | undefined {
  if (values.length === 0) return undefined;
  return { min: Math.min(...values), median: median(values), max: Math.max(...values) };
}

/** Matches every write with the events its agents recorded: latency, losses and duplicates. */
export function agentFigures(log: ChurnLog, records: AgentRecords): AgentFigures {
  const podLatencies: number[] = [];
  const sliceLatencies: number[] = [];
  let expected = 0;
  let lost = 0;
  let lostPods = 0;
  let duplicated = 0;
  const byNode = records.pods.map((events) => {
    const seen = new Map<string, number[]>();
    for (const e of events) {
      const key = e.key.replace(/^DELETED-UNKNOWN /, 'DELETED ');
      seen.set(key, [...(seen.get(key) ?? []), e.at]);
    }
    return seen;
  });
  for (const write of log.pods) {
    expected++;
    const times = byNode[write.node]?.get(write.key) ?? [];
    const first = times[0];
    if (first === undefined) lostPods++;
    else podLatencies.push(first - write.at);
    if (times.length > 1) duplicated += times.length - 1;
  }
  const missedSlices = new Set<number>();
  for (const events of records.slices) {
    const seen = new Map<number, number[]>();
    for (const e of events) seen.set(e.rv, [...(seen.get(e.rv) ?? []), e.at]);
    for (const write of log.slices) {
      expected++;
      const times = seen.get(write.rv) ?? [];
      const first = times[0];
      if (first === undefined) {
        lost++;
        missedSlices.add(write.rv);
      } else sliceLatencies.push(first - write.at);
      if (times.length > 1) duplicated += times.length - 1;
    }
  }
  const latencies = [...podLatencies, ...sliceLatencies];
  return {
    expected,
    delivered: latencies.length,
    lost: lost + lostPods,
    lostPods,
    lostSliceWrites: missedSlices.size,
    duplicated,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    podP99: quantile(podLatencies, 0.99),
    sliceP99: quantile(sliceLatencies, 0.99),
    writes: log.pods.length + log.slices.length,
    failedWrites: log.failed,
    watchErrors: records.watchErrors,
    closedWatches: records.closedWatches,
    lists: records.lists,
    listFailures: records.listFailures,
  };
}

async function drain(agents: RunningAgents): Promise<void> {
  const deadline = performance.now() + DRAIN_MAX_MS;
  await sleep(DRAIN_MS);
  let last = await agents.recorded();
  while (performance.now() < deadline) {
    await sleep(SETTLED_MS);
    const now = await agents.recorded();
    if (now === last) return;
    last = now;
  }
}

async function waitWatchesClosed(client: UpstreamClient, pid: number, baseline: Readonly<Record<string, number>>): Promise<void> {
  const deadline = Date.now() + WATCHES_CLOSE_MS;
  while (Date.now() < deadline) {
    const now = await apiserverSnapshot(client, pid);
    if (FLEET_RESOURCES.every((r) => (now.watches[r] ?? 0) <= (baseline[r] ?? 0))) return;
    await sleep(500);
  }
}

/** What every layout of a fleet run shares. */
export interface FleetRun {
  readonly state: ControlPlaneState;
  /** The admin's, for the churn and the apiserver's /metrics. */
  readonly client: UpstreamClient;
  /** The apiserver's process: its CPU seconds and bytes written. */
  readonly apiserverPid: number;
  readonly spec: FleetSpec;
  /** The seed's. */
  readonly scope: FleetScope;
  /** The Go agent (buildAgent). */
  readonly binary: string;
  readonly report: (line: string) => void;
}

/**
 * One layout under the churn, its figures measured from `before` (the apiserver's snapshot just
 * before the layout starts). The layout is stopped on return; the apiserver may still be closing
 * its watches.
 */
export async function runLayout(run: FleetRun, name: LayoutName, before: ApiserverSnapshot): Promise<FleetRow> {
  const { client, apiserverPid: pid, spec } = run;
  const say = (line: string): void => {
    run.report(`fleet · ${name} · ${line}`);
  };
  const layout = await startLayout(name, run.state, { nodes: spec.nodes, poolSize: spec.poolSize ?? DEFAULT_POOL_SIZE }, say, run.scope);
  try {
    const res = await client.request({ method: 'GET', path: '/api/v1/namespaces?limit=1' });
    const rv = (JSON.parse(res.body.toString()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const agents = await startAgents(
      layout.agents,
      { binary: run.binary, resourceVersion: rv, listSeconds: spec.listSeconds, lightAgents: spec.lightAgents, scope: run.scope },
      say,
    );
    let records: AgentRecords | undefined;
    try {
      const started = await apiserverSnapshot(client, pid);
      say(`churn at ${String(spec.churn)} writes/s for ${String(spec.seconds)} s`);
      const proxyCpu = (role: 'node' | 'cluster'): number =>
        layout.proxies.filter((p) => p.role === role).reduce((sum, p) => sum + cpuSeconds(p.pid), 0);
      const cpuBefore = { node: proxyCpu('node'), cluster: proxyCpu('cluster') };
      const churnStarted = performance.now();
      const churn = startChurn(client, { rate: spec.churn, nodes: spec.nodes, services: spec.services, scope: run.scope, tag: name });
      await sleep(spec.seconds * 1000);
      const log = await churn.stop();
      await drain(agents);
      const churnSeconds = (performance.now() - churnStarted) / 1000;
      const end = await apiserverSnapshot(client, pid);
      const rss = (role: 'node' | 'cluster'): Spread | undefined =>
        spread(layout.proxies.filter((p) => p.role === role).map((p) => rssBytes(p.pid)));
      const cpuUsed = { node: proxyCpu('node') - cpuBefore.node, cluster: proxyCpu('cluster') - cpuBefore.cluster };
      const nodeProxyRss = rss('node');
      const clusterProxyRss = rss('cluster');
      // A pool member's watches go to its leader or the apiserver (shared mode also guards its
      // /metrics): for pools, the apiserver's own counters say what they cost.
      const nodeProxyWatches =
        name === 'pool' ? [] : await Promise.all(layout.proxies.filter((p) => p.role === 'node').map((p) => proxyUpstreamWatches(p.url)));
      records = await agents.stop();
      const figures = agentFigures(log, records);
      say(
        `${String(figures.delivered)}/${String(figures.expected)} events, ${String(figures.lost)} lost, p50 ${figures.p50.toFixed(1)} ms, p99 ${figures.p99.toFixed(1)} ms`,
      );
      return {
        layout: name,
        watches: apiserverDelta(end, before).watches,
        nodeProxyWatches,
        startup: apiserverDelta(started, before),
        churn: apiserverDelta(end, started),
        churnSeconds,
        ...(nodeProxyRss === undefined ? {} : { nodeProxyRss }),
        ...(clusterProxyRss === undefined ? {} : { clusterProxyRss }),
        ...(layout.proxies.length === 0 ? {} : { proxyCpu: cpuUsed }),
        agents: figures,
      };
    } finally {
      if (records === undefined) await agents.stop().catch(() => undefined);
    }
  } finally {
    await layout.stop();
  }
}

export async function runFleet(
  state: ControlPlaneState,
  client: UpstreamClient,
  apiserverPid: number,
  spec: FleetSpec,
  progress: Progress,
  report: (line: string) => void,
): Promise<FleetResult> {
  report('fleet · building the Go agent (tools/goclient)');
  const binary = await buildAgent();
  const scope = BENCH_FLEET_SCOPE;
  await seedFleet(client, spec, scope, progress);
  report(`fleet · the churn alone, no agent, ${String(spec.seconds)} s`);
  const quiet = await apiserverSnapshot(client, apiserverPid);
  const started = performance.now();
  const churn = startChurn(client, { rate: spec.churn, nodes: spec.nodes, services: spec.services, scope, tag: 'baseline' });
  await sleep(spec.seconds * 1000);
  await churn.stop();
  await sleep(DRAIN_MS);
  const baseline = {
    apiserver: apiserverDelta(await apiserverSnapshot(client, apiserverPid), quiet),
    seconds: (performance.now() - started) / 1000,
  };
  const run: FleetRun = { state, client, apiserverPid, spec, scope, binary, report };
  const rows: FleetRow[] = [];
  for (const layout of spec.layouts) {
    const unavailable = layoutUnavailable(layout);
    if (unavailable !== undefined) {
      report(`fleet · ${layout} · ${unavailable}`);
      rows.push({ layout, skipped: unavailable });
      continue;
    }
    try {
      const before = await apiserverSnapshot(client, apiserverPid);
      // The next layout's figures start from the apiserver without this one's watches.
      rows.push(await runLayout(run, layout, before).finally(() => waitWatchesClosed(client, apiserverPid, before.watches)));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      report(`fleet · ${layout} · failed: ${message}`);
      rows.push({ layout, skipped: `failed: ${message.slice(0, 200)}` });
    }
  }
  return { spec, baseline, rows };
}
