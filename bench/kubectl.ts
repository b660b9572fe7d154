/**
 * The kubectl scenario: what a person at a terminal waits for. The dev cluster's own kubectl
 * (v1.37.2), run against each target: straight at the apiserver with the cluster's kubeconfig,
 * or at a proxy with `--server` and an empty kubeconfig; a fresh --cache-dir per run would time
 * discovery too, so one cache dir per target is kept warm (a person's ~/.kube/cache is).
 *
 * - `kubectl get pods -A`: wall time from start to exit (its LIST pages of 500, as Tables);
 * - `kubectl get pods -A -w`: start-up, from start to the last initial row printed.
 *
 * Reported as load rows: p50 is the median wall time in ms, p99 the slowest run; upstream
 * requests are the apiserver's own count of pod LISTs, GETs and WATCHes during the runs.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { countsDelta, upstreamCounts } from './cluster.ts';
import type { LoadRow } from './results.ts';
import { median } from './stats.ts';
import type { Target } from './targets.ts';

export interface KubectlOptions {
  readonly pods: number;
  readonly repeats: number;
  readonly elapsed: () => string;
}

/** Runs kubectl until it exits (`get`) or has printed `lines` lines (`-w`, then killed); its wall time in ms. */
function timeKubectl(bin: string, args: readonly string[], lines?: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let seen = 0;
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      for (const b of chunk) if (b === 0x0a) seen++;
      if (lines !== undefined && seen >= lines) {
        resolve(performance.now() - started);
        child.kill();
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (lines === undefined && code === 0) resolve(performance.now() - started);
      else if (lines === undefined || seen < lines)
        reject(new Error(`kubectl ${args.join(' ')} exited ${String(code)} after ${String(seen)} lines: ${err.slice(-500)}`));
    });
  });
}

export async function runKubectlWallTimes(
  state: ControlPlaneState,
  apiserver: UpstreamClient,
  targets: readonly Target[],
  o: KubectlOptions,
): Promise<LoadRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-bench-kubectl-'));
  const empty = join(dir, 'empty-kubeconfig');
  writeFileSync(empty, '');
  const rows: LoadRow[] = [];
  const pods = o.pods.toLocaleString('en-US');
  const commands = [
    { scenario: 'kubectl-get', title: `kubectl get pods -A (${pods} pods), wall time`, args: ['get', 'pods', '-A'], lines: undefined },
    {
      scenario: 'kubectl-watch',
      title: `kubectl get pods -A -w (${pods} pods), start-up to the last initial row`,
      args: ['get', 'pods', '-A', '-w'],
      lines: o.pods + 1,
    },
  ];
  for (const command of commands) {
    for (const target of targets) {
      const connection = target.name === 'apiserver' ? ['--kubeconfig', state.kubeconfig] : ['--kubeconfig', empty, '--server', target.url];
      const args = [...connection, '--cache-dir', join(dir, `cache-${target.name.replace(/\W+/g, '-')}`), ...command.args];
      await timeKubectl(state.binaries.kubectl, args, command.lines); // warm: discovery cached, the proxy's cache read once
      const times: number[] = [];
      const before = await upstreamCounts(apiserver, ['pods']);
      for (let i = 0; i < o.repeats; i++) {
        const ms = await timeKubectl(state.binaries.kubectl, args, command.lines);
        process.stderr.write(
          `[${o.elapsed()}] ${command.scenario} · ${target.name} · run ${String(i + 1)}/${String(o.repeats)}: ${(ms / 1000).toFixed(2)} s\n`,
        );
        times.push(ms);
      }
      const delta = countsDelta(await upstreamCounts(apiserver, ['pods']), before).pods;
      const upstream = delta === undefined ? 0 : delta.LIST + delta.GET + delta.WATCH;
      rows.push({
        scenario: command.scenario,
        title: command.title,
        target: target.name,
        connections: 1,
        p50: median(times),
        p99: Math.max(...times),
        rps: 0,
        spread: 0,
        unstable: false,
        upstreamRequests: upstream,
        clientRequests: times.length,
        failures: 0,
        fromCache: undefined,
        runs: [],
      });
    }
  }
  return rows;
}
