/**
 * Absorb: how many pod updates/s the proxy's cache takes at a given size while 8 clients LIST
 * every pod from it without pause, and how late each update reaches a watch on the proxy.
 *
 * This machine's apiserver takes ~600 writes/s while the proxy serves LISTs beside it (2 cores),
 * so the updates come from replay-upstream.ts: the apiserver's own pods, listed once and sent
 * back as MODIFIED events at the asked rate, behind a pass-through to the apiserver for
 * everything else. Each event is timed from its bytes written by that upstream to its arrival at
 * a watch on the proxy (watch-client.ts, its own process; both on CLOCK_MONOTONIC): the cache's
 * apply plus its fan-out, what a client of the proxy waits for a change the proxy was sent. The
 * proxy's event-loop delay over the same seconds says what its own work held events up by.
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import { runLoad } from './load.ts';
import type { LoadResult } from './load.ts';
import type { LoopDelay } from './proxy-process.ts';
import type { ReplayEmitted } from './replay-upstream.ts';
import { quantile } from './stats.ts';
import { servingAddress, waitReady } from './targets.ts';
import { message, stopChild } from './sync.ts';
import type { WatchClientResult } from './watch-client.ts';
import { monotonicMs } from './watch-client.ts';

export interface AbsorbResult {
  /** The rate asked of the upstream, and the rate its events reached the proxy's watch. */
  readonly rate: number;
  readonly deliveredPerSecond: number;
  readonly sent: number;
  readonly received: number;
  /** From the upstream's write to the event at a watch on the proxy (ms). */
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** The proxy's event-loop delay while it absorbed the updates and served the LISTs (ms). */
  readonly loopDelay: LoopDelay;
  /** The LISTs served meanwhile. */
  readonly list: LoadResult;
}

const HERE = import.meta.dirname;

/**
 * Seconds of updates and LISTs before the measured ones: the first bodies made at new RVs fill
 * the proxy's piece pool (some 400 MB of new Buffers at 100k pods, and the collections they
 * bring), which a proxy does once, not per update. Events sent then are not counted.
 */
const WARM_UP_SECONDS = 5;
const LOAD_NICENESS = 19;

export async function measureAbsorb(state: ControlPlaneState, rate: number, seconds: number): Promise<AbsorbResult> {
  const replay = fork(join(HERE, 'replay-upstream.ts'), [], {
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: {
      ...process.env,
      KCP_REPLAY_APISERVER: state.server,
      KCP_REPLAY_TOKEN: state.users.admin.token,
      KCP_REPLAY_CA: readFileSync(state.caFile, 'utf8'),
    },
  });
  const children: ChildProcess[] = [replay];
  try {
    const { port } = await message<{ port: number }>(replay, 'ready');
    const proxy = fork(
      join(HERE, 'proxy-process.ts'),
      [`--kubeconfig=${state.kubeconfig}`, `--server=http://127.0.0.1:${String(port)}`, '--port=0', '--resources=pods', '--log-level=warn'],
      { execArgv: ['--expose-gc'], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] },
    );
    children.push(proxy);
    const url = `http://${await servingAddress(proxy, 'kube-cache-proxy')}`;
    await waitReady(url);
    const listed = await fetch(`${url}/api/v1/pods?limit=1`);
    const rv = ((await listed.json()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const watcher = fork(join(HERE, 'watch-client.ts'), [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(watcher);
    const opened = message<{ opened: number }>(watcher, 'ready');
    watcher.send({
      type: 'start',
      url,
      headers: {},
      ca: undefined,
      paths: [`/api/v1/pods?watch=1&resourceVersion=${rv}&timeoutSeconds=3600`],
    });
    if ((await opened).opened !== 1) throw new Error('absorb: the watch on the proxy did not open');

    const load = runLoad(
      { name: 'kube-cache-proxy', url, headers: {}, pid: proxy.pid ?? 0, ca: undefined, stop: () => Promise.resolve() },
      {
        path: '/api/v1/pods?resourceVersion=0',
        connections: 8,
        seconds: WARM_UP_SECONDS + seconds,
        niceness: LOAD_NICENESS,
      },
    );
    const emitted = message<ReplayEmitted>(replay, 'emitted');
    replay.send({ type: 'emit', rate, seconds: WARM_UP_SECONDS + seconds });
    await new Promise((resolve) => setTimeout(resolve, WARM_UP_SECONDS * 1000));
    const measuredFrom = monotonicMs();
    proxy.send('loop-delay-start');
    const [list, sent] = await Promise.all([load, emitted]);
    const delay = message<LoopDelay>(proxy, 'loop-delay');
    proxy.send('loop-delay');
    const { p50: delayP50, p99: delayP99, max: delayMax } = await delay;
    const loopDelay: LoopDelay = { p50: delayP50, p99: delayP99, max: delayMax };
    if (sent.watches !== 1) throw new Error(`absorb: the proxy opened ${String(sent.watches)} pod watches on the upstream, not 1`);

    // The last events are a delivery away: wait until the watch has them all, or 10 s.
    const deadline = performance.now() + 10_000;
    for (;;) {
      const count = message<{ recorded: number }>(watcher, 'count');
      watcher.send({ type: 'count' });
      if ((await count).recorded >= sent.rv.length || performance.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const resultMessage = message<WatchClientResult>(watcher, 'result');
    watcher.send({ type: 'finish' });
    const received = await resultMessage;

    const sentAt = new Map<number, number>();
    sent.rv.forEach((v, i) => {
      const at = sent.time[i] ?? 0;
      if (at >= measuredFrom) sentAt.set(v, at);
    });
    const latencies: number[] = [];
    let first = Infinity;
    let last = -Infinity;
    received.rv.forEach((v, i) => {
      const at = sentAt.get(v);
      const arrived = received.time[i] ?? 0;
      if (at === undefined) return;
      latencies.push(arrived - at);
      first = Math.min(first, arrived);
      last = Math.max(last, arrived);
    });
    return {
      rate,
      deliveredPerSecond: latencies.length / Math.max(0.001, (last - first) / 1000),
      sent: sentAt.size,
      received: latencies.length,
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      max: latencies.reduce((a, b) => Math.max(a, b), 0),
      loopDelay,
      list,
    };
  } finally {
    for (const child of children.reverse()) await stopChild(child);
  }
}
