/**
 * The kcm scenario's wire rows: kube-controller-manager v1.37.2 through a shared proxy serving
 * TLS (each client as itself: KCM with the admin's token), as a controller manager reaches a node
 * or cluster proxy across a network. client-go negotiates h2 by ALPN; DISABLE_HTTP2 (apimachinery's util/net/http.go) makes
 * it speak HTTP/1.1 (one connection per watch or request in flight), since the proxy offers both.
 * The proxy's own upstream is HTTP/2 or, with --upstream-http2=false, HTTP/1.1.
 *
 * Per run, a fresh proxy (its caches started by KCM's reads) and KCM started against it: the
 * time until KCM's informers have synced, KCM's connections to the proxy (its sockets, and the
 * proxy's gauge by protocol), the proxy's connections to the apiserver, and the apiserver's and the
 * proxy's CPU seconds from KCM's start to synced and per minute of a steady window after it. A
 * last run has KCM straight at the apiserver, for reference.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { ComponentBinaries } from '../src/cli/dev-cluster/build.ts';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import { signedCertificate } from '../test/helpers/certificates.ts';
import { metricSum } from '../test/helpers/metrics-text.ts';
import { establishedTo } from '../test/helpers/proc-sockets.ts';
import { startKcm } from './controller-manager.ts';
import { cpuSeconds } from './stats.ts';
import { startCacheProxy } from './targets.ts';
import type { Target } from './targets.ts';

export interface KcmWireSpec {
  /** The steady window after KCM has synced, ms. */
  readonly steadyMs: number;
}

export interface KcmWireRow {
  readonly run: string;
  readonly syncedMs: number;
  /** KCM's ESTABLISHED sockets to the server it was given (the proxy or the apiserver), once synced. */
  readonly kcmSockets: number;
  /** The proxy's gauge of client connections open, by protocol (undefined straight at the apiserver). */
  readonly proxyClientConnections: Readonly<Record<string, number>> | undefined;
  /** The proxy's ESTABLISHED sockets to the apiserver, once synced. */
  readonly upstreamSockets: number | undefined;
  /** CPU seconds from KCM's start to synced. */
  readonly startApiserverCpu: number;
  readonly startProxyCpu: number | undefined;
  /** CPU seconds per minute of the steady window. */
  readonly steadyApiserverCpuPerMinute: number;
  readonly steadyProxyCpuPerMinute: number | undefined;
}

interface WireRun {
  readonly run: string;
  /** KCM's HTTP/2 client: off makes it speak HTTP/1.1 (DISABLE_HTTP2: client-go configures h2 itself, so GODEBUG=http2client=0 does not). */
  readonly kcmHttp2: boolean;
  /** The proxy's upstream over HTTP/2; undefined: no proxy, KCM straight at the apiserver. */
  readonly upstreamHttp2: boolean | undefined;
}

const RUNS: readonly WireRun[] = [
  { run: 'KCM h2 → TLS proxy, upstream h2', kcmHttp2: true, upstreamHttp2: true },
  { run: 'KCM HTTP/1.1 → TLS proxy, upstream h2', kcmHttp2: false, upstreamHttp2: true },
  { run: 'KCM h2 → TLS proxy, upstream HTTP/1.1', kcmHttp2: true, upstreamHttp2: false },
  { run: 'KCM h2 → apiserver', kcmHttp2: true, upstreamHttp2: undefined },
];

export async function runKcmWire(
  state: ControlPlaneState,
  binaries: ComponentBinaries,
  spec: KcmWireSpec,
  report: (line: string) => void,
): Promise<KcmWireRow[]> {
  const cleanups: (() => void)[] = [];
  const t = { after: (fn: () => void) => cleanups.push(fn) };
  const serving = signedCertificate(t, state, { cn: 'kube-cache-proxy', serving: true });
  const found = state.processes.find((p) => p.name === 'kube-apiserver')?.pid;
  if (found === undefined) throw new Error('no kube-apiserver in the control plane state');
  const apiserverPid: number = found;
  const apiserverPort = Number(new URL(state.server).port);
  const rows: KcmWireRow[] = [];
  try {
    for (const r of RUNS) {
      const proxy =
        r.upstreamHttp2 === undefined
          ? undefined
          : await startCacheProxy(state, {
              resources: '',
              args: [
                '--shared',
                `--tls-cert-file=${serving.certFile}`,
                `--tls-private-key-file=${serving.keyFile}`,
                `--client-ca-file=${state.caFile}`,
                `--upstream-http2=${String(r.upstreamHttp2)}`,
              ],
              ca: readFileSync(state.caFile),
            });
      try {
        rows.push(await measure(r, proxy));
      } finally {
        await proxy?.stop();
      }
    }
  } finally {
    for (const fn of cleanups) fn();
  }
  return rows;

  async function measure(r: WireRun, proxy: Target | undefined): Promise<KcmWireRow> {
    const server = proxy?.url ?? state.server;
    const dir = mkdtempSync(join(tmpdir(), 'kcp-kcm-wire-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server, 'certificate-authority': state.caFile } }],
        users: [{ name: 'admin', user: { token: state.users.admin.token } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'admin' } }],
        'current-context': 'c',
      }),
    );
    const proxyPid = proxy?.pid;
    const proxyCpuNow = (): number => (proxyPid === undefined ? 0 : cpuSeconds(proxyPid));
    const apiserverCpu = cpuSeconds(apiserverPid);
    const proxyCpu = proxyCpuNow();
    const kcm = startKcm(
      binaries,
      state,
      kubeconfig,
      join(state.dir, 'logs', `kcm-wire-${String(rows.length)}.log`),
      r.kcmHttp2 ? {} : { DISABLE_HTTP2: 'true' },
    );
    try {
      report(`kcm wire · ${r.run}: started, waiting for its caches to sync`);
      const syncedMs = await kcm.synced;
      const startApiserverCpu = cpuSeconds(apiserverPid) - apiserverCpu;
      const startProxyCpu = proxyPid === undefined ? undefined : proxyCpuNow() - proxyCpu;
      const kcmSockets = establishedTo(kcm.pid, Number(new URL(server).port));
      const upstreamSockets = proxyPid === undefined ? undefined : establishedTo(proxyPid, apiserverPort);
      const proxyClientConnections = proxy === undefined ? undefined : await clientConnections(proxy, state.users.admin.token);
      const steadyApiserver = cpuSeconds(apiserverPid);
      const steadyProxy = proxyCpuNow();
      await sleep(spec.steadyMs);
      const minutes = spec.steadyMs / 60_000;
      const row: KcmWireRow = {
        run: r.run,
        syncedMs,
        kcmSockets,
        proxyClientConnections,
        upstreamSockets,
        startApiserverCpu,
        startProxyCpu,
        steadyApiserverCpuPerMinute: (cpuSeconds(apiserverPid) - steadyApiserver) / minutes,
        steadyProxyCpuPerMinute: proxyPid === undefined ? undefined : (proxyCpuNow() - steadyProxy) / minutes,
      };
      report(
        `kcm wire · ${r.run}: synced in ${(syncedMs / 1000).toFixed(1)} s; KCM ${String(kcmSockets)} connections, proxy → apiserver ${String(upstreamSockets ?? '–')}`,
      );
      return row;
    } finally {
      await kcm.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** The proxy's gauge of client connections open now, by protocol (kube_cache_proxy_client_connections). */
async function clientConnections(proxy: Target, token: string): Promise<Record<string, number>> {
  const dispatcher = new Agent({ connect: { ca: proxy.ca }, allowH2: false });
  try {
    const res = await request(`${proxy.url}/metrics`, { dispatcher, headers: { authorization: `Bearer ${token}` } });
    const text = await res.body.text();
    const out: Record<string, number> = {};
    for (const protocol of ['h2', 'http/1.1']) out[protocol] = metricSum(text, 'kube_cache_proxy_client_connections', { protocol });
    // This scrape's own connection is one of the HTTP/1.1 ones.
    out['http/1.1'] = Math.max(0, (out['http/1.1'] ?? 0) - 1);
    return out;
  } finally {
    await dispatcher.close();
  }
}

export function formatKcmWire(rows: readonly KcmWireRow[], spec: KcmWireSpec): string {
  const lines = [
    `kube-controller-manager v1.37.2 through a shared TLS proxy (KCM as the admin, by token; lazy caches, a fresh proxy per run), KCM's HTTP/2 client on or off (DISABLE_HTTP2, apimachinery's util/net/http.go), the proxy's upstream over HTTP/2 or HTTP/1.1 (--upstream-http2); after each sync a steady window of ${String(spec.steadyMs / 1000)} s`,
    '',
    "| run | synced s | KCM's connections (its sockets) | proxy's gauge: h2, HTTP/1.1 | proxy → apiserver connections | start to synced: apiserver CPU s, proxy CPU s | steady: apiserver CPU s/min, proxy CPU s/min |",
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    const gauge =
      r.proxyClientConnections === undefined
        ? '–'
        : `${String(r.proxyClientConnections.h2 ?? 0)}, ${String(r.proxyClientConnections['http/1.1'] ?? 0)}`;
    lines.push(
      `| ${[
        r.run,
        (r.syncedMs / 1000).toFixed(1),
        String(r.kcmSockets),
        gauge,
        r.upstreamSockets === undefined ? '–' : String(r.upstreamSockets),
        `${r.startApiserverCpu.toFixed(2)}, ${r.startProxyCpu === undefined ? '–' : r.startProxyCpu.toFixed(2)}`,
        `${r.steadyApiserverCpuPerMinute.toFixed(2)}, ${r.steadyProxyCpuPerMinute === undefined ? '–' : r.steadyProxyCpuPerMinute.toFixed(2)}`,
      ].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}
