/**
 * The proxy inside a real memory limit, as the image runs it in a container limited as the
 * sidecar manifest limits it (deploy/sidecar/sidecar.yaml: 160 MiB):
 * its JavaScript (scripts/build.mjs) with the Dockerfile's command and environment, in a memory
 * cgroup of the test's own (memory-cgroup.ts), from a copy of the Node binary whose pages are
 * out of the page cache, so that its code pages are charged to the cgroup too, as a container's
 * are on first touch. In front of a control plane of the test's own with 10,000 pods (16 MB of
 * JSON) cached, it takes at once 32 clients LISTing every pod, 8 LISTing them as Tables (kubectl
 * get), 20 watches of every pod that never read, and 4 reflector-style watchers of a namespace
 * written 20 times a second. The kernel must never OOM-kill it (the cgroup's counter stays 0),
 * every request must be answered (200: from the cache, or passed through when no room is left),
 * and the watchers must lose, repeat and reorder nothing (watch-audit.ts).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import { ensureControlPlaneBinaries } from '../../../src/cli/dev-cluster/build.ts';
import { down, up } from '../../../src/cli/dev-cluster/control-plane.ts';
import { attachReaper } from '../../../src/cli/dev-cluster/reaper.ts';
import { newProgress } from '../../../src/cli/progress.ts';
import { loadUpstreamConfig } from '../../../src/upstream/config.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import { eventually } from '../../helpers/eventually.ts';
import { buildImageApp, imageEnv } from '../../helpers/image.ts';
import { createMemoryCgroup } from '../../helpers/memory-cgroup.ts';
import { sidecarMemory } from '../../helpers/sidecar-manifest.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import { newPodChurn } from '../../helpers/pod-churn.ts';
import { seededRandom } from '../../helpers/prng.ts';
import { startReflectorWatcher } from '../../helpers/reflector-watcher.ts';
import { auditWatch, caughtUp } from '../../helpers/watch-audit.ts';

const PODS = 10_000;
const NAMESPACES = 20;
const LIST_CLIENTS = 32;
const TABLE_CLIENTS = 8;
const SLOW_WATCHES = 20;
const WATCHERS = 4;
const WRITES_PER_SECOND = 20;
/** How long the load lasts: the scenario's length, not a wait for anything. */
const LOAD_MS = 15_000;
const SEED_CONCURRENCY = 48;
const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

/** Pods as the bench seeds them (~1.6 KB of JSON each), `count` of them over `namespaces` namespaces. */
async function seedPods(client: UpstreamClient, count: number, namespaces: number): Promise<void> {
  for (let n = 0; n < namespaces; n++) {
    await client.request({ method: 'POST', path: '/api/v1/namespaces', body: JSON.stringify({ metadata: { name: `load-${String(n)}` } }) });
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: SEED_CONCURRENCY }, async () => {
      while (next < count) {
        const i = next++;
        const res = await client.request({
          method: 'POST',
          path: `/api/v1/namespaces/load-${String(i % namespaces)}/pods`,
          body: JSON.stringify({
            metadata: { name: `pod-${String(i).padStart(5, '0')}`, labels: { app: 'load', shard: String(i % 10) } },
            spec: {
              nodeName: `node-${String(Math.floor(i / 100))}`,
              containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
            },
          }),
        });
        if (res.statusCode !== 201) throw new Error(`seeding pod ${String(i)}: ${String(res.statusCode)} ${res.body.toString()}`);
      }
    }),
  );
}

/** A client LISTing `path` with `accept` until the load ends; counts the answers by status. */
async function lister(url: string, path: string, accept: string, until: number, codes: Map<number | string, number>): Promise<void> {
  const dispatcher = new Agent({ headersTimeout: 120_000, bodyTimeout: 120_000 });
  try {
    while (performance.now() < until) {
      let code: number | string;
      try {
        const res = await request(`${url}${path}`, { dispatcher, headers: { accept } });
        // Read whole, as a client does, and let go of.
        let bytes = 0;
        for await (const chunk of res.body) bytes += (chunk as Buffer).length;
        code = bytes > 0 ? res.statusCode : 'empty body';
      } catch (error) {
        code = error instanceof Error ? error.message : String(error);
      }
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
  } finally {
    await dispatcher.close();
  }
}

/** A watch of every pod that is sent and never read: the proxy's buffers for it fill up. */
function slowWatch(address: { host: string; port: number }): Socket {
  const socket = connect(address.port, address.host, () => {
    socket.write(`GET /api/v1/pods?watch=1&resourceVersion=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    socket.pause();
  });
  socket.on('error', () => undefined);
  return socket;
}

test(
  'memory limit: under the sidecar manifest’s limit (160 MiB) with 10,000 pods cached, LIST and Table bursts and watches that stop reading, never OOM-killed, every request answered, nothing lost on the watches',
  { timeout: 300_000 },
  async (t) => {
    // Undone last first: the proxy stops before its cgroup goes, the control plane after it.
    const cleanups: (() => unknown)[] = [];
    t.after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });
    const work = mkdtempSync(join(tmpdir(), 'kcp-memory-'));
    cleanups.push(() => {
      rmSync(work, { recursive: true, force: true });
    });
    // A control plane of its own: 10,000 pods would weigh on every other test's caches.
    const dir = join(work, 'control-plane');
    const progress = newProgress((line) => process.stderr.write(`[memory-limit] ${line}\n`));
    const state = await up({ dir, binaries: await ensureControlPlaneBinaries(progress), progress });
    attachReaper(dir, process.pid);
    cleanups.push(() => down(dir));
    const admin = newUpstreamClient(await loadUpstreamConfig({ kubeconfig: state.kubeconfig }), { connections: SEED_CONCURRENCY });
    cleanups.push(() => admin.close());

    const [script] = await Promise.all([buildImageApp(join(work, 'app')), seedPods(admin, PODS, NAMESPACES)]);
    // The binary's pages out of the page cache, so that those the proxy touches are charged to its cgroup.
    const node = join(work, 'node');
    const copied = spawnSync('dd', [`if=${process.execPath}`, `of=${node}`, 'bs=1M', 'conv=fsync', 'oflag=nocache'], { stdio: 'ignore' });
    assert.equal(copied.status, 0, 'dd copied the Node binary');
    chmodSync(node, 0o755);

    const { limitBytes } = sidecarMemory();
    const cgroup = createMemoryCgroup(limitBytes);
    cleanups.push(() => {
      cgroup.remove();
    });
    const { command, args } = cgroup.wrap([node, script, 'proxy', `--kubeconfig=${state.kubeconfig}`, '--port=0', '--resources=pods']);
    const child = spawn(command, args, { env: { ...process.env, ...imageEnv() }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-200_000)));
    child.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-200_000)));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    });
    await eventually('the serving line', () => /Starting to serve on \S+/.test(output) || child.exitCode !== null, 60_000);
    const served = /Starting to serve on (127\.0\.0\.1):(\d+)/.exec(output);
    assert.ok(served?.[1] !== undefined && served[2] !== undefined, output);
    const address = { host: served[1], port: Number(served[2]) };
    const url = `http://${address.host}:${String(address.port)}`;
    await eventually(
      'the pods cache to sync',
      async () => (await request(`${url}/readyz`).then(async (r) => (await r.body.text()) === 'ok')) || child.exitCode !== null,
      120_000,
    );
    const verbose = await (await request(`${url}/readyz?verbose`)).body.text();
    const limitMiB = (limitBytes / 2 ** 20).toFixed(1);
    assert.ok(
      verbose.includes(`[+]memory ok: limit ${limitMiB} MiB (cgroup v${String(cgroup.version)} memory.`),
      `the limit is read from the cgroup: ${verbose}`,
    );
    assert.match(verbose, /\[\+\]cache-pods ok: watching, 10000 objects/);

    // The load, all at once.
    const random = seededRandom(28);
    const watched = 'load-watched';
    await admin.request({ method: 'POST', path: '/api/v1/namespaces', body: JSON.stringify({ metadata: { name: watched } }) });
    const watchDispatcher = new Agent({ connections: null });
    cleanups.push(() => watchDispatcher.close());
    const watchers = Array.from({ length: WATCHERS }, (_, i) =>
      startReflectorWatcher({
        name: `watcher-${String(i)}`,
        url,
        path: `/api/v1/namespaces/${watched}/pods`,
        dispatcher: watchDispatcher,
        random,
      }),
    );
    cleanups.push(() => Promise.all(watchers.map((w) => w.stop())));
    await Promise.all(watchers.map((w) => w.synced));
    const slow = Array.from({ length: SLOW_WATCHES }, () => slowWatch(address));
    cleanups.push(() => {
      for (const socket of slow) socket.destroy();
    });
    const until = performance.now() + LOAD_MS;
    const churn = newPodChurn({ client: admin, namespace: watched, objects: 20, writesPerSecond: WRITES_PER_SECOND, random });
    const writing = churn.run(() => performance.now() >= until, AbortSignal.timeout(LOAD_MS + 60_000));
    const listCodes = new Map<number | string, number>();
    const tableCodes = new Map<number | string, number>();
    await Promise.all([
      ...Array.from({ length: LIST_CLIENTS }, (_, i) =>
        lister(url, i % 2 === 0 ? '/api/v1/pods' : '/api/v1/pods?resourceVersion=0', 'application/json', until, listCodes),
      ),
      ...Array.from({ length: TABLE_CLIENTS }, () => lister(url, '/api/v1/pods', TABLE_ACCEPT, until, tableCodes)),
      writing,
    ]);
    for (const socket of slow) socket.destroy();

    // Nothing lost on the watches: every acknowledged write delivered, the final state reached.
    const list = JSON.parse((await admin.request({ method: 'GET', path: `/api/v1/namespaces/${watched}/pods` })).body.toString()) as {
      items: { metadata: { name: string; resourceVersion: string } }[];
    };
    const final = new Map(list.items.map((p) => [`${watched}/${p.metadata.name}`, Number(p.metadata.resourceVersion)]));
    await eventually('every watcher to reach the apiserver’s state', () => watchers.every((w) => caughtUp(w, final)), 30_000);
    await Promise.all(watchers.map((w) => w.stop()));
    const metrics = await (await request(`${url}/metrics`)).body.text();
    const peak = cgroup.peakBytes();
    t.diagnostic(
      `LISTs ${JSON.stringify([...listCodes])}, Tables ${JSON.stringify([...tableCodes])}, writes ${String(churn.writes.length)}, ` +
        `peak ${peak === undefined ? '?' : (peak / 2 ** 20).toFixed(1)} MiB of ${limitMiB}, ` +
        `slow watches closed ${String(metricSum(metrics, 'kube_cache_proxy_watchers_closed_slow_total', {}))}, ` +
        `bodies refused ${String(metricSum(metrics, 'kube_cache_proxy_memory_refused_total', { what: 'body' }))}`,
    );

    assert.equal(cgroup.oomKills(), 0, 'never OOM-killed');
    assert.equal(child.exitCode, null, `the proxy still runs\n${output.slice(-3000)}`);
    assert.deepEqual([...listCodes.keys()], [200], `every LIST answered 200: ${JSON.stringify([...listCodes])}`);
    assert.deepEqual([...tableCodes.keys()], [200], `every Table answered 200: ${JSON.stringify([...tableCodes])}`);
    assert.ok((listCodes.get(200) ?? 0) >= LIST_CLIENTS, 'each LIST client was answered');
    assert.ok((tableCodes.get(200) ?? 0) >= TABLE_CLIENTS, 'each Table client was answered');
    assert.ok(metricSum(metrics, 'kube_cache_proxy_watchers_closed_slow_total', {}) > 0, 'watches that stop reading are closed');
    for (const watcher of watchers) {
      const audit = auditWatch(watcher, { writes: churn.writes, final });
      assert.deepEqual(
        { lost: audit.lost, duplicated: audit.duplicated, reordered: audit.reordered },
        { lost: 0, duplicated: 0, reordered: 0 },
        `${watcher.name}: ${audit.problems.join('; ')}`,
      );
    }

    child.kill('SIGTERM');
    assert.equal(await exited, 0, output.slice(-3000));
  },
);
