/**
 * One pod informer of one namespace in a process of its own, for library-vs-client-node.ts:
 * `node --expose-gc bench/library-vs-client-node-informer.ts MODE SERVER NAMESPACE`, where MODE is
 *
 * - `client-node`: @kubernetes/client-node's makeInformer, restarted 5 s after each `error`
 *   event as client-node's informer example does (its informer stops on an error);
 * - `client-node-strip`: the same, its handlers deleting `metadata.managedFields` from the object
 *   they are given, which is the object its cache holds (client-node has no transform);
 * - `library`: kube-cache-proxy/informer's newSharedInformerFactory (the sources, as the
 *   compiled package runs them), objects decoded to client-node's models;
 * - `library-transform`: the same with `setTransform(transformStripManagedFields)`;
 * - `library-json`: the library handing out the wire JSON (`jsonDecoder`) instead of models.
 *
 * SERVER is the plain-HTTP address of the bench's forwarder. The handlers count adds, updates and
 * deletes, and replays: an add or update of a resourceVersion of that pod already delivered.
 * Protocol with the parent (IPC): sends `baseline` (modules loaded, nothing listed), `synced`;
 * answers `measure` (memory after full collections), `mark` (counting and CPU time afresh),
 * `counts`, `cache` (each held pod's name and resourceVersion), `{ expect }` (`told` once the
 * handlers have been told that state) and `stop`.
 */
import { CoreV1Api, KubeConfig, makeInformer } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { isDeletedFinalStateUnknown, jsonDecoder, newSharedInformerFactory, transformStripManagedFields } from '../src/library/informer.ts';
import { answerParent, sampleMemory } from './memory-probe.ts';

export type InformerMode = 'client-node' | 'client-node-strip' | 'library' | 'library-transform' | 'library-json';

/** What the handlers saw since the last mark. */
export interface HandlerCounts {
  readonly type: 'counts';
  readonly adds: number;
  readonly updates: number;
  readonly deletes: number;
  /** Adds and updates of a (name, resourceVersion) already delivered: a relist or a watch replaying what was told. */
  readonly replays: number;
  /** client-node's `error` events, the library's onListAndWatchError calls. */
  readonly errors: number;
  /** Process CPU time (user + system) since the mark, µs. */
  readonly cpuMicros: number;
  readonly held: number;
}

/** client-node's informer example: restart 5 s after an error. */
const RESTART_AFTER_ERROR_MS = 5_000;

const [mode, server, namespace] = process.argv.slice(2) as [InformerMode, string, string];
const kubeConfig = new KubeConfig();
kubeConfig.loadFromOptions({
  clusters: [{ name: 'bench', server, skipTLSVerify: true }],
  users: [{ name: 'bench' }],
  contexts: [{ name: 'bench', cluster: 'bench', user: 'bench' }],
  currentContext: 'bench',
});

let counts = { adds: 0, updates: 0, deletes: 0, replays: 0, errors: 0 };
let cpuMark = process.cpuUsage();
/** Each pod's last resourceVersion delivered (over the whole run), deleted pods removed: the state the handlers were told. */
const delivered = new Map<string, string>();

/**
 * Sends `told` (Date.now()) once the handlers have been told `expected` (each pod's name and
 * resourceVersion, as the apiserver has them), checked every 50 ms here, so that the parent's
 * own pace does not count.
 */
function awaitTold(expected: Readonly<Record<string, string>>): void {
  const names = Object.keys(expected);
  const check = setInterval(() => {
    if (delivered.size !== names.length || names.some((name) => delivered.get(name) !== expected[name])) return;
    clearInterval(check);
    process.send?.({ type: 'told', at: Date.now() });
  }, 50);
}

function told(kind: 'adds' | 'updates', pod: V1Pod): void {
  counts[kind]++;
  const name = pod.metadata?.name ?? '';
  const rv = pod.metadata?.resourceVersion ?? '';
  if (delivered.get(name) === rv) counts.replays++;
  delivered.set(name, rv);
}

interface Running {
  held(): number;
  cache(): Record<string, string>;
  stop(): Promise<void>;
}

function startClientNode(strip: boolean): Promise<Running> {
  const api = kubeConfig.makeApiClient(CoreV1Api);
  const informer = makeInformer<V1Pod>(kubeConfig, `/api/v1/namespaces/${namespace}/pods`, () => api.listNamespacedPod({ namespace }));
  const handle = (kind: 'adds' | 'updates') => (pod: V1Pod) => {
    // The handler's object is the cached one: deleting here strips the cache.
    if (strip && pod.metadata !== undefined) delete pod.metadata.managedFields;
    told(kind, pod);
  };
  informer.on('add', handle('adds'));
  informer.on('update', handle('updates'));
  informer.on('delete', (pod) => {
    counts.deletes++;
    delivered.delete(pod.metadata?.name ?? '');
  });
  let stopped = false;
  informer.on('error', () => {
    counts.errors++;
    setTimeout(() => {
      if (!stopped) void informer.start();
    }, RESTART_AFTER_ERROR_MS);
  });
  const cached = (): readonly V1Pod[] => informer.list(namespace);
  return informer.start().then(() => ({
    held: () => cached().length,
    cache: () => Object.fromEntries(cached().map((p) => [p.metadata?.name ?? '', p.metadata?.resourceVersion ?? ''])),
    stop: async () => {
      stopped = true;
      await informer.stop();
    },
  }));
}

async function startLibrary(how: 'models' | 'transform' | 'json'): Promise<Running> {
  const factory = newSharedInformerFactory({ kubeConfig, namespace });
  const resource = { version: 'v1', resource: 'pods' };
  // The wire JSON typed as the model: what a handler reads here (metadata's name and resourceVersion) is the same in both.
  const informer = how === 'json' ? factory.informerFor<V1Pod>(resource, { decode: jsonDecoder }) : factory.informerFor<V1Pod>(resource);
  if (how === 'transform') informer.setTransform(transformStripManagedFields);
  informer.addEventHandler({
    onAdd: (pod) => {
      told('adds', pod);
    },
    onUpdate: (_old, pod) => {
      told('updates', pod);
    },
    onDelete: (pod) => {
      counts.deletes++;
      delivered.delete(isDeletedFinalStateUnknown(pod) ? (pod.key.split('/')[1] ?? '') : (pod.metadata?.name ?? ''));
    },
  });
  informer.onListAndWatchError(() => {
    counts.errors++;
  });
  factory.start();
  await factory.waitForCacheSync();
  return {
    held: () => informer.getIndexer().len(),
    cache: () =>
      Object.fromEntries(
        informer
          .getIndexer()
          .list()
          .map((p) => [p.metadata?.name ?? '', p.metadata?.resourceVersion ?? '']),
      ),
    stop: () => factory.shutdown(),
  };
}

function start(): Promise<Running> {
  switch (mode) {
    case 'client-node':
      return startClientNode(false);
    case 'client-node-strip':
      return startClientNode(true);
    case 'library':
      return startLibrary('models');
    case 'library-transform':
      return startLibrary('transform');
    case 'library-json':
      return startLibrary('json');
  }
}

process.send?.({ type: 'baseline', ...sampleMemory() });
const started = performance.now();
const running = await start();
process.send?.({ type: 'synced', ms: performance.now() - started, objects: running.held() });
process.on('message', (message: string | { readonly expect: Record<string, string> }) => {
  if (typeof message === 'object') {
    awaitTold(message.expect);
  } else if (message === 'mark') {
    counts = { adds: 0, updates: 0, deletes: 0, replays: 0, errors: 0 };
    cpuMark = process.cpuUsage();
    process.send?.({ type: 'marked' });
  } else if (message === 'counts') {
    const cpu = process.cpuUsage(cpuMark);
    const answer: HandlerCounts = { type: 'counts', ...counts, cpuMicros: cpu.user + cpu.system, held: running.held() };
    process.send?.(answer);
  } else if (message === 'cache') {
    process.send?.({ type: 'cache', cache: running.cache() });
  }
});
answerParent(() => running.stop());
