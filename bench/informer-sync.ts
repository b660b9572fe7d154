/**
 * Informer sync time and memory per cached object: `npm run bench:informer`
 * (node --expose-gc bench/informer-sync.ts [count] [bytes]).
 *
 * Starts a local control plane of its own, creates `count` ConfigMaps (default 10,000) of about
 * `bytes` JSON bytes each (default 1,024), then for each mode (WatchList, paginated LIST+WATCH)
 * starts one informer, times it from start to synced, and measures what the held objects cost:
 * V8 heap and external (Buffer) memory after full collections, per object, beside the objects'
 * own JSON bytes. Progress goes to stderr, the table to stdout.
 */
import { mkdtempSync } from 'node:fs';
import { objectByteLength } from '../src/informer/object.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { ensureControlPlaneBinaries } from '../src/cli/dev-cluster/build.ts';
import { down, up } from '../src/cli/dev-cluster/control-plane.ts';
import { attachReaper } from '../src/cli/dev-cluster/reaper.ts';
import { formatDuration, newProgress } from '../src/cli/progress.ts';
import { newSharedIndexInformer } from '../src/informer/shared-informer.ts';
import { newListerWatcher } from '../src/informer/lister-watcher.ts';
import { loadUpstreamConfig } from '../src/upstream/config.ts';
import { newUpstreamClient } from '../src/upstream/client.ts';

const count = Number(process.argv[2] ?? 10_000);
const targetBytes = Number(process.argv[3] ?? 1024);
const collect = globalThis.gc;
if (collect === undefined) {
  process.stderr.write('run with node --expose-gc (npm run bench:informer)\n');
  process.exit(2);
}

interface Memory {
  readonly heap: number;
  readonly external: number;
}

function memory(): Memory {
  for (let i = 0; i < 3; i++) collect?.();
  return { heap: getHeapStatistics().used_heap_size, external: process.memoryUsage().arrayBuffers };
}

const progress = newProgress((line) => process.stderr.write(`${line}\n`), 5_000);
const dir = mkdtempSync(join(tmpdir(), 'kcp-bench-informer-'));
const state = await up({ dir, binaries: await ensureControlPlaneBinaries(progress), progress });
attachReaper(dir, process.pid);
const client = newUpstreamClient(await loadUpstreamConfig({ kubeconfig: state.kubeconfig }), { connections: 32 });
try {
  const ns = 'bench';
  await client.request({ method: 'POST', path: '/api/v1/namespaces', body: JSON.stringify({ metadata: { name: ns } }) });
  // A ConfigMap of ~targetBytes once the apiserver has added uid, resourceVersion, timestamps, managedFields.
  const filler = 'x'.repeat(Math.max(0, targetBytes - 420));
  let created = 0;
  const step = progress.step(`creating ${String(count)} ConfigMaps of ~${String(targetBytes)} bytes`, () => `${String(created)} created`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const i = next++;
        const res = await client.request({
          method: 'POST',
          path: `/api/v1/namespaces/${ns}/configmaps`,
          body: JSON.stringify({
            metadata: { name: `cm-${String(i).padStart(6, '0')}`, labels: { app: 'bench', shard: String(i % 10) } },
            data: { filler },
          }),
        });
        if (res.statusCode !== 201) throw new Error(`create: ${String(res.statusCode)} ${res.body.toString()}`);
        created++;
      }
    }),
  );
  step.done();

  const rows: string[] = [];
  for (const useWatchList of [true, false]) {
    const mode = useWatchList ? 'WatchList' : 'LIST (pages of 500) + WATCH';
    const before = memory();
    const informer = newSharedIndexInformer({
      name: 'configmaps',
      listerWatcher: newListerWatcher(client, { group: '', version: 'v1', resource: 'configmaps', namespace: ns }),
      useWatchList,
    });
    const started = performance.now();
    informer.run();
    process.stderr.write(`${mode}: syncing ${String(count)} objects...\n`);
    await informer.waitForSync();
    const syncMs = performance.now() - started;
    const after = memory();
    const objects = informer.getIndexer().list();
    const jsonBytes = objects.reduce((sum, o) => sum + objectByteLength(o), 0);
    const n = objects.length;
    const heapPer = (after.heap - before.heap) / n;
    const externalPer = (after.external - before.external) / n;
    rows.push(
      [
        mode.padEnd(28),
        String(n).padStart(7),
        formatDuration(syncMs).padStart(8),
        String(Math.round(jsonBytes / n)).padStart(10),
        String(Math.round(heapPer)).padStart(10),
        String(Math.round(externalPer)).padStart(10),
        ((heapPer + externalPer) / (jsonBytes / n)).toFixed(2).padStart(8),
      ].join(' '),
    );
    await informer.stop();
  }
  console.log(`\nInformer sync and memory, ${String(count)} ConfigMaps, Node ${process.version}, ${new Date().toISOString()}`);
  console.log(
    `${'mode'.padEnd(28)} ${'objects'.padStart(7)} ${'sync'.padStart(8)} ${'JSON B/obj'.padStart(10)} ${'heap B/obj'.padStart(10)} ${'buf B/obj'.padStart(10)} ${'ratio'.padStart(8)}`,
  );
  for (const row of rows) console.log(row);
  console.log('ratio = (heap + Buffer memory held per object) / JSON bytes per object');
} finally {
  await client.close();
  await down(dir);
}
