/**
 * The fleet's tables: per layout what the apiserver carried, the proxies' RSS and the agents'
 * events, the issue's targets beside the figures, and the same fleet on paper at PAPER_NODES
 * nodes from the per-node costs measured.
 */
import type { Spread, FleetResult, FleetRow } from './fleet.ts';
import { PAPER_NODES, PAPER_PODS_PER_NODE } from './fleet.ts';
import { FLEET_RESOURCES } from './fleet-apiserver.ts';
import { CLUSTER_PROXIES, DEFAULT_POOL_SIZE, poolCount } from './fleet-layouts.ts';

const MiB = 1024 * 1024;
/** What a node proxy caches (README's node mode): the types per node of the watch target. */
const TYPES_PER_NODE = FLEET_RESOURCES.length;
/** The issue's targets. */
const BYTES_SHARE = 1 / 3;
const P99_MARGIN_MS = 10;
const RSS_LIMIT_MIB = 120;

const mib = (bytes: number): string => (bytes / MiB).toFixed(1);
const rss = (s: Spread | undefined): string =>
  s === undefined ? '–' : `${(s.min / MiB).toFixed(0)} / ${(s.median / MiB).toFixed(0)} / ${(s.max / MiB).toFixed(0)}`;
const perSecond = (bytes: number): string => (bytes < MiB ? `${(bytes / 1024).toFixed(0)} KiB/s` : `${(bytes / MiB).toFixed(1)} MiB/s`);
const total = (w: Readonly<Record<string, number>> | undefined): number => Object.values(w ?? {}).reduce((a, b) => a + b, 0);
const verdict = (met: boolean): string => (met ? 'met' : 'NOT met');

function row(r: FleetRow): string {
  if (r.skipped !== undefined) return `| ${r.layout} | ${r.skipped} | | | | | | | | |`;
  const w = r.watches ?? {};
  const s = r.startup;
  const c = r.churn;
  const a = r.agents;
  const secs = r.churnSeconds ?? NaN;
  return [
    r.layout,
    `${String(total(w))} (${FLEET_RESOURCES.map((t) => String(w[t] ?? 0)).join('/')})`,
    s === undefined ? '–' : `${String(s.requests)} · ${mib(s.bodyBytes)} · ${s.cpuSeconds.toFixed(1)}`,
    c === undefined
      ? '–'
      : `${(c.requests / secs).toFixed(1)} · ${(c.bodyBytes / secs / 1024).toFixed(0)} (${(c.writtenBytes / secs / 1024).toFixed(0)}) · ${c.cpuSeconds.toFixed(1)}`,
    rss(r.nodeProxyRss),
    rss(r.clusterProxyRss),
    r.proxyCpu === undefined ? '–' : `${r.proxyCpu.node.toFixed(1)} / ${r.proxyCpu.cluster.toFixed(1)}`,
    a === undefined
      ? '–'
      : `${String(a.delivered)}/${String(a.expected)} · ${String(a.lost)} (pods ${String(a.lostPods)}) · ${String(a.duplicated)} · ${String(a.closedWatches + a.watchErrors)}`,
    a === undefined ? '–' : `${a.p50.toFixed(1)} / ${a.p99.toFixed(1)} (${a.podP99.toFixed(1)} / ${a.sliceP99.toFixed(1)})`,
    a === undefined ? '–' : `${String(a.lists)} (${String(a.listFailures)} failed)`,
  ]
    .join(' | ')
    .replace(/^/, '| ')
    .concat(' |');
}

/** Whether a fleet type is pool-wide (cached whole, watched by each pool's leader alone): all but the node's pods. */
const poolWide = (type: string): boolean => type !== 'pods';

function targets(result: FleetResult): string[] {
  const { nodes } = result.spec;
  const pools = poolCount(nodes, result.spec.poolSize ?? DEFAULT_POOL_SIZE);
  const by = (name: string): FleetRow | undefined => result.rows.find((r) => r.layout === name && r.skipped === undefined);
  const direct = by('direct');
  const lines: string[] = [];
  for (const name of ['node', 'tree', 'pool']) {
    const r = by(name);
    if (r === undefined) continue;
    const watches = total(r.watches);
    lines.push(
      `- ${name}: apiserver watches ${String(watches)} ≤ ${String(TYPES_PER_NODE)} types × ${String(nodes)} nodes = ${String(TYPES_PER_NODE * nodes)}: ${verdict(watches <= TYPES_PER_NODE * nodes)}`,
    );
    if (name === 'tree') {
      const most = Math.max(...Object.values(r.watches ?? {}));
      lines.push(
        `- tree: apiserver watches per type at most ${String(most)} ≤ ${String(CLUSTER_PROXIES)}: ${verdict(most <= CLUSTER_PROXIES)}`,
      );
    }
    if (name === 'pool') {
      const most = Math.max(...Object.entries(r.watches ?? {}).map(([type, n]) => (poolWide(type) ? n : 0)));
      lines.push(
        `- pool: apiserver watches per pool-wide type at most ${String(most)} ≤ ${String(pools)} pools: ${verdict(most <= pools)}`,
      );
    }
    if (direct?.churn !== undefined && r.churn !== undefined) {
      const share = r.churn.bodyBytes / direct.churn.bodyBytes;
      lines.push(
        `- ${name}: bytes the apiserver sent over the churn ${(share * 100).toFixed(1)}% of direct's ≤ 33%: ${verdict(share <= BYTES_SHARE)}`,
      );
    }
    if (direct?.agents !== undefined && r.agents !== undefined) {
      const bound = direct.agents.p99 + P99_MARGIN_MS;
      lines.push(
        `- ${name}: agents' event latency p99 ${r.agents.p99.toFixed(1)} ms ≤ direct's ${direct.agents.p99.toFixed(1)} + ${String(P99_MARGIN_MS)} ms: ${verdict(r.agents.p99 <= bound)}; ${String(r.agents.lost)} lost, ${String(r.agents.duplicated)} duplicated`,
      );
    }
    if (r.nodeProxyRss !== undefined) {
      lines.push(
        `- ${name}: node proxy RSS max ${mib(r.nodeProxyRss.max)} MiB ≤ ${String(RSS_LIMIT_MIB)} MiB (${String(result.spec.podsPerNode)} pods, ${String(result.spec.services)} Services): ${verdict(r.nodeProxyRss.max <= RSS_LIMIT_MIB * MiB)}`,
      );
    }
  }
  return lines;
}

/**
 * On paper at PAPER_NODES nodes, the same churn rate. Where every node holds its own upstream
 * watches (direct, node) the apiserver's cost over the churn is the churn alone's (measured without
 * agents) plus the per-node share of the rest times the nodes, and its start the per-node start
 * times the nodes; behind the tree's cluster proxies the churn costs what was measured whatever the
 * nodes, and its start grows with the objects the cluster proxies list. Pools grow with the nodes
 * at a fixed pool size: the pool layout's pool-wide watches are scaled by the pools (by the nodes,
 * a small run's part-filled last pool would overstate them), the rest of its costs per node as
 * the node layout's.
 */
function paper(result: FleetResult): string[] {
  const { nodes, podsPerNode, services } = result.spec;
  const factor = PAPER_NODES / nodes;
  const poolSize = result.spec.poolSize ?? DEFAULT_POOL_SIZE;
  const poolFactor = poolCount(PAPER_NODES, poolSize) / poolCount(nodes, poolSize);
  const watchesOnPaper = (r: FleetRow): number => {
    if (r.layout === 'tree') return total(r.watches);
    if (r.layout !== 'pool') return total(r.watches) * factor;
    return Object.entries(r.watches ?? {}).reduce((sum, [type, n]) => sum + n * (poolWide(type) ? poolFactor : factor), 0);
  };
  const objects = (n: number, p: number): number => n * p + n + services * 2;
  const base = result.baseline;
  const lines: string[] = [];
  for (const r of result.rows) {
    if (r.skipped !== undefined || r.churn === undefined || r.startup === undefined) continue;
    const secs = r.churnSeconds ?? NaN;
    const perNode = r.layout !== 'tree';
    const rate = (measured: number, baseline: number): number => {
      const own = measured / secs;
      if (!perNode) return own;
      const alone = base === undefined ? 0 : baseline / base.seconds;
      return alone + (own - alone) * factor;
    };
    const bytes = rate(r.churn.bodyBytes, base?.apiserver.bodyBytes ?? 0);
    const cpu = rate(r.churn.cpuSeconds, base?.apiserver.cpuSeconds ?? 0);
    const requests = rate(r.churn.requests, base?.apiserver.requests ?? 0);
    const startupScale = perNode ? factor : objects(PAPER_NODES, PAPER_PODS_PER_NODE) / objects(nodes, podsPerNode);
    lines.push(
      `- ${r.layout}: ${String(Math.round(watchesOnPaper(r)))} watches; over the churn ${perSecond(bytes)} sent, ` +
        `${cpu.toFixed(2)} CPU s/s, ${requests.toFixed(0)} reads/s; a fleet-wide start ${((r.startup.bodyBytes * startupScale) / MiB / 1024).toFixed(2)} GiB sent, ` +
        `${(r.startup.cpuSeconds * startupScale).toFixed(0)} CPU s, ${String(Math.round(r.startup.requests * startupScale))} reads`,
    );
  }
  return lines;
}

export function formatFleet(result: FleetResult): string {
  const s = result.spec;
  const b = result.baseline;
  return [
    `Fleet: ${String(s.nodes)} simulated nodes × ${String(s.podsPerNode)} pods, ${String(s.services)} Services and EndpointSlices; per node a client-go pod informer by node (protobuf, WatchList), ${String(s.lightAgents)} light agents each LISTing then watching Services, EndpointSlices and Namespaces, an RV-unset LIST of its pods every ${String(s.listSeconds)} s${s.layouts.includes('pool') ? `; pools of ${String(s.poolSize ?? DEFAULT_POOL_SIZE)} node proxies` : ''}; churn ${String(s.churn)} writes/s for ${String(s.seconds)} s (pods created and deleted, EndpointSlices updated)`,
    '',
    `| layout | apiserver watches (${FLEET_RESOURCES.join('/')}) | start: requests · MiB sent · CPU s | churn: requests/s · KiB/s sent (written) · CPU s | node proxy RSS MiB min/median/max | cluster proxy RSS MiB | proxies' CPU s over the churn (node / cluster) | agents' events delivered/expected · lost · duplicated · watches ended early | latency ms p50 / p99 (p99 pods / EndpointSlices) | RV-unset LISTs |`,
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...result.rows.map(row),
    '',
    b === undefined
      ? ''
      : `The churn alone, no agent: ${(b.apiserver.requests / b.seconds).toFixed(1)} reads/s · ${(b.apiserver.bodyBytes / b.seconds / 1024).toFixed(0)} KiB/s sent · ${b.apiserver.cpuSeconds.toFixed(1)} CPU s over ${b.seconds.toFixed(0)} s; every row's churn figures include it.`,
    '',
    `Reads: LIST, GET and WATCH requests. Sent: apiserver_response_sizes_sum + apiserver_watch_events_sizes_sum; written: the apiserver process's wchar (TLS, etcd and logs included). Latency: a write's answer to the event at the node's agent (negative when the event arrived first).`,
    '',
    'Targets:',
    ...targets(result),
    '',
    `On paper, ${PAPER_NODES.toLocaleString('en-US')} nodes × ${String(PAPER_PODS_PER_NODE)} pods at the same churn rate (per-node costs as measured; the tree's churn costs do not grow with nodes, its start grows with the objects):`,
    ...paper(result),
  ].join('\n');
}
