/**
 * Footprint (`npm run bench -- footprint`): what the proxy holds as a sidecar, beside
 * @kubernetes/client-node's informers holding the same objects.
 *
 * The proxy runs as the image runs it: its JavaScript (scripts/build.mjs) with the Dockerfile's
 * command and environment, each measurement in a fresh process, in a memory cgroup limited as
 * the sidecar manifest limits it (deploy/sidecar/sidecar.yaml): V8 sizes its heap from that
 * limit (a young generation of 1 MiB per semi-space under 512 MiB and less), so a process
 * without one would show other figures. client-node's informers run in a cgroup of 512 MiB
 * (the same heap sizing; they would not fit the proxy's), from plain JavaScript
 * (informer-footprint.mjs). Without root or a memory controller, both run without a limit, and
 * the run says so.
 *
 * Each figure is the process as an operator sees it, SETTLE_MS after it is ready, no collection
 * forced: RSS (and its anonymous and file-backed parts: the binary's code pages are file-backed,
 * shared by every process of the same image), V8's heap, and external memory (Buffers).
 *   idle               discovery done, nothing cached
 *   small namespace    50 ConfigMaps and 20 Pods of one namespace cached (--namespace), each read
 *   8 clients, 60 s    the same proxy after 8 clients LISTed those 20 pods for --footprint-seconds (peak too)
 *   1,000 objects      1,000 ConfigMaps of one namespace (--resources configmaps --namespace)
 *   10,000 objects     every pod of the bench's seed (--resources pods)
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { buildImageApp, imageEnv } from '../test/helpers/image.ts';
import { createMemoryCgroup } from '../test/helpers/memory-cgroup.ts';
import { sidecarMemory } from '../test/helpers/sidecar-manifest.ts';
import type { MemoryCgroup } from '../test/helpers/memory-cgroup.ts';
import { runLoad } from './load.ts';
import { message } from './sync.ts';
import type { Target } from './targets.ts';
import { servingAddress } from './targets.ts';

/** How long a process is left alone once ready before it is measured. */
const SETTLE_MS = 10_000;
const SMALL_NAMESPACE = 'footprint-small';
const THOUSAND_NAMESPACE = 'footprint-1k';
/** The informers' cgroup: V8 sizes a heap the same for every limit up to 512 MiB. */
const INFORMER_LIMIT_BYTES = 512 * 1024 * 1024;
const MiB = 1024 * 1024;

export interface FootprintFigures {
  /** Resident set, and its anonymous and file-backed parts (bytes). */
  readonly rss: number;
  readonly anon: number;
  readonly file: number;
  /** The highest resident set the process had (VmHWM). */
  readonly peakRss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
}

export interface FootprintRow {
  readonly scenario: string;
  readonly objects: number;
  readonly jsonBytes: number;
  readonly proxy: FootprintFigures;
  /** client-node's informers holding the same objects; undefined where it has no counterpart (the load). */
  readonly informer: FootprintFigures | undefined;
}

export interface FootprintResult {
  /** The cgroup limit the proxy ran under (the sidecar manifest's), or undefined when none could be made. */
  readonly limitBytes: number | undefined;
  /** Spawn to serving, ms (the idle proxy). */
  readonly startMs: number;
  readonly rows: readonly FootprintRow[];
}

export interface FootprintOptions {
  readonly seconds: number;
}

function statusFigures(pid: number | undefined): Pick<FootprintFigures, 'rss' | 'anon' | 'file' | 'peakRss'> {
  const status = readFileSync(`/proc/${String(pid)}/status`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kib('VmRSS'), anon: kib('RssAnon'), file: kib('RssFile'), peakRss: kib('VmHWM') };
}

async function proxyFigures(child: ChildProcess, url: string): Promise<FootprintFigures> {
  const text = await (await request(`${url}/metrics`)).body.text();
  const gauge = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    ...statusFigures(child.pid),
    heapUsed: gauge('nodejs_heap_size_used_bytes'),
    heapTotal: gauge('nodejs_heap_size_total_bytes'),
    external: gauge('nodejs_external_memory_bytes'),
  };
}

async function create(client: UpstreamClient, path: string, body: unknown): Promise<void> {
  const res = await client.request({ method: 'POST', path, body: JSON.stringify(body) });
  if (res.statusCode !== 201 && res.statusCode !== 409) throw new Error(`POST ${path}: ${String(res.statusCode)} ${res.body.toString()}`);
}

/** The small namespace (50 ConfigMaps, 20 Pods) and the 1,000 ConfigMaps' one; both kept for later runs. */
async function seedFootprint(client: UpstreamClient): Promise<void> {
  for (const name of [SMALL_NAMESPACE, THOUSAND_NAMESPACE]) await create(client, '/api/v1/namespaces', { metadata: { name } });
  const filler = 'x'.repeat(600);
  const configMap = (namespace: string, i: number): Promise<void> =>
    create(client, `/api/v1/namespaces/${namespace}/configmaps`, {
      metadata: { name: `cm-${String(i).padStart(4, '0')}`, labels: { app: 'footprint' } },
      data: { filler },
    });
  const work: (() => Promise<void>)[] = [];
  for (let i = 0; i < 50; i++) work.push(() => configMap(SMALL_NAMESPACE, i));
  for (let i = 0; i < 20; i++) {
    work.push(() =>
      create(client, `/api/v1/namespaces/${SMALL_NAMESPACE}/pods`, {
        metadata: { name: `pod-${String(i).padStart(2, '0')}`, labels: { app: 'footprint' } },
        spec: {
          containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
        },
      }),
    );
  }
  for (let i = 0; i < 1_000; i++) work.push(() => configMap(THOUSAND_NAMESPACE, i));
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < work.length) await work[next++]?.();
    }),
  );
}

/** The objects of `paths` and their JSON bytes, each item as the apiserver encodes it. */
async function jsonOf(client: UpstreamClient, paths: readonly string[]): Promise<{ objects: number; bytes: number }> {
  let objects = 0;
  let bytes = 0;
  for (const path of paths) {
    const list = JSON.parse((await client.request({ method: 'GET', path: `${path}?resourceVersion=0` })).body.toString()) as {
      items: unknown[];
    };
    objects += list.items.length;
    for (const item of list.items) bytes += Buffer.byteLength(JSON.stringify(item));
  }
  return { objects, bytes };
}

/** A cgroup limited to `limitBytes`, or undefined (and a note) where none can be made. */
function cgroupOrNone(limitBytes: number, note: (detail: string) => void): MemoryCgroup | undefined {
  try {
    return createMemoryCgroup(limitBytes);
  } catch (error) {
    note(`${error instanceof Error ? error.message : String(error)}: measured without a limit (V8 then sizes a larger young generation)`);
    return undefined;
  }
}

/** Stops a process and removes its cgroup. */
async function stopIn(child: ChildProcess, cgroup: MemoryCgroup | undefined): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  }
  cgroup?.remove();
}

/** Resolves after `ms`: the settling time a measurement is defined by, not a wait for anything. */
function settle(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function runFootprint(
  state: ControlPlaneState,
  client: UpstreamClient,
  options: FootprintOptions,
  note: (detail: string) => void,
): Promise<FootprintResult> {
  const work = mkdtempSync(join(tmpdir(), 'kcp-footprint-'));
  try {
    note('seeding the footprint namespaces, building the image’s JavaScript');
    const [script] = await Promise.all([buildImageApp(join(work, 'app')), seedFootprint(client)]);
    const { limitBytes } = sidecarMemory();
    const env = { ...process.env, ...imageEnv() };
    /** Whether every proxy ran under the limit (a closure sets it). */
    const run = { limited: true };

    /** A proxy with `flags`, ready; measured with `measure`, told how long it took from spawn to serving. */
    const withProxy = async <T>(
      flags: readonly string[],
      measure: (child: ChildProcess, url: string, startMs: number) => Promise<T>,
    ): Promise<T> => {
      const cgroup = cgroupOrNone(limitBytes, note);
      if (cgroup === undefined) run.limited = false;
      const argv = [process.execPath, script, 'proxy', `--kubeconfig=${state.kubeconfig}`, '--port=0', '--log-level=warn', ...flags];
      const { command, args } = cgroup?.wrap(argv) ?? { command: argv[0] ?? '', args: argv.slice(1) };
      const spawned = performance.now();
      const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
      try {
        const address = await servingAddress(child, 'kube-cache-proxy');
        const startMs = performance.now() - spawned;
        const url = `http://${address}`;
        for (;;) {
          const res = await request(`${url}/readyz`);
          if ((await res.body.text()) === 'ok') break;
          await settle(20);
        }
        return await measure(child, url, startMs);
      } finally {
        await stopIn(child, cgroup);
      }
    };

    /** client-node's informers of `specs` (resource[@namespace]), synced, measured after SETTLE_MS. */
    const informer = async (specs: readonly string[]): Promise<FootprintFigures> => {
      const cgroup = cgroupOrNone(INFORMER_LIMIT_BYTES, note);
      const argv = [process.execPath, join(import.meta.dirname, 'informer-footprint.mjs'), state.kubeconfig, ...specs];
      const { command, args } = cgroup?.wrap(argv) ?? { command: argv[0] ?? '', args: argv.slice(1) };
      const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      try {
        await message(child, 'synced');
        await settle(SETTLE_MS);
        child.send('sample');
        const sample = await message<{ heapUsed: number; heapTotal: number; external: number }>(child, 'sample');
        return { ...statusFigures(child.pid), heapUsed: sample.heapUsed, heapTotal: sample.heapTotal, external: sample.external };
      } finally {
        child.send('stop');
        await stopIn(child, cgroup);
      }
    };

    const rows: FootprintRow[] = [];
    // Idle: discovery done (its line in the log), nothing cached.
    note('idle proxy');
    let startMs = NaN;
    const idle = await withProxy([], async (child, url, started) => {
      startMs = started;
      await settle(SETTLE_MS);
      return proxyFigures(child, url);
    });
    rows.push({ scenario: 'idle: discovery done, nothing cached', objects: 0, jsonBytes: 0, proxy: idle, informer: await informer([]) });

    note('small namespace: read once, then 8 clients LISTing its pods');
    const smallPaths = [`/api/v1/namespaces/${SMALL_NAMESPACE}/configmaps`, `/api/v1/namespaces/${SMALL_NAMESPACE}/pods`];
    const small = await jsonOf(client, smallPaths);
    await withProxy([`--namespace=${SMALL_NAMESPACE}`], async (child, url) => {
      // Each type's first read starts its cache; the reads after it are the cache's.
      for (;;) {
        for (const path of smallPaths) await (await request(`${url}${path}`)).body.dump();
        const metrics = await (await request(`${url}/metrics`)).body.text();
        const cached = smallPaths.every((path) =>
          new RegExp(
            `kube_cache_proxy_requests_total\\{[^}]*resource="${path.split('/').at(-1) ?? ''}"[^}]*served_from="cache"[^}]*\\} [1-9]`,
          ).test(metrics),
        );
        if (cached) break;
      }
      await settle(SETTLE_MS);
      rows.push({
        scenario: 'small namespace (50 ConfigMaps, 20 Pods) cached and read',
        objects: small.objects,
        jsonBytes: small.bytes,
        proxy: await proxyFigures(child, url),
        informer: await informer([`configmaps@${SMALL_NAMESPACE}`, `pods@${SMALL_NAMESPACE}`]),
      });
      const target: Target = {
        name: 'kube-cache-proxy',
        url,
        headers: {},
        pid: child.pid ?? 0,
        ca: undefined,
        stop: () => Promise.resolve(),
      };
      const load = await runLoad(target, { path: `/api/v1/namespaces/${SMALL_NAMESPACE}/pods`, connections: 8, seconds: options.seconds });
      note(`8 clients: ${String(load.requests)} LISTs, p50 ${load.p50.toFixed(1)} ms, ${String(load.failures)} failed`);
      rows.push({
        scenario: `the same, after 8 clients LISTed its 20 pods for ${String(options.seconds)} s (${Math.round(load.rps).toLocaleString('en-US')} LISTs/s)`,
        objects: small.objects,
        jsonBytes: small.bytes,
        proxy: await proxyFigures(child, url),
        informer: undefined,
      });
    });

    /** A fresh proxy caching what `flags` name, beside client-node's informers of the same objects. */
    const cached = async (scenario: string, paths: string[], flags: string[], informers: string[]): Promise<void> => {
      const json = await jsonOf(client, paths);
      const proxy = await withProxy(flags, async (child, url) => {
        await settle(SETTLE_MS);
        return proxyFigures(child, url);
      });
      rows.push({ scenario, objects: json.objects, jsonBytes: json.bytes, proxy, informer: await informer(informers) });
    };
    note('1,000 objects');
    await cached(
      '1,000 ConfigMaps cached',
      [`/api/v1/namespaces/${THOUSAND_NAMESPACE}/configmaps`],
      ['--resources=configmaps', `--namespace=${THOUSAND_NAMESPACE}`],
      [`configmaps@${THOUSAND_NAMESPACE}`],
    );
    note('10,000 objects');
    await cached('every pod cached', ['/api/v1/pods'], ['--resources=pods'], ['pods']);

    return { limitBytes: run.limited ? limitBytes : undefined, startMs, rows };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function mib(bytes: number): string {
  return Number.isFinite(bytes) ? (bytes / MiB).toFixed(1) : '–';
}

export function formatFootprint(result: FootprintResult): string {
  const lines = [
    `Footprint: kube-cache-proxy as the image runs it, ${result.limitBytes === undefined ? 'without a memory limit (no cgroup could be made)' : `in a memory cgroup of ${mib(result.limitBytes)} MiB (the sidecar manifest's limit)`}, ${String(SETTLE_MS / 1000)} s after ready, no collection forced; spawn to serving ${result.startMs.toFixed(0)} ms. Beside: client-node's informers of the same objects. MiB.`,
    '',
    '| scenario | objects | JSON | proxy RSS (anon + file) | proxy peak RSS | proxy heap used / total | proxy external | client-node RSS (anon + file) | client-node heap used / total | client-node external |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const row of result.rows) {
    const p = row.proxy;
    const i = row.informer;
    lines.push(
      `| ${row.scenario} | ${row.objects.toLocaleString('en-US')} | ${mib(row.jsonBytes)} | ${mib(p.rss)} (${mib(p.anon)} + ${mib(p.file)}) | ${mib(p.peakRss)} | ${mib(p.heapUsed)} / ${mib(p.heapTotal)} | ${mib(p.external)} | ` +
        (i === undefined
          ? '| | |'
          : `${mib(i.rss)} (${mib(i.anon)} + ${mib(i.file)}) | ${mib(i.heapUsed)} / ${mib(i.heapTotal)} | ${mib(i.external)} |`),
    );
  }
  return lines.join('\n');
}
