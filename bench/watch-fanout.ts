/**
 * Watch fan-out: `watchers` concurrent watches of pods (each of one namespace, spread evenly over
 * the seeded namespaces) through one target, while a writer patches pods directly at the
 * apiserver at `rate` updates/s for `seconds` s, round-robin over the namespaces. Delivery
 * latency is from the write's response arriving at the writer to the event's bytes arriving at a
 * watcher (both on CLOCK_MONOTONIC, so across processes); it can be negative when the server
 * delivers the event before the writer reads its response. Lost = events a watcher should have
 * seen (writes to its namespace) and did not.
 *
 * The watchers run in up to MAX_CLIENT_PROCESSES child processes (watch-client.ts), the writer in
 * this one.
 */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { namespaceName, podName } from './cluster.ts';
import { cpuSeconds, quantile } from './stats.ts';
import type { Target } from './targets.ts';
import { request } from 'undici';
import { metricSum } from '../test/helpers/metrics-text.ts';
import { getJson } from './targets.ts';
import { runLoad } from './load.ts';
import type { WatchClientResult } from './watch-client.ts';
import { monotonicMs, nextMessage, send } from './watch-client.ts';

const CLIENT = join(import.meta.dirname, 'watch-client.ts');
/**
 * Events a second one client process receives at most (each ~15 µs of its CPU), and at most this
 * many processes. Fewer, fuller processes: on 2 cores, every client process woken by a write
 * competes with the servers it measures (four processes of 2,500 watchers each put the
 * apiserver's own delivery p99 at 200-600 ms where one process of 10,000 leaves it at 10-30 ms).
 */
const DELIVERIES_PER_PROCESS = 25_000;
const MAX_CLIENT_PROCESSES = 4;
/** The LIST load of the mixed run (`lists`) runs this nice: it measures the watch beside it, not itself. */
const LIST_NICENESS = 10;
/**
 * After the last write, the watchers are read once their records stop growing for DRAIN_QUIET_MS
 * (or all expected events are in), at most DRAIN_MAX_MS later: a late event is a slow one, not a
 * lost one, as long as it arrives within that bound.
 */
const DRAIN_QUIET_MS = 2_000;
const DRAIN_MAX_MS = 60_000;
const DRAIN_POLL_MS = 250;
/** Writes in flight at most: the writer falls behind rather than piling up requests. */
const MAX_IN_FLIGHT = 64;

export interface WatchSpec {
  readonly watchers: number;
  readonly rate: number;
  readonly seconds: number;
  readonly pods: number;
  readonly namespaces: number;
  /** LISTs run through the target while the writes run (the mixed scenario). */
  readonly lists?: { readonly path: string; readonly connections: number };
}

export interface WatchResult {
  readonly watchers: number;
  /** Watches that answered 200 (the rest failed to open). */
  readonly opened: number;
  readonly openSeconds: number;
  readonly writes: number;
  readonly p50: number;
  readonly p99: number;
  readonly delivered: number;
  readonly expected: number;
  readonly lost: number;
  /** Watches ended by the server (or failed to open) during the run. */
  readonly closed: number;
  /** CPU seconds of the target's own process per 1,000 delivered events. */
  readonly cpuPer1k: number;
  /** CPU seconds the apiserver used during the writes (all targets load it). */
  readonly apiserverCpu: number;
  /** CPU seconds the watchers' processes used during the writes (the bench's own share of the machine). */
  readonly clientCpu: number;
  /**
   * Through a proxy: the latency of one watch of every pod straight at the apiserver, in its own
   * process, in the same run (what the apiserver's delivery alone costs, before the proxy's fan-out).
   */
  readonly upstream?: { readonly p50: number; readonly p99: number };
  /** The mixed scenario's LISTs, run beside the watches. */
  readonly lists?: { readonly connections: number; readonly rps: number; readonly p99: number; readonly failures: number };
  /** kube-cache-proxy only (its /metrics), over the writes and the drain: event-loop delay p99 and max, GC pause time. */
  readonly loop?: LoopFigures;
}

export interface LoopFigures {
  readonly lagP99Ms: number;
  readonly lagMaxMs: number;
  readonly gcMs: number;
  readonly gcMajorMs: number;
}

/**
 * The proxy's event-loop figures since the last call: prom-client's event-loop delay histogram
 * is reset at every scrape, its GC histogram only grows (so a difference of sums).
 */
async function loopFigures(target: Target): Promise<{ lagP99Ms: number; lagMaxMs: number; gcS: number; gcMajorS: number }> {
  const res = await request(`${target.url}/metrics`);
  // A proxy without prom-client's default metrics (an older commit's): NaN figures.
  const text = res.statusCode === 200 ? await res.body.text() : (await res.body.dump(), '');
  const gauge = (name: string): number => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN);
  const lagP99 = gauge('nodejs_eventloop_lag_p99_seconds');
  const lagMax = gauge('nodejs_eventloop_lag_max_seconds');
  const gc = metricSum(text, 'nodejs_gc_duration_seconds_sum');
  const gcMajor = metricSum(text, 'nodejs_gc_duration_seconds_sum', { kind: 'major' });
  return { lagP99Ms: lagP99 * 1000, lagMaxMs: lagMax * 1000, gcS: gc, gcMajorS: gcMajor };
}

interface Write {
  readonly time: number;
  readonly ns: number;
}

function podsIn(ns: number, spec: WatchSpec): number {
  return Math.floor((spec.pods - 1 - ns) / spec.namespaces) + 1;
}

/** Sockets a process may hold besides the watches (its listeners, upstream, files). */
const FILE_MARGIN = 1_000;

/** The soft `Max open files` of a process, from /proc/PID/limits. */
function openFileLimit(pid: number): number {
  const line = /^Max open files\s+(\S+)/m.exec(readFileSync(`/proc/${String(pid)}/limits`, 'utf8'))?.[1];
  return line === undefined || line === 'unlimited' ? Infinity : Number(line);
}

/** Fails before opening anything when the target (or this process's children) could not hold every watch. */
function checkOpenFileLimit(targetPid: number, watchers: number): void {
  const need = watchers + FILE_MARGIN;
  const have = Math.min(openFileLimit(targetPid), openFileLimit(process.pid));
  if (have < need) {
    throw new Error(
      `${watchers.toLocaleString('en-US')} watchers need \`ulimit -n\` of at least ${String(need)} (it is ${String(have)}): ` +
        `run \`ulimit -n ${String(need * 2)}\` (as root, or after raising the hard limit) in the shell that runs the bench`,
    );
  }
}

export async function runWatchFanout(
  target: Target,
  writer: UpstreamClient,
  apiserver: Target,
  spec: WatchSpec,
  note: (detail: string) => void,
): Promise<WatchResult> {
  checkOpenFileLimit(target.pid, spec.watchers);
  const list = (await getJson(target, '/api/v1/pods?limit=1')) as { metadata: { resourceVersion: string } };
  const rv = list.metadata.resourceVersion;
  const deliveries = (spec.watchers * spec.rate) / spec.namespaces;
  const processes = Math.min(MAX_CLIENT_PROCESSES, spec.watchers, Math.max(1, Math.ceil(deliveries / DELIVERIES_PER_PROCESS)));
  const forkClient = (): ChildProcess => fork(CLIENT, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const children = Array.from({ length: processes }, forkClient);
  const reference = target === apiserver ? undefined : forkClient();
  // Watcher g (global) watches namespace g mod namespaces; child c holds watchers c, c+P, c+2P...
  const owned = children.map((_, c) => Array.from({ length: Math.ceil((spec.watchers - c) / processes) }, (_, k) => c + k * processes));
  try {
    note(`opening ${String(spec.watchers)} watches in ${String(processes)} process(es)`);
    const openStarted = monotonicMs();
    const ready = children.map((child) => nextMessage<{ opened: number; failed: number }>(child, 'ready'));
    children.forEach((child, c) => {
      send(child, {
        type: 'start',
        url: target.url,
        headers: target.headers,
        ca: target.ca?.toString(),
        paths: (owned[c] ?? []).map(
          (g) => `/api/v1/namespaces/${namespaceName(g % spec.namespaces)}/pods?watch=1&resourceVersion=${rv}&timeoutSeconds=3600`,
        ),
      });
    });
    if (reference !== undefined) {
      ready.push(nextMessage<{ opened: number; failed: number }>(reference, 'ready').then(() => ({ opened: 0, failed: 0 })));
      send(reference, {
        type: 'start',
        url: apiserver.url,
        headers: apiserver.headers,
        ca: apiserver.ca?.toString(),
        paths: [`/api/v1/pods?watch=1&resourceVersion=${rv}&timeoutSeconds=3600`],
      });
    }
    const opened = (await Promise.all(ready)).reduce((sum, r) => sum + r.opened, 0);
    const openSeconds = (monotonicMs() - openStarted) / 1000;

    note(`${String(opened)} watches open in ${openSeconds.toFixed(1)} s; writing ${String(spec.rate)}/s for ${String(spec.seconds)} s`);
    const proxy = target.name === 'kube-cache-proxy';
    const loop0 = proxy ? await loopFigures(target) : undefined;
    const cpu0 = cpuSeconds(target.pid);
    const api0 = cpuSeconds(apiserver.pid);
    const clientCpu = (): number => children.reduce((sum, child) => sum + (child.pid === undefined ? 0 : cpuSeconds(child.pid)), 0);
    const clients0 = clientCpu();
    const writes = new Map<number, Write>();
    const writesByNs = new Array<number>(spec.namespaces).fill(0);
    const inFlight = new Set<Promise<void>>();
    const lists =
      spec.lists === undefined
        ? undefined
        : runLoad(target, { path: spec.lists.path, connections: spec.lists.connections, seconds: spec.seconds, niceness: LIST_NICENESS });
    const started = monotonicMs();
    const interval = 1000 / spec.rate;
    // Unique per run: a patch that changes nothing makes no event (and keeps the resourceVersion).
    const run = String(Date.now());
    for (let j = 0; ; j++) {
      const due = started + j * interval;
      if (due - started >= spec.seconds * 1000) break;
      const wait = due - monotonicMs();
      if (wait > 1) await sleep(wait);
      while (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
      const ns = j % spec.namespaces;
      const pod = ns + spec.namespaces * (Math.floor(j / spec.namespaces) % podsIn(ns, spec));
      const write = (async () => {
        const res = await writer.request({
          method: 'PATCH',
          path: `/api/v1/namespaces/${namespaceName(ns)}/pods/${podName(pod)}`,
          headers: { 'content-type': 'application/merge-patch+json' },
          body: JSON.stringify({ metadata: { annotations: { 'bench-seq': `${run}-${String(j)}` } } }),
        });
        const time = monotonicMs();
        if (res.statusCode !== 200) throw new Error(`writer: ${String(res.statusCode)} ${res.body.toString().slice(0, 300)}`);
        const written = (JSON.parse(res.body.toString()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
        writes.set(Number(written), { time, ns });
        writesByNs[ns] = (writesByNs[ns] ?? 0) + 1;
      })();
      const tracked = write.finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
    }
    await Promise.all(inFlight);
    const listed = await lists;
    let expected = 0;
    for (let g = 0; g < spec.watchers; g++) expected += writesByNs[g % spec.namespaces] ?? 0;
    const drainStarted = monotonicMs();
    let lastCount = -1;
    let lastChange = drainStarted;
    for (;;) {
      const counts = children.map((child) => nextMessage<{ recorded: number }>(child, 'count'));
      for (const child of children) send(child, { type: 'count' });
      const count = (await Promise.all(counts)).reduce((sum, c) => sum + c.recorded, 0);
      const now = monotonicMs();
      if (count !== lastCount) {
        lastCount = count;
        lastChange = now;
      }
      if (count >= expected || now - lastChange >= DRAIN_QUIET_MS || now - drainStarted >= DRAIN_MAX_MS) break;
      await sleep(DRAIN_POLL_MS);
    }
    const cpu = cpuSeconds(target.pid) - cpu0;
    const apiserverCpu = cpuSeconds(apiserver.pid) - api0;
    const clientsCpu = clientCpu() - clients0;
    const loop1 = loop0 === undefined ? undefined : await loopFigures(target);

    const results = children.map((child) => nextMessage<WatchClientResult>(child, 'result'));
    const referenceResult = reference === undefined ? undefined : nextMessage<WatchClientResult>(reference, 'result');
    for (const child of [...children, ...(reference === undefined ? [] : [reference])]) send(child, { type: 'finish' });
    const upstreamLatencies: number[] = [];
    const referenced = await referenceResult;
    if (referenced !== undefined) {
      for (let i = 0; i < referenced.rv.length; i++) {
        const write = writes.get(referenced.rv[i] ?? 0);
        if (write !== undefined) upstreamLatencies.push((referenced.time[i] ?? 0) - write.time);
      }
    }
    const latencies: number[] = [];
    let delivered = 0;
    let closed = 0;
    const seen = new Set<string>();
    (await Promise.all(results)).forEach((result, c) => {
      closed += result.closed;
      const globals = owned[c] ?? [];
      for (let i = 0; i < result.rv.length; i++) {
        const g = globals[result.watcher[i] ?? 0] ?? 0;
        const rvi = result.rv[i] ?? 0;
        const write = writes.get(rvi);
        if (write === undefined || write.ns !== g % spec.namespaces) continue;
        const key = `${String(g)}/${String(rvi)}`;
        if (seen.has(key)) continue;
        seen.add(key);
        delivered++;
        latencies.push((result.time[i] ?? 0) - write.time);
      }
    });
    return {
      watchers: spec.watchers,
      opened,
      openSeconds,
      writes: writes.size,
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      delivered,
      expected,
      lost: expected - delivered,
      closed,
      cpuPer1k: delivered === 0 ? NaN : cpu / (delivered / 1000),
      apiserverCpu,
      clientCpu: clientsCpu,
      ...(listed === undefined || spec.lists === undefined
        ? {}
        : { lists: { connections: spec.lists.connections, rps: listed.rps, p99: listed.p99, failures: listed.failures } }),
      ...(upstreamLatencies.length === 0
        ? {}
        : { upstream: { p50: quantile(upstreamLatencies, 0.5), p99: quantile(upstreamLatencies, 0.99) } }),
      ...(loop0 === undefined || loop1 === undefined
        ? {}
        : {
            loop: {
              lagP99Ms: loop1.lagP99Ms,
              lagMaxMs: loop1.lagMaxMs,
              gcMs: (loop1.gcS - loop0.gcS) * 1000,
              gcMajorMs: (loop1.gcMajorS - loop0.gcMajorS) * 1000,
            },
          }),
    };
  } finally {
    for (const child of [...children, ...(reference === undefined ? [] : [reference])]) if (child.exitCode === null) child.kill();
  }
}
