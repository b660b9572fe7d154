/**
 * The benchmark's sizes and switches: `npm run bench -- [scenario...] [--flag value...]`, each flag
 * also an environment variable `KCP_BENCH_<FLAG>` (e.g. `KCP_BENCH_PODS=2000`). A scenario
 * argument selects every scenario whose name starts with it (`list` runs the four LIST ones).
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { LayoutName } from './fleet-layouts.ts';
import type { WatchProtocol } from './watch-client.ts';
import { DEFAULT_POOL_SIZE, LAYOUTS } from './fleet-layouts.ts';

export const SCENARIOS = [
  'list-rv0',
  'list-consistent',
  'list-selector',
  'list-node',
  'list-namespace',
  'get',
  'list-busy',
  'list-table',
  'list-metadata',
  'list-metadata-json',
  'list-protobuf',
  'list-gzip',
  'kubectl',
  'slow-watchers',
  'footprint',
  'shared',
  'poll',
  'watch',
  'watch-lists',
  'cold-start',
  'memory',
  'quiet',
  'consistency-check',
  'restart',
  'cold',
  'go-client',
  'kcm',
  'scale',
  'fleet',
] as const;
/** Scenarios left out of a run that names none: too long for every run, or a build of their own (kcm). */
const WATCH_TARGETS: readonly string[] = ['apiserver', 'kubectl proxy', 'kube-cache-proxy'];
const WATCH_PROTOCOLS: readonly WatchProtocol[] = ['h1', 'h2'];
const ON_REQUEST: readonly ScenarioName[] = ['scale', 'quiet', 'consistency-check', 'restart', 'kcm', 'fleet'];
export type ScenarioName = (typeof SCENARIOS)[number];

export interface BenchOptions {
  readonly scenarios: readonly ScenarioName[];
  /** Pods seeded across `namespaces` namespaces; 1% carry the selector's label. */
  readonly pods: number;
  readonly namespaces: number;
  /** ConfigMaps seeded for the cold-start and memory scenarios. */
  readonly configmaps: number;
  /** Seconds of load per target per repeat, after `warmup` seconds per target. */
  readonly duration: number;
  readonly warmup: number;
  readonly repeats: number;
  /** Concurrent watcher counts of the fan-out scenario, one run per count and target. */
  readonly watchers: readonly number[];
  /** Watchers of the mixed scenario (watch-lists: the fan-out with and without 8 clients LISTing every pod). */
  readonly mixedWatchers: number;
  /** The watch fan-out's targets, by name ('apiserver', 'kubectl proxy', 'kube-cache-proxy'). */
  readonly watchTargets: readonly string[];
  /**
   * The fan-out's protocols, each run at each target that speaks it: h1 (a connection per watch),
   * h2 (streams multiplexed over TLS sessions). With h2, the proxy serves TLS (h1 runs too).
   */
  readonly watchProtocols: readonly WatchProtocol[];
  /** Writer's updates per second: the watch fan-out's, and list-busy's load on the type. */
  readonly watchRate: number;
  /** The polling scenario: clients, each an RV-unset LIST and GET per second, for pollSeconds. */
  readonly pollClients: number;
  /** The shared-mode scenario: distinct identities reading through one shared proxy. */
  readonly identities: number;
  readonly pollSeconds: number;
  /** The quiet scenario: pollers of a type nobody writes, for quietSeconds per target (three targets in turn). */
  readonly quietClients: number;
  readonly quietSeconds: number;
  /** The cold scenario: clients starting their informers at once. */
  readonly coldClients: number;
  /** The kcm scenario: namespaces deleted per run, and objects of each type in each. */
  readonly kcmDeletions: number;
  readonly kcmObjects: number;
  /** The kcm scenario: the steady window after each sync, seconds. */
  readonly kcmSteadySeconds: number;
  /** The fleet: simulated nodes, pods bound to each, Services (each with an EndpointSlice), churn writes/s and seconds, layouts. */
  readonly fleetNodes: number;
  readonly fleetPodsPerNode: number;
  readonly fleetServices: number;
  readonly fleetChurn: number;
  readonly fleetSeconds: number;
  readonly fleetLayouts: readonly LayoutName[];
  /** Node proxies per pool in the fleet's pool layout. */
  readonly fleetPoolSize: number;
  /** Light agents per node, each reading Services, EndpointSlices and Namespaces. */
  readonly fleetLightAgents: number;
  /** The scale curve: pod counts, and the apply measurement's writer rate and duration. */
  readonly scaleSizes: readonly number[];
  readonly applyRate: number;
  readonly applySeconds: number;
  readonly watchSeconds: number;
  /** The footprint scenario: how long its 8 clients LIST the small namespace. */
  readonly footprintSeconds: number;
  /** Spread between repeats ((max - min) / median of the p50s) above which figures are called unstable. */
  readonly spread: number;
  /** Runs the proxy with --cpu-prof during the LIST and watch scenarios. */
  readonly profile: boolean;
  /** The bench control plane's directory, brought up and torn down by the run. */
  readonly dir: string;
  /** Where latest.json, latest.svg and the raw results go. */
  readonly out: string;
  /**
   * No scenario named: the default run, whose figures bench/results/latest.json, latest.svg and
   * status-page.png keep (a run of named scenarios writes its raw results only).
   */
  readonly defaultRun: boolean;
}

export const BENCH_USAGE = `Usage: npm run bench -- [scenario...] [options]

Scenarios (default: all but scale, quiet, consistency-check, kcm and fleet): ${SCENARIOS.join(', ')}; a prefix selects several
(list), a whole name only itself (cold, not cold-start). scale seeds up to the largest of
--scale-sizes pods (100,000 by default: about 20 minutes); quiet takes 3 × --quiet-seconds;
kcm builds kube-controller-manager from the pinned module first (a few minutes, once); fleet
runs --fleet-nodes node proxies and agents in each layout (about 10 minutes by default).

Options (each also KCP_BENCH_<NAME>, e.g. KCP_BENCH_PODS=2000):
  --pods N            pods seeded, all Pending (default 10000)
  --namespaces N      namespaces they are spread over (default 100)
  --configmaps N      configmaps for cold-start and memory (default 10000)
  --duration S        seconds of load per target and repeat (default 5)
  --warmup S          seconds of warm-up per target (default 2)
  --repeats N         repeats, targets in alternation A B C A B C (default 3)
  --watchers LIST     watcher counts of the fan-out (default 1000,5000,10000)
  --mixed-watchers N  watch-lists: watchers of the fan-out run with and without 8 LIST clients (default 10000)
  --watch-targets LIST  the fan-out's targets (default apiserver,kubectl proxy,kube-cache-proxy)
  --watch-protocols LIST  the fan-out's protocols: h1 (a connection per watch), h2 (watches multiplexed over
                      TLS sessions; the apiserver, and the proxy then serving TLS) (default h1)
  --watch-rate N      writer's pod updates per second, in watch and list-busy (default 200)
  --identities N      shared: distinct identities (service accounts) reading through one shared proxy (default 1000)
  --poll-clients N    pollers in the poll scenario, each an RV-unset LIST and GET per second (default 200)
  --poll-seconds S    how long they poll (default 30)
  --quiet-clients N   quiet: pollers of the quiet pods, as poll's (default 20)
  --quiet-seconds S   quiet: how long each of its three targets is polled (default 300)
  --cold-clients N    cold: clients starting 4 informers each at once (default 20)
  --kcm-deletions N   kcm: namespaces deleted per run (default 5)
  --kcm-objects N     kcm: configmaps, secrets and services in each (default 10)
  --kcm-steady-seconds S  kcm: after each sync, how long the apiserver's requests and CPU are counted (default 75;
                      kcm runs --repeats times direct and warm)
  --fleet-nodes N     fleet: simulated nodes, each with its agents (and a node proxy per node) (default 50)
  --fleet-pods-per-node N  fleet: pods bound to each node (default 30)
  --fleet-services N  fleet: Services, each with an EndpointSlice (default 1000)
  --fleet-churn N     fleet: churn writes/s: pods created and deleted, EndpointSlices updated (default 20)
  --fleet-seconds S   fleet: churn per layout (default 60)
  --fleet-light-agents N  fleet: agents per node reading Services, EndpointSlices, Namespaces (default 3)
  --fleet-layouts LIST  fleet: layouts, in this order (default direct,node,tree,pool)
  --fleet-pool-size N  fleet: node proxies per pool in the pool layout (default ${String(DEFAULT_POOL_SIZE)})
  --scale-sizes LIST  pod counts of the scale curve (default 1000,10000,100000)
  --apply-rate N      scale: pod updates per second while LISTs run, written and replayed (default 1000)
  --apply-seconds S   scale: how long the apply and absorb measurements run (default 15)
  --watch-seconds S   writer's duration (default 30)
  --footprint-seconds S  footprint: how long 8 clients LIST the small namespace (default 60)
  --spread F          repeat spread above which figures are unstable (default 0.25)
  --profile           --cpu-prof the proxy during the LIST and watch scenarios
  --dir DIR           the bench control plane's directory (default $TMPDIR/kcp-bench)
  --out DIR           results directory (default bench/results)`;

const FLAGS = {
  pods: { type: 'string' },
  namespaces: { type: 'string' },
  configmaps: { type: 'string' },
  duration: { type: 'string' },
  warmup: { type: 'string' },
  repeats: { type: 'string' },
  watchers: { type: 'string' },
  'watch-rate': { type: 'string' },
  'watch-targets': { type: 'string' },
  'watch-protocols': { type: 'string' },
  'mixed-watchers': { type: 'string' },
  'poll-clients': { type: 'string' },
  identities: { type: 'string' },
  'poll-seconds': { type: 'string' },
  'quiet-clients': { type: 'string' },
  'quiet-seconds': { type: 'string' },
  'cold-clients': { type: 'string' },
  'kcm-deletions': { type: 'string' },
  'kcm-objects': { type: 'string' },
  'kcm-steady-seconds': { type: 'string' },
  'fleet-nodes': { type: 'string' },
  'fleet-pods-per-node': { type: 'string' },
  'fleet-services': { type: 'string' },
  'fleet-churn': { type: 'string' },
  'fleet-seconds': { type: 'string' },
  'fleet-layouts': { type: 'string' },
  'fleet-pool-size': { type: 'string' },
  'fleet-light-agents': { type: 'string' },
  'scale-sizes': { type: 'string' },
  'apply-rate': { type: 'string' },
  'apply-seconds': { type: 'string' },
  'watch-seconds': { type: 'string' },
  'footprint-seconds': { type: 'string' },
  spread: { type: 'string' },
  profile: { type: 'boolean' },
  dir: { type: 'string' },
  out: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function isLayout(name: string): name is LayoutName {
  return (LAYOUTS as readonly string[]).includes(name);
}

function isWatchProtocol(name: string): name is WatchProtocol {
  return (WATCH_PROTOCOLS as readonly string[]).includes(name);
}

function isScenario(name: string): name is ScenarioName {
  return (SCENARIOS as readonly string[]).includes(name);
}

export function parseBenchOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): BenchOptions | 'help' {
  const { values, positionals } = parseArgs({ args: [...argv], options: FLAGS, allowPositionals: true, strict: true });
  if (values.help === true) return 'help';
  const setting = (name: Exclude<keyof typeof FLAGS, 'profile' | 'help'>): string | undefined =>
    values[name] ?? env[`KCP_BENCH_${name.toUpperCase().replaceAll('-', '_')}`];
  const num = (name: Exclude<keyof typeof FLAGS, 'profile' | 'help'>, fallback: number): number => {
    const raw = setting(name);
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number, not ${raw}`);
    return value;
  };
  const scenarios =
    positionals.length === 0
      ? SCENARIOS.filter((s) => !ON_REQUEST.includes(s))
      : SCENARIOS.filter((s) => positionals.some((p) => s === p || (!isScenario(p) && s.startsWith(p))));
  const unknown = positionals.filter((p) => !SCENARIOS.some((s) => s.startsWith(p)));
  if (unknown.length > 0) throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${SCENARIOS.join(', ')}`);
  const watchers = (setting('watchers') ?? '1000,5000,10000').split(',').map(Number);
  if (watchers.some((w) => !Number.isInteger(w) || w <= 0)) throw new Error(`--watchers must list positive integers`);
  const unknownTarget = (setting('watch-targets') ?? '').split(',').filter((t) => t.trim() !== '' && !WATCH_TARGETS.includes(t.trim()));
  if (unknownTarget.length > 0) throw new Error(`--watch-targets: unknown ${unknownTarget.join(', ')}; known: ${WATCH_TARGETS.join(', ')}`);
  const watchProtocols = (setting('watch-protocols') ?? 'h1').split(',').map((p) => p.trim());
  const unknownProtocol = watchProtocols.filter((p) => !isWatchProtocol(p));
  if (unknownProtocol.length > 0)
    throw new Error(`--watch-protocols: unknown ${unknownProtocol.join(', ')}; known: ${WATCH_PROTOCOLS.join(', ')}`);
  const scaleSizes = (setting('scale-sizes') ?? '1000,10000,100000').split(',').map(Number);
  if (scaleSizes.some((w) => !Number.isInteger(w) || w <= 0)) throw new Error(`--scale-sizes must list positive integers`);
  const fleetLayouts = (setting('fleet-layouts') ?? LAYOUTS.join(',')).split(',').map((l) => l.trim());
  const unknownLayout = fleetLayouts.filter((l) => !isLayout(l));
  if (unknownLayout.length > 0) throw new Error(`--fleet-layouts: unknown ${unknownLayout.join(', ')}; known: ${LAYOUTS.join(', ')}`);
  const pods = Math.round(num('pods', 10_000));
  const namespaces = Math.min(pods, Math.round(num('namespaces', 100)));
  return {
    scenarios,
    defaultRun: positionals.length === 0,
    pods,
    namespaces,
    configmaps: Math.round(num('configmaps', 10_000)),
    duration: num('duration', 5),
    warmup: num('warmup', 2),
    repeats: Math.round(num('repeats', 3)),
    watchers,
    watchRate: num('watch-rate', 200),
    mixedWatchers: Math.round(num('mixed-watchers', 10_000)),
    watchTargets: (setting('watch-targets') ?? WATCH_TARGETS.join(',')).split(',').map((t) => t.trim()),
    watchProtocols: watchProtocols.filter(isWatchProtocol),
    pollClients: Math.round(num('poll-clients', 200)),
    identities: Math.round(num('identities', 1000)),
    pollSeconds: num('poll-seconds', 30),
    quietClients: Math.round(num('quiet-clients', 20)),
    quietSeconds: num('quiet-seconds', 300),
    coldClients: Math.round(num('cold-clients', 20)),
    kcmDeletions: Math.round(num('kcm-deletions', 5)),
    kcmObjects: Math.round(num('kcm-objects', 10)),
    kcmSteadySeconds: num('kcm-steady-seconds', 75),
    fleetNodes: Math.round(num('fleet-nodes', 50)),
    fleetPodsPerNode: Math.round(num('fleet-pods-per-node', 30)),
    fleetServices: Math.round(num('fleet-services', 1000)),
    fleetChurn: num('fleet-churn', 20),
    fleetSeconds: num('fleet-seconds', 60),
    fleetLayouts: fleetLayouts.filter(isLayout),
    fleetPoolSize: Math.round(num('fleet-pool-size', DEFAULT_POOL_SIZE)),
    fleetLightAgents: Math.round(num('fleet-light-agents', 3)),
    scaleSizes,
    applyRate: num('apply-rate', 1000),
    applySeconds: num('apply-seconds', 15),
    watchSeconds: num('watch-seconds', 30),
    footprintSeconds: num('footprint-seconds', 60),
    spread: num('spread', 0.25),
    profile: values.profile === true || env.KCP_BENCH_PROFILE === '1',
    dir: setting('dir') ?? join(tmpdir(), 'kcp-bench'),
    out: setting('out') ?? join(import.meta.dirname, 'results'),
  };
}
