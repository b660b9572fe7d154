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
import type { V1PartialObjectMetadata } from './metadata.ts';
import { metadataClient } from './metadata.ts';
import type { ObjectDecoder } from './object-decoder.ts';
import { clientNodeDecoder } from './object-decoder.ts';
import { copyingReader, sharingReader } from './object-reader.ts';
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

/**
 * An InformerRequest that may carry the type of its objects: a typed resource (`pods`, from
 * resources.ts, or typedResource), possibly with a namespace or selectors spread in.
 */
export interface TypedInformerRequest<T> extends InformerRequest {
  /** Never set: the objects' type for the compiler (Resource.objectType), inferred by informerFor. */
  readonly objectType?: T;
}

/** Options of informerFor: how the informer's objects are made, given by the request that creates it. */
export interface InformerForOptions<T> {
  /** How cached objects become the caller's. Default: clientNodeDecoder (client-node's models). */
  readonly decode?: ObjectDecoder<T>;
  /**
   * Cheap reads (src/library/object-reader.ts): each stored version of an object is decoded once,
   * at its first read or notification, and that one object, deeply frozen, is what every read
   * (getByKey, list, byIndex) and every handler gets until the object changes; read-only, as
   * client-go's cache objects are (a change throws). Costs the decoded objects' memory for the
   * objects read (docs/informer.md states it). Default false: each read decodes a copy of the
   * caller's own.
   */
  readonly cacheDecoded?: boolean;
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
   * `T` is the type of the objects: inferred from a typed resource (`informerFor(pods)` is a
   * SharedIndexInformer<V1Pod>; `informerFor({ ...pods, namespace: 'a' })` too), or named by the
   * caller for a plain group/version/resource (`informerFor<V1Pod>({ version: 'v1', resource: 'pods' })`),
   * as client-node's makeInformer<T>.
   */
  informerFor<T extends KubernetesObject = KubernetesObject>(
    request: TypedInformerRequest<T>,
    options?: InformerForOptions<T>,
  ): SharedIndexInformer<T>;
  /**
   * client-go metadatainformer ForResource: the metadata-only informer of `request`'s scope
   * (src/library/metadata.ts): the apiserver sends each object's metadata alone, as a
   * PartialObjectMetadata; a scope of its own, beside a full informer of the same resource.
   * Created (not started) at the first request of its scope, as informerFor's.
   */
  metadataInformerFor(
    request: InformerRequest,
    options?: InformerForOptions<V1PartialObjectMetadata>,
  ): SharedIndexInformer<V1PartialObjectMetadata>;
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
  const common = {
    ...(settings.resyncPeriodMs === undefined ? {} : { resyncPeriodMs: settings.resyncPeriodMs }),
    ...(settings.pageSize === undefined ? {} : { pageSize: settings.pageSize }),
    ...(settings.useWatchList === undefined ? {} : { useWatchList: settings.useWatchList }),
    ...(settings.log === undefined ? {} : { log: settings.log }),
    ...(settings.clock === undefined ? {} : { clock: settings.clock }),
  };
  const named = settings.informerName ?? '';
  const metrics = (name: string) =>
    settings.metricsProvider === undefined ? {} : { metrics: informerMetricsProvider(settings.metricsProvider, name) };
  const cached: CachedFactory = newCachedFactory({ client, ...common, ...metrics(named) });
  // Metadata-only informers: a factory of their own, so that their scopes never meet the full ones
  // (and measured under a name of their own, so that their series never meet either).
  const metadataCached: CachedFactory = newCachedFactory({
    client: metadataClient(client),
    ...common,
    ...metrics(named === '' ? '' : `${named}-metadata`),
  });
  const factories = [cached, metadataCached];
  /** By scope key, the metadata-only ones under `metadata|` + the key. */
  const informers = new Map<string, TypedInformer<KubernetesObject>>();
  let shuttingDown: Promise<void> | undefined;

  const shutdown = (): Promise<void> => {
    shuttingDown ??= (async () => {
      const all = [...informers.values()];
      await Promise.all(all.map((informer) => informer.stop()));
      await Promise.all(factories.map((factory) => factory.shutdown()));
      await close();
    })();
    return shuttingDown;
  };

  /** The typed informer of `request`'s scope from `from` (keys under `prefix`), made at its first request. */
  const informerOf = (
    from: CachedFactory,
    prefix: string,
    request: InformerRequest,
    options: InformerForOptions<KubernetesObject>,
  ): TypedInformer<KubernetesObject> => {
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
    const key = prefix + scopeKey(scope);
    let informer = informers.get(key);
    if (informer === undefined) {
      // client-go's factories index by namespace only; more indices are the caller's (addIndexers).
      const made = from.informerFor({ ...scope, indexers: { [NAMESPACE_INDEX]: namespaceIndexFunc } });
      const decode = options.decode ?? clientNodeDecoder;
      informer = newTypedInformer<KubernetesObject>(
        made,
        options.cacheDecoded === true ? sharingReader(decode) : copyingReader(decode),
        settings.log,
      );
      informers.set(key, informer);
    }
    return informer;
  };

  return {
    informerFor<T extends KubernetesObject = KubernetesObject>(request: TypedInformerRequest<T>, options: InformerForOptions<T> = {}) {
      // The caller names the type of the scope's objects (or the typed resource does), as with client-node's makeInformer<T>.
      return informerOf(cached, '', request, options) as unknown as SharedIndexInformer<T>;
    },
    metadataInformerFor(request, options = {}) {
      return informerOf(metadataCached, 'metadata|', request, options);
    },
    start(signal) {
      if (shuttingDown !== undefined) return;
      for (const factory of factories) factory.start();
      if (signal === undefined) return;
      if (signal.aborted) void shutdown();
      else signal.addEventListener('abort', () => void shutdown(), { once: true });
    },
    waitForCacheSync: async (signal) => {
      await Promise.all(factories.map((factory) => factory.waitForCacheSync(signal)));
    },
    shutdown,
  };
}
