/**
 * Watch fan-out: `watchers` concurrent watches of pods (each of one namespace, spread evenly over
 * the seeded namespaces) through one target, while a writer patches pods directly at the
 * apiserver at `rate` updates/s for `seconds` s, round-robin over the namespaces. Delivery
 * latency is from the write's response arriving at the writer to the event's bytes arriving at a
 * watcher (both on CLOCK_MONOTONIC, so across processes); it can be negative when the server
 * delivers the event before the writer reads its response. Lost = events a watcher should have
 * seen (writes to its namespace) and did not.
 *
 * The watchers run in child processes (watch-client.ts), the writer in this one; over h1 each
 * watch is its own connection, over h2 the watches of a process share TLS sessions up to the
 * server's SETTINGS_MAX_CONCURRENT_STREAMS each.
 *
 * The clients measure themselves, so that their lag is not reported as the server's:
 * - Sizing: before a target's first run over a protocol, one client process holds
 *   CALIBRATION_WATCHERS watches for CALIBRATION_SECONDS of writes, and the CPU it spent per event
 *   received (less its CPU at rest) is this machine's cost of an event to a client. A run gets as
 *   many processes as its deliveries/s need at CLIENT_CORE_SHARE of a core each, at least one and
 *   at most one per core (more processes than cores only take the cores from the servers they
 *   measure).
 * - Each client process samples its event-loop delay and CPU while the writes run. A run whose
 *   clients were the bottleneck is marked (ClientFigures.bound): a process's loop was late by
 *   CLIENT_LAG_SHARE of the measured delivery p99 or more (and CLIENT_LAG_FLOOR_MS) for
 *   CLIENT_LATE_TIME_SHARE of the writes' time or more (time-weighted: one long stall is one
 *   sample of the loop's histogram, so its p99 misses it, but it holds every event arriving
 *   during it), or a process used CLIENT_BUSY_SHARE of a core or more.
 */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { availableParallelism, setPriority } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { namespaceName, podName } from './cluster.ts';
import { cpuSeconds, quantile } from './stats.ts';
import type { Target } from './targets.ts';
import { Agent, request } from 'undici';
import { metricSum } from '../test/helpers/metrics-text.ts';
import { getJson } from './targets.ts';
import { runLoad } from './load.ts';
import type { ClientSample, WatchClientReady, WatchClientResult, WatchProtocol } from './watch-client.ts';
import { monotonicMs, nextMessage, send } from './watch-client.ts';

const CLIENT = join(import.meta.dirname, 'watch-client.ts');
/**
 * The share of a core a client process is sized to use while the writes run. Half: a write
 * reaches every watcher of its namespace at once, and the process must absorb that burst with
 * room to spare. Fewer, fuller processes otherwise: on 2 cores, every client process woken by a
 * write competes with the servers it measures (four processes of 2,500 watchers each put the
 * apiserver's own delivery p99 at 200-600 ms where one process of 10,000 leaves it at 10-30 ms).
 */
const CLIENT_CORE_SHARE = 0.5;
/** The calibration: one process, this many watches (fewer if the run has fewer), this long a write at the run's rate. */
const CALIBRATION_WATCHERS = 1_000;
const CALIBRATION_SECONDS = 3;
/** Before the writes, the calibration's process at rest this long: its CPU without events, subtracted. */
const CALIBRATION_IDLE_SECONDS = 2;
/**
 * The clients were the bottleneck: a process's loop was late by this share of the delivery p99
 * or more (and by the floor or more)...
 */
const CLIENT_LAG_SHARE = 0.25;
/** ...the floor being a few timer resolutions (1 ms each), below which a loop's delay says nothing... */
const CLIENT_LAG_FLOOR_MS = 5;
/**
 * ...for this share of the writes' time or more: an event arriving then waited that long on the
 * client alone, so at least about this share of the events did (the p99's 1 %).
 */
const CLIENT_LATE_TIME_SHARE = 0.01;
/** ...or a process used this share of a core or more. */
const CLIENT_BUSY_SHARE = 0.8;
/** The loop monitor's resolution: a delay sample of it is a loop on time. */
const LOOP_RESOLUTION_MS = 1;
/**
 * Streams per h2 connection assumed when checking the open-files limit before opening (the
 * apiserver's default is 100 here; the proxy's 1000).
 */
const H2_STREAMS_AT_LEAST = 100;
/**
 * The watchers' processes run this nice: on a machine shared with other work they yield to it
 * before the servers they measure do (run the bench itself un-niced, or the servers measure the
 * scheduler); when that makes them fall behind, their own figures say so.
 */
const CLIENT_NICENESS = 5;
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
  readonly protocol: WatchProtocol;
  /** LISTs run through the target while the writes run (the mixed scenario). */
  readonly lists?: { readonly path: string; readonly connections: number };
}

/** The watchers' own processes, as they measured themselves while the writes ran. */
export interface ClientFigures {
  readonly processes: number;
  /** Connections per process. */
  readonly connections: readonly number[];
  /** The calibration: client CPU µs per event received, and the deliveries/s the run needed. */
  readonly microsPerEvent: number;
  readonly deliveriesPerSecond: number;
  /** The worst process's loop-delay p99 and max, ms. */
  readonly loopP99Ms: number;
  readonly loopMaxMs: number;
  /** The worst process's share of the writes' time its loop was late by ≥ ¼ of the delivery p99 (CLIENT_LAG_SHARE). */
  readonly lateShare: number;
  /** Cores the processes used together, each process's share of a core, and the busiest's. */
  readonly cores: number;
  readonly processShares: readonly number[];
  readonly maxProcessShare: number;
  /** The clients were the bottleneck (the rule at the top of this file). */
  readonly bound: boolean;
}

/** Cores each process used while the writes ran (CPU seconds ÷ the writes' seconds). */
export interface MachineShares {
  readonly cores: number;
  readonly target: number;
  readonly apiserver: number;
  readonly clients: number;
}

export interface WatchResult {
  readonly watchers: number;
  readonly protocol: WatchProtocol;
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
  /** kube-cache-proxy only: the clients' connections it counted open once the watches were (its metrics scrape's own included). */
  readonly proxyConnections?: number;
  readonly clients: ClientFigures;
  readonly shares: MachineShares;
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
async function loopFigures(
  target: Target,
): Promise<{ lagP99Ms: number; lagMaxMs: number; gcS: number; gcMajorS: number; connections: number }> {
  const dispatcher = target.ca === undefined ? undefined : new Agent({ connect: { ca: target.ca } });
  const res = await request(`${target.url}/metrics`, dispatcher === undefined ? {} : { dispatcher });
  await dispatcher?.close();
  // A proxy without prom-client's default metrics (an older commit's): NaN figures.
  const text = res.statusCode === 200 ? await res.body.text() : (await res.body.dump(), '');
  const gauge = (name: string): number => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN);
  const lagP99 = gauge('nodejs_eventloop_lag_p99_seconds');
  const lagMax = gauge('nodejs_eventloop_lag_max_seconds');
  const gc = metricSum(text, 'nodejs_gc_duration_seconds_sum');
  const gcMajor = metricSum(text, 'nodejs_gc_duration_seconds_sum', { kind: 'major' });
  // The clients' connections open, every protocol (NaN from a proxy that does not count them).
  const connections = text.includes('kube_cache_proxy_client_connections{') ? metricSum(text, 'kube_cache_proxy_client_connections') : NaN;
  return { lagP99Ms: lagP99 * 1000, lagMaxMs: lagMax * 1000, gcS: gc, gcMajorS: gcMajor, connections };
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

/** Client processes for `deliveriesPerSecond` at `secondsPerEvent` of client CPU each: CLIENT_CORE_SHARE of a core each, at least one. */
export function clientProcessesNeeded(deliveriesPerSecond: number, secondsPerEvent: number): number {
  return Math.max(1, Math.ceil((deliveriesPerSecond * secondsPerEvent) / CLIENT_CORE_SHARE));
}

/**
 * Whether the clients, not the server, were behind while the writes ran: a process's loop was
 * late by CLIENT_LAG_SHARE of the delivery p99 for CLIENT_LATE_TIME_SHARE of the time or more
 * (lateShare), or a process used CLIENT_BUSY_SHARE of a core or more.
 */
export function clientsWereBottleneck(samples: readonly ClientSample[], deliveryP99Ms: number): boolean {
  return samples.some((x) => lateShare(x, deliveryP99Ms) >= CLIENT_LATE_TIME_SHARE || x.cpuSeconds / x.seconds >= CLIENT_BUSY_SHARE);
}

/**
 * The share of a process's window in which its loop was late by max(CLIENT_LAG_SHARE × the
 * delivery p99, CLIENT_LAG_FLOOR_MS) or more: a delay of d holds what arrives in its first
 * d - that bound that long or longer.
 */
export function lateShare(sample: ClientSample, deliveryP99Ms: number): number {
  const bound = Math.max(CLIENT_LAG_SHARE * deliveryP99Ms, CLIENT_LAG_FLOOR_MS);
  let late = 0;
  for (const [ms, count] of sample.delays) late += count * Math.max(0, ms - LOOP_RESOLUTION_MS - bound);
  return late / (sample.seconds * 1000);
}

/**
 * Fails before opening anything when the target (or one of this process's children, holding
 * `perProcess` watches) could not hold its connections: one per watch over h1, one per
 * H2_STREAMS_AT_LEAST watches at most over h2.
 */
function checkOpenFileLimit(targetPid: number, watchers: number, perProcess: number, protocol: WatchProtocol): void {
  const connections = (n: number): number => (protocol === 'h2' ? Math.ceil(n / H2_STREAMS_AT_LEAST) : n);
  const target = connections(watchers) + FILE_MARGIN;
  const client = connections(perProcess) + FILE_MARGIN;
  const targetHas = openFileLimit(targetPid);
  const clientHas = openFileLimit(process.pid);
  if (targetHas < target || clientHas < client) {
    const need = Math.max(target, client);
    throw new Error(
      `${watchers.toLocaleString('en-US')} watchers over ${protocol} need \`ulimit -n\` of at least ${String(need)} ` +
        `(it is ${String(Math.min(targetHas, clientHas))}): run \`ulimit -n ${String(need * 2)}\` (as root, or after raising ` +
        `the hard limit) in the shell that runs the bench${protocol === 'h1' ? ', or watch over h2' : ''}`,
    );
  }
}

function forkClient(): ChildProcess {
  const child = fork(CLIENT, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  if (child.pid !== undefined) setPriority(child.pid, CLIENT_NICENESS);
  return child;
}

function watchPath(ns: number, rv: string): string {
  return `/api/v1/namespaces/${namespaceName(ns)}/pods?watch=1&resourceVersion=${rv}&timeoutSeconds=3600`;
}

async function currentResourceVersion(target: Target): Promise<string> {
  const list = (await getJson(target, '/api/v1/pods?limit=1')) as { metadata: { resourceVersion: string } };
  return list.metadata.resourceVersion;
}

interface Writes {
  /** By the written object's resourceVersion: when the writer had the answer, and the namespace. */
  readonly byRv: Map<number, Write>;
  readonly byNamespace: number[];
}

/** Patches pods at the apiserver at `spec.rate`/s for `seconds`, round-robin over the namespaces. */
async function writeAtRate(writer: UpstreamClient, spec: WatchSpec, seconds: number): Promise<Writes> {
  const writes: Writes = { byRv: new Map(), byNamespace: new Array<number>(spec.namespaces).fill(0) };
  const inFlight = new Set<Promise<void>>();
  const started = monotonicMs();
  const interval = 1000 / spec.rate;
  // Unique per run: a patch that changes nothing makes no event (and keeps the resourceVersion).
  const run = String(Date.now());
  for (let j = 0; ; j++) {
    const due = started + j * interval;
    if (due - started >= seconds * 1000) break;
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
      writes.byRv.set(Number(written), { time, ns });
      writes.byNamespace[ns] = (writes.byNamespace[ns] ?? 0) + 1;
    })();
    const tracked = write.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  }
  await Promise.all(inFlight);
  return writes;
}

/** CPU seconds a client process spends per event it receives, by target URL and protocol: measured once per bench run. */
const calibrations = new Map<string, number>();

/** This machine's client CPU seconds per event received from `target` over `spec.protocol` (see the top of this file). */
async function clientCostPerEvent(
  target: Target,
  writer: UpstreamClient,
  spec: WatchSpec,
  note: (detail: string) => void,
): Promise<number> {
  const key = `${target.url} ${spec.protocol}`;
  const known = calibrations.get(key);
  if (known !== undefined) return known;
  const watchers = Math.min(spec.watchers, CALIBRATION_WATCHERS);
  const child = forkClient();
  try {
    const rv = await currentResourceVersion(target);
    const ready = nextMessage<WatchClientReady>(child, 'ready');
    send(child, {
      type: 'start',
      url: target.url,
      headers: target.headers,
      ca: target.ca?.toString(),
      protocol: spec.protocol,
      paths: Array.from({ length: watchers }, (_, g) => watchPath(g % spec.namespaces, rv)),
    });
    const { opened } = await ready;
    if (opened === 0) throw new Error(`calibration: no watch opened at ${target.name} over ${spec.protocol}`);
    const measure = async (during: () => Promise<unknown>): Promise<ClientSample> => {
      send(child, { type: 'mark' });
      await during();
      const sample = nextMessage<ClientSample>(child, 'sample');
      send(child, { type: 'sample' });
      return sample;
    };
    // The process's own CPU at rest (its timers, the loop monitor), then with the writes' events: the difference is theirs.
    const idle = await measure(() => sleep(CALIBRATION_IDLE_SECONDS * 1000));
    const busy = await measure(async () => {
      await writeAtRate(writer, spec, CALIBRATION_SECONDS);
      await sleep(500);
    });
    const events = busy.events;
    const cpu = Math.max(0, busy.cpuSeconds - (idle.cpuSeconds / idle.seconds) * busy.seconds);
    const cost = events === 0 ? NaN : cpu / events;
    if (!Number.isFinite(cost)) throw new Error(`calibration: no event reached the ${String(opened)} watches at ${target.name}`);
    note(
      `calibration: one client process, ${String(opened)} watches over ${spec.protocol}: ${String(events)} events, ` +
        `${(cost * 1e6).toFixed(1)} µs of its CPU each`,
    );
    calibrations.set(key, cost);
    return cost;
  } finally {
    child.kill();
  }
}

export async function runWatchFanout(
  target: Target,
  writer: UpstreamClient,
  apiserver: Target,
  spec: WatchSpec,
  note: (detail: string) => void,
): Promise<WatchResult> {
  const cost = await clientCostPerEvent(target, writer, spec, note);
  const rv = await currentResourceVersion(target);
  const deliveries = (spec.watchers * spec.rate) / spec.namespaces;
  const cores = availableParallelism();
  const needed = clientProcessesNeeded(deliveries, cost);
  const processes = Math.min(cores, spec.watchers, needed);
  if (needed > cores)
    note(`${String(deliveries)} deliveries/s need ${String(needed)} client processes; ${String(cores)} cores: the clients may fall behind`);
  checkOpenFileLimit(target.pid, spec.watchers, Math.ceil(spec.watchers / processes), spec.protocol);
  const children = Array.from({ length: processes }, forkClient);
  const reference = target === apiserver ? undefined : forkClient();
  // Watcher g (global) watches namespace g mod namespaces; child c holds watchers c, c+P, c+2P...
  const owned = children.map((_, c) => Array.from({ length: Math.ceil((spec.watchers - c) / processes) }, (_, k) => c + k * processes));
  try {
    note(`opening ${String(spec.watchers)} watches over ${spec.protocol} in ${String(processes)} process(es)`);
    const openStarted = monotonicMs();
    const ready = children.map((child) => nextMessage<WatchClientReady>(child, 'ready'));
    children.forEach((child, c) => {
      send(child, {
        type: 'start',
        url: target.url,
        headers: target.headers,
        ca: target.ca?.toString(),
        protocol: spec.protocol,
        paths: (owned[c] ?? []).map((g) => watchPath(g % spec.namespaces, rv)),
      });
    });
    const referenceReady = reference === undefined ? undefined : nextMessage<WatchClientReady>(reference, 'ready');
    if (reference !== undefined) {
      send(reference, {
        type: 'start',
        url: apiserver.url,
        headers: apiserver.headers,
        ca: apiserver.ca?.toString(),
        paths: [`/api/v1/pods?watch=1&resourceVersion=${rv}&timeoutSeconds=3600`],
      });
    }
    const readies = await Promise.all(ready);
    await referenceReady;
    const opened = readies.reduce((sum, r) => sum + r.opened, 0);
    const connections = readies.map((r) => r.connections);
    const openSeconds = (monotonicMs() - openStarted) / 1000;

    note(
      `${String(opened)} watches open in ${openSeconds.toFixed(1)} s over ${connections.join(' + ')} connections; ` +
        `writing ${String(spec.rate)}/s for ${String(spec.seconds)} s`,
    );
    const proxy = target.name === 'kube-cache-proxy';
    const loop0 = proxy ? await loopFigures(target) : undefined;
    const cpu0 = cpuSeconds(target.pid);
    const api0 = cpuSeconds(apiserver.pid);
    const clientCpu = (): number => children.reduce((sum, child) => sum + (child.pid === undefined ? 0 : cpuSeconds(child.pid)), 0);
    const clients0 = clientCpu();
    for (const child of children) send(child, { type: 'mark' });
    const lists =
      spec.lists === undefined
        ? undefined
        : runLoad(target, { path: spec.lists.path, connections: spec.lists.connections, seconds: spec.seconds, niceness: LIST_NICENESS });
    const started = monotonicMs();
    const { byRv: writes, byNamespace: writesByNs } = await writeAtRate(writer, spec, spec.seconds);
    const writeSeconds = (monotonicMs() - started) / 1000;
    const samples = await Promise.all(
      children.map((child) => {
        const sample = nextMessage<ClientSample>(child, 'sample');
        send(child, { type: 'sample' });
        return sample;
      }),
    );
    const shares: MachineShares = {
      cores,
      target: (cpuSeconds(target.pid) - cpu0) / writeSeconds,
      apiserver: (cpuSeconds(apiserver.pid) - api0) / writeSeconds,
      clients: (clientCpu() - clients0) / writeSeconds,
    };
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
    const p99 = quantile(latencies, 0.99);
    const loopP99Ms = Math.max(...samples.map((x) => x.loopP99Ms));
    const processShares = samples.map((x) => x.cpuSeconds / x.seconds);
    const maxProcessShare = Math.max(...processShares);
    const clients: ClientFigures = {
      processes,
      connections,
      microsPerEvent: cost * 1e6,
      deliveriesPerSecond: deliveries,
      loopP99Ms,
      loopMaxMs: Math.max(...samples.map((x) => x.loopMaxMs)),
      lateShare: Math.max(...samples.map((x) => lateShare(x, p99))),
      cores: samples.reduce((sum, x) => sum + x.cpuSeconds / x.seconds, 0),
      processShares,
      maxProcessShare,
      bound: clientsWereBottleneck(samples, p99),
    };
    return {
      watchers: spec.watchers,
      protocol: spec.protocol,
      clients,
      shares,
      opened,
      openSeconds,
      writes: writes.size,
      p50: quantile(latencies, 0.5),
      p99,
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
      ...(loop0 === undefined || Number.isNaN(loop0.connections) ? {} : { proxyConnections: loop0.connections }),
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
