/**
 * SharedInformerFactory (client-go informers/factory.go): one informer per resource scope
 * (group/version/resource + namespace + selectors), created on first request, started once,
 * stoppable one by one. The proxy asks it for an informer whenever a read of a type arrives.
 */
import type { Indexers } from './indexer.ts';
import type { ListerWatcher, ListWatchClient, ResourceScope } from './lister-watcher.ts';
import { describeScope, newListerWatcher } from './lister-watcher.ts';
import type { InformerMetricsProvider } from './metrics.ts';
import { noopInformerMetricsProvider } from './metrics.ts';
import type { FieldExtractor } from './object.ts';
import type { ReflectorLog } from './reflector.ts';
import type { InformerStore } from './store.ts';
import type { SharedIndexInformer, SharedIndexInformerOptions } from './shared-informer.ts';
import { newSharedIndexInformer } from './shared-informer.ts';

export interface InformerRequest extends ResourceScope {
  /** Selectable fields of this type (default: metadata.name and metadata.namespace). */
  readonly extract?: FieldExtractor;
  readonly indexers?: Indexers;
  /** The informer's only store (direct mode, shared-informer.ts): e.g. a watch cache. */
  readonly store?: InformerStore;
  /** The store holds a restored state at this RV: the informer resumes its watch from it (SharedIndexInformerOptions.resumeFrom). */
  readonly resumeFrom?: string;
}

export interface InformerStatus {
  readonly key: string;
  readonly running: boolean;
  readonly synced: boolean;
  readonly resourceVersion: string;
  readonly objects: number;
}

export interface SharedInformerFactory {
  /** The informer for this scope, created (not started) on first request. */
  informerFor(request: InformerRequest): SharedIndexInformer;
  /** Starts every informer not yet started. */
  start(): void;
  /** Stops and forgets one informer; the next request creates a new one. */
  stop(scope: ResourceScope): Promise<void>;
  /** Stops every informer. */
  shutdown(): Promise<void>;
  status(): InformerStatus[];
  /** Resolves when every started informer has synced. */
  waitForCacheSync(signal?: AbortSignal): Promise<void>;
}

export interface SharedInformerFactoryOptions extends Pick<
  SharedIndexInformerOptions,
  'resyncPeriodMs' | 'pageSize' | 'useWatchList' | 'clock'
> {
  readonly client: ListWatchClient;
  readonly metrics?: InformerMetricsProvider;
  readonly log?: ReflectorLog;
  /** Wakes reflectors backing off after connection errors once the apiserver answers (upstream/health.ts). */
  readonly reachable?: (signal: AbortSignal) => Promise<void>;
  /**
   * The ListerWatcher of a scope (a pool member's routed one, routed-lister-watcher.ts);
   * default: newListerWatcher over `client`.
   */
  readonly listerWatcherFor?: (scope: ResourceScope, extract: FieldExtractor | undefined) => ListerWatcher;
}

/** The factory's key of a scope; selectors are part of it (a different selection is a different cache). */
export function scopeKey(scope: ResourceScope): string {
  return [scope.group, scope.version, scope.resource, scope.namespace ?? '', scope.labelSelector ?? '', scope.fieldSelector ?? ''].join(
    '|',
  );
}

export function newSharedInformerFactory(options: SharedInformerFactoryOptions): SharedInformerFactory {
  const informers = new Map<string, SharedIndexInformer>();
  const metrics = options.metrics ?? noopInformerMetricsProvider;
  let shutDown = false;
  return {
    informerFor(request) {
      if (shutDown) throw new Error('the informer factory is shut down');
      const key = scopeKey(request);
      let informer = informers.get(key);
      if (informer === undefined) {
        const name = describeScope(request);
        informer = newSharedIndexInformer({
          name,
          listerWatcher: options.listerWatcherFor?.(request, request.extract) ?? newListerWatcher(options.client, request, request.extract),
          metrics: metrics.forResource(name, request),
          ...(request.indexers === undefined ? {} : { indexers: request.indexers }),
          ...(request.store === undefined ? {} : { store: request.store }),
          ...(request.resumeFrom === undefined ? {} : { resumeFrom: request.resumeFrom }),
          ...(options.log === undefined ? {} : { log: options.log }),
          ...(options.resyncPeriodMs === undefined ? {} : { resyncPeriodMs: options.resyncPeriodMs }),
          ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
          ...(options.useWatchList === undefined ? {} : { useWatchList: options.useWatchList }),
          ...(options.clock === undefined ? {} : { clock: options.clock }),
          ...(options.reachable === undefined ? {} : { reachable: options.reachable }),
        });
        informers.set(key, informer);
      }
      return informer;
    },
    start() {
      for (const informer of informers.values()) informer.run();
    },
    async stop(scope) {
      const key = scopeKey(scope);
      const informer = informers.get(key);
      informers.delete(key);
      await informer?.stop();
    },
    async shutdown() {
      shutDown = true;
      const all = [...informers.values()];
      informers.clear();
      await Promise.all(all.map((i) => i.stop()));
    },
    status() {
      return [...informers].map(([key, informer]) => ({
        key,
        running: informer.isRunning(),
        synced: informer.hasSynced(),
        resourceVersion: informer.lastSyncResourceVersion(),
        objects: informer.getStore().size(),
      }));
    },
    async waitForCacheSync(signal) {
      await Promise.all([...informers.values()].filter((i) => i.isRunning()).map((i) => i.waitForSync(signal)));
    },
  };
}
