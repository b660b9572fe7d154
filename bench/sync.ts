/**
 * Cold start and memory: the proxy syncing pods and configmaps from nothing, beside
 * @kubernetes/client-node's informers (makeInformer) and this project's library's
 * (kube-cache-proxy/informer) doing the same sync, each a fresh process.
 *
 * Cold start is timed from spawn to ready (the proxy's /readyz answering 200; client-node's
 * informers listed and watching), so both include Node's start and module loading. The upstream
 * cost is the apiserver's own count of LISTs and of watches opened for the two types meanwhile.
 * Memory is what each process holds after full collections, minus a baseline, per object, beside
 * the objects' JSON bytes. The proxy's baseline is an idle proxy's (idleProxyMemory: serving,
 * caching only the namespaces), so that what a running proxy costs whatever it caches (code
 * compiled at start, the server, the pools: ~6 MB) is not counted per object; client-node's is
 * its process with the modules loaded and no informer started.
 */
import { execFileSync, fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { countsDelta, upstreamCounts } from './cluster.ts';
import type { MemorySample } from './memory-probe.ts';
import { servingAddress, startCacheProxy, waitReady } from './targets.ts';

const RESOURCES = ['pods', 'configmaps'];
const PROTOBUF = 'application/vnd.kubernetes.protobuf';

export interface SyncResult {
  readonly who: 'kube-cache-proxy' | 'client-node informer' | 'kube-cache-proxy/informer (library)';
  readonly objects: number;
  /** Spawn to synced (ms). */
  readonly coldStartMs: number;
  readonly upstreamLists: number;
  /** Watches opened (including WatchList streams, which carry the initial state). */
  readonly upstreamWatches: number;
  readonly memory: MemoryPerObject | undefined;
}

export interface MemoryPerObject {
  readonly jsonBytes: number;
  readonly heap: number;
  readonly buffers: number;
  readonly rss: number;
  /** The proxy only: what one protobuf LIST of each type added per object (its bytes made once and kept), after full collections. */
  readonly protobuf?: ProtobufPerObject;
}

export interface ProtobufPerObject {
  /** The items' protobuf bytes per object in those LISTs' bodies. */
  readonly messageBytes: number;
  readonly heap: number;
  readonly buffers: number;
}

/** The child's next message of `type`; rejects if the child exits first. */
export function message<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string }): void => {
      if (m.type !== type) return;
      child.off('message', onMessage);
      resolve(m as T);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => {
      reject(new Error(`${type}: child exited (${String(code)})`));
    });
  });
}

/**
 * The memory of a proxy that serves and holds almost nothing (its caches: the namespaces, a few
 * hundred objects), after full collections: the baseline of what caching objects costs.
 */
export async function idleProxyMemory(state: ControlPlaneState): Promise<MemorySample> {
  const child = fork(
    join(import.meta.dirname, 'proxy-process.ts'),
    [`--kubeconfig=${state.kubeconfig}`, '--port=0', '--resources=namespaces', '--log-level=warn'],
    { execArgv: ['--expose-gc'], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] },
  );
  try {
    await waitReady(`http://${await servingAddress(child, 'kube-cache-proxy')}`);
    child.send('measure');
    return await message<MemorySample>(child, 'memory');
  } finally {
    await stopChild(child);
  }
}

/**
 * Waits (up to 30 s) until the proxy holds no response body and its pool of LIST pieces is empty,
 * by its /metrics: the LISTs' shared bodies are dropped once idle, and their pieces leave the pool
 * after that.
 */
async function bodiesGone(url: string): Promise<void> {
  const deadline = performance.now() + 30_000;
  const used = (text: string, use: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`kube_cache_proxy_memory_used_bytes{use="${use}"}`));
    if (line === undefined) throw new Error(`/metrics has no kube_cache_proxy_memory_used_bytes{use="${use}"}`);
    return Number(line.split(' ').pop());
  };
  for (;;) {
    const text = await (await fetch(`${url}/metrics`)).text();
    const [bodies, pool] = [used(text, 'bodies'), used(text, 'piece_pool')];
    if (bodies === 0 && pool === 0) return;
    if (performance.now() > deadline)
      throw new Error(`bodies ${String(bodies)} B and pooled pieces ${String(pool)} B 30 s after the LISTs`);
    await sleep(500);
  }
}

/** Asks a measuring child (proxy-process.ts, informer-process.ts) to stop, and waits for it. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.send('stop');
  await exited;
}

/** The seeded objects' JSON bytes per object (each item as the apiserver encodes it, compact). */
async function jsonBytesPerObject(client: UpstreamClient): Promise<{ objects: number; perObject: number }> {
  let bytes = 0;
  let objects = 0;
  for (const resource of RESOURCES) {
    const res = await client.request({ method: 'GET', path: `/api/v1/${resource}?resourceVersion=0` });
    const list = JSON.parse(res.body.toString()) as { items: unknown[] };
    for (const item of list.items) bytes += Buffer.byteLength(JSON.stringify(item));
    objects += list.items.length;
  }
  return { objects, perObject: bytes / objects };
}

function perObject(after: MemorySample, before: MemorySample, objects: number, jsonBytes: number): MemoryPerObject {
  return {
    jsonBytes,
    heap: (after.heap - before.heap) / objects,
    buffers: (after.buffers - before.buffers) / objects,
    rss: (after.rss - before.rss) / objects,
  };
}

export async function runSync(
  state: ControlPlaneState,
  client: UpstreamClient,
  what: { readonly coldStart: boolean; readonly memory: boolean },
  note: (detail: string) => void,
): Promise<SyncResult[]> {
  const json = await jsonBytesPerObject(client);
  const results: SyncResult[] = [];
  const upstream = async (fn: () => Promise<void>): Promise<{ lists: number; watches: number }> => {
    const before = await upstreamCounts(client, RESOURCES);
    await fn();
    // The apiserver counts a watch in apiserver_request_total when it has seen it end.
    await sleep(1_000);
    const delta = countsDelta(await upstreamCounts(client, RESOURCES), before);
    const sum = (pick: (c: { LIST: number; WATCH: number; openWatches: number }) => number): number =>
      Object.values(delta).reduce((s, c) => s + pick(c), 0);
    return { lists: sum((c) => c.LIST), watches: sum((c) => c.WATCH + c.openWatches) };
  };

  // The proxy as the real command: cold start and upstream cost.
  let proxyMs = NaN;
  let memory: MemoryPerObject | undefined;
  const proxyCost = await upstream(async () => {
    note('kube-cache-proxy: spawn to ready');
    const started = performance.now();
    const target = await startCacheProxy(state, { resources: RESOURCES.join(',') });
    proxyMs = performance.now() - started;
    await target.stop();
  });
  if (what.memory) {
    // The same proxy in a process that can collect garbage and measure itself.
    note('kube-cache-proxy: memory');
    const child = fork(
      join(import.meta.dirname, 'proxy-process.ts'),
      [`--kubeconfig=${state.kubeconfig}`, '--port=0', `--resources=${RESOURCES.join(',')}`, '--log-level=warn'],
      { execArgv: ['--expose-gc'], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] },
    );
    try {
      const address = await servingAddress(child, 'kube-cache-proxy');
      await waitReady(`http://${address}`);
      child.send('measure');
      const full = await message<MemorySample>(child, 'memory');
      memory = perObject(full, await idleProxyMemory(state), json.objects, json.perObject);
      // Then a protobuf reader of each type (client-go's typed informers): its bytes are made on
      // that first read and kept with the object, for the types read that way only.
      note('kube-cache-proxy: memory after protobuf LISTs');
      let listed = 0;
      for (const resource of RESOURCES) {
        const res = await fetch(`http://${address}/api/v1/${resource}?resourceVersion=0`, { headers: { accept: PROTOBUF } });
        if (res.headers.get('content-type') !== PROTOBUF)
          throw new Error(`protobuf LIST of ${resource}: ${res.headers.get('content-type') ?? '?'}`);
        listed += (await res.arrayBuffer()).byteLength;
      }
      // Measured once the LISTs' bodies are gone, so that only what stays with the objects is counted.
      await bodiesGone(`http://${address}`);
      child.send('measure');
      const withProtobuf = await message<MemorySample>(child, 'memory');
      memory = {
        ...memory,
        protobuf: {
          messageBytes: listed / json.objects,
          heap: (withProtobuf.heap - full.heap) / json.objects,
          buffers: (withProtobuf.buffers - full.buffers) / json.objects,
        },
      };
    } finally {
      await stopChild(child);
    }
  }
  results.push({
    who: 'kube-cache-proxy',
    objects: json.objects,
    coldStartMs: proxyMs,
    upstreamLists: proxyCost.lists,
    upstreamWatches: proxyCost.watches,
    memory,
  });

  // The same informers (pods and configmaps, all namespaces) in a process of their own: client-node's, then this project's library's,
  // compiled as it is installed (dist/, which library-informer-process.ts imports by the package's name).
  note('kube-cache-proxy/informer (library): npm run build');
  execFileSync(process.execPath, [join(import.meta.dirname, '..', 'scripts', 'build.mjs')], { stdio: 'ignore' });
  for (const [script, who] of [
    ['informer-process.ts', 'client-node informer'],
    ['library-informer-process.ts', 'kube-cache-proxy/informer (library)'],
  ] as const) {
    results.push(await runInformerProcess(script, who, state, json.perObject, what.memory, upstream, note));
  }
  return results;
}

/**
 * An informer process (informer-process.ts, library-informer-process.ts): timed from spawn to
 * synced, its upstream requests counted, its memory per object after full collections against
 * its own baseline (its modules loaded, nothing listed).
 */
async function runInformerProcess(
  script: string,
  who: SyncResult['who'],
  state: ControlPlaneState,
  jsonPerObject: number,
  measureMemory: boolean,
  upstream: (fn: () => Promise<void>) => Promise<{ lists: number; watches: number }>,
  note: (detail: string) => void,
): Promise<SyncResult> {
  let ms = NaN;
  let memory: MemoryPerObject | undefined;
  let objects = 0;
  const cost = await upstream(async () => {
    note(`${who}: spawn to synced`);
    const started = performance.now();
    const child = fork(join(import.meta.dirname, script), [state.kubeconfig], {
      execArgv: ['--expose-gc'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    try {
      const baseline = await message<MemorySample>(child, 'baseline');
      objects = (await message<{ objects: number }>(child, 'synced')).objects;
      ms = performance.now() - started;
      if (measureMemory) {
        child.send('measure');
        memory = perObject(await message<MemorySample>(child, 'memory'), baseline, objects, jsonPerObject);
      }
    } finally {
      await stopChild(child);
    }
  });
  return { who, objects, coldStartMs: ms, upstreamLists: cost.lists, upstreamWatches: cost.watches, memory };
}
