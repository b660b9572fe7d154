/**
 * The scale curve (`npm run bench -- scale`, not in the default run): the proxy's cost as the
 * cache grows, at each of --scale-sizes pods (default 1,000, 10,000, 100,000), beside the
 * apiserver in the same run. At each size, pods are seeded up to it, then:
 * - a fresh proxy (`--resources pods`, its own process) is timed from spawn to ready and its
 *   memory per cached object measured after full collections, beside the objects' JSON bytes;
 * - LIST RV=0 of every pod, a 1% label-selector LIST and a GET, 8 clients (GET 32), p50 at the
 *   proxy and at the apiserver, and the proxy's CPU per MB of LIST served (flat is the goal);
 * - apply: a writer patches pods at the apiserver at --apply-rate/s while 8 clients LIST every
 *   pod from the proxy without pause, and one watch on the proxy times each event from the
 *   write's answer to its arrival, beside a watch on the apiserver; the apiserver takes ~600
 *   writes/s on this machine while the proxy serves LISTs beside it, so
 * - absorb (absorb.ts): the same pods sent to a second proxy as updates at --apply-rate/s by an
 *   upstream that replays them (how many updates/s the cache absorbs at this size while LISTs
 *   run, and how late each reaches a watch on the proxy).
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { SELECTED_LABEL, namespaceName, podName, seedPods } from './cluster.ts';
import type { Progress } from '../src/cli/progress.ts';
import { runLoad } from './load.ts';
import type { LoadResult } from './load.ts';
import type { MemorySample } from './memory-probe.ts';
import { startPodWriter } from './pod-writer.ts';
import { cpuSeconds, quantile } from './stats.ts';
import type { Target } from './targets.ts';
import { servingAddress, waitReady } from './targets.ts';
import { idleProxyMemory, message } from './sync.ts';
import { measureAbsorb } from './absorb.ts';
import type { AbsorbResult } from './absorb.ts';

export interface ScaleSpec {
  readonly sizes: readonly number[];
  readonly namespaces: number;
  /** Writer's target rate during the apply measurement (updates/s). */
  readonly applyRate: number;
  /** Seconds of the apply measurement. */
  readonly applySeconds: number;
}

export interface ScaleRow {
  readonly pods: number;
  readonly jsonBytesPerObject: number;
  readonly syncSeconds: number;
  readonly heapPerObject: number;
  readonly buffersPerObject: number;
  readonly rssPerObject: number;
  readonly list: { readonly proxy: LoadResult; readonly apiserver: LoadResult; readonly bodyBytes: number };
  readonly selector: { readonly proxy: LoadResult; readonly apiserver: LoadResult };
  readonly get: { readonly proxy: LoadResult; readonly apiserver: LoadResult };
  /** Proxy CPU microseconds per MB of LIST body served. */
  readonly cpuMicrosPerMB: number;
  readonly apply: ApplyResult;
  readonly absorb: AbsorbResult;
}

/** Requests per client for a LIST of `pods` objects: a 100,000-pod LIST takes the apiserver many seconds. */
function listRounds(pods: number): number {
  return pods >= 50_000 ? 1 : pods >= 5_000 ? 3 : 12;
}

export async function runScale(
  state: ControlPlaneState,
  apiserver: Target,
  client: UpstreamClient,
  spec: ScaleSpec,
  progress: Progress,
  note: (detail: string) => void,
): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = [];
  let seeded = 0;
  for (const size of spec.sizes) {
    await seedPods(client, seeded, size, spec.namespaces, progress);
    seeded = Math.max(seeded, size);
    const bodyBytes = await listBytes(client);
    const jsonBytesPerObject = await podJsonBytes(client);
    note(`${size.toLocaleString('en-US')} pods: ${(bodyBytes / 1e6).toFixed(1)} MB per LIST; starting a proxy`);
    const started = performance.now();
    let measured: Omit<ScaleRow, 'absorb'>;
    const child = fork(
      join(import.meta.dirname, 'proxy-process.ts'),
      [`--kubeconfig=${state.kubeconfig}`, '--port=0', '--resources=pods', '--log-level=warn'],
      { execArgv: ['--expose-gc'], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] },
    );
    try {
      const url = `http://${await servingAddress(child, 'kube-cache-proxy')}`;
      await waitReady(url);
      const syncSeconds = (performance.now() - started) / 1000;
      child.send('measure');
      const memory = await message<MemorySample>(child, 'memory');
      const baseline = await idleProxyMemory(state);
      if (child.pid === undefined) throw new Error('the proxy has no pid');
      const proxy: Target = { name: 'kube-cache-proxy', url, headers: {}, pid: child.pid, ca: undefined, stop: () => Promise.resolve() };
      const rounds = listRounds(size);
      note(`LIST RV=0: ${String(8 * rounds)} requests per target`);
      const cpu0 = cpuSeconds(proxy.pid);
      const listProxy = await runLoad(proxy, {
        path: '/api/v1/pods?resourceVersion=0',
        connections: 8,
        seconds: 0,
        amount: 8 * rounds * 4,
      });
      const cpuMicrosPerMB = ((cpuSeconds(proxy.pid) - cpu0) * 1e6) / ((listProxy.requests * bodyBytes) / 1e6);
      const listApiserver = await runLoad(apiserver, {
        path: '/api/v1/pods?resourceVersion=0',
        connections: 8,
        seconds: 0,
        amount: 8 * rounds,
      });
      const selector = `/api/v1/pods?labelSelector=${encodeURIComponent(SELECTED_LABEL)}`;
      note('selector LIST and GET: 5 s per target');
      const selectorProxy = await runLoad(proxy, { path: selector, connections: 8, seconds: 5 });
      const selectorApiserver = await runLoad(apiserver, { path: selector, connections: 8, seconds: 5 });
      const get = `/api/v1/namespaces/${namespaceName(0)}/pods/${podName(0)}`;
      const getProxy = await runLoad(proxy, { path: get, connections: 32, seconds: 5 });
      const getApiserver = await runLoad(apiserver, { path: get, connections: 32, seconds: 5 });
      note(`apply: ${String(spec.applyRate)} writes/s for ${String(spec.applySeconds)} s while 8 clients LIST every pod from the proxy`);
      const apply = await measureApply(proxy, apiserver, client, spec, size);
      measured = {
        pods: size,
        jsonBytesPerObject,
        syncSeconds,
        heapPerObject: (memory.heap - baseline.heap) / size,
        buffersPerObject: (memory.buffers - baseline.buffers) / size,
        rssPerObject: (memory.rss - baseline.rss) / size,
        list: { proxy: listProxy, apiserver: listApiserver, bodyBytes },
        selector: { proxy: selectorProxy, apiserver: selectorApiserver },
        get: { proxy: getProxy, apiserver: getApiserver },
        cpuMicrosPerMB,
        apply,
      };
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send('stop');
      await exited;
    }
    // With the first proxy stopped: the absorb proxy is the only one on the machine's 2 cores.
    note(
      `absorb: ${String(spec.applyRate)} updates/s replayed to a fresh proxy for ${String(spec.applySeconds)} s while 8 clients LIST every pod`,
    );
    const absorb = await measureAbsorb(state, spec.applyRate, spec.applySeconds);
    rows.push({ ...measured, absorb });
    const { list, apply } = measured;
    note(
      `LIST p50 ${list.proxy.p50.toFixed(0)} ms (apiserver ${list.apiserver.p50.toFixed(0)}), apply p99 ${apply.p99.toFixed(1)} ms at ${apply.writesPerSecond.toFixed(0)} writes/s, absorb p99 ${absorb.p99.toFixed(1)} ms at ${absorb.deliveredPerSecond.toFixed(0)} updates/s`,
    );
  }
  return rows;
}

/** The size of a LIST of every pod as the apiserver answers it. */
async function listBytes(client: UpstreamClient): Promise<number> {
  const res = await client.request({ method: 'GET', path: '/api/v1/pods?resourceVersion=0' });
  return res.body.length;
}

/** The pods' JSON bytes per object, each as the apiserver encodes it. */
async function podJsonBytes(client: UpstreamClient): Promise<number> {
  const res = await client.request({ method: 'GET', path: '/api/v1/pods?resourceVersion=0' });
  const list = JSON.parse(res.body.toString()) as { items: unknown[] };
  let bytes = 0;
  for (const item of list.items) bytes += Buffer.byteLength(JSON.stringify(item));
  return bytes / Math.max(1, list.items.length);
}

/** A watch of every pod from `rv` that notes when each event's RV arrives (performance.now()). */
async function timedWatch(
  target: Target,
  rv: string,
  signal: AbortSignal,
): Promise<{ received: Map<string, number>; done: Promise<void> }> {
  const received = new Map<string, number>();
  const dispatcher = new Agent(target.ca === undefined ? {} : { connect: { ca: target.ca } });
  const watch = await request(`${target.url}/api/v1/pods?watch=1&resourceVersion=${rv}`, { signal, dispatcher, headers: target.headers });
  const done = (async () => {
    let rest = '';
    try {
      for await (const chunk of watch.body) {
        const now = performance.now();
        const lines = (rest + (chunk as Buffer).toString()).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          const event = JSON.parse(line) as { object: { metadata: { resourceVersion: string } } };
          received.set(event.object.metadata.resourceVersion, now);
        }
      }
    } catch {
      // aborted at the end
    } finally {
      await dispatcher.close();
    }
  })();
  return { received, done };
}

export interface ApplyResult {
  readonly writesPerSecond: number;
  readonly events: number;
  /** From the write's answer to the event at a watch on the proxy. */
  readonly p50: number;
  readonly p99: number;
  /** The same events at a watch on the apiserver itself, in the same run. */
  readonly apiserverP50: number;
  readonly apiserverP99: number;
  /** What the proxy added: each event's arrival at the proxy's watcher minus its arrival at the apiserver's. */
  readonly addedP50: number;
  readonly addedP99: number;
}

/**
 * Writes at the apiserver while LISTs load the proxy; a watch of every pod on the proxy and one
 * on the apiserver time each write from its answer to its event, so that what the proxy adds to
 * the apiserver's own delivery is seen apart.
 */
async function measureApply(proxy: Target, apiserver: Target, client: UpstreamClient, spec: ScaleSpec, pods: number): Promise<ApplyResult> {
  const list = await request(`${proxy.url}/api/v1/pods?limit=1`);
  const rv = ((await list.body.json()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  const written = new Map<string, number>();
  const abort = new AbortController();
  const viaProxy = await timedWatch(proxy, rv, abort.signal);
  const direct = await timedWatch(apiserver, rv, abort.signal);
  const load = runLoad(proxy, { path: '/api/v1/pods?resourceVersion=0', connections: 8, seconds: spec.applySeconds });
  const writer = startPodWriter(client, {
    rate: spec.applyRate,
    pods,
    namespaces: spec.namespaces,
    onWritten: (writtenRv) => written.set(writtenRv, performance.now()),
  });
  const started = performance.now();
  await load;
  const writes = await writer.stop();
  const seconds = (performance.now() - started) / 1000;
  // The last events are a watch delivery away.
  const deadline = performance.now() + 10_000;
  const missing = (): boolean => [...written.keys()].some((k) => !viaProxy.received.has(k) || !direct.received.has(k));
  while (missing() && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  abort.abort();
  await Promise.all([viaProxy.done, direct.done]);
  const latencies: number[] = [];
  const apiserverLatencies: number[] = [];
  const added: number[] = [];
  for (const [k, at] of written) {
    const got = viaProxy.received.get(k);
    const gotDirect = direct.received.get(k);
    if (got !== undefined) latencies.push(Math.max(0, got - at));
    if (gotDirect !== undefined) apiserverLatencies.push(Math.max(0, gotDirect - at));
    if (got !== undefined && gotDirect !== undefined) added.push(got - gotDirect);
  }
  return {
    writesPerSecond: writes / seconds,
    events: latencies.length,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    apiserverP50: quantile(apiserverLatencies, 0.5),
    apiserverP99: quantile(apiserverLatencies, 0.99),
    addedP50: quantile(added, 0.5),
    addedP99: quantile(added, 0.99),
  };
}

/** The curve as a small self-contained SVG: LIST RV=0 p50 against the number of pods, proxy and apiserver. */
export function renderScaleChart(rows: readonly ScaleRow[]): string {
  const width = 640;
  const height = 360;
  const left = 70;
  const bottom = 50;
  const plotW = width - left - 20;
  const plotH = height - bottom - 40;
  const xs = rows.map((r) => Math.log10(r.pods));
  const series = [
    { name: 'apiserver', color: '#888', values: rows.map((r) => r.list.apiserver.p50) },
    { name: 'kube-cache-proxy', color: '#1f6feb', values: rows.map((r) => r.list.proxy.p50) },
  ];
  const yMax = Math.max(1, ...series.flatMap((s) => s.values.filter(Number.isFinite)));
  const xMin = Math.min(...xs);
  const xMax = Math.max(...xs, xMin + 1);
  const x = (v: number): number => left + ((v - xMin) / (xMax - xMin)) * plotW;
  const y = (v: number): number => 40 + plotH - (Math.log10(Math.max(1, v)) / Math.log10(yMax * 1.2)) * plotH;
  const lines = series.map((s) => {
    const points = s.values.map((v, i) => `${x(xs[i] ?? 0).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    return `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${points}"/>`;
  });
  const labels = rows.map(
    (r, i) =>
      `<text x="${x(xs[i] ?? 0).toFixed(1)}" y="${String(height - bottom + 20)}" text-anchor="middle">${r.pods.toLocaleString('en-US')}</text>`,
  );
  const legend = series.map((s, i) => `<text x="${String(left + 10 + i * 170)}" y="28" fill="${s.color}">■ ${s.name}</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${String(width)}" height="${String(height)}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#fff"/>
<text x="${String(left)}" y="14" font-weight="bold">LIST of every pod, RV=0, 8 clients: p50 ms (log) by pods cached</text>
${legend.join('\n')}
<line x1="${String(left)}" y1="${String(40 + plotH)}" x2="${String(left + plotW)}" y2="${String(40 + plotH)}" stroke="#000"/>
<line x1="${String(left)}" y1="40" x2="${String(left)}" y2="${String(40 + plotH)}" stroke="#000"/>
${lines.join('\n')}
${labels.join('\n')}
${series
  .flatMap((s) =>
    s.values.map(
      (v, i) => `<text x="${(x(xs[i] ?? 0) + 4).toFixed(1)}" y="${(y(v) - 4).toFixed(1)}" fill="${s.color}">${v.toFixed(0)}</text>`,
    ),
  )
  .join('\n')}
</svg>
`;
}
