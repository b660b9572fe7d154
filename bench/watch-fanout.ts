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
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { namespaceName, podName } from './cluster.ts';
import { cpuSeconds, quantile } from './stats.ts';
import type { Target } from './targets.ts';
import { getJson } from './targets.ts';
import type { WatchClientResult } from './watch-client.ts';
import { monotonicMs } from './watch-client.ts';

const CLIENT = join(import.meta.dirname, 'watch-client.ts');
/** Watchers per client process, and at most this many processes (2 cores: more would only contend). */
const WATCHERS_PER_PROCESS = 2_500;
const MAX_CLIENT_PROCESSES = 4;
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
}

interface Write {
  readonly time: number;
  readonly ns: number;
}

function podsIn(ns: number, spec: WatchSpec): number {
  return Math.floor((spec.pods - 1 - ns) / spec.namespaces) + 1;
}

function send(child: ChildProcess, message: unknown): void {
  child.send(message as Parameters<ChildProcess['send']>[0]);
}

function nextMessage<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: { type: string }): void => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message as T);
    };
    const onExit = (code: number | null): void => {
      reject(new Error(`watch client exited (${String(code)}) before '${type}'`));
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

export async function runWatchFanout(
  target: Target,
  writer: UpstreamClient,
  apiserverPid: number,
  spec: WatchSpec,
  note: (detail: string) => void,
): Promise<WatchResult> {
  const list = (await getJson(target, '/api/v1/pods?limit=1')) as { metadata: { resourceVersion: string } };
  const rv = list.metadata.resourceVersion;
  const processes = Math.min(MAX_CLIENT_PROCESSES, Math.ceil(spec.watchers / WATCHERS_PER_PROCESS));
  const children = Array.from({ length: processes }, () =>
    fork(CLIENT, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
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
    const opened = (await Promise.all(ready)).reduce((sum, r) => sum + r.opened, 0);
    const openSeconds = (monotonicMs() - openStarted) / 1000;

    note(`${String(opened)} watches open in ${openSeconds.toFixed(1)} s; writing ${String(spec.rate)}/s for ${String(spec.seconds)} s`);
    const cpu0 = cpuSeconds(target.pid);
    const api0 = cpuSeconds(apiserverPid);
    const writes = new Map<number, Write>();
    const writesByNs = new Array<number>(spec.namespaces).fill(0);
    const inFlight = new Set<Promise<void>>();
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
    const apiserverCpu = cpuSeconds(apiserverPid) - api0;

    const results = children.map((child) => nextMessage<WatchClientResult>(child, 'result'));
    for (const child of children) send(child, { type: 'finish' });
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
    };
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill();
  }
}
