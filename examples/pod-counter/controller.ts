/**
 * The pod counter: for each namespace it is given, a ConfigMap (`pod-counts` by default) whose
 * data is the namespace's pods counted by phase, kept up to date. client-go's controller
 * pattern, on kube-cache-proxy's library:
 *
 *   informers (pods, and the ConfigMap itself, per namespace) ─ handlers ─▶ workqueue of
 *   namespaces ─▶ workers ─▶ reconcile: counts from the pod informer's Indexer, compared with
 *   the ConfigMap informer's copy, written (create or replace) only when they differ.
 *
 * - Informers run whether or not this replica leads (a warm standby: on takeover its caches are
 *   synced and its queue holds every namespace changed meanwhile); workers run only while it leads.
 * - A write is a compare-and-swap (a replace carries the resourceVersion read): a 409 (the
 *   informer's copy was behind, or another writer got there first) puts the namespace back in
 *   the queue after the rate limiter's delay; so does any other failure.
 * - The resync period re-delivers every pod, so every namespace is reconciled that often: the
 *   ConfigMap is put back if someone changed it and the change was missed.
 * - Stopping drains: the workers finish the reconcile in progress, nothing new starts.
 */
import { ApiException, CoreV1Api, V1ConfigMap, V1ObjectMeta } from '@kubernetes/client-node';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { SharedIndexInformer, SharedInformerFactory } from 'kube-cache-proxy/informer';
import { defaultControllerRateLimiter, newRateLimitingQueue, realClock } from 'kube-cache-proxy/workqueue';
import type { Clock, RateLimiter, RateLimitingQueue } from 'kube-cache-proxy/workqueue';
import { podCounts, sameData } from './pod-counts.ts';

/** The annotation naming the replica that wrote the ConfigMap last (for people, and the tests' audit). */
export const WRITTEN_BY = 'kube-cache-proxy/written-by';
/** The label of what the pod counter manages. */
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'pod-counter' } as const;

/** The writes the pod counter makes (client-node's CoreV1Api by default; tests pass a fake). */
export interface ConfigMapWriter {
  /** POST: 409 AlreadyExists if it exists. */
  create(namespace: string, configMap: V1ConfigMap): Promise<V1ConfigMap>;
  /** PUT of the object as read: 409 Conflict if it changed since. */
  replace(namespace: string, name: string, configMap: V1ConfigMap): Promise<V1ConfigMap>;
}

/** The writes through client-node's CoreV1Api, with `kubeConfig`'s connection (the sidecar's, in a pod). */
export function clientNodeWriter(kubeConfig: KubeConfig): ConfigMapWriter {
  const api = kubeConfig.makeApiClient(CoreV1Api);
  return {
    create: (namespace, body) => api.createNamespacedConfigMap({ namespace, body }),
    replace: (namespace, name, body) => api.replaceNamespacedConfigMap({ namespace, name, body }),
  };
}

/** 409: AlreadyExists or Conflict, as client-node reports them. */
export function isConflict(error: unknown): boolean {
  return error instanceof ApiException && error.code === 409;
}

/** One line of the controller's log: a message and its fields. */
export type Log = (message: string, fields?: Readonly<Record<string, unknown>>) => void;

/** What newPodCounter needs. */
export interface PodCounterOptions {
  readonly factory: SharedInformerFactory;
  readonly writer: ConfigMapWriter;
  /** The namespaces counted, each with its ConfigMap. */
  readonly namespaces: readonly string[];
  /** The ConfigMap's name in each namespace. */
  readonly configMapName: string;
  /** This replica, written into WRITTEN_BY. */
  readonly identity: string;
  /** Reconciles at once (of different namespaces: the queue never hands one namespace to two). Default 2. */
  readonly workers?: number;
  /** Requeue delays. Default: client-go's default controller rate limiter (5 ms doubling to 1000 s, 10/s overall). */
  readonly rateLimiter?: RateLimiter<string>;
  /** The queue's time (its requeue delays, and the default rate limiter's). Default: the real clock; tests pass a fake one. */
  readonly clock?: Clock;
  /** Where log lines go. */
  readonly log: Log;
}

/** A pod counter: its queue, its workers, one reconcile. */
export interface PodCounter {
  /** The queue of namespaces to reconcile (for tests and metrics). */
  readonly queue: RateLimitingQueue<string>;
  /** Runs the workers until `signal` aborts, then lets the reconciles in progress finish; resolves after. Once. */
  runWorkers(signal: AbortSignal): Promise<void>;
  /** One reconcile of `namespace` (what a worker does with a key); rejects as the write does. */
  reconcile(namespace: string): Promise<Reconciled>;
}

/** What a reconcile did. */
export type Reconciled =
  | { readonly action: 'created' | 'updated'; readonly resourceVersion: string; readonly data: Readonly<Record<string, string>> }
  | { readonly action: 'unchanged' };

interface Watched {
  readonly pods: SharedIndexInformer<V1Pod>;
  readonly configMaps: SharedIndexInformer<V1ConfigMap>;
}

/** Asks the factory for the informers (start the factory after) and wires their handlers to the queue. */
export function newPodCounter(options: PodCounterOptions): PodCounter {
  const { factory, writer, configMapName, identity, log } = options;
  const clock = options.clock ?? realClock;
  const queue = newRateLimitingQueue<string>(options.rateLimiter ?? defaultControllerRateLimiter(clock), { name: 'pod-counter', clock });
  const watched = new Map<string, Watched>();
  for (const namespace of options.namespaces) {
    const pods = factory.informerFor<V1Pod>({ version: 'v1', resource: 'pods', namespace });
    const configMaps = factory.informerFor<V1ConfigMap>({
      version: 'v1',
      resource: 'configmaps',
      namespace,
      fieldSelector: `metadata.name=${configMapName}`,
    });
    // Any change of a pod, or of the ConfigMap (someone else changed or deleted it), and every
    // resync: the namespace is queued (once, however many changes come before it is handled).
    const enqueue = (): void => {
      queue.add(namespace);
    };
    for (const informer of [pods, configMaps]) informer.addEventHandler({ onAdd: enqueue, onUpdate: enqueue, onDelete: enqueue });
    watched.set(namespace, { pods, configMaps });
    // Once, whatever the informers hold: a namespace without pods or ConfigMap gets no event, and
    // its ConfigMap (total 0) is due all the same.
    queue.add(namespace);
  }

  const reconcile = async (namespace: string): Promise<Reconciled> => {
    const informers = watched.get(namespace);
    if (informers === undefined) return { action: 'unchanged' };
    const data = podCounts(informers.pods.getIndexer().list());
    const existing = informers.configMaps.getIndexer().getByKey(`${namespace}/${configMapName}`);
    if (existing === undefined) {
      const body = new V1ConfigMap();
      body.metadata = Object.assign(new V1ObjectMeta(), {
        name: configMapName,
        labels: { ...MANAGED_BY },
        annotations: { [WRITTEN_BY]: identity },
      });
      body.data = data;
      const created = await writer.create(namespace, body);
      return { action: 'created', resourceVersion: created.metadata?.resourceVersion ?? '', data };
    }
    if (sameData(existing.data, data)) return { action: 'unchanged' };
    // The informer's copy, as read (its resourceVersion makes the write a compare-and-swap).
    existing.data = data;
    const metadata = existing.metadata ?? new V1ObjectMeta();
    metadata.annotations = { ...metadata.annotations, [WRITTEN_BY]: identity };
    existing.metadata = metadata;
    const updated = await writer.replace(namespace, configMapName, existing);
    return { action: 'updated', resourceVersion: updated.metadata?.resourceVersion ?? '', data };
  };

  const worker = async (): Promise<void> => {
    for (;;) {
      const next = await queue.get();
      if (next.shutdown) return;
      const namespace = next.item;
      try {
        const result = await reconcile(namespace);
        queue.forget(namespace);
        log('reconciled', { namespace, ...result });
      } catch (error) {
        // Retried after the rate limiter's delay for this namespace (5 ms, 10 ms, 20 ms, ...).
        queue.addRateLimited(namespace);
        log(isConflict(error) ? 'conflict: requeued' : 'reconcile failed: requeued', {
          namespace,
          requeues: queue.numRequeues(namespace),
          error: error instanceof Error ? error.message : String(error),
        });
      } finally {
        queue.done(namespace);
      }
    }
  };

  let running: Promise<void> | undefined;
  return {
    queue,
    reconcile,
    runWorkers(signal) {
      running ??= (async () => {
        const workers = Array.from({ length: options.workers ?? 2 }, () => worker());
        if (!signal.aborted) {
          await new Promise((resolve) => {
            signal.addEventListener('abort', resolve, { once: true });
          });
        }
        await queue.shutDownWithDrain();
        await Promise.all(workers);
      })();
      return running;
    },
  };
}
