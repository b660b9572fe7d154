/**
 * The benchmark: `npm run bench` (all scenarios) or `npm run bench -- <scenario...> [--flags]`
 * (`--help` lists them; sizes also from KCP_BENCH_* variables).
 *
 * Brings up a control plane of its own (dev-cluster, in --dir), seeds it, starts kube-cache-proxy
 * (and a second one in strong read-consistency mode) and `kubectl proxy` beside it, then runs
 * each scenario against each target in alternation (A B C A B C ...) after a warm-up, reads the
 * apiserver's own request counters around each run, and prints the tables. Writes the results as
 * JSON and an SVG chart (bench/results/latest.{json,svg}), and tears everything down. Progress
 * and warnings go to stderr, the tables to stdout.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { formatDuration, newProgress } from '../src/cli/progress.ts';
import { loadUpstreamConfig } from '../src/upstream/config.ts';
import { newUpstreamClient } from '../src/upstream/client.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import {
  SELECTED_LABEL,
  countsDelta,
  kubernetesVersion,
  PODS_PER_NODE,
  namespaceName,
  nodeName,
  podName,
  seed,
  startCluster,
  stopCluster,
  upstreamCounts,
} from './cluster.ts';
import type { LoadResult } from './load.ts';
import { runLoad } from './load.ts';
import type { BenchOptions, ScenarioName } from './options.ts';
import { BENCH_USAGE, parseBenchOptions } from './options.ts';
import { summarizeProfile } from './profile.ts';
import type { BenchResults, LoadRow, PollRow, ProfileSummary, WatchRow } from './results.ts';
import { runPoll } from './poll.ts';
import { formatListGzip, runListGzip } from './list-gzip.ts';
import type { ListGzipResult } from './list-gzip.ts';
import { runScale } from './scale.ts';
import type { ScaleRow } from './scale.ts';
import { startPodWriter } from './pod-writer.ts';
import { environment, writeResults } from './results.ts';
import { median, spread } from './stats.ts';
import type { SyncResult } from './sync.ts';
import { runSync } from './sync.ts';
import { formatTables } from './table.ts';
import type { Target, TargetName } from './targets.ts';
import { apiserverTarget, proxyCounter, startCacheProxy, startKubectlProxy, startTlsProxy } from './targets.ts';
import type { WatchProtocol } from './watch-client.ts';
import { runWatchFanout } from './watch-fanout.ts';
import type { WatchSpec } from './watch-fanout.ts';
import { runKubectlWallTimes } from './kubectl.ts';
import { formatSlowWatchers, runSlowWatchers } from './slow-watchers.ts';
import { screenshotStatusPage } from './status-screenshot.ts';
import type { SlowWatchersResult } from './slow-watchers.ts';
import { formatSharedMode, runSharedMode } from './shared-mode.ts';
import { formatFootprint, runFootprint } from './footprint.ts';
import type { FootprintResult } from './footprint.ts';
import type { SharedModeRow } from './shared-mode.ts';
import { formatQuiet, runQuiet } from './quiet.ts';
import { CHECK_COST_SECONDS, formatConsistencyCheckCost, runConsistencyCheckCost } from './consistency-check.ts';
import { formatRestart, runRestart } from './restart.ts';
import type { RestartRow, StateCost } from './restart.ts';
import type { CheckCostRow } from './consistency-check.ts';
import type { QuietRow } from './quiet.ts';
import { formatCold, runCold } from './cold.ts';
import type { ColdRow } from './cold.ts';
import { formatKcm, runKcm } from './controller-manager.ts';
import type { KcmRow } from './controller-manager.ts';
import type { KcmWireRow } from './controller-manager-tls.ts';
import { formatKcmWire, runKcmWire } from './controller-manager-tls.ts';
import { formatGoClient, runGoClient } from './go-client.ts';
import type { GoClientRow } from './go-client.ts';
import { ensureComponentBinaries } from '../src/cli/dev-cluster/build.ts';
import { runFleet } from './fleet.ts';
import type { FleetResult } from './fleet.ts';
import { formatFleet } from './fleet-table.ts';

interface LoadScenario {
  readonly name: ScenarioName;
  readonly title: string;
  readonly path: string;
  readonly connections: number;
  /** With an unset resourceVersion the proxy's two consistency modes differ: both are run. */
  readonly bothModes: boolean;
  /** A writer patches pods at --watch-rate during the scenario's warm-up and runs, at every target. */
  readonly busy?: boolean;
  /** The Accept header (a Table, metadata only); default application/json. */
  readonly accept?: string;
}

/** kubectl get's Accept (kubectl v1.37), and client-go's metadata client's for a LIST. */
export const TABLE_ACCEPT =
  'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
/** client-go's typed clients and informers (rest.Config ContentType protobuf). */
export const PROTOBUF_ACCEPT = 'application/vnd.kubernetes.protobuf, */*';
export const METADATA_LIST_ACCEPT =
  'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
/** client-go's metadata client for a LIST with rest.Config ContentType JSON (its default before protobuf was offered first). */
export const METADATA_LIST_JSON_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

function loadScenarios(o: BenchOptions): LoadScenario[] {
  const pods = o.pods.toLocaleString('en-US');
  const perNamespace = Math.ceil(o.pods / o.namespaces).toLocaleString('en-US');
  return [
    {
      name: 'list-rv0',
      title: `LIST ${pods} pods, RV=0, 8 clients`,
      path: '/api/v1/pods?resourceVersion=0',
      connections: 8,
      bothModes: false,
    },
    { name: 'list-consistent', title: `LIST ${pods} pods, RV unset, 8 clients`, path: '/api/v1/pods', connections: 8, bothModes: true },
    {
      name: 'list-selector',
      title: `LIST labelSelector (1%), RV unset, 8 clients`,
      path: `/api/v1/pods?labelSelector=${encodeURIComponent(SELECTED_LABEL)}`,
      connections: 8,
      bothModes: true,
    },
    {
      name: 'list-node',
      title: `LIST one node's pods (fieldSelector spec.nodeName, ${String(PODS_PER_NODE)} pods), RV unset, 8 clients`,
      path: `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${nodeName(0)}`)}`,
      connections: 8,
      bothModes: true,
    },
    {
      name: 'list-namespace',
      title: `LIST one namespace (${perNamespace} pods), RV unset, 8 clients`,
      path: `/api/v1/namespaces/${namespaceName(0)}/pods`,
      connections: 8,
      bothModes: true,
    },
    {
      name: 'get',
      title: 'GET one pod, RV unset, 32 clients',
      path: `/api/v1/namespaces/${namespaceName(0)}/pods/${podName(0)}`,
      connections: 32,
      bothModes: true,
    },
    {
      name: 'list-busy',
      title: `LIST one namespace (${perNamespace} pods), RV unset, 8 clients, ${String(o.watchRate)} pod writes/s`,
      path: `/api/v1/namespaces/${namespaceName(0)}/pods`,
      connections: 8,
      bothModes: true,
      busy: true,
    },
    {
      name: 'list-table',
      title: `LIST ${pods} pods as a Table (kubectl get pods -A, one page), RV unset, 8 clients`,
      path: '/api/v1/pods',
      connections: 8,
      bothModes: true,
      accept: TABLE_ACCEPT,
    },
    {
      name: 'list-metadata',
      title: `LIST ${pods} pods metadata-only (client-go metadata client), RV unset, 8 clients`,
      path: '/api/v1/pods',
      connections: 8,
      bothModes: true,
      accept: METADATA_LIST_ACCEPT,
    },
    {
      name: 'list-metadata-json',
      title: `LIST ${pods} pods metadata-only in JSON (client-go metadata client, JSON), RV unset, 8 clients`,
      path: '/api/v1/pods',
      connections: 8,
      bothModes: false,
      accept: METADATA_LIST_JSON_ACCEPT,
    },
    {
      name: 'list-protobuf',
      title: `LIST ${pods} pods in protobuf (client-go typed clients' Accept), RV=0, 8 clients`,
      path: '/api/v1/pods?resourceVersion=0',
      connections: 8,
      bothModes: false,
      accept: PROTOBUF_ACCEPT,
    },
  ];
}

/**
 * Each measured run makes as many requests as the target answered in `duration` seconds of
 * warm-up, and at least this many per connection: a 10,000-pod LIST from a busy apiserver takes
 * seconds, and a 5 s run would end with a handful of answers (or none).
 */
const MIN_REQUESTS_PER_CONNECTION = 4;

/** Requests per target and encoding of the gzip scenario: enough for a p99 of a few seconds' LISTs. */
const LIST_GZIP_REQUESTS = 40;

/** The mixed scenario's LIST clients. */
const MIXED_LIST_CLIENTS = 8;
/** The fleet's agents: each node's RV-unset LIST of its pods, every this many seconds. */
const FLEET_LIST_SECONDS = 10;
const PROFILED = (name: ScenarioName): boolean => name.startsWith('list') || name === 'watch';

async function main(): Promise<number> {
  let options: BenchOptions | 'help';
  try {
    options = parseBenchOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${BENCH_USAGE}\n`);
    return 2;
  }
  if (options === 'help') {
    console.log(BENCH_USAGE);
    return 0;
  }
  const o = options;
  const runStarted = performance.now();
  const elapsed = (): string => formatDuration(performance.now() - runStarted);
  const progress = newProgress((line) => process.stderr.write(`${line}\n`), 5_000);
  const warnings: string[] = [];
  const warn = (text: string): void => {
    warnings.push(text);
    process.stderr.write(`⚠ ${text}\n`);
  };
  const [load1] = loadavg();
  if (load1 !== undefined && load1 > 1) {
    warn(`load average ${load1.toFixed(2)} before the run: other work shares the machine; figures may be unstable`);
  }
  /** Runs one scenario; a failure is reported and the run goes on with the next one. */
  const attempt = async (name: string, fn: () => Promise<void>): Promise<void> => {
    try {
      await fn();
    } catch (error) {
      warn(`${name} failed, skipped: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  const wants = (name: ScenarioName): boolean => o.scenarios.includes(name);
  const needConfigmaps = wants('cold-start') || wants('memory');
  const loads = loadScenarios(o).filter((s) => wants(s.name));

  const state = await startCluster(o.dir, progress);
  const targets: Target[] = [];
  let writer: UpstreamClient | undefined;
  // Ctrl-C: stop what the run started (targets, control plane) before exiting.
  const interrupted = (signal: NodeJS.Signals): void => {
    process.stderr.write(`\n${signal}: stopping the targets and the control plane\n`);
    void Promise.allSettled(targets.map((t) => t.stop()))
      .then(() => stopCluster(o.dir))
      .finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const load: LoadRow[] = [];
  let scale: ScaleRow[] = [];
  const watch: WatchRow[] = [];
  const poll: PollRow[] = [];
  let sync: SyncResult[] = [];
  const profiles: ProfileSummary[] = [];
  try {
    writer = newUpstreamClient(await loadUpstreamConfig({ kubeconfig: state.kubeconfig }), { connections: 64 });
    const client = writer;
    const kubernetes = await kubernetesVersion(client);
    // The scale curve seeds its own sizes; any other scenario needs the default seed first.
    const others = o.scenarios.some((s) => s !== 'scale' && s !== 'fleet');
    if (others) await seed(client, { pods: o.pods, namespaces: o.namespaces, configmaps: needConfigmaps ? o.configmaps : 0 }, progress);

    const apiserver = apiserverTarget(state);
    const needTargets = loads.length > 0 || wants('watch') || wants('watch-lists') || wants('poll') || wants('kubectl');
    if (needTargets) {
      const step = progress.step('starting kubectl proxy and kube-cache-proxy (caching pods)');
      targets.push(await startKubectlProxy(state));
      if (!o.profile) targets.push(await startCacheProxy(state, { resources: 'pods' }));
      if (loads.some((s) => s.bothModes) || wants('poll')) {
        targets.push(await startCacheProxy(state, { resources: 'pods', readConsistency: 'strong' }));
      }
      step.done();
    }
    const profileRoot = join(o.out, 'profiles');

    /** The default-mode proxy; under --profile a fresh one per profiled scenario, with --cpu-prof. */
    const proxyFor = async (scenario: ScenarioName): Promise<Target> => {
      const current = targets.find((t) => t.name === 'kube-cache-proxy');
      if (!o.profile && current !== undefined) return current;
      if (current !== undefined) {
        await current.stop();
        targets.splice(targets.indexOf(current), 1);
      }
      const dir = join(profileRoot, scenario);
      if (PROFILED(scenario)) {
        rmSync(dir, { recursive: true, force: true });
        mkdirSync(dir, { recursive: true });
      }
      const nodeArgs = PROFILED(scenario) ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
      const proxy = await startCacheProxy(state, { resources: 'pods', nodeArgs });
      targets.push(proxy);
      return proxy;
    };
    /** Under --profile: stops the profiled proxy (which writes its profile) and summarizes it. */
    const collectProfile = async (scenario: ScenarioName): Promise<void> => {
      if (!o.profile || !PROFILED(scenario)) return;
      const current = targets.find((t) => t.name === 'kube-cache-proxy');
      if (current === undefined) return;
      await current.stop();
      targets.splice(targets.indexOf(current), 1);
      const dir = join(profileRoot, scenario);
      for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
        const summary = summarizeProfile(join(dir, file));
        profiles.push({ scenario, file: join(dir, file), ...summary });
        process.stderr.write(`profile of ${scenario} (${summary.totalMs.toFixed(0)} ms busy), top self time:\n`);
        for (const t of summary.top.slice(0, 10))
          process.stderr.write(`  ${t.selfMs.toFixed(0).padStart(7)} ms ${(t.share * 100).toFixed(1).padStart(5)}%  ${t.name}\n`);
      }
    };

    for (const scenario of loads) {
      await attempt(scenario.name, async () => {
        const proxy = await proxyFor(scenario.name);
        const order = [apiserver, targets.find((t) => t.name === 'kubectl proxy'), proxy];
        if (scenario.bothModes) order.push(targets.find((t) => t.name === 'kube-cache-proxy (strong)'));
        const runTargets = order.filter((t): t is Target => t !== undefined);
        const spec = {
          path: scenario.path,
          connections: scenario.connections,
          ...(scenario.accept === undefined ? {} : { accept: scenario.accept }),
        };
        const amounts = new Map<TargetName, number>();
        const writer =
          scenario.busy === true ? startPodWriter(client, { rate: o.watchRate, pods: o.pods, namespaces: o.namespaces }) : undefined;
        for (const target of runTargets) {
          process.stderr.write(`[${elapsed()}] ${scenario.name} · ${target.name} · warm-up ${String(o.warmup)} s\n`);
          const warm = await runLoad(target, { ...spec, seconds: o.warmup });
          amounts.set(target.name, Math.max(MIN_REQUESTS_PER_CONNECTION * scenario.connections, Math.round(warm.rps * o.duration)));
        }
        const runs = new Map<TargetName, LoadResult[]>();
        const upstream = new Map<TargetName, number>();
        const fromCache = new Map<TargetName, number>();
        const isProxy = (target: Target): boolean => target.name.startsWith('kube-cache-proxy');
        const cachedCount = (target: Target): Promise<number> =>
          proxyCounter(target, 'kube_cache_proxy_requests_total', { resource: 'pods', served_from: 'cache' });
        for (let repeat = 1; repeat <= o.repeats; repeat++) {
          for (const target of runTargets) {
            const amount = amounts.get(target.name);
            process.stderr.write(
              `[${elapsed()}] ${scenario.name} · ${target.name} · repeat ${String(repeat)}/${String(o.repeats)} · ${String(amount)} requests\n`,
            );
            const before = await upstreamCounts(client, ['pods']);
            const cachedBefore = isProxy(target) ? await cachedCount(target) : 0;
            const result = await runLoad(target, { ...spec, seconds: o.duration, ...(amount === undefined ? {} : { amount }) });
            const delta = countsDelta(await upstreamCounts(client, ['pods']), before).pods;
            if (isProxy(target)) fromCache.set(target.name, (fromCache.get(target.name) ?? 0) + (await cachedCount(target)) - cachedBefore);
            runs.set(target.name, [...(runs.get(target.name) ?? []), result]);
            // A probe is a LIST (of one name), and a freshness proof's watch a WATCH: both count.
            upstream.set(target.name, (upstream.get(target.name) ?? 0) + (delta === undefined ? 0 : delta.LIST + delta.GET + delta.WATCH));
            process.stderr.write(`    p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ${result.rps.toFixed(1)} req/s\n`);
          }
        }
        const writes = await writer?.stop();
        if (writes !== undefined) process.stderr.write(`    the writer patched ${String(writes)} pods\n`);
        for (const target of runTargets) {
          const results = runs.get(target.name) ?? [];
          const s = spread(results.map((r) => r.p50));
          const unstable = s > o.spread;
          if (unstable) {
            warn(
              `${scenario.name} · ${target.name}: p50 differs by ${(s * 100).toFixed(0)}% between repeats (threshold ${(o.spread * 100).toFixed(0)}%): the machine is too busy for stable figures; rerun when it is idle`,
            );
          }
          const failures = results.reduce((sum, r) => sum + r.failures, 0);
          if (failures > 0) warn(`${scenario.name} · ${target.name}: ${String(failures)} requests failed (errors, timeouts or non-2xx)`);
          load.push({
            scenario: scenario.name,
            title: scenario.title,
            target: target.name,
            connections: scenario.connections,
            p50: median(results.map((r) => r.p50)),
            p99: median(results.map((r) => r.p99)),
            rps: median(results.map((r) => r.rps)),
            spread: s,
            unstable,
            upstreamRequests: upstream.get(target.name) ?? 0,
            clientRequests: results.reduce((sum, r) => sum + r.requests, 0),
            failures,
            fromCache: fromCache.get(target.name),
            runs: results,
          });
        }
        await collectProfile(scenario.name);
      });
    }

    // The status page after the LIST scenarios, as docs/status-page.md shows it (the default run's).
    const listed = targets.find((t) => t.name === 'kube-cache-proxy');
    if (o.defaultRun && loads.length > 0 && listed !== undefined) {
      await attempt('status page screenshot', async () => {
        mkdirSync(o.out, { recursive: true });
        const file = join(o.out, 'status-page.png');
        await screenshotStatusPage(listed.url, file);
        process.stderr.write(`[${elapsed()}] the status page after the LIST scenarios: ${file}\n`);
      });
    }

    if (wants('kubectl')) {
      await attempt('kubectl', async () => {
        const proxy = await proxyFor('kubectl');
        const order = [apiserver, ...targets.filter((t) => t.name === 'kubectl proxy'), proxy];
        load.push(...(await runKubectlWallTimes(state, client, order, { pods: o.pods, repeats: o.repeats, elapsed })));
      });
    }

    if (wants('poll')) {
      await attempt('poll', async () => {
        const order = [apiserver, ...targets];
        for (const target of order) {
          const step = progress.step(
            `[${elapsed()}] poll · ${String(o.pollClients)} clients · ${target.name} · ${String(o.pollSeconds)} s`,
          );
          const result = await runPoll(target, client, {
            clients: o.pollClients,
            seconds: o.pollSeconds,
            pods: o.pods,
            namespaces: o.namespaces,
          });
          step.done(
            `${result.upstreamRequestsPerMinute.toFixed(0)} upstream requests/min for ${result.clientRequestsPerMinute.toFixed(0)} client requests/min, p50 ${result.p50.toFixed(1)} ms`,
          );
          if (result.failures > 0) warn(`poll · ${target.name}: ${String(result.failures)} requests failed`);
          poll.push({ ...result, target: target.name });
        }
      });
    }

    const listGzip: (readonly [ListGzipResult, ListGzipResult])[] = [];
    const listGzipTitle = `LIST ${o.pods.toLocaleString('en-US')} pods in JSON, RV=0, with and without Accept-Encoding: gzip, 2 clients`;
    if (wants('list-gzip')) {
      await attempt('list-gzip', async () => {
        // Its own proxy: the bench's clients are on loopback, which the proxy gzips only when told.
        const proxy = await startCacheProxy(state, { name: 'kube-cache-proxy', resources: 'pods', args: ['--compress-loopback'] });
        try {
          const spec = { path: '/api/v1/pods?resourceVersion=0', accept: 'application/json', requests: LIST_GZIP_REQUESTS, connections: 2 };
          for (const target of [apiserver, proxy]) {
            const step = progress.step(`[${elapsed()}] list-gzip · ${target.name}`);
            const rows = await runListGzip(target, spec);
            step.done(`${(rows[1].wireBytes / 1e6).toFixed(2)} MB gzipped against ${(rows[0].wireBytes / 1e6).toFixed(2)} MB`);
            if (rows[1].contentEncoding !== 'gzip') warn(`list-gzip · ${target.name}: answered without gzip`);
            listGzip.push(rows);
          }
        } finally {
          await proxy.stop();
        }
      });
    }

    /** One fan-out run, its progress line and its row; a failure is warned about and skipped. */
    const fanout = async (target: Target, spec: WatchSpec, name: string): Promise<void> => {
      const label = `[${elapsed()}] ${name} · ${spec.watchers.toLocaleString('en-US')} watchers over ${spec.protocol} · ${target.name}`;
      const step = progress.step(label);
      let result: Awaited<ReturnType<typeof runWatchFanout>>;
      try {
        result = await runWatchFanout(target, client, apiserver, spec, (detail) => process.stderr.write(`    ${detail}\n`));
      } catch (error) {
        step.fail();
        warn(
          `${name} · ${String(spec.watchers)} watchers · ${target.name} failed: ${error instanceof Error ? error.message : String(error)}`,
        );
        return;
      }
      step.done(
        `p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ${String(result.delivered)} delivered, ${String(result.lost)} lost; ` +
          `clients: ${String(result.clients.processes)} process(es), loop p99 ${result.clients.loopP99Ms.toFixed(1)} ms, ` +
          `${result.clients.maxProcessShare.toFixed(2)} of a core at most${result.clients.bound ? ' ⚠ the clients were the bottleneck' : ''}`,
      );
      if (result.clients.bound)
        warn(`${name} · ${String(spec.watchers)} watchers over ${spec.protocol} · ${target.name}: the clients were the bottleneck`);
      if (result.lost > 0) warn(`${name} · ${String(spec.watchers)} watchers · ${target.name}: ${String(result.lost)} events lost`);
      watch.push({ ...result, target: target.name });
    };
    const watchSpec = (watchers: number, protocol: WatchProtocol = 'h1'): WatchSpec => ({
      watchers,
      protocol,
      rate: o.watchRate,
      seconds: o.watchSeconds,
      pods: o.pods,
      namespaces: o.namespaces,
    });

    if (wants('watch')) {
      await attempt('watch', async () => {
        // Over h2 the proxy serves TLS (a certificate of the control plane's CA), as a shared proxy does.
        const tls = o.watchProtocols.includes('h2');
        const proxy = tls ? await startTlsProxy(state) : await proxyFor('watch');
        try {
          const order = [apiserver, targets.find((t) => t.name === 'kubectl proxy'), proxy].filter(
            (t): t is Target => t !== undefined && o.watchTargets.includes(t.name),
          );
          for (const watchers of o.watchers) {
            for (const target of order) {
              const protocols = o.watchProtocols.filter((p) => p === 'h1' || target.url.startsWith('https:'));
              for (const protocol of protocols) await fanout(target, watchSpec(watchers, protocol), 'watch');
            }
          }
        } finally {
          if (tls) await proxy.stop();
        }
        await collectProfile('watch');
      });
    }

    if (wants('watch-lists')) {
      await attempt('watch-lists', async () => {
        // The proxy's fan-out alone, then with 8 clients LISTing every pod (RV unset) beside it.
        const proxy = await proxyFor('watch-lists');
        const spec = watchSpec(o.mixedWatchers);
        await fanout(proxy, spec, 'watch-lists');
        await fanout(proxy, { ...spec, lists: { path: '/api/v1/pods', connections: MIXED_LIST_CLIENTS } }, 'watch-lists');
      });
    }

    if (wants('cold-start') || wants('memory')) {
      for (const target of targets.splice(0)) await target.stop();
      const step = progress.step(`[${elapsed()}] cold start and memory: ${String(o.pods)} pods + ${String(o.configmaps)} configmaps`);
      await attempt('cold-start/memory', async () => {
        sync = await runSync(state, client, { coldStart: wants('cold-start'), memory: wants('memory') }, (detail) =>
          process.stderr.write(`    ${detail}\n`),
        );
        step.done();
      });
    }

    if (wants('scale')) {
      for (const target of targets.splice(0)) await target.stop();
      // After other scenarios the cluster already holds their pods: smaller sizes are skipped.
      const sizes = o.scaleSizes.filter((n) => !others || n >= o.pods);
      await attempt('scale', async () => {
        scale = await runScale(
          state,
          apiserver,
          client,
          { sizes, namespaces: o.namespaces, applyRate: o.applyRate, applySeconds: o.applySeconds },
          progress,
          (detail) => process.stderr.write(`[${elapsed()}] scale · ${detail}\n`),
        );
      });
    }

    let slowWatchers: SlowWatchersResult | undefined;
    if (wants('slow-watchers')) {
      await attempt('slow-watchers', async () => {
        const step = progress.step(
          `[${elapsed()}] slow-watchers: 200 watchers that never read, pods patched at ${String(o.watchRate)}/s for 20 s`,
        );
        slowWatchers = await runSlowWatchers(state, client, {
          watchers: 200,
          seconds: 20,
          rate: o.watchRate,
          pods: o.pods,
          namespaces: o.namespaces,
        });
        step.done();
      });
    }

    let footprint: FootprintResult | undefined;
    if (wants('footprint')) {
      for (const target of targets.splice(0)) await target.stop();
      await attempt('footprint', async () => {
        footprint = await runFootprint(state, client, { seconds: o.footprintSeconds }, (detail) =>
          process.stderr.write(`[${elapsed()}] footprint · ${detail}\n`),
        );
      });
    }

    let shared: SharedModeRow[] = [];
    const sharedOptions = { identities: o.identities, namespaces: o.namespaces, connections: 50, seconds: o.duration * o.repeats };
    if (wants('shared')) {
      await attempt('shared', async () => {
        const step = progress.step(
          `[${elapsed()}] shared: ${String(o.identities)} identities through one proxy --shared and at the apiserver`,
        );
        shared = await runSharedMode(state, client, sharedOptions, (detail) => process.stderr.write(`    ${detail}\n`));
        step.done();
      });
    }

    let quiet: QuietRow[] = [];
    const quietSpec = { clients: o.quietClients, seconds: o.quietSeconds, pods: o.pods, namespaces: o.namespaces };
    if (wants('quiet')) {
      for (const target of targets.splice(0)) await target.stop();
      await attempt('quiet', async () => {
        quiet = await runQuiet(state, client, quietSpec, (detail) => process.stderr.write(`[${elapsed()}] ${detail}\n`));
      });
    }
    let checkCost: CheckCostRow[] = [];
    if (wants('consistency-check')) {
      for (const target of targets.splice(0)) await target.stop();
      await attempt('consistency-check', async () => {
        checkCost = await runConsistencyCheckCost(state, client, CHECK_COST_SECONDS, (detail) =>
          process.stderr.write(`[${elapsed()}] ${detail}\n`),
        );
      });
    }
    let restart: { rows: RestartRow[]; cost: StateCost | undefined } | undefined;
    const restartSpec = { pods: o.pods, namespaces: o.namespaces, downSeconds: [30, 60] };
    if (wants('restart')) {
      for (const target of targets.splice(0)) await target.stop();
      await attempt('restart', async () => {
        restart = await runRestart(state, client, restartSpec, (detail) => process.stderr.write(`[${elapsed()}] ${detail}\n`));
      });
    }
    let cold: ColdRow[] = [];
    const coldSpec = { clients: o.coldClients };
    if (wants('cold')) {
      for (const target of targets.splice(0)) await target.stop();
      await attempt('cold', async () => {
        cold = await runCold(state, client, coldSpec, (detail) => process.stderr.write(`[${elapsed()}] ${detail}\n`));
      });
    }

    let goClient: GoClientRow[] = [];
    if (wants('go-client')) {
      for (const target of targets.splice(0)) await target.stop();
      await attempt('go-client', async () => {
        goClient = await runGoClient(state, o.repeats, (detail) => process.stderr.write(`[${elapsed()}] ${detail}\n`));
      });
    }
    let kcm: KcmRow[] = [];
    let kcmWire: KcmWireRow[] = [];
    const kcmSpec = { deletions: o.kcmDeletions, objects: o.kcmObjects, repeats: o.repeats, steadyMs: o.kcmSteadySeconds * 1000 };
    if (wants('kcm')) {
      for (const target of targets.splice(0)) await target.stop();
      await attempt('kcm', async () => {
        const components = await ensureComponentBinaries(progress);
        kcm = await runKcm(state, client, components, kcmSpec, (detail) => process.stderr.write(`[${elapsed()}] ${detail}\n`));
        kcmWire = await runKcmWire(state, components, kcmSpec, (detail) => process.stderr.write(`[${elapsed()}] ${detail}\n`));
      });
    }

    let fleet: FleetResult | undefined;
    if (wants('fleet')) {
      for (const target of targets.splice(0)) await target.stop();
      await attempt('fleet', async () => {
        fleet = await runFleet(
          state,
          client,
          apiserver.pid,
          {
            nodes: o.fleetNodes,
            podsPerNode: o.fleetPodsPerNode,
            services: o.fleetServices,
            churn: o.fleetChurn,
            seconds: o.fleetSeconds,
            layouts: o.fleetLayouts,
            listSeconds: FLEET_LIST_SECONDS,
            lightAgents: o.fleetLightAgents,
            poolSize: o.fleetPoolSize,
          },
          progress,
          (detail) => process.stderr.write(`[${elapsed()}] ${detail}\n`),
        );
      });
    }

    const sizes = { ...o, dir: undefined, out: undefined };
    const results: BenchResults = {
      environment: environment(kubernetes),
      command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
      sizes,
      load,
      watch,
      poll,
      scale,
      ...(footprint === undefined ? {} : { footprint }),
      shared,
      quiet,
      ...(checkCost.length === 0 ? {} : { consistencyCheck: checkCost }),
      ...(restart === undefined ? {} : { restart }),
      cold,
      kcm,
      kcmWire,
      goClient,
      ...(fleet === undefined ? {} : { fleet }),
      sync,
      profiles,
      warnings,
      durationSeconds: Math.round((performance.now() - runStarted) / 1000),
    };
    console.log(`\n${formatTables(results)}`);
    if (slowWatchers !== undefined) console.log(formatSlowWatchers(slowWatchers));
    if (footprint !== undefined) console.log(`\n${formatFootprint(footprint)}`);
    if (shared.length > 0) console.log(`\n${formatSharedMode(shared, sharedOptions)}`);
    if (quiet.length > 0) console.log(`\n${formatQuiet(quiet, quietSpec)}`);
    if (checkCost.length > 0) console.log(`\n${formatConsistencyCheckCost(checkCost, o.pods, CHECK_COST_SECONDS)}`);
    if (restart !== undefined) console.log(`\n${formatRestart(restart, restartSpec)}`);
    if (cold.length > 0) console.log(`\n${formatCold(cold, coldSpec)}`);
    if (kcm.length > 0) console.log(`\n${formatKcm(kcm, kcmSpec)}`);
    if (kcmWire.length > 0) console.log(`\n${formatKcmWire(kcmWire, kcmSpec)}`);
    if (goClient.length > 0) console.log(`\n${formatGoClient(goClient)}`);
    if (fleet !== undefined) console.log(`\n${formatFleet(fleet)}`);
    if (listGzip.length > 0) console.log(`\n${formatListGzip(listGzip, listGzipTitle)}`);
    const written = writeResults(o.out, results);
    process.stderr.write(`\nwrote ${written.join(', ')} (run took ${elapsed()})\n`);
    return 0;
  } finally {
    for (const target of targets) await target.stop();
    await writer?.close();
    await stopCluster(o.dir);
  }
}

process.exitCode = await main();
