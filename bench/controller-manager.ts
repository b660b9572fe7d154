/**
 * The kcm scenario: kube-controller-manager v1.37.2, built from the pinned module
 * (tools/controlplane/components), run straight at the apiserver and through the proxy, a real
 * client whose reads are the ones the proxy exists for (shared informers of ~60 types, metadata
 * informers, the namespace deleter's LISTs after each deletecollection).
 *
 * In turn: KCM through a fresh proxy (its caches cold, started by KCM's own reads); then, `repeats`
 * times, KCM direct and KCM restarted through the same proxy (warm). After each sync, a steady
 * window in which the apiserver's requests (every client's) and its CPU are counted. Per run: the time until KCM's informers have
 * synced (its "Caches are synced" lines settle), the watches open at the apiserver once they have
 * (all resources, beside the count before KCM started, so each row shows what it adds), and for
 * the direct and warm runs the deletion of namespaces holding a few objects of several types:
 * the time until each is gone, and the LISTs the apiserver served meanwhile (the namespace
 * deleter's). Through the proxy: which of KCM's watches it passed to the apiserver.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import type { ComponentBinaries } from '../src/cli/dev-cluster/build.ts';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { cpuSeconds, median } from './stats.ts';
import type { Target } from './targets.ts';
import { startCacheProxy } from './targets.ts';
import { anonymousKubeconfig } from '../test/helpers/anonymous-kubeconfig.ts';

export interface KcmSpec {
  /** Namespaces deleted per measured run. */
  readonly deletions: number;
  /** Objects of each of a few types in every namespace deleted. */
  readonly objects: number;
  /** Measured runs of each kind: KCM direct, and KCM through the warm proxy (the cold run is one). */
  readonly repeats: number;
  /** The steady window after KCM has synced, in which the apiserver's requests and CPU are counted, ms. */
  readonly steadyMs: number;
}

export interface KcmRow {
  readonly run: string;
  /** KCM's start to its informers synced (its "Caches are synced" lines settled), ms. */
  readonly syncedMs: number;
  /** Watches open at the apiserver before KCM started, and once it had synced. */
  readonly watchesBefore: number;
  readonly watchesSynced: number;
  /** Through the proxy: KCM's watches it served from its cache, and those it passed through, by resource. */
  readonly watchesFromCache: number | undefined;
  readonly watchesPassed: Readonly<Record<string, number>> | undefined;
  /** The steady window after sync: the apiserver's requests (every verb, every client) and its CPU seconds, per minute. */
  readonly steadyRequestsPerMinute: number;
  readonly steadyCpuPerMinute: number;
  /** Through the proxy, in the steady window: its freshness proofs and consistency probes. */
  readonly steadyProofs: number | undefined;
  readonly steadyProbes: number | undefined;
  /** Namespace deletion: median time until gone, ms, and the apiserver's LISTs, requests and CPU seconds per deletion. */
  readonly deletionMs: number | undefined;
  readonly listsPerDeletion: number | undefined;
  readonly requestsPerDeletion: number | undefined;
  readonly cpuPerDeletion: number | undefined;
  /** Through the proxy, per deletion: its consistency probes, and its RV-unset reads passed through, by reason. */
  readonly probesPerDeletion: number | undefined;
  readonly passedPerDeletion: Readonly<Record<string, number>> | undefined;
  /** Through the proxy: its answers from the cache during the run, by Content-Type. */
  readonly answersByContentType: Readonly<Record<string, number>> | undefined;
}

/** KCM's informers are taken as synced once no new "Caches are synced" line came for this long. */
const SETTLED_MS = 10_000;
const SYNC_TIMEOUT_MS = 300_000;
const DELETION_TIMEOUT_MS = 120_000;

export async function runKcm(
  state: ControlPlaneState,
  client: UpstreamClient,
  binaries: ComponentBinaries,
  spec: KcmSpec,
  report: (line: string) => void,
): Promise<KcmRow[]> {
  const rows: KcmRow[] = [];
  const logs = join(state.dir, 'logs');
  const apiserverPid = kubeApiserverPid(state);
  const proxy = await startCacheProxy(state, { resources: '' });
  try {
    const kubeconfig = join(state.dir, 'kcm-through-proxy.kubeconfig');
    writeFileSync(kubeconfig, anonymousKubeconfig(proxy.url));
    // The cold run first: it takes the cluster's first work (KCM's own setup of every namespace);
    // then direct and warm in turn, so that neither side gets the quieter end of the run.
    rows.push(await measure('kube-controller-manager → kube-cache-proxy (cold)', kubeconfig, proxy, false));
    for (let i = 1; i <= spec.repeats; i++) {
      rows.push(await measure(`kube-controller-manager → apiserver (${String(i)})`, state.kubeconfig, undefined, true));
      rows.push(await measure(`kube-controller-manager → kube-cache-proxy (warm ${String(i)})`, kubeconfig, proxy, true));
    }
  } finally {
    await proxy.stop();
  }
  return rows;

  async function measure(run: string, kubeconfig: string, proxy: Target | undefined, deletions: boolean): Promise<KcmRow> {
    const watchesBefore = await openWatches(client);
    const passedBefore = proxy === undefined ? {} : await proxyWatches(proxy, 'apiserver');
    const cachedBefore = proxy === undefined ? 0 : sum(await proxyWatches(proxy, 'cache'));
    const answersBefore = proxy === undefined ? {} : await proxyMetric(proxy, 'kube_cache_proxy_cache_answers_total', 'content_type');
    const kcm = startKcm(binaries, state, kubeconfig, join(logs, `kcm-${String(rows.length)}.log`));
    try {
      report(`kcm · ${run}: started, waiting for its caches to sync`);
      const syncedMs = await kcm.synced;
      const watchesSynced = await openWatches(client);
      report(
        `kcm · ${run}: synced in ${(syncedMs / 1000).toFixed(1)} s; ${String(watchesSynced)} watches at the apiserver (${String(watchesBefore)} before)`,
      );
      // The steady window: KCM at work on a quiet cluster, as it spends most of its life.
      const proofsBefore = proxy === undefined ? 0 : sum(await proxyMetric(proxy, 'kube_cache_proxy_freshness_proofs_total', 'resource'));
      const probesAtStart =
        proxy === undefined ? 0 : sum(await proxyMetric(proxy, 'kube_cache_proxy_consistency_probes_total', 'resource'));
      const requestsBefore = await apiserverRequestsTotal(client);
      const cpuBefore = cpuSeconds(apiserverPid);
      await sleep(spec.steadyMs);
      const minutes = spec.steadyMs / 60_000;
      const steadyRequestsPerMinute = ((await apiserverRequestsTotal(client)) - requestsBefore) / minutes;
      const steadyCpuPerMinute = (cpuSeconds(apiserverPid) - cpuBefore) / minutes;
      const steadyProofs =
        proxy === undefined
          ? undefined
          : sum(await proxyMetric(proxy, 'kube_cache_proxy_freshness_proofs_total', 'resource')) - proofsBefore;
      const steadyProbes =
        proxy === undefined
          ? undefined
          : sum(await proxyMetric(proxy, 'kube_cache_proxy_consistency_probes_total', 'resource')) - probesAtStart;
      report(
        `kcm · ${run}: steady ${String(spec.steadyMs / 1000)} s: apiserver ${steadyRequestsPerMinute.toFixed(0)} requests/min, ${steadyCpuPerMinute.toFixed(2)} CPU s/min${proxy === undefined ? '' : `; proxy ${String(steadyProofs)} proofs, ${String(steadyProbes)} probes`}`,
      );
      let deletionMs: number | undefined;
      let listsPerDeletion: number | undefined;
      let requestsPerDeletion: number | undefined;
      let cpuPerDeletion: number | undefined;
      let probesPerDeletion: number | undefined;
      let passedPerDeletion: Record<string, number> | undefined;
      if (deletions) {
        const times: number[] = [];
        let lists = 0;
        const deletionRequestsBefore = await apiserverRequestsTotal(client);
        const deletionCpuBefore = cpuSeconds(apiserverPid);
        const probesBefore =
          proxy === undefined ? 0 : sum(await proxyMetric(proxy, 'kube_cache_proxy_consistency_probes_total', 'resource'));
        const passedBefore =
          proxy === undefined ? {} : await proxyMetric(proxy, 'kube_cache_proxy_consistency_pass_through_total', 'reason');
        for (let i = 0; i < spec.deletions; i++) {
          const result = await deleteNamespace(client, `kcm-${String(rows.length)}-${String(i)}`, spec.objects);
          times.push(result.ms);
          lists += result.lists;
        }
        deletionMs = median(times);
        listsPerDeletion = lists / spec.deletions;
        requestsPerDeletion = ((await apiserverRequestsTotal(client)) - deletionRequestsBefore) / spec.deletions;
        cpuPerDeletion = (cpuSeconds(apiserverPid) - deletionCpuBefore) / spec.deletions;
        if (proxy !== undefined) {
          probesPerDeletion =
            (sum(await proxyMetric(proxy, 'kube_cache_proxy_consistency_probes_total', 'resource')) - probesBefore) / spec.deletions;
          passedPerDeletion = Object.fromEntries(
            Object.entries(
              difference(await proxyMetric(proxy, 'kube_cache_proxy_consistency_pass_through_total', 'reason'), passedBefore),
            ).map(([reason, n]) => [reason, n / spec.deletions]),
          );
        }
        report(
          `kcm · ${run}: namespace deletion ${(deletionMs / 1000).toFixed(2)} s (median of ${String(spec.deletions)}), ${listsPerDeletion.toFixed(0)} apiserver LISTs each`,
        );
      }
      const passedAfter = proxy === undefined ? undefined : await proxyWatches(proxy, 'apiserver');
      return {
        run,
        syncedMs,
        watchesBefore,
        watchesSynced,
        watchesFromCache: proxy === undefined ? undefined : sum(await proxyWatches(proxy, 'cache')) - cachedBefore,
        watchesPassed: passedAfter === undefined ? undefined : difference(passedAfter, passedBefore),
        steadyRequestsPerMinute,
        steadyCpuPerMinute,
        steadyProofs,
        steadyProbes,
        deletionMs,
        listsPerDeletion,
        requestsPerDeletion,
        cpuPerDeletion,
        probesPerDeletion,
        passedPerDeletion,
        answersByContentType:
          proxy === undefined
            ? undefined
            : difference(await proxyMetric(proxy, 'kube_cache_proxy_cache_answers_total', 'content_type'), answersBefore),
      };
    } finally {
      await kcm.stop();
    }
  }
}

export interface Kcm {
  readonly pid: number;
  /** Resolves with the time from start to synced, ms. */
  readonly synced: Promise<number>;
  stop(): Promise<void>;
}

/** Starts KCM on `kubeconfig`, its output kept for `logFile` (written at stop); `env` beside the bench's own. */
export function startKcm(
  binaries: ComponentBinaries,
  state: ControlPlaneState,
  kubeconfig: string,
  logFile: string,
  env: Readonly<Record<string, string>> = {},
): Kcm {
  const pki = join(state.dir, 'pki');
  const child: ChildProcess = spawn(
    binaries.kubeControllerManager,
    [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      // Every controller runs with KCM's own credentials (the bench's admin, or the proxy's).
      '--use-service-account-credentials=false',
      `--service-account-private-key-file=${join(pki, 'sa.key')}`,
      `--root-ca-file=${state.caFile}`,
      `--cluster-signing-cert-file=${state.caFile}`,
      `--cluster-signing-key-file=${join(pki, 'ca.key')}`,
      '--bind-address=127.0.0.1',
      '--secure-port=0',
      '--v=1',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
  if (child.pid === undefined) throw new Error('kube-controller-manager did not start');
  const pid = child.pid;
  const started = performance.now();
  let log = '';
  let lastSyncedAt = 0;
  let syncedLines = 0;
  const onData = (chunk: Buffer): void => {
    const text = chunk.toString();
    log += text;
    if (log.length > 1 << 20) log = log.slice(-(1 << 19));
    const lines = text.split('\n').filter((l) => l.includes('Caches are synced')).length;
    if (lines > 0) {
      syncedLines += lines;
      lastSyncedAt = performance.now();
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      resolve();
    });
  });
  const synced = (async () => {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`kube-controller-manager exited (${String(child.exitCode)}):\n${log.slice(-3000)}`);
      const now = performance.now();
      if (syncedLines > 0 && now - lastSyncedAt > SETTLED_MS) return lastSyncedAt - started;
      if (now - started > SYNC_TIMEOUT_MS)
        throw new Error(`kube-controller-manager did not sync in ${String(SYNC_TIMEOUT_MS / 1000)} s:\n${log.slice(-3000)}`);
      await sleep(250);
    }
  })();
  return {
    pid,
    synced,
    async stop() {
      writeFileSync(logFile, log);
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Watches open at the apiserver now, all resources (apiserver_longrunning_requests). */
async function openWatches(client: UpstreamClient): Promise<number> {
  const text = (await client.request({ method: 'GET', path: '/metrics', headers: { accept: 'text/plain' } })).body.toString();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('apiserver_longrunning_requests{') && line.includes('verb="WATCH"'))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

function kubeApiserverPid(state: ControlPlaneState): number {
  const pid = state.processes.find((p) => p.name === 'kube-apiserver')?.pid;
  if (pid === undefined) throw new Error('no kube-apiserver in the control plane state');
  return pid;
}

/** Requests the apiserver served so far, all resources: of one verb, or every verb (a watch counts once it ends). */
async function apiserverRequestsTotal(client: UpstreamClient, verb?: string): Promise<number> {
  const text = (await client.request({ method: 'GET', path: '/metrics', headers: { accept: 'text/plain' } })).body.toString();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('apiserver_request_total{') && (verb === undefined || line.includes(`verb="${verb}"`)))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** The proxy's watch requests by resource, served from `from`. */
async function proxyWatches(proxy: Target, from: 'cache' | 'apiserver'): Promise<Record<string, number>> {
  const res = await request(`${proxy.url}/metrics`);
  const out: Record<string, number> = {};
  for (const line of (await res.body.text()).split('\n')) {
    if (!line.startsWith('kube_cache_proxy_requests_total{') || !line.includes('verb="watch"') || !line.includes(`served_from="${from}"`))
      continue;
    const resource = /resource="([^"]*)"/.exec(line)?.[1] ?? '';
    out[resource] = (out[resource] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return out;
}

/** A proxy counter's values summed by one label. */
async function proxyMetric(proxy: Target, name: string, by: string): Promise<Record<string, number>> {
  const res = await request(`${proxy.url}/metrics`);
  const out: Record<string, number> = {};
  for (const line of (await res.body.text()).split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const key = new RegExp(`${by}="([^"]*)"`).exec(line)?.[1] ?? '';
    out[key] = (out[key] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return out;
}

function sum(counts: Readonly<Record<string, number>>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

function difference(after: Readonly<Record<string, number>>, before: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

/** Creates a namespace with `objects` configmaps, secrets and services, deletes it, and times KCM's namespace controller. */
async function deleteNamespace(client: UpstreamClient, name: string, objects: number): Promise<{ ms: number; lists: number }> {
  const post = async (path: string, body: unknown): Promise<void> => {
    const res = await client.request({ method: 'POST', path, body: JSON.stringify(body) });
    if (res.statusCode !== 201) throw new Error(`POST ${path}: ${String(res.statusCode)} ${res.body.toString().slice(0, 300)}`);
  };
  await post('/api/v1/namespaces', { metadata: { name } });
  for (let i = 0; i < objects; i++) {
    await post(`/api/v1/namespaces/${name}/configmaps`, { metadata: { name: `cm-${String(i)}` }, data: { i: String(i) } });
    await post(`/api/v1/namespaces/${name}/secrets`, { metadata: { name: `s-${String(i)}` }, stringData: { i: String(i) } });
    await post(`/api/v1/namespaces/${name}/services`, { metadata: { name: `svc-${String(i)}` }, spec: { ports: [{ port: 80 }] } });
  }
  const lists = await apiserverRequestsTotal(client, 'LIST');
  const started = performance.now();
  const deleted = await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${name}` });
  if (deleted.statusCode !== 200 && deleted.statusCode !== 202) throw new Error(`DELETE namespace ${name}: ${String(deleted.statusCode)}`);
  for (;;) {
    const res = await client.request({ method: 'GET', path: `/api/v1/namespaces/${name}` });
    if (res.statusCode === 404) break;
    if (performance.now() - started > DELETION_TIMEOUT_MS)
      throw new Error(`namespace ${name} not gone after ${String(DELETION_TIMEOUT_MS / 1000)} s`);
    await sleep(20);
  }
  const ms = performance.now() - started;
  return { ms, lists: (await apiserverRequestsTotal(client, 'LIST')) - lists };
}

export function formatKcm(rows: readonly KcmRow[], spec: KcmSpec): string {
  const lines = [
    `kube-controller-manager v1.37.2 straight at the apiserver and through kube-cache-proxy (lazy caches, cold then warm), ${String(spec.repeats)} runs of each but the cold one; after each sync a steady window of ${String(spec.steadyMs / 1000)} s; then namespace deletion: ${String(spec.deletions)} namespaces of ${String(spec.objects)} configmaps, secrets and services each`,
    '',
    '| run | synced s | apiserver watches before → synced | KCM watches from the cache | KCM watches passed through | steady: apiserver requests/min | steady: apiserver CPU s/min | steady: proxy proofs, probes | namespace deletion s (median) | apiserver LISTs, requests, CPU s per deletion | proxy probes per deletion | RV-unset reads passed per deletion | answers from the cache by Content-Type |',
    '| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |',
  ];
  const counts = (record: Readonly<Record<string, number>> | undefined, digits = 0): string =>
    record === undefined
      ? '–'
      : Object.entries(record)
          .map(([k, v]) => `${k} ${v.toFixed(digits)}`)
          .join(', ') || '0';
  for (const r of rows) {
    const cells = [
      r.run,
      (r.syncedMs / 1000).toFixed(1),
      `${String(r.watchesBefore)} → ${String(r.watchesSynced)}`,
      r.watchesFromCache === undefined ? '–' : String(r.watchesFromCache),
      counts(r.watchesPassed),
      r.steadyRequestsPerMinute.toFixed(0),
      r.steadyCpuPerMinute.toFixed(2),
      r.steadyProofs === undefined ? '–' : `${String(r.steadyProofs)}, ${String(r.steadyProbes ?? 0)}`,
      r.deletionMs === undefined ? '–' : (r.deletionMs / 1000).toFixed(2),
      r.listsPerDeletion === undefined
        ? '–'
        : `${r.listsPerDeletion.toFixed(0)}, ${(r.requestsPerDeletion ?? 0).toFixed(0)}, ${(r.cpuPerDeletion ?? 0).toFixed(2)}`,
      r.probesPerDeletion === undefined ? '–' : r.probesPerDeletion.toFixed(1),
      counts(r.passedPerDeletion, 1),
      counts(r.answersByContentType),
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  const direct = rows.filter((r) => r.run.includes('→ apiserver'));
  const warm = rows.filter((r) => r.run.includes('(warm'));
  const mean = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  if (direct.length > 0 && warm.length > 0) {
    const ratio = (pick: (r: KcmRow) => number | undefined): string => {
      const d = mean(direct.map((r) => pick(r) ?? 0));
      const w = mean(warm.map((r) => pick(r) ?? 0));
      return `${w.toFixed(2)} against ${d.toFixed(2)} (${(w / d).toFixed(2)}×)`;
    };
    lines.push(
      '',
      `Warm proxy against direct, means of ${String(warm.length)} and ${String(direct.length)} runs: steady apiserver requests/min ${ratio((r) => r.steadyRequestsPerMinute)}; steady apiserver CPU s/min ${ratio((r) => r.steadyCpuPerMinute)}; namespace deletion s ${ratio((r) => (r.deletionMs === undefined ? undefined : r.deletionMs / 1000))}; apiserver requests per deletion ${ratio((r) => r.requestsPerDeletion)}; apiserver CPU s per deletion ${ratio((r) => r.cpuPerDeletion)}.`,
    );
  }
  return lines.join('\n');
}
