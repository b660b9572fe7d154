/**
 * The well-behaved clients of the hostile-client suite, each its own identity (a ServiceAccount
 * token), through the shared proxy:
 *
 * - a reflector-style watcher of its namespace's pods (test/helpers/reflector-watcher.ts: LIST,
 *   WATCH from its RV with bookmarks, client-go's resumption and backoff), audited against the
 *   writers' acknowledged writes (test/helpers/watch-audit.ts);
 * - a reader that, `readRate` times a second and one request at a time (a controller's shape),
 *   reads in turn: its namespace's pods (LIST), one of them (GET), its ConfigMaps (LIST), one of
 *   them (GET); no resourceVersion (what a client sends without a flag: the proxy's default
 *   read consistency answers it from the cache while the cache is fresh);
 * - a writer per namespace that creates, updates and deletes pods straight at the apiserver
 *   during a phase, so that the watches carry events.
 *
 * They run in a process of their own under `nice` (good-clients-process.ts), so that they do not
 * take the proxy's CPU, driven over IPC by `spawnGoodClients`; `newGoodClients` is the same thing
 * in this process. Phases: between `startPhase` and `endPhase` the writers write and each read
 * is counted; `endPhase` stops the writers, waits for the phase's reads still in flight, lets
 * every watcher reach the apiserver's own LIST of its namespace, and audits the phase's writes.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { UpstreamClient } from '../../src/upstream/client.ts';
import { newUpstreamClient } from '../../src/upstream/client.ts';
import { loadUpstreamConfig } from '../../src/upstream/config.ts';
import { quantile } from '../../bench/stats.ts';
import type { PodChurn } from '../../test/helpers/pod-churn.ts';
import { newPodChurn } from '../../test/helpers/pod-churn.ts';
import { seededRandom } from '../../test/helpers/prng.ts';
import type { ReflectorWatcher } from '../../test/helpers/reflector-watcher.ts';
import { startReflectorWatcher } from '../../test/helpers/reflector-watcher.ts';
import type { AcknowledgedWrite } from '../../test/helpers/watch-audit.ts';
import { auditWatch, caughtUp } from '../../test/helpers/watch-audit.ts';
import type { GoodClient } from './tenants.ts';
import { configMapName } from './tenants.ts';

export interface GoodClientsSpec {
  /** The shared proxy, https://HOST:PORT. */
  readonly url: string;
  /** Its CA (PEM). */
  readonly ca: string;
  readonly clients: readonly GoodClient[];
  readonly configMaps: number;
  /** Reads per second of each client. */
  readonly readRate: number;
  /** Pod writes per second over all namespaces. */
  readonly writeRate: number;
  /** Pods each namespace's writer writes. */
  readonly podsPerNamespace: number;
  /** The admin's kubeconfig: the writers and the truth go straight to the apiserver. */
  readonly adminKubeconfig: string;
  readonly seed: number;
}

/** What the good clients saw in one phase. */
export interface PhaseReport {
  /** Reads started in the phase. */
  readonly reads: number;
  /** Of those, answered otherwise than 200 (or 404 for a pod deleted meanwhile), or not at all. */
  readonly failed: number;
  /** Status codes (or error names) of the failed reads, with counts. */
  readonly failures: Readonly<Record<string, number>>;
  /** Latency of the phase's reads, ms (failed ones included: a client waits for them too). */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /**
   * The good clients' own event-loop delay over the phase, ms (p99, max): time their process could
   * not run, which every read in flight then counts as latency that is not the proxy's.
   */
  readonly ownLoopP99Ms: number;
  readonly ownLoopMaxMs: number;
  /** Acknowledged pod writes of the phase. */
  readonly written: number;
  /** Summed over the watchers. */
  readonly delivered: number;
  readonly relisted: number;
  readonly lost: number;
  readonly duplicated: number;
  readonly reordered: number;
  /** Watchers that did not reach the apiserver's state within CATCH_UP_MS (their missing writes count as lost). */
  readonly behind: number;
  readonly problems: readonly string[];
}

/** What `status` says between phases: whether the clients are back at work after a restart. */
export interface GoodClientsStatus {
  /** Watchers with a watch open now. */
  readonly watching: number;
  /** Clients whose latest read succeeded. */
  readonly readingOk: number;
  readonly clients: number;
}

export interface GoodClients {
  status(): Promise<GoodClientsStatus>;
  /** Starts every watcher's backoff over and ends its wait: the harness restarted the proxy on purpose. */
  wake(): Promise<void>;
  startPhase(): Promise<void>;
  endPhase(): Promise<PhaseReport>;
  stop(): Promise<void>;
}

/** A read that takes longer is counted failed: far past any bound, short of hanging a phase. */
const READ_TIMEOUT_MS = 60_000;
/** How long the watchers may take to reach the apiserver's state after a phase: past client-go's longest backoff. */
const CATCH_UP_MS = 90_000;
/** How long watchers may take to sync at the start (50 of them on a busy 2-core machine). */
const SYNC_MS = 120_000;
const MAX_PROBLEMS = 10;

interface ReadSample {
  readonly ms: number;
  /** undefined when it succeeded. */
  readonly failure: string | undefined;
}

/** The good clients in this process. */
export async function newGoodClients(spec: GoodClientsSpec): Promise<GoodClients> {
  const random = seededRandom(spec.seed);
  const admin: UpstreamClient = newUpstreamClient(await loadUpstreamConfig({ kubeconfig: spec.adminKubeconfig }), { connections: 16 });
  const namespaces = [...new Set(spec.clients.map((c) => c.namespace))];
  const perNamespaceRate = spec.writeRate / namespaces.length;
  const churns = new Map<string, PodChurn>(
    namespaces.map((namespace) => [
      namespace,
      newPodChurn({ client: admin, namespace, objects: spec.podsPerNamespace, writesPerSecond: perNamespaceRate, random }),
    ]),
  );
  const stopper = new AbortController();
  const agents: Agent[] = [];
  const watchers: { readonly client: GoodClient; readonly watcher: ReflectorWatcher }[] = [];
  const lastReadOk = new Map<string, boolean>();
  /** Samples of the current phase; undefined between phases. */
  let samples: ReadSample[] | undefined;
  // Resolution 1 ms: the process's stalls that reads in flight count as latency.
  const ownLoop = monitorEventLoopDelay({ resolution: 1 });
  ownLoop.enable();
  /** Reads of the current phase still in flight. */
  const inFlight = new Set<Promise<void>>();

  for (const client of spec.clients) {
    const dispatcher = new Agent({ connect: { ca: spec.ca } });
    agents.push(dispatcher);
    const headers = { authorization: `Bearer ${client.token}` };
    const watcher = startReflectorWatcher({
      name: `${client.namespace}/${client.name}`,
      url: spec.url,
      path: `/api/v1/namespaces/${client.namespace}/pods`,
      dispatcher,
      headers,
      random,
    });
    watchers.push({ client, watcher });
  }
  await Promise.race([
    Promise.all(watchers.map((w) => w.watcher.synced)),
    sleep(SYNC_MS, undefined, { ref: false }).then(() => {
      throw new Error(`${String(watchers.length)} good watchers did not sync within ${String(SYNC_MS / 1000)} s`);
    }),
  ]);

  const readOnce = async (client: GoodClient, dispatcher: Agent, turn: number, watcher: ReflectorWatcher): Promise<ReadSample> => {
    const base = `/api/v1/namespaces/${client.namespace}`;
    const pods = [...watcher.store.keys()];
    let path: string;
    let notFoundOk = false;
    switch (turn % 4) {
      case 0:
        path = `${base}/pods`;
        break;
      case 1: {
        const key = pods[Math.floor(random() * pods.length)];
        // A pod the watcher knows may be deleted by the time the GET arrives: 404 is then the right answer.
        path = key === undefined ? `${base}/configmaps/${configMapName(0)}` : `${base}/pods/${key.slice(key.indexOf('/') + 1)}`;
        notFoundOk = key !== undefined;
        break;
      }
      case 2:
        path = `${base}/configmaps`;
        break;
      default:
        path = `${base}/configmaps/${configMapName(Math.floor(random() * spec.configMaps))}`;
    }
    const started = performance.now();
    try {
      const res = await request(`${spec.url}${path}`, {
        dispatcher,
        headers: { authorization: `Bearer ${client.token}`, accept: 'application/json' },
        signal: AbortSignal.any([stopper.signal, AbortSignal.timeout(READ_TIMEOUT_MS)]),
      });
      await res.body.dump({ limit: Infinity });
      const ok = res.statusCode === 200 || (notFoundOk && res.statusCode === 404);
      return { ms: performance.now() - started, failure: ok ? undefined : String(res.statusCode) };
    } catch (error) {
      // undici's errors name their cause in `code` (UND_ERR_SOCKET, ECONNREFUSED); an abort in `name`.
      const code = error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
      return { ms: performance.now() - started, failure: code ?? (error instanceof Error ? error.name : 'error') };
    }
  };

  const readLoop = async (client: GoodClient, dispatcher: Agent, watcher: ReflectorWatcher): Promise<void> => {
    const interval = 1000 / spec.readRate;
    // Spread the clients over the interval, so that their reads do not come in waves.
    await sleep(random() * interval, undefined, { signal: stopper.signal });
    let next = performance.now();
    for (let turn = Math.floor(random() * 4); !stopper.signal.aborted; turn++) {
      const phase = samples;
      const reading = readOnce(client, dispatcher, turn, watcher).then((sample) => {
        lastReadOk.set(client.name, sample.failure === undefined);
        phase?.push(sample);
      });
      if (phase !== undefined) {
        inFlight.add(reading);
        void reading.finally(() => inFlight.delete(reading));
      }
      await reading;
      next = Math.max(next + interval, performance.now());
      await sleep(next - performance.now(), undefined, { signal: stopper.signal });
    }
  };
  const readers = watchers.map(({ client, watcher }, i) =>
    readLoop(client, agents[i] as Agent, watcher).catch((error: unknown) => {
      if (!stopper.signal.aborted) throw error;
    }),
  );

  let writing: Promise<void>[] = [];
  let stopWriting = false;
  let stopping: Promise<void> | undefined;
  let phaseStart: { writes: Map<string, number>; counts: { duplicated: number; reordered: number } } | undefined;

  return {
    status() {
      return Promise.resolve({
        watching: watchers.filter((w) => {
          const last = w.watcher.segments.at(-1);
          return last !== undefined && last.endedAt === undefined;
        }).length,
        readingOk: [...lastReadOk.values()].filter(Boolean).length,
        clients: spec.clients.length,
      });
    },
    wake() {
      for (const { watcher } of watchers) watcher.wake();
      return Promise.resolve();
    },
    startPhase() {
      samples = [];
      ownLoop.reset();
      stopWriting = false;
      phaseStart = {
        writes: new Map([...churns].map(([namespace, churn]) => [namespace, churn.writes.length])),
        counts: {
          duplicated: watchers.reduce((n, w) => n + w.watcher.counts.duplicated, 0),
          reordered: watchers.reduce((n, w) => n + w.watcher.counts.reordered, 0),
        },
      };
      // Spread the namespaces' writers over their interval, so that the writes come one by one at
      // the total rate, not in a burst of every namespace at once each interval: a burst lines up
      // with the same few readers' turns each time, whose p99 would then depend on where the phase
      // happened to start.
      const stagger = 1000 / perNamespaceRate / churns.size;
      writing = [...churns.values()].map((churn, i) =>
        sleep(i * stagger, undefined, { signal: stopper.signal }).then(
          () => (stopWriting ? undefined : churn.run(() => stopWriting, stopper.signal)),
          () => undefined,
        ),
      );
      return Promise.resolve();
    },
    async endPhase() {
      const phase = samples ?? [];
      samples = undefined;
      const ownLoopP99Ms = ownLoop.percentile(99) / 1e6;
      const ownLoopMaxMs = ownLoop.max / 1e6;
      stopWriting = true;
      await Promise.all(writing);
      await Promise.all([...inFlight]);
      const start = phaseStart;
      if (start === undefined) throw new Error('endPhase before startPhase');
      const problems: string[] = [];
      let behind = 0;
      const totals = { written: 0, delivered: 0, relisted: 0, lost: 0 };
      for (const [namespace, churn] of churns) {
        const writes: AcknowledgedWrite[] = churn.writes.slice(start.writes.get(namespace) ?? 0);
        totals.written += writes.length;
        const final = await podsOf(admin, namespace);
        const scope = watchers.filter((w) => w.client.namespace === namespace).map((w) => w.watcher);
        const deadline = performance.now() + CATCH_UP_MS;
        while (!scope.every((w) => caughtUp(w, final)) && performance.now() < deadline) await sleep(100);
        for (const watcher of scope) {
          if (!caughtUp(watcher, final)) behind++;
          const audit = auditWatch(watcher, { writes, final, auditedAt: performance.now() });
          totals.delivered += audit.delivered;
          totals.relisted += audit.relisted;
          totals.lost += audit.lost;
          for (const p of audit.problems) if (problems.length < MAX_PROBLEMS && !watcher.problems.includes(p)) problems.push(p);
        }
      }
      const failures: Record<string, number> = {};
      for (const s of phase) if (s.failure !== undefined) failures[s.failure] = (failures[s.failure] ?? 0) + 1;
      const ms = phase.map((s) => s.ms);
      return {
        reads: phase.length,
        failed: phase.filter((s) => s.failure !== undefined).length,
        failures,
        p50Ms: quantile(ms, 0.5),
        p99Ms: quantile(ms, 0.99),
        maxMs: ms.length === 0 ? NaN : Math.max(...ms),
        ownLoopP99Ms,
        ownLoopMaxMs,
        ...totals,
        duplicated: watchers.reduce((n, w) => n + w.watcher.counts.duplicated, 0) - start.counts.duplicated,
        reordered: watchers.reduce((n, w) => n + w.watcher.counts.reordered, 0) - start.counts.reordered,
        behind,
        problems,
      };
    },
    stop() {
      stopping ??= (async () => {
        stopper.abort();
        stopWriting = true;
        await Promise.allSettled(writing);
        await Promise.all(readers);
        await Promise.all(watchers.map((w) => w.watcher.stop()));
        await Promise.all(agents.map((a) => a.close()));
        await admin.close();
      })();
      return stopping;
    },
  };
}

/** The apiserver's own state of a namespace's pods (key → RV). */
async function podsOf(admin: UpstreamClient, namespace: string): Promise<Map<string, number>> {
  const res = await admin.request({ method: 'GET', path: `/api/v1/namespaces/${namespace}/pods` });
  if (res.statusCode !== 200) throw new Error(`listing pods of ${namespace}: ${String(res.statusCode)}`);
  const list = JSON.parse(res.body.toString()) as { items: { metadata: { name: string; resourceVersion: string } }[] };
  return new Map(list.items.map((p) => [`${namespace}/${p.metadata.name}`, Number(p.metadata.resourceVersion)]));
}

/** The operations of GoodClients, as the IPC messages name them. */
type Operation = 'status' | 'wake' | 'startPhase' | 'endPhase' | 'stop';
interface Call {
  readonly id: number;
  readonly op: Operation;
}
type Reply = { readonly id: number; readonly result: unknown } | { readonly id: number; readonly error: string } | { readonly ready: true };

const PROCESS = join(import.meta.dirname, 'good-clients-process.ts');
/** Below the proxy's default priority: the clients wait for the CPU, the proxy does not. */
const NICENESS = 10;

/**
 * The good clients in a process of their own under `nice`, with the same interface. The process
 * ends when stop() returns, or with this one (its IPC channel closes).
 */
export async function spawnGoodClients(spec: GoodClientsSpec, log: (line: string) => void): Promise<GoodClients> {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-good-clients-'));
  const file = join(dir, 'spec.json');
  // The spec holds tokens: readable by this user only, removed once the child has read it.
  writeFileSync(file, JSON.stringify(spec), { mode: 0o600 });
  const child = spawn('nice', ['-n', String(NICENESS), process.execPath, PROCESS, file], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let exited: Error | undefined;
  let ready: (() => void) | undefined;
  let failed: ((error: Error) => void) | undefined;
  const started = new Promise<void>((resolve, reject) => {
    ready = resolve;
    failed = reject;
  });
  child.on('message', (message: Reply) => {
    if ('ready' in message) {
      rmSync(dir, { recursive: true, force: true });
      ready?.();
      return;
    }
    const call = pending.get(message.id);
    pending.delete(message.id);
    if ('error' in message) call?.reject(new Error(message.error));
    else call?.resolve(message.result);
  });
  child.once('exit', (code, signal) => {
    rmSync(dir, { recursive: true, force: true });
    exited = new Error(`the good clients' process exited (${String(code ?? signal)}): ${stderr.slice(-2000)}`);
    failed?.(exited);
    for (const call of pending.values()) call.reject(exited);
    pending.clear();
  });
  await started;
  log(`good clients: ${String(spec.clients.length)} watching and reading (pid ${String(child.pid)}, nice ${String(NICENESS)})`);
  let next = 0;
  const call = <T>(op: Operation): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (exited !== undefined) {
        reject(exited);
        return;
      }
      const id = next++;
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      child.send({ id, op } satisfies Call);
    });
  return {
    status: () => call<GoodClientsStatus>('status'),
    wake: () => call<undefined>('wake'),
    startPhase: () => call<undefined>('startPhase'),
    endPhase: () => call<PhaseReport>('endPhase'),
    async stop() {
      if (exited !== undefined) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      await call<undefined>('stop').catch(() => undefined);
      await gone;
    },
  };
}

/** The child's side: serves the calls of spawnGoodClients over IPC (good-clients-process.ts). */
export async function serveGoodClients(spec: GoodClientsSpec): Promise<void> {
  const clients = await newGoodClients(spec);
  const send = (reply: Reply): void => {
    process.send?.(reply);
  };
  process.on('message', (message: Call) => {
    const run = async (): Promise<unknown> => {
      switch (message.op) {
        case 'status':
          return clients.status();
        case 'wake':
          return clients.wake();
        case 'startPhase':
          return clients.startPhase();
        case 'endPhase':
          return clients.endPhase();
        case 'stop':
          await clients.stop();
          return undefined;
      }
    };
    run().then(
      (result) => {
        send({ id: message.id, result: result ?? null });
        if (message.op === 'stop') process.disconnect();
      },
      (error: unknown) => {
        send({ id: message.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
      },
    );
  });
  // The parent gone: nothing left to serve.
  process.once('disconnect', () => {
    void clients.stop().finally(() => process.exit(0));
  });
  send({ ready: true });
}
