/**
 * SharedInformerFactory (client-go informers/factory.go) as the library hands it out: one
 * informer per resource scope however many parts of a program ask for it, started together by
 * start(signal), stopped together. Built on the port's factory (src/informer/factory.ts), which
 * the proxy runs; each informer is typed by the caller at its first request.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Clock } from '../clock/clock.ts';
import type { SharedInformerFactory as CachedFactory } from '../informer/factory.ts';
import { newSharedInformerFactory as newCachedFactory, scopeKey } from '../informer/factory.ts';
import { namespaceIndexFunc, NAMESPACE_INDEX } from '../informer/indexer.ts';
import type { ListWatchClient, ResourceScope } from '../informer/lister-watcher.ts';
import type { InformerMetricsProvider } from './informer-metrics.ts';
import { informerMetricsProvider } from './informer-metrics.ts';
import type { ObjectDecoder } from './object-decoder.ts';
import { clientNodeDecoder } from './object-decoder.ts';
import type { SharedIndexInformer, TypedInformer } from './typed-informer.ts';
import { newTypedInformer } from './typed-informer.ts';

/** Which objects an informer holds: a resource of a group and version, in a namespace or all, optionally selected. */
export interface InformerRequest {
  /** The API group: '' (the default) for the core group (pods, configmaps), `apps` for deployments. */
  readonly group?: string;
  /** The API version, e.g. `v1`. */
  readonly version: string;
  /** The resource's plural name, as in its URL: `pods`, `deployments`, `leases`. */
  readonly resource: string;
  /** Only this namespace. Default: the factory's namespace, or every namespace (and cluster-scoped resources). */
  readonly namespace?: string;
  /** Only the objects this label selector selects (the apiserver's syntax, e.g. `app=web,tier!=db`). */
  readonly labelSelector?: string;
  /** Only the objects this field selector selects (e.g. `spec.nodeName=node-1`). */
  readonly fieldSelector?: string;
}

/** Options of informerFor: how the informer's objects are made, given by the request that creates it. */
export interface InformerForOptions<T> {
  /** How cached objects become the caller's. Default: clientNodeDecoder (client-node's models). */
  readonly decode?: ObjectDecoder<T>;
}

/**
 * Where the informers' log lines go: list and watch failures and recoveries (warn and info, once
 * per transition), retries (debug).
 */
export type InformerLog = (level: 'debug' | 'info' | 'warn', message: string) => void;

/** How the factory's informers list and watch. */
export interface InformerFactorySettings {
  /** Only this namespace, for every informer (client-go WithNamespace). Default: all namespaces. */
  readonly namespace?: string;
  /**
   * How often each handler gets every object again as an update with no change (client-go's
   * defaultResync), in ms: a controller's periodic reconcile of everything. 0 (default): never.
   */
  readonly resyncPeriodMs?: number;
  /** Objects per LIST page (limit), when a LIST is used; 0 lists in one request. Default 500 (client-go's pager). */
  readonly pageSize?: number;
  /**
   * Start with a WatchList (the initial state streamed as watch events, client-go's
   * WatchListClient); an apiserver that refuses it gets LIST + WATCH. Default true.
   */
  readonly useWatchList?: boolean;
  /** Where the informers' log lines go. Default: nowhere. */
  readonly log?: InformerLog;
  /** Time for backoffs, resyncs and watch timeouts. Default: the real clock; tests pass a fake one. */
  readonly clock?: Clock;
  /**
   * The factory's informer name (client-go WithInformerName), the `name` label of its informers'
   * metrics: only a named factory's informers are measured, as in client-go. Default: none.
   */
  readonly informerName?: string;
  /** Where the informers' metrics go (client-go SetInformerMetricsProvider, here per factory). Default: nowhere. */
  readonly metricsProvider?: InformerMetricsProvider;
}

/** client-go SharedInformerFactory. */
export interface SharedInformerFactory {
  /**
   * The informer of `request`'s scope, created (not started) at the first request of that scope;
   * later requests of the same scope get the same informer, whatever they pass as options.
   * `T` is the caller's type of the objects (e.g. V1Pod for `pods`), as client-node's makeInformer<T>.
   */
  informerFor<T extends KubernetesObject = KubernetesObject>(
    request: InformerRequest,
    options?: InformerForOptions<T>,
  ): SharedIndexInformer<T>;
  /**
   * Starts every informer not started yet (client-go Start(stopCh)); they run until `signal`
   * aborts (then they stop, as shutdown() stops them) or until shutdown(). Informers requested
   * after it need another start().
   */
  start(signal?: AbortSignal): void;
  /** Resolves once every started informer has synced (client-go WaitForCacheSync); rejects if `signal` aborts or one stops first. */
  waitForCacheSync(signal?: AbortSignal): Promise<void>;
  /** Stops every informer and closes the factory's connections; resolves once they have stopped (client-go Shutdown). */
  shutdown(): Promise<void>;
}

/** The factory over a client of the library's own (src/library/kube-client.ts), and what closes it at shutdown. */
export function newTypedInformerFactory(
  client: ListWatchClient,
  settings: InformerFactorySettings = {},
  close: () => Promise<void> = () => Promise.resolve(),
): SharedInformerFactory {
  const cached: CachedFactory = newCachedFactory({
    client,
    ...(settings.resyncPeriodMs === undefined ? {} : { resyncPeriodMs: settings.resyncPeriodMs }),
    ...(settings.pageSize === undefined ? {} : { pageSize: settings.pageSize }),
    ...(settings.useWatchList === undefined ? {} : { useWatchList: settings.useWatchList }),
    ...(settings.log === undefined ? {} : { log: settings.log }),
    ...(settings.clock === undefined ? {} : { clock: settings.clock }),
    ...(settings.metricsProvider === undefined
      ? {}
      : { metrics: informerMetricsProvider(settings.metricsProvider, settings.informerName ?? '') }),
  });
  const informers = new Map<string, TypedInformer<KubernetesObject>>();
  let shuttingDown: Promise<void> | undefined;

  const shutdown = (): Promise<void> => {
    shuttingDown ??= (async () => {
      const all = [...informers.values()];
      await Promise.all(all.map((informer) => informer.stop()));
      await cached.shutdown();
      await close();
    })();
    return shuttingDown;
  };

  return {
    informerFor<T extends KubernetesObject = KubernetesObject>(request: InformerRequest, options: InformerForOptions<T> = {}) {
      if (shuttingDown !== undefined) throw new Error('the informer factory is shut down');
      const namespace = request.namespace ?? settings.namespace;
      const scope: ResourceScope = {
        group: request.group ?? '',
        version: request.version,
        resource: request.resource,
        ...(namespace === undefined ? {} : { namespace }),
        ...(request.labelSelector === undefined ? {} : { labelSelector: request.labelSelector }),
        ...(request.fieldSelector === undefined ? {} : { fieldSelector: request.fieldSelector }),
      };
      const key = scopeKey(scope);
      let informer = informers.get(key);
      if (informer === undefined) {
        // client-go's factories index by namespace only; more indices are the caller's (addIndexers).
        const made = cached.informerFor({ ...scope, indexers: { [NAMESPACE_INDEX]: namespaceIndexFunc } });
        informer = newTypedInformer<KubernetesObject>(made, options.decode ?? clientNodeDecoder);
        informers.set(key, informer);
      }
      // The caller names the type of the scope's objects, as with client-node's makeInformer<T>.
      return informer as unknown as SharedIndexInformer<T>;
    },
    start(signal) {
      if (shuttingDown !== undefined) return;
      cached.start();
      if (signal === undefined) return;
      if (signal.aborted) void shutdown();
      else signal.addEventListener('abort', () => void shutdown(), { once: true });
    },
    waitForCacheSync: (signal) => cached.waitForCacheSync(signal),
    shutdown,
  };
}
