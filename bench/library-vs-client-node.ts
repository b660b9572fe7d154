/**
 * kube-cache-proxy/informer beside @kubernetes/client-node's makeInformer, with the same pods:
 * `npm run bench:library -- [--pods 3000] [--control-plane DIR]`
 * (node --expose-gc bench/library-vs-client-node.ts).
 *
 * Uses the control plane in DIR (or $KCP_TEST_CONTROL_PLANE) when given, else brings one up of
 * its own. Creates `pods` realistic pods (realistic-pod.ts: a ReplicaSet's, Running, with the
 * managedFields a cluster gives them) in a namespace of its own, then runs one pod informer of
 * that namespace per process (library-vs-client-node-informer.ts), each through a forwarder of
 * its own (breakable-proxy.ts) that counts its requests and that the bench breaks:
 *
 * 1. memory: V8 heap and external (Buffer) memory after full collections, against the process's
 *    baseline (modules loaded, nothing listed), per pod, beside the pods' JSON bytes; again with
 *    managedFields stripped (the library's transform; client-node's handlers deleting them from
 *    the cached object, since it has no transform);
 * 2. CPU per event: one update of each pod, the process's CPU time from before the first write
 *    to its handler's last update, divided by the updates;
 * 3. a connection reset: every connection of each informer reset (RST), nothing changed
 *    meanwhile; what the handlers were told and what was sent in the next 12 s;
 * 4. an outage: every connection reset and new ones refused for 10 s, while 100 pods change,
 *    50 are deleted and 50 created; what the handlers were told, what was sent, and when each
 *    informer's handlers have been told the apiserver's state (its cache then checked to hold it);
 * 5. the same, the first WATCH after it answered 410 Expired (as after a longer outage, once the
 *    apiserver no longer has the informers' resourceVersion).
 *
 * Each informer is a process of its own, so that its CPU and memory are its own; the bench's
 * process (the writes, the forwarders) runs at nice 10 once they are started. Progress goes to
 * stderr, the table (Markdown) to stdout.
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { readState } from '../src/cli/dev-cluster/control-plane.ts';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import { newProgress } from '../src/cli/progress.ts';
import { newUpstreamClient } from '../src/upstream/client.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { loadUpstreamConfig } from '../src/upstream/config.ts';
import type { BreakableProxy, ProxyCounts } from './breakable-proxy.ts';
import { startBreakableProxy } from './breakable-proxy.ts';
import { concurrently, kubernetesVersion, startCluster, stopCluster } from './cluster.ts';
import type { HandlerCounts, InformerMode } from './library-vs-client-node-informer.ts';
import type { MemorySample } from './memory-probe.ts';
import { createRealisticPod, deletePod, touchPod } from './realistic-pod.ts';
import { message, stopChild } from './sync.ts';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '3000' },
    'control-plane': { type: 'string' },
  },
});
const pods = Number(values.pods);
const controlPlaneDir = values['control-plane'] ?? process.env.KCP_TEST_CONTROL_PLANE;
if (globalThis.gc === undefined) {
  process.stderr.write('run with node --expose-gc (npm run bench:library)\n');
  process.exit(2);
}

/** Changes made while the informers are cut off (scenario 4). */
const OUTAGE = { ms: 10_000, touched: 100, deleted: 50, created: 50 };
/** How long after a reset the informers are watched (client-node's example restarts 5 s after an error). */
const AFTER_RESET_MS = 12_000;
const WRITE_CONCURRENCY = 16;

const progress = newProgress((line) => process.stderr.write(`${line}\n`), 10_000);
const note = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

interface Informer {
  readonly mode: InformerMode;
  readonly child: ChildProcess;
  readonly proxy: BreakableProxy;
  readonly baseline: Promise<MemorySample>;
  readonly synced: Promise<{ ms: number; objects: number }>;
}

interface Outcome {
  readonly counts: HandlerCounts;
  readonly proxy: ProxyCounts;
  readonly convergedMs: number;
  /** When the connections were let through again, after the mark (ms). */
  readonly upAfterMs: number;
}

/** Sends `request` to the informer's process and resolves with its next message of type `answer`. */
function ask<T>(informer: Informer, request: string, answer: string): Promise<T> {
  const { child } = informer;
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string }): void => {
      if (m.type !== answer) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(m as T);
    };
    const onExit = (code: number | null): void => {
      child.off('message', onMessage);
      reject(new Error(`${informer.mode}: exited (${String(code)}) before answering ${request}`));
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.send(request);
  });
}

async function startInformer(mode: InformerMode, client: UpstreamClient, namespace: string): Promise<Informer> {
  const proxy = await startBreakableProxy(client);
  const child = fork(join(import.meta.dirname, 'library-vs-client-node-informer.ts'), [mode, proxy.url, namespace], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const baseline = message<MemorySample>(child, 'baseline');
  const synced = message<{ ms: number; objects: number }>(child, 'synced');
  // Both are awaited later; a child that dies first rejects both, and the first await reports it.
  baseline.catch(() => undefined);
  synced.catch(() => undefined);
  return { mode, child, proxy, baseline, synced };
}

/** The apiserver's pods of `namespace`: name to resourceVersion. */
async function apiserverState(client: UpstreamClient, namespace: string): Promise<Map<string, string>> {
  const res = await client.request({ method: 'GET', path: `/api/v1/namespaces/${namespace}/pods` });
  const list = JSON.parse(res.body.toString()) as { items: { metadata: { name: string; resourceVersion: string } }[] };
  return new Map(list.items.map((p) => [p.metadata.name, p.metadata.resourceVersion]));
}

/** Pods whose state differs between the informer's cache and the apiserver's: missing, extra or stale. */
function differences(cache: Record<string, string>, truth: Map<string, string>): number {
  let differ = 0;
  for (const [name, rv] of truth) if (cache[name] !== rv) differ++;
  for (const name of Object.keys(cache)) if (!truth.has(name)) differ++;
  return differ;
}

/**
 * Waits until `informer`'s handlers have been told `truth` and its cache holds it; the ms since
 * `since` (Date.now()) that the handlers took, or NaN after `timeoutMs`.
 */
async function converged(informer: Informer, truth: Map<string, string>, since: number, timeoutMs: number): Promise<number> {
  const told = message<{ at: number }>(informer.child, 'told');
  informer.child.send({ expect: Object.fromEntries(truth) });
  const timeout = sleep(timeoutMs).then(() => undefined);
  const answer = await Promise.race([told, timeout]);
  if (answer === undefined) return NaN;
  const { cache } = await ask<{ cache: Record<string, string> }>(informer, 'cache', 'cache');
  if (differences(cache, truth) !== 0) throw new Error(`${informer.mode}: its handlers were told the apiserver's state, its cache differs`);
  return answer.at - since;
}

interface Row {
  readonly label: string;
  readonly cells: Partial<Record<InformerMode, string>>;
}

const int = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–');
const seconds = (ms: number): string => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : '–');
const events = (c: HandlerCounts): string =>
  `${int(c.adds)} adds, ${int(c.updates)} updates, ${int(c.deletes)} deletes; ${int(c.replays)} replayed; ${int(c.errors)} errors told`;
const requests = (p: ProxyCounts): string =>
  `${int(p.lists)} LIST, ${int(p.watches)} WATCH${p.watchLists > 0 ? ` (${int(p.watchLists)} WatchList)` : ''}${p.others > 0 ? `, ${int(p.others)} other` : ''}${p.refused > 0 ? `; ${int(p.refused)} connections refused` : ''}`;

let ownDir: string | undefined;
let state: ControlPlaneState;
if (controlPlaneDir !== undefined && controlPlaneDir !== '') {
  const existing = readState(controlPlaneDir);
  if (existing === undefined) throw new Error(`${controlPlaneDir} holds no control plane`);
  state = existing;
} else {
  ownDir = mkdtempSync(join(tmpdir(), 'kcp-bench-library-'));
  state = await startCluster(ownDir, progress);
}
const client = newUpstreamClient(await loadUpstreamConfig({ kubeconfig: state.kubeconfig }), { connections: 32 });
const namespace = `bench-lib-${randomBytes(3).toString('hex')}`;
const informers: Informer[] = [];
try {
  const created = await client.request({
    method: 'POST',
    path: '/api/v1/namespaces',
    body: JSON.stringify({ metadata: { name: namespace } }),
  });
  if (created.statusCode !== 201) throw new Error(`namespace ${namespace}: ${String(created.statusCode)}`);
  let made = 0;
  const seeding = progress.step(
    `creating ${int(pods)} pods in ${namespace} (create, then status as the kubelet)`,
    () => `${int(made)} made`,
  );
  await concurrently(
    pods,
    async (i) => {
      await createRealisticPod(client, namespace, i);
      made++;
    },
    32,
  );
  seeding.done();
  const listed = JSON.parse((await client.request({ method: 'GET', path: `/api/v1/namespaces/${namespace}/pods` })).body.toString()) as {
    items: { metadata: { managedFields?: unknown } }[];
  };
  const jsonPerPod = listed.items.reduce((s, p) => s + Buffer.byteLength(JSON.stringify(p)), 0) / listed.items.length;
  const managedFieldsPerPod =
    listed.items.reduce((s, p) => s + Buffer.byteLength(JSON.stringify(p.metadata.managedFields ?? [])), 0) / listed.items.length;

  const modes: InformerMode[] = ['client-node', 'library', 'client-node-strip', 'library-transform', 'library-json'];
  note(`starting the informers: ${modes.join(', ')}`);
  for (const mode of modes) informers.push(await startInformer(mode, client, namespace));
  // The informers run at the default priority; this process (writes, forwarders) is the load generator.
  setPriority(10);
  const byMode = (mode: InformerMode): Informer | undefined => informers.find((i) => i.mode === mode);
  const both = (['client-node', 'library'] as const).map((m) => byMode(m)).filter((i) => i !== undefined);

  // 1. Sync and memory.
  const rows: Row[] = [];
  const synced = new Map<InformerMode, { ms: number; objects: number }>();
  const syncRequests = new Map<InformerMode, ProxyCounts>();
  for (const informer of informers) {
    synced.set(informer.mode, await informer.synced);
    syncRequests.set(informer.mode, informer.proxy.counts());
  }
  note('synced; measuring memory');
  const memory = new Map<InformerMode, { heap: number; buffers: number }>();
  for (const informer of informers) {
    const base = await informer.baseline;
    const after = await ask<MemorySample>(informer, 'measure', 'memory');
    const n = synced.get(informer.mode)?.objects ?? NaN;
    memory.set(informer.mode, { heap: (after.heap - base.heap) / n, buffers: (after.buffers - base.buffers) / n });
  }

  // 2. CPU per event.
  for (const informer of informers) await ask(informer, 'mark', 'marked');
  let written = 0;
  const cpuStep = progress.step(`updating each of the ${int(pods)} pods once`, () => `${int(written)} written`);
  const run = randomBytes(3).toString('hex');
  await concurrently(
    pods,
    async (i) => {
      await touchPod(client, namespace, i, `${run}-${String(i)}`);
      written++;
    },
    WRITE_CONCURRENCY,
  );
  cpuStep.done();
  const cpu = new Map<InformerMode, HandlerCounts>();
  for (const informer of informers) {
    const deadline = performance.now() + 120_000;
    for (;;) {
      const counts = await ask<HandlerCounts>(informer, 'counts', 'counts');
      if (counts.updates >= pods || performance.now() > deadline) {
        cpu.set(informer.mode, counts);
        break;
      }
      await sleep(100);
    }
  }

  // 3. A connection reset, nothing changed meanwhile.
  note(`resetting every connection of each informer; watching them for ${String(AFTER_RESET_MS / 1000)} s`);
  for (const informer of informers) {
    await ask(informer, 'mark', 'marked');
    informer.proxy.mark();
  }
  for (const informer of informers) informer.proxy.reset();
  await sleep(AFTER_RESET_MS);
  const reset = new Map<InformerMode, { counts: HandlerCounts; proxy: ProxyCounts }>();
  for (const informer of informers) {
    reset.set(informer.mode, { counts: await ask<HandlerCounts>(informer, 'counts', 'counts'), proxy: informer.proxy.counts() });
    note(`  ${informer.mode} after the reset: ${informer.proxy.counts().log.join('; ')}`);
  }

  // 4. An outage with changes; 5. the same, the informers' resourceVersion expired meanwhile.
  const outage = async (expire: boolean, round: number): Promise<Map<InformerMode, Outcome>> => {
    note(
      `outage: connections refused for ${String(OUTAGE.ms / 1000)} s while ${String(OUTAGE.touched)} pods change, ${String(OUTAGE.deleted)} are deleted, ${String(OUTAGE.created)} created${expire ? '; then the first WATCH answered 410 Expired' : ''}`,
    );
    for (const informer of informers) {
      await ask(informer, 'mark', 'marked');
      informer.proxy.mark();
    }
    const down = performance.now();
    for (const informer of informers) {
      informer.proxy.down();
      if (expire) informer.proxy.expireNextWatch();
    }
    const tag = `${run}-${expire ? 'expired' : 'outage'}`;
    await concurrently(OUTAGE.touched, (i) => touchPod(client, namespace, i, `${tag}-${String(i)}`), WRITE_CONCURRENCY);
    await concurrently(OUTAGE.deleted, (i) => deletePod(client, namespace, pods - 1 - i - round * OUTAGE.deleted), WRITE_CONCURRENCY);
    await concurrently(OUTAGE.created, (i) => createRealisticPod(client, namespace, pods + round * OUTAGE.created + i), WRITE_CONCURRENCY);
    // The state the informers must reach: final, every change is made.
    const truth = await apiserverState(client, namespace);
    await sleep(Math.max(0, OUTAGE.ms - (performance.now() - down)));
    const upAt = performance.now();
    const upWall = Date.now();
    for (const informer of informers) informer.proxy.up();
    const outcomes = new Map<InformerMode, Outcome>();
    // All at once, each timed from the end of the outage.
    const convergedMs = await Promise.all(informers.map((informer) => converged(informer, truth, upWall, 60_000)));
    // Events still on their way once the state is told (a relist's updates) are counted too.
    await sleep(1_000);
    for (const [i, informer] of informers.entries()) {
      const proxy = informer.proxy.counts();
      outcomes.set(informer.mode, {
        counts: await ask<HandlerCounts>(informer, 'counts', 'counts'),
        proxy,
        convergedMs: convergedMs[i] ?? NaN,
        upAfterMs: upAt - down,
      });
      note(`  ${informer.mode}: ${proxy.log.join('; ')}`);
    }
    return outcomes;
  };
  const outageOutcomes = await outage(false, 0);
  const expiredOutcomes = await outage(true, 1);

  const cell = <T>(map: Map<InformerMode, T>, format: (value: T) => string): Partial<Record<InformerMode, string>> =>
    Object.fromEntries(both.map((i) => [i.mode, ((v) => (v === undefined ? '–' : format(v)))(map.get(i.mode))]));
  rows.push({ label: 'pods held after sync', cells: cell(synced, (s) => int(s.objects)) });
  rows.push({ label: `start to synced (ms; the ${String(informers.length)} informers at once)`, cells: cell(synced, (s) => int(s.ms)) });
  rows.push({ label: 'requests to sync', cells: cell(syncRequests, requests) });
  rows.push({ label: 'heap B/pod', cells: cell(memory, (m) => int(m.heap)) });
  rows.push({ label: 'external (Buffer) B/pod', cells: cell(memory, (m) => int(m.buffers)) });
  rows.push({ label: '(heap + external) ÷ JSON bytes', cells: cell(memory, (m) => ((m.heap + m.buffers) / jsonPerPod).toFixed(2)) });
  const stripped = memory.get('client-node-strip');
  const transformed = memory.get('library-transform');
  rows.push({
    label: 'heap + external B/pod, managedFields stripped',
    cells: {
      'client-node':
        stripped === undefined ? '–' : `${int(stripped.heap + stripped.buffers)} (handler deletes them from the cached object)`,
      library:
        transformed === undefined ? '–' : `${int(transformed.heap + transformed.buffers)} (setTransform(transformStripManagedFields))`,
    },
  });
  const perUpdate = (c: HandlerCounts | undefined): string =>
    c === undefined ? '–' : c.updates >= pods ? int(c.cpuMicros / c.updates) : `${int(c.updates)} of ${int(pods)} told`;
  rows.push({
    label: 'CPU µs per update event (handler told)',
    cells: { 'client-node': perUpdate(cpu.get('client-node')), library: perUpdate(cpu.get('library')) },
  });
  rows.push({
    label: 'the same, managedFields stripped',
    cells: {
      'client-node': `${perUpdate(cpu.get('client-node-strip'))} (in the handler)`,
      library: `${perUpdate(cpu.get('library-transform'))} (setTransform)`,
    },
  });
  rows.push({
    label: 'the same, objects handed out as wire JSON',
    cells: { 'client-node': '(watch events are parsed JSON already)', library: `${perUpdate(cpu.get('library-json'))} (jsonDecoder)` },
  });
  rows.push({ label: 'connection reset: handlers told in 12 s', cells: cell(reset, (r) => events(r.counts)) });
  rows.push({ label: 'connection reset: requests in 12 s', cells: cell(reset, (r) => requests(r.proxy)) });
  rows.push({ label: 'connection reset: watching again after', cells: cell(reset, (r) => seconds(r.proxy.firstWatchMs)) });
  for (const [title, outcomes] of [
    [`${String(OUTAGE.ms / 1000)} s outage with changes`, outageOutcomes],
    [`the same, resourceVersion expired (410)`, expiredOutcomes],
  ] as const) {
    rows.push({ label: `${title}: handlers told`, cells: cell(outcomes, (o) => events(o.counts)) });
    rows.push({ label: `${title}: requests (during and after)`, cells: cell(outcomes, (o) => requests(o.proxy)) });
    rows.push({ label: `${title}: first WATCH after the end`, cells: cell(outcomes, (o) => seconds(o.proxy.firstWatchMs - o.upAfterMs)) });
    rows.push({
      label: `${title}: handlers told the apiserver's state`,
      cells: cell(outcomes, (o) => (Number.isFinite(o.convergedMs) ? `${seconds(o.convergedMs)} after the end` : 'not within 60 s')),
    });
  }

  const kubernetes = await kubernetesVersion(client);
  console.log(
    `\n${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${String(pods)} pods (${int(jsonPerPod)} B of JSON each, ${int(managedFieldsPerPod)} B of it managedFields), Kubernetes ${kubernetes}, Node ${process.version}\n`,
  );
  console.log('| | client-node `makeInformer` | `@kube-cache-proxy/client/informer` |');
  console.log('| --- | --- | --- |');
  for (const row of rows) console.log(`| ${row.label} | ${row.cells['client-node'] ?? '–'} | ${row.cells.library ?? '–'} |`);
  console.log(
    `\nThe outage: ${String(OUTAGE.touched)} pods updated, ${String(OUTAGE.deleted)} deleted, ${String(OUTAGE.created)} created (each a create and a status write) while every connection was refused.`,
  );
} finally {
  note('stopping the informers, deleting the pods');
  for (const informer of informers) {
    await stopChild(informer.child).catch(() => undefined);
    await informer.proxy.close();
  }
  // No controller-manager empties a deleted namespace: its pods go first.
  await client
    .request({ method: 'DELETE', path: `/api/v1/namespaces/${namespace}/pods`, body: JSON.stringify({ gracePeriodSeconds: 0 }) })
    .catch(() => undefined);
  await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${namespace}` }).catch(() => undefined);
  note('closing');
  await client.close();
  note('closed');
  if (ownDir !== undefined) await stopCluster(ownDir);
}
