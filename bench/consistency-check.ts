/**
 * What the consistency checks (src/cache/consistency-checker.ts) cost the apiserver: a proxy
 * caching the bench's pods checks them every CHECK_PERIOD for --check-seconds, beside the same
 * proxy with the checks off for as long; the apiserver's pods LISTs, the bytes of its LIST
 * answers (apiserver_response_sizes) and its CPU seconds are each run's own, so the difference
 * is the checks'. Nobody reads or writes pods meanwhile: a cache that waits, as most do.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { cpuSeconds } from './stats.ts';
import { countsDelta, upstreamCounts } from './cluster.ts';
import { proxyCounter, startCacheProxy } from './targets.ts';

/** Short enough that a run sees several checks. */
const CHECK_PERIOD = '10s';
/** How long each proxy runs: three periods and a half (the first check comes 10-15 s after the start). */
export const CHECK_COST_SECONDS = 45;

export interface CheckCostRow {
  readonly target: string;
  readonly checks: number;
  readonly failures: number;
  readonly listRequests: number;
  readonly listBytes: number;
  readonly apiserverCpuSeconds: number;
}

export async function runConsistencyCheckCost(
  state: ControlPlaneState,
  client: UpstreamClient,
  seconds: number,
  report: (line: string) => void,
): Promise<CheckCostRow[]> {
  const apiserverPid = state.processes.find((p) => p.name === 'kube-apiserver')?.pid;
  const rows: CheckCostRow[] = [];
  for (const [name, period] of [
    ['checks off', '0'],
    [`checks every ${CHECK_PERIOD}`, CHECK_PERIOD],
  ] as const) {
    const target = await startCacheProxy(state, { resources: 'pods', args: [`--consistency-check-period=${period}`] });
    try {
      report(`consistency-check · ${name} · ${String(seconds)} s`);
      const before = await upstreamCounts(client, ['pods']);
      const bytesBefore = await listResponseBytes(client);
      const cpuBefore = apiserverCpu(apiserverPid);
      await sleep(seconds * 1000);
      const delta = countsDelta(await upstreamCounts(client, ['pods']), before).pods;
      const row: CheckCostRow = {
        target: name,
        checks: await proxyCounter(target, 'kube_cache_proxy_consistency_checks_total', { resource: 'pods' }),
        failures: await proxyCounter(target, 'kube_cache_proxy_consistency_checks_total', { resource: 'pods', result: 'failure' }),
        listRequests: delta?.LIST ?? 0,
        listBytes: (await listResponseBytes(client)) - bytesBefore,
        apiserverCpuSeconds: apiserverCpu(apiserverPid) - cpuBefore,
      };
      report(
        `consistency-check · ${name}: ${String(row.checks)} checks (${String(row.failures)} failed), ${String(row.listRequests)} LISTs, ${(row.listBytes / 2 ** 20).toFixed(1)} MiB, apiserver CPU ${row.apiserverCpuSeconds.toFixed(2)} s`,
      );
      rows.push(row);
    } finally {
      await target.stop();
    }
  }
  return rows;
}

/** The bytes of every pods LIST answer the apiserver has written (apiserver_response_sizes_sum). */
async function listResponseBytes(client: UpstreamClient): Promise<number> {
  const res = await client.request({ method: 'GET', path: '/metrics', headers: { accept: 'text/plain' } });
  let total = 0;
  for (const line of res.body.toString().split('\n')) {
    if (!line.startsWith('apiserver_response_sizes_sum{') || !line.includes('resource="pods"') || !line.includes('verb="LIST"')) continue;
    if (!line.includes('group=""') || /subresource="[^"]/.test(line)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

export function formatConsistencyCheckCost(rows: readonly CheckCostRow[], pods: number, seconds: number): string {
  const off = rows.find((r) => r.target === 'checks off');
  const lines = [
    `Consistency checks of ${pods.toLocaleString('en-US')} pods (every ${CHECK_PERIOD} for ${String(seconds)} s, nothing else reading or writing pods; the apiserver's own counters and CPU)`,
    '',
    '| proxy | checks (failed) | pods LISTs | LIST bytes | apiserver CPU s | per check: LISTs, bytes, apiserver CPU s beyond checks off |',
    '| --- | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const r of rows) {
    const per =
      r.checks === 0 || off === undefined || r === off
        ? ''
        : `${(r.listRequests / r.checks).toFixed(1)}, ${((r.listBytes - off.listBytes) / r.checks / 2 ** 20).toFixed(2)} MiB, ${((r.apiserverCpuSeconds - off.apiserverCpuSeconds) / r.checks).toFixed(3)}`;
    lines.push(
      `| ${r.target} | ${String(r.checks)} (${String(r.failures)}) | ${String(r.listRequests)} | ${(r.listBytes / 2 ** 20).toFixed(2)} MiB | ${r.apiserverCpuSeconds.toFixed(2)} | ${per} |`,
    );
  }
  return lines.join('\n');
}

/** kube-apiserver's CPU seconds so far (stats.ts), 0 when its pid is not known. */
function apiserverCpu(pid: number | undefined): number {
  return pid === undefined ? 0 : cpuSeconds(pid);
}
