/**
 * The slow-watchers scenario: does the memory that watchers which stop reading pin come back
 * once they are gone? kube-cache-proxy (pods cached) in a process that measures itself after full
 * collections; N watch connections of all pods that send their request and never read a byte
 * (the socket paused: what a hung client looks like); a writer patching pods at the apiserver
 * for a while, so that every event piles up unsent for every one of them, bounded by each
 * watcher's 16 MiB and the proxy's 128 MiB unsent budget. Memory is sampled before, at the end
 * of the writes (the slow watchers still open) and after they are closed.
 */
import { fork } from 'node:child_process';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import type { MemorySample } from './memory-probe.ts';
import { startPodWriter } from './pod-writer.ts';
import { message, stopChild } from './sync.ts';
import { servingAddress, waitReady } from './targets.ts';

export interface SlowWatchersOptions {
  readonly watchers: number;
  readonly seconds: number;
  readonly rate: number;
  readonly pods: number;
  readonly namespaces: number;
}

export interface SlowWatchersResult {
  readonly watchers: number;
  readonly writes: number;
  readonly closedSlow: number;
  /** Events in the pods' event window at the end (each keeps its object and its frames). */
  readonly windowEvents: number;
  readonly before: MemorySample;
  readonly during: MemorySample;
  readonly after: MemorySample;
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await request(`${url}/metrics`)).body.text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name)) sum += Number(line.split(' ').at(-1));
  return sum;
}

export async function runSlowWatchers(
  state: ControlPlaneState,
  client: UpstreamClient,
  o: SlowWatchersOptions,
): Promise<SlowWatchersResult> {
  const child = fork(
    join(import.meta.dirname, 'proxy-process.ts'),
    [`--kubeconfig=${state.kubeconfig}`, '--port=0', '--resources=pods', '--log-level=warn'],
    { execArgv: ['--expose-gc'], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] },
  );
  const sockets: Socket[] = [];
  try {
    await message<MemorySample>(child, 'baseline');
    const address = await servingAddress(child, 'kube-cache-proxy');
    const url = `http://${address}`;
    await waitReady(url);
    const measure = async (): Promise<MemorySample> => {
      child.send('measure');
      return message<MemorySample>(child, 'memory');
    };
    const before = await measure();
    // From the cache's RV: only the changes to come, no initial state.
    const list = (await (await request(`${url}/api/v1/pods?resourceVersion=0&limit=1`)).body.json()) as {
      metadata: { resourceVersion: string };
    };
    const [host = '127.0.0.1', port = '0'] = address.split(':');
    for (let i = 0; i < o.watchers; i++) {
      const socket = connect(Number(port), host);
      socket.on('error', () => undefined);
      socket.write(`GET /api/v1/pods?watch=true&resourceVersion=${list.metadata.resourceVersion} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      socket.pause();
      sockets.push(socket);
    }
    const writer = startPodWriter(client, { rate: o.rate, pods: o.pods, namespaces: o.namespaces });
    await sleep(o.seconds * 1000);
    const writes = await writer.stop();
    const during = await measure();
    const closedSlow = await metric(url, 'kube_cache_proxy_watchers_closed_slow_total');
    const windowEvents = await metric(url, 'kube_cache_proxy_watch_cache_size');
    for (const socket of sockets) socket.destroy();
    // The proxy sees the connections close, ends the watchers and drops what they held.
    await sleep(2000);
    const after = await measure();
    return { watchers: o.watchers, writes, closedSlow, windowEvents, before, during, after };
  } finally {
    for (const socket of sockets) socket.destroy();
    await stopChild(child);
  }
}

const MIB = 1024 * 1024;

/** The scenario's table: memory at each point, in MiB. */
export function formatSlowWatchers(r: SlowWatchersResult): string {
  const row = (when: string, m: MemorySample): string =>
    `| ${when} | ${(m.heap / MIB).toFixed(1)} | ${(m.buffers / MIB).toFixed(1)} | ${(m.rss / MIB).toFixed(1)} |`;
  return [
    `Slow watchers: ${String(r.watchers)} watches of all pods that never read; ${String(r.writes)} pod writes at the apiserver; ${String(r.closedSlow)} closed by the proxy for slowness; ${String(r.windowEvents)} events in the pods' event window at the end; memory after full collections.`,
    '',
    '| when | heap MiB | Buffers MiB | RSS MiB |',
    '| --- | ---: | ---: | ---: |',
    row('before', r.before),
    row('writes done, slow watchers open', r.during),
    row('2 s after they closed', r.after),
    '',
  ].join('\n');
}
