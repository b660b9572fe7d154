/**
 * The restart scenario: what `--state-dir` saves a proxy caching the bench's pods when it is
 * stopped (SIGTERM, as a rollout stops it) for a while the pods change, then started again,
 * beside a cold start of the same proxy without a state.
 *
 * Per run: the time from the spawn of the process to its first `resourceVersion=0` LIST of every
 * pod answered whole; the apiserver's pods LISTs and the proxy's own reflector lists (LISTs and
 * WatchLists) from the spawn until its clients caught up; and its clients, reflectors (client-go's
 * LIST then WATCH, re-watch from the last RV, relist after a 410) each of one namespace, watching
 * through it before the stop and after the start: the 410s they met, their relists, events seen
 * twice, and whether each ended with the apiserver's state.
 *
 * The state's cost is measured apart, in this process, on the file the proxy wrote: its size, and
 * the time to write it again (cache/state-dir.ts, as the proxy writes it) and to read it back.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { decodeState } from '../src/cache/cache-state.ts';
import { StateDir } from '../src/cache/state-dir.ts';
import { freePort } from '../test/helpers/pool-harness.ts';
import { seededRandom } from '../test/helpers/prng.ts';
import type { ReflectorWatcher } from '../test/helpers/reflector-watcher.ts';
import { startReflectorWatcher } from '../test/helpers/reflector-watcher.ts';
import { caughtUp } from '../test/helpers/watch-audit.ts';
import { countsDelta, namespaceName, upstreamCounts } from './cluster.ts';
import { startPodWriter } from './pod-writer.ts';
import type { Target } from './targets.ts';
import { proxyCounter, startCacheProxy } from './targets.ts';

/** Clients watching through the proxy across its restart, one namespace each. */
const WATCHERS = 8;
/** Pod updates per second while the proxy is down. */
const DOWN_WRITE_RATE = 20;
/** Pods change for this long before the stop as well. */
const WRITES_BEFORE_STOP_MS = 5_000;
/** client-go's backoff reaches 30 s (up to twice that with its jitter) while the proxy is down. */
const CATCH_UP_TIMEOUT_MS = 180_000;

export interface RestartSpec {
  readonly pods: number;
  readonly namespaces: number;
  /** How long the proxy stays down, per restored run. */
  readonly downSeconds: readonly number[];
}

export interface RestartRow {
  readonly run: string;
  /** Spawn to "Starting to serve" (Node's start, the modules, the kubeconfig, discovery, the state), ms. */
  readonly servingMs: number;
  /** Spawn to the first RV=0 LIST of every pod answered, ms. */
  readonly readyMs: number;
  /** The apiserver's pods LISTs from the spawn until the clients caught up. */
  readonly apiserverLists: number;
  /** The proxy's own LISTs and WatchLists of pods (kube_cache_proxy_reflector_lists_total). */
  readonly proxyLists: number;
  readonly expired: number;
  readonly relists: number;
  readonly duplicated: number;
  /** Clients whose state is the apiserver's in the end, of WATCHERS. */
  readonly caughtUp: number;
  readonly catchUpMs: number;
}

export interface StateCost {
  readonly objects: number;
  readonly events: number;
  readonly bytes: number;
  readonly writeMs: number;
  readonly readMs: number;
}

export async function runRestart(
  state: ControlPlaneState,
  client: UpstreamClient,
  spec: RestartSpec,
  report: (line: string) => void,
): Promise<{ rows: RestartRow[]; cost: StateCost | undefined }> {
  const rows: RestartRow[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'kcp-bench-state-'));
  const port = await freePort();
  const options = { resources: 'pods', port, args: [`--state-dir=${dir}`] };
  let cost: StateCost | undefined;
  try {
    // A cold start: no state (the directory is empty), so the cache lists.
    rows.push(await restartRun(state, client, 'cold start (no state)', () => startCacheProxy(state, options), report));
    for (const down of spec.downSeconds) {
      let proxy = await startCacheProxy(state, options);
      const agent = new Agent();
      const random = seededRandom(down);
      const watchers = Array.from({ length: WATCHERS }, (_, i) =>
        startReflectorWatcher({
          name: `client-${String(i)}`,
          url: proxy.url,
          path: `/api/v1/namespaces/${namespaceName(i % spec.namespaces)}/pods`,
          dispatcher: agent,
          random,
          watchTimeoutSeconds: [300, 600],
        }),
      );
      try {
        await Promise.all(watchers.map((w) => w.synced));
        const countsBefore = watchers.map((w) => ({ ...w.counts }));
        // Pods change from before the stop (the clients' watches carry changes when it comes) until the restart.
        const writer = startPodWriter(client, { rate: DOWN_WRITE_RATE, pods: spec.pods, namespaces: spec.namespaces });
        await sleep(WRITES_BEFORE_STOP_MS);
        report(`restart · stopping the proxy (SIGTERM) for ${String(down)} s while pods change at ${String(DOWN_WRITE_RATE)}/s`);
        await proxy.stop();
        await sleep(down * 1000);
        const written = await writer.stop();
        const row = await restartRun(
          state,
          client,
          `restored after ${String(down)} s down (${String(written)} pod updates from 5 s before the stop)`,
          async () => (proxy = await startCacheProxy(state, options)),
          report,
          { watchers, countsBefore, namespaces: spec.namespaces },
        );
        rows.push(row);
        cost ??= await measureCost(dir, report);
      } finally {
        await Promise.all(watchers.map((w) => w.stop()));
        await agent.close();
        await proxy.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { rows, cost };
}

interface Clients {
  readonly watchers: readonly ReflectorWatcher[];
  readonly countsBefore: readonly ReflectorWatcher['counts'][];
  readonly namespaces: number;
}

async function restartRun(
  _state: ControlPlaneState,
  client: UpstreamClient,
  run: string,
  start: () => Promise<Target>,
  report: (line: string) => void,
  clients?: Clients,
): Promise<RestartRow> {
  const before = await upstreamCounts(client, ['pods']);
  const spawned = performance.now();
  const proxy = await start();
  try {
    for (;;) {
      const res = await request(`${proxy.url}/api/v1/pods?resourceVersion=0`);
      const body = await res.body.text();
      if (res.statusCode === 200 && body.includes('"items":[{')) break;
      await sleep(5);
    }
    const readyMs = performance.now() - spawned;
    /** The LISTs this bench makes itself at the apiserver (to tell when the clients caught up). */
    let ownLists = 0;
    let caught = 0;
    let catchUpMs = 0;
    if (clients !== undefined) {
      const deadline = Date.now() + CATCH_UP_TIMEOUT_MS;
      for (;;) {
        caught = 0;
        for (const [i, watcher] of clients.watchers.entries()) {
          const ns = namespaceName(i % clients.namespaces);
          ownLists++;
          const res = await client.request({
            method: 'GET',
            path: `/api/v1/namespaces/${ns}/pods`,
            headers: { accept: 'application/json' },
          });
          const list = JSON.parse(res.body.toString()) as {
            items: { metadata: { namespace: string; name: string; resourceVersion: string } }[];
          };
          const final = new Map(list.items.map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, Number(p.metadata.resourceVersion)]));
          if (caughtUp(watcher, final)) caught++;
        }
        if (caught === clients.watchers.length || Date.now() > deadline) break;
        await sleep(200);
      }
      catchUpMs = performance.now() - spawned;
    }
    const delta = countsDelta(await upstreamCounts(client, ['pods']), before).pods;
    const sum = (pick: (c: ReflectorWatcher['counts']) => number): number =>
      clients === undefined ? 0 : clients.watchers.reduce((n, w, i) => n + pick(w.counts) - pick(clients.countsBefore[i] ?? w.counts), 0);
    const row: RestartRow = {
      run,
      servingMs: (proxy.servingAt ?? spawned) - spawned,
      readyMs,
      apiserverLists: (delta?.LIST ?? 0) - ownLists,
      proxyLists: await proxyCounter(proxy, 'kube_cache_proxy_reflector_lists_total', {}),
      expired: sum((c) => c.expired),
      relists: sum((c) => c.relists),
      duplicated: sum((c) => c.duplicated),
      caughtUp: caught,
      catchUpMs,
    };
    report(
      `restart · ${run}: serving ${row.servingMs.toFixed(0)} ms and RV=0 LIST answered ${row.readyMs.toFixed(0)} ms after the spawn; ${String(row.apiserverLists)} apiserver LISTs, ${String(row.proxyLists)} proxy lists${clients === undefined ? '' : `; clients: ${String(caught)}/${String(clients.watchers.length)} caught up in ${(catchUpMs / 1000).toFixed(1)} s, ${String(row.expired)} 410s, ${String(row.relists)} relists, ${String(row.duplicated)} repeated events`}`,
    );
    return row;
  } finally {
    if (clients === undefined) await proxy.stop();
  }
}

/** The saved state's size, and its write and read times in this process (as the proxy does both). */
async function measureCost(dir: string, report: (line: string) => void): Promise<StateCost | undefined> {
  const [file] = readdirSync(dir).filter((f) => f.endsWith('.state'));
  if (file === undefined) return undefined;
  const path = join(dir, file);
  const bytes = statSync(path).size;
  const readStarted = performance.now();
  const decoded = decodeState(readFileSync(path));
  const readMs = performance.now() - readStarted;
  const copy = mkdtempSync(join(tmpdir(), 'kcp-bench-state-copy-'));
  try {
    const states = new StateDir({
      dir: copy,
      cluster: decoded.identity.cluster,
      proxyVersion: decoded.identity.proxyVersion,
      log: () => undefined,
    });
    const saved = await states.save(decoded.identity.scope, decoded.state);
    const cost: StateCost = { objects: decoded.objects, events: saved.events, bytes, writeMs: saved.ms, readMs };
    report(
      `restart · the state: ${String(cost.objects)} objects and ${String(cost.events)} events in ${(bytes / 2 ** 20).toFixed(1)} MiB; written in ${cost.writeMs.toFixed(0)} ms, read and checked in ${cost.readMs.toFixed(0)} ms`,
    );
    return cost;
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

export function formatRestart(result: { rows: readonly RestartRow[]; cost: StateCost | undefined }, spec: RestartSpec): string {
  const lines = [
    `Restart with --state-dir: a proxy caching ${String(spec.pods)} pods, stopped (SIGTERM) while pods change at ${String(DOWN_WRITE_RATE)}/s, started again; ${String(WATCHERS)} client reflectors (one namespace each) watch through it across the restart. Beside: a cold start without a state`,
    '',
    '| run | serving after spawn, ms | RV=0 LIST of all pods answered after spawn, ms | apiserver pods LISTs | proxy LISTs + WatchLists | clients caught up | in s | 410s | relists | repeated events |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of result.rows) {
    const clients = r.run.startsWith('cold');
    lines.push(
      `| ${r.run} | ${r.servingMs.toFixed(0)} | ${r.readyMs.toFixed(0)} | ${String(r.apiserverLists)} | ${String(r.proxyLists)} | ${clients ? '–' : `${String(r.caughtUp)}/${String(WATCHERS)}`} | ${clients ? '–' : (r.catchUpMs / 1000).toFixed(1)} | ${clients ? '–' : String(r.expired)} | ${clients ? '–' : String(r.relists)} | ${clients ? '–' : String(r.duplicated)} |`,
    );
  }
  const c = result.cost;
  if (c !== undefined) {
    lines.push(
      '',
      `The state file: ${String(c.objects)} pods and ${String(c.events)} window events, ${(c.bytes / 2 ** 20).toFixed(1)} MiB; written (copied a 4 MiB piece per turn, fsynced, renamed) in ${c.writeMs.toFixed(0)} ms; read and checked (SHA-256) in ${c.readMs.toFixed(0)} ms.`,
    );
  }
  return lines.join('\n');
}
