/**
 * The agents of each simulated node, as the fleet runs them against a layout:
 *   pods by node   a client-go v0.37.2 shared informer (tools/goclient --mode=node-agent), one Go
 *                  process per node, protobuf, WatchList as client-go sends it by default
 *   light agents   `lightAgents` per node (kube-proxy, a CNI agent, a DNS agent...), each an
 *                  RV-unset LIST of Services, EndpointSlices and Namespaces (JSON) as an informer
 *                  starts, then a watch of each from the light raw socket client (watch-client.ts,
 *                  one process per WATCHES_PER_PROCESS watches)
 *   RV-unset LISTs each node's pods LISTed every `listSeconds`, staggered over the nodes
 * Every event is recorded with its arrival on CLOCK_MONOTONIC, to be matched with the writes.
 */
import { fork, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import type { AgentTarget } from './fleet-layouts.ts';
import type { FleetScope } from './fleet-seed.ts';
import { fleetNode } from './fleet-seed.ts';
import type { WatchClientResult } from './watch-client.ts';
import { nextMessage, send } from './watch-client.ts';

const CLIENT = join(import.meta.dirname, 'watch-client.ts');
/** Light watches per watch-client process: far from the per-process open-file limit. */
const WATCHES_PER_PROCESS = 600;
/** Go agents started at once. */
const START_CONCURRENCY = 8;
const SYNC_TIMEOUT_MS = 180_000;
/** The light agents' initial LISTs in flight at once. */
const LIST_CONCURRENCY = 8;
/** The light watches of a node, in this order (watcher index mod 3). */
export const LIGHT_WATCHES = ['services', 'endpointslices', 'namespaces'] as const;
const LIGHT_PATHS: Record<(typeof LIGHT_WATCHES)[number], string> = {
  services: '/api/v1/services',
  endpointslices: '/apis/discovery.k8s.io/v1/endpointslices',
  namespaces: '/api/v1/namespaces',
};

/** One handler call of a node's pod informer. */
export interface PodEvent {
  /** `ADDED ns/name`, `MODIFIED ns/name`, `DELETED ns/name` (DELETED-UNKNOWN for a tombstone). */
  readonly key: string;
  /** Arrival, ms on CLOCK_MONOTONIC. */
  readonly at: number;
}

export interface AgentRecords {
  /** Per node, its pod informer's events after sync. */
  readonly pods: readonly (readonly PodEvent[])[];
  /** Per EndpointSlice watch (node by node), its MODIFIED events (rv, arrival). */
  readonly slices: readonly { readonly rv: number; readonly at: number }[][];
  /** Watch errors the informers reported, light watches closed early. */
  readonly watchErrors: number;
  readonly closedWatches: number;
  readonly lists: number;
  readonly listFailures: number;
}

export interface RunningAgents {
  /** Events the light watches recorded so far (to know when delivery has caught up). */
  recorded(): Promise<number>;
  /** Stops every agent and hands back what they recorded. */
  stop(): Promise<AgentRecords>;
}

/**
 * Reads a response body to its end, as a client decoding it would (body.dump() stops reading
 * after 128 KiB and closes the connection: the apiserver would send a LIST only in part).
 */
async function readAll(body: AsyncIterable<Buffer>): Promise<number> {
  let bytes = 0;
  for await (const chunk of body) bytes += chunk.length;
  return bytes;
}

interface GoAgent {
  readonly child: ChildProcess;
  readonly output: Promise<string>;
}

function startGoAgent(binary: string, kubeconfig: string, node: string): Promise<GoAgent> {
  const child = spawn(
    binary,
    [`--kubeconfig=${kubeconfig}`, '--mode=node-agent', `--node=${node}`, '--content-type=application/vnd.kubernetes.protobuf'],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  // 'close', not 'exit': the process may exit before its stdout has all been read.
  const output = new Promise<string>((resolve) => {
    child.once('close', () => {
      resolve(out);
    });
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the Go agent of ${node} did not sync in ${String(SYNC_TIMEOUT_MS / 1000)} s: ${err.slice(-500)}`));
    }, SYNC_TIMEOUT_MS);
    child.stderr.on('data', (chunk: Buffer) => {
      err = (err + chunk.toString()).slice(-4000);
      if (err.includes('synced\n')) {
        clearTimeout(timer);
        resolve({ child, output });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the Go agent of ${node} exited (${String(code)}): ${err.slice(-500)}`));
    });
  });
}

function parseGoOutput(text: string): { events: PodEvent[]; watchErrors: number } {
  const events: PodEvent[] = [];
  let watchErrors = 0;
  for (const line of text.split('\n')) {
    const [kind, name, , at] = line.split(' ');
    if (kind === 'watch-errors') watchErrors = Number(name);
    else if (kind !== undefined && name !== undefined && at !== undefined) events.push({ key: `${kind} ${name}`, at: Number(at) / 1e6 });
  }
  return { events, watchErrors };
}

export interface AgentSpec {
  /** The Go program (tools/goclient, built). */
  readonly binary: string;
  /** The resourceVersion the light watches start from (after every cache synced, before the churn). */
  readonly resourceVersion: string;
  readonly listSeconds: number;
  /** Light agents per node, each with its own LISTs and watches. */
  readonly lightAgents: number;
  /** The seed's scope: targets[i] serves the agents of its node i; when shared, the light watches record its namespaces' events alone. */
  readonly scope: FleetScope;
}

/** The light agents' LISTs as their informers start: each type once per agent, a few at a time. */
async function initialLists(
  targets: readonly AgentTarget[],
  lightAgents: number,
  dispatcherFor: (t: AgentTarget) => Agent,
): Promise<number> {
  const work = targets.flatMap((t) =>
    Array.from({ length: lightAgents }, () => LIGHT_WATCHES.map((w) => ({ t, path: LIGHT_PATHS[w] }))).flat(),
  );
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(LIST_CONCURRENCY, work.length) }, async () => {
      while (next < work.length) {
        const item = work[next++];
        if (item === undefined) break;
        const res = await request(`${item.t.url}${item.path}`, {
          dispatcher: dispatcherFor(item.t),
          headers: { ...item.t.headers, accept: 'application/json' },
        });
        await readAll(res.body);
        if (res.statusCode !== 200) throw new Error(`LIST ${item.path} at ${item.t.url}: ${String(res.statusCode)}`);
      }
    }),
  );
  return work.length;
}

export async function startAgents(
  targets: readonly AgentTarget[],
  spec: AgentSpec,
  report: (line: string) => void,
): Promise<RunningAgents> {
  const goAgents: (GoAgent | undefined)[] = new Array<GoAgent | undefined>(targets.length);
  const clients: ChildProcess[] = [];
  const dispatchers = new Map<string, Agent>();
  const dispatcherFor = (t: AgentTarget): Agent => {
    let d = dispatchers.get(t.url);
    if (d === undefined) {
      d = new Agent({ connections: 4, ...(t.ca === undefined ? {} : { connect: { ca: t.ca } }) });
      dispatchers.set(t.url, d);
    }
    return d;
  };
  let initial = 0;
  const stopGo = (): void => {
    for (const agent of goAgents) if (agent !== undefined) agent.child.stdin?.end();
  };
  try {
    let next = 0;
    let synced = 0;
    await Promise.all(
      Array.from({ length: Math.min(START_CONCURRENCY, targets.length) }, async () => {
        while (next < targets.length) {
          const i = next++;
          goAgents[i] = await startGoAgent(spec.binary, targets[i]?.kubeconfig ?? '', fleetNode(spec.scope, i));
          if (++synced % 10 === 0 || synced === targets.length) report(`${String(synced)}/${String(targets.length)} pod informers synced`);
        }
      }),
    );
    initial = await initialLists(targets, spec.lightAgents, dispatcherFor);
    report(`${String(initial)} initial LISTs of the light agents done`);
    const query = `?watch=1&allowWatchBookmarks=true&resourceVersion=${spec.resourceVersion}`;
    const perNode = spec.lightAgents * LIGHT_WATCHES.length;
    const paths = targets.flatMap(() =>
      Array.from({ length: perNode }, (_, k) => `${LIGHT_PATHS[LIGHT_WATCHES[k % LIGHT_WATCHES.length] ?? 'namespaces']}${query}`),
    );
    const urls = targets.flatMap((t) => Array.from({ length: perNode }, () => t.url));
    const first = targets[0];
    for (let from = 0; from < paths.length; from += WATCHES_PER_PROCESS) {
      const child = fork(CLIENT, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      clients.push(child);
      const ready = nextMessage<{ opened: number; failed: number }>(child, 'ready');
      send(child, {
        type: 'start',
        url: first?.url ?? '',
        headers: first?.headers ?? {},
        ca: first?.ca,
        paths: paths.slice(from, from + WATCHES_PER_PROCESS),
        urls: urls.slice(from, from + WATCHES_PER_PROCESS),
        ...(spec.scope.shared ? { namespaces: spec.scope.namespaces } : {}),
      });
      const { failed } = await ready;
      if (failed > 0) throw new Error(`${String(failed)} light watches failed to open`);
    }
    report(`${String(paths.length)} light watches open`);
  } catch (error) {
    stopGo();
    for (const child of clients) child.kill();
    await Promise.allSettled([...dispatchers.values()].map((d) => d.close()));
    throw error;
  }

  // The RV-unset LISTs: every node's pods every listSeconds, staggered.
  let lists = 0;
  let listFailures = 0;
  const interval = (spec.listSeconds * 1000) / targets.length;
  let k = 0;
  const timer = setInterval(() => {
    const i = k++ % targets.length;
    const t = targets[i];
    if (t === undefined) return;
    const path = `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${fleetNode(spec.scope, i)}`)}`;
    request(`${t.url}${path}`, { dispatcher: dispatcherFor(t), headers: { ...t.headers, accept: 'application/vnd.kubernetes.protobuf' } })
      .then(async (res) => {
        await readAll(res.body);
        if (res.statusCode === 200) lists++;
        else listFailures++;
      })
      .catch(() => listFailures++);
  }, interval);

  return {
    async recorded() {
      const counts = await Promise.all(
        clients.map((child) => {
          const count = nextMessage<{ recorded: number }>(child, 'count');
          send(child, { type: 'count' });
          return count;
        }),
      );
      return counts.reduce((sum, c) => sum + c.recorded, 0);
    },
    async stop() {
      clearInterval(timer);
      const results = await Promise.all(
        clients.map((child) => {
          const result = nextMessage<WatchClientResult>(child, 'result');
          send(child, { type: 'finish' });
          return result;
        }),
      );
      stopGo();
      const outputs = await Promise.all(goAgents.map((a) => a?.output ?? Promise.resolve('')));
      await Promise.allSettled([...dispatchers.values()].map((d) => d.close()));
      const slices: { rv: number; at: number }[][] = Array.from({ length: targets.length * spec.lightAgents }, () => []);
      let closedWatches = 0;
      results.forEach((r, p) => {
        closedWatches += r.closed;
        for (let j = 0; j < r.rv.length; j++) {
          const index = p * WATCHES_PER_PROCESS + (r.watcher[j] ?? 0);
          if (LIGHT_WATCHES[index % LIGHT_WATCHES.length] !== 'endpointslices') continue;
          slices[Math.floor(index / LIGHT_WATCHES.length)]?.push({ rv: r.rv[j] ?? 0, at: r.time[j] ?? 0 });
        }
      });
      let watchErrors = 0;
      const pods = outputs.map((text) => {
        const parsed = parseGoOutput(text);
        watchErrors += parsed.watchErrors;
        return parsed.events;
      });
      return { pods, slices, watchErrors, closedWatches, lists: lists + initial, listFailures };
    },
  };
}
