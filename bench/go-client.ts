/**
 * The go-client scenario: a client-go v0.37.2 program (tools/goclient, built from the pinned
 * module) lists every pod and configmap and watches configmaps for a few seconds, as a typed
 * informer's first sync does, through the proxy in protobuf (its rest.Config ContentType),
 * through the proxy in JSON, and at the apiserver in protobuf; its own CPU seconds and time to
 * the end of the lists, median of `repeats` runs each. What a Go client pays to decode what it
 * is sent.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import { median } from './stats.ts';
import { startCacheProxy } from './targets.ts';
import { anonymousKubeconfig } from '../test/helpers/anonymous-kubeconfig.ts';
import { buildGoClient } from '../test/helpers/go-client.ts';

export interface GoClientRow {
  readonly target: string;
  readonly listed: number;
  /** The Go process's user + system CPU, s (median). */
  readonly cpuSeconds: number;
  /** From its start to the lists' end, s (median). */
  readonly listSeconds: number;
}

interface Report {
  readonly listed: number;
  readonly cpuSeconds: number;
  readonly syncedSeconds: number;
}

const run = promisify(execFile);

export async function runGoClient(state: ControlPlaneState, repeats: number, report: (line: string) => void): Promise<GoClientRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-goclient-'));
  report('go-client · building tools/goclient');
  const binary = await buildGoClient();
  const proxy = await startCacheProxy(state, { resources: 'pods,configmaps' });
  const proxyKubeconfig = join(dir, 'proxy.kubeconfig');
  writeFileSync(proxyKubeconfig, anonymousKubeconfig(proxy.url));
  const targets = [
    { target: 'kube-cache-proxy, protobuf', kubeconfig: proxyKubeconfig, contentType: 'application/vnd.kubernetes.protobuf' },
    { target: 'kube-cache-proxy, JSON', kubeconfig: proxyKubeconfig, contentType: 'application/json' },
    { target: 'apiserver, protobuf', kubeconfig: state.kubeconfig, contentType: 'application/vnd.kubernetes.protobuf' },
  ];
  const runs = new Map<string, Report[]>();
  try {
    // In alternation, A B C A B C, so that the machine's drift falls on all alike.
    for (let i = 0; i < repeats; i++) {
      for (const t of targets) {
        const { stdout } = await run(
          binary,
          [`--kubeconfig=${t.kubeconfig}`, '--mode=typed', `--content-type=${t.contentType}`, '--duration=2s'],
          {
            maxBuffer: 1 << 20,
          },
        );
        const result = JSON.parse(stdout) as Report;
        runs.set(t.target, [...(runs.get(t.target) ?? []), result]);
      }
    }
  } finally {
    await proxy.stop();
  }
  return targets.map((t) => {
    const results = runs.get(t.target) ?? [];
    const row = {
      target: t.target,
      listed: results[0]?.listed ?? 0,
      cpuSeconds: median(results.map((r) => r.cpuSeconds)),
      listSeconds: median(results.map((r) => r.syncedSeconds)),
    };
    report(
      `go-client · ${t.target}: ${String(row.listed)} objects, ${row.cpuSeconds.toFixed(2)} CPU s, lists in ${row.listSeconds.toFixed(2)} s`,
    );
    return row;
  });
}

export function formatGoClient(rows: readonly GoClientRow[]): string {
  const lines = [
    'client-go v0.37.2 (tools/goclient): LIST every pod and configmap, then watch configmaps for 2 s; the Go process itself',
    '',
    '| target | objects | Go client CPU s | lists done s |',
    '| --- | ---: | ---: | ---: |',
  ];
  for (const r of rows) lines.push(`| ${r.target} | ${String(r.listed)} | ${r.cpuSeconds.toFixed(2)} | ${r.listSeconds.toFixed(2)} |`);
  return lines.join('\n');
}
