/**
 * The quiet scenario: a type nobody writes for minutes, polled as `poll` polls (each client an
 * RV-unset LIST of a namespace's pods and a GET of one pod per second), while a Lease elsewhere
 * is renewed every 2 s as a controller's leader election renews it, so the cluster's RV moves on
 * and the pods' cache falls behind it. The way a sidecar lives: its types quiet, its app reading.
 *
 * Run against the proxy with its default bound (75 s), with a 5 s bound, and against the
 * apiserver, one after the other (each for --quiet-seconds), so that the apiserver's CPU and
 * counters are each target's own: its pods LISTs and GETs, and the watches the proxy opens
 * (its freshness proofs: a one-key consistent LIST and a 3 s watch each), per minute.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { cpuSeconds } from './stats.ts';
import { countsDelta, upstreamCounts } from './cluster.ts';
import { runPoll } from './poll.ts';
import type { Target } from './targets.ts';
import { apiserverTarget, proxyCounter, startCacheProxy } from './targets.ts';

export interface QuietSpec {
  readonly clients: number;
  readonly seconds: number;
  readonly pods: number;
  readonly namespaces: number;
}

export interface QuietRow {
  readonly target: string;
  readonly clientRequestsPerMinute: number;
  /** Pods LISTs and GETs the apiserver served, per minute. */
  readonly upstreamReadsPerMinute: number;
  /** Pods watches the apiserver saw end (the proofs' requests; the proxy's own long watch does not end), per minute. */
  readonly upstreamWatchesPerMinute: number;
  /** The proxy's freshness proofs per minute, and reads it passed through for staleness in all. */
  readonly proofsPerMinute: number | undefined;
  readonly passedStale: number | undefined;
  /** kube-apiserver's CPU seconds per minute of the run. */
  readonly apiserverCpuPerMinute: number;
  readonly p50: number;
  readonly p99: number;
  readonly failures: number;
}

/** A Lease renewed this often: the cluster's RV moves on while the pods stay quiet. */
const LEASE_RENEW_MS = 2_000;
const LEASE_NAMESPACE = 'default';
const LEASE = 'bench-quiet';

export async function runQuiet(
  state: ControlPlaneState,
  client: UpstreamClient,
  spec: QuietSpec,
  report: (line: string) => void,
): Promise<QuietRow[]> {
  const rows: QuietRow[] = [];
  const targets: { readonly name: string; readonly start: () => Promise<Target> }[] = [
    { name: 'kube-cache-proxy (default, 75 s)', start: () => startCacheProxy(state, { resources: 'pods' }) },
    {
      name: 'kube-cache-proxy (--max-staleness 5s)',
      start: () => startCacheProxy(state, { resources: 'pods', args: ['--max-staleness=5s'] }),
    },
    { name: 'apiserver', start: () => Promise.resolve(apiserverTarget(state)) },
  ];
  const apiserverPid = state.processes.find((p) => p.name === 'kube-apiserver')?.pid;
  for (const { name, start } of targets) {
    const target = await start();
    const renewing = new AbortController();
    const renewer = renewLease(client, renewing.signal);
    try {
      report(`quiet · ${name} · ${String(spec.clients)} pollers for ${String(spec.seconds)} s`);
      const before = await upstreamCounts(client, ['pods']);
      const cpuBefore = apiserverCpu(apiserverPid);
      const started = performance.now();
      const result = await runPoll(target, client, spec);
      const minutes = (performance.now() - started) / 60_000;
      const delta = countsDelta(await upstreamCounts(client, ['pods']), before).pods;
      const isProxy = target.name !== 'apiserver';
      const proofs = isProxy ? await proxyCounter(target, 'kube_cache_proxy_freshness_proofs_total', { resource: 'pods' }) : undefined;
      const stale = isProxy
        ? await proxyCounter(target, 'kube_cache_proxy_consistency_pass_through_total', { resource: 'pods', reason: 'stale' })
        : undefined;
      const row: QuietRow = {
        target: name,
        clientRequestsPerMinute: result.clientRequestsPerMinute,
        upstreamReadsPerMinute: delta === undefined ? 0 : (delta.LIST + delta.GET) / minutes,
        upstreamWatchesPerMinute: delta === undefined ? 0 : delta.WATCH / minutes,
        proofsPerMinute: proofs === undefined ? undefined : proofs / minutes,
        passedStale: stale,
        apiserverCpuPerMinute: (apiserverCpu(apiserverPid) - cpuBefore) / minutes,
        p50: result.p50,
        p99: result.p99,
        failures: result.failures,
      };
      report(
        `quiet · ${name}: ${row.upstreamReadsPerMinute.toFixed(0)} upstream reads/min, ${row.upstreamWatchesPerMinute.toFixed(1)} watches/min, ${String(row.passedStale ?? '–')} passed for staleness`,
      );
      rows.push(row);
    } finally {
      renewing.abort();
      await renewer;
      if (target.name !== 'apiserver') await target.stop();
    }
  }
  return rows;
}

async function renewLease(client: UpstreamClient, signal: AbortSignal): Promise<void> {
  const path = `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases`;
  await client.request({ method: 'POST', path, body: JSON.stringify({ metadata: { name: LEASE }, spec: { holderIdentity: 'bench' } }) });
  while (!signal.aborted) {
    const renewTime = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
    await client.request({
      method: 'PATCH',
      path: `${path}/${LEASE}`,
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ spec: { renewTime } }),
    });
    await sleep(LEASE_RENEW_MS, undefined, { signal }).catch(() => undefined);
  }
}

export function formatQuiet(rows: readonly QuietRow[], spec: QuietSpec): string {
  const lines = [
    `Quiet type: ${String(spec.clients)} clients poll pods (an RV-unset LIST and GET per second each) for ${String(spec.seconds)} s while nothing writes pods (a Lease is renewed every 2 s elsewhere)`,
    '',
    '| target | client requests/min | apiserver pods reads/min | apiserver pods watches/min | proofs/min | passed for staleness | apiserver CPU s/min | p50 ms | p99 ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.target} | ${r.clientRequestsPerMinute.toFixed(0)} | ${r.upstreamReadsPerMinute.toFixed(1)} | ${r.upstreamWatchesPerMinute.toFixed(1)} | ${r.proofsPerMinute === undefined ? '–' : r.proofsPerMinute.toFixed(1)} | ${r.passedStale === undefined ? '–' : String(r.passedStale)} | ${r.apiserverCpuPerMinute.toFixed(2)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}

/** kube-apiserver's CPU seconds so far (stats.ts), 0 when its pid is not known. */
function apiserverCpu(pid: number | undefined): number {
  return pid === undefined ? 0 : cpuSeconds(pid);
}
