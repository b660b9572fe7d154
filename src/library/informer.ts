/**
 * `@kube-cache-proxy/client/informer`: client-go's informers (k8s.io/client-go/tools/cache and
 * informers/factory.go) for TypeScript controllers, typed against @kubernetes/client-node's
 * object types. Its page (docs/informer.md) says what it mirrors, the API and an example.
 *
 * @example
 * ```ts
 * import { KubeConfig } from '@kubernetes/client-node';
 * import { newSharedInformerFactory, pods as podResource } from 'kube-cache-proxy/informer';
 *
 * const kubeConfig = new KubeConfig();
 * kubeConfig.loadFromDefault();
 * const stop = new AbortController();
 * const factory = newSharedInformerFactory({ kubeConfig, resyncPeriodMs: 60_000 });
 * const pods = factory.informerFor(podResource); // SharedIndexInformer<V1Pod>
 * pods.addEventHandler({ onAdd: (pod) => console.log('added', pod.metadata?.name) });
 * factory.start(stop.signal);
 * await factory.waitForCacheSync(stop.signal);
 * console.log(pods.getIndexer().byIndex('namespace', 'default').length, 'pods in default');
 * ```
 *
 * @module @kube-cache-proxy/client/informer
 * @document ../../docs/informer.md
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { newKubeClient } from './kube-client.ts';
import type { InformerFactorySettings, SharedInformerFactory } from './typed-factory.ts';
import { newTypedInformerFactory } from './typed-factory.ts';

export type { HandlerRegistration } from '../informer/shared-processor.ts';
export { NAMESPACE_INDEX } from '../informer/indexer.ts';
export { realClock } from '../clock/clock.ts';
export type { Clock, Timer } from '../clock/clock.ts';
export { ApiStatusError } from '../upstream/api-error.ts';
export type { ApiStatus, StatusCause } from '../upstream/api-error.ts';
export type { InformerAddEvent, InformerDeleteEvent, InformerEvent, InformerUpdateEvent } from './informer-events.ts';
export { deletionHandlingMetaNamespaceKeyFunc, isDeletedFinalStateUnknown, metaNamespaceKeyFunc, splitMetaNamespaceKey } from './keys.ts';
export type { DeletedFinalStateUnknown, ObjectWithMetadata } from './keys.ts';
export { clientNodeDecoder, clientNodeModel, jsonDecoder } from './object-decoder.ts';
export type { ObjectDecoder } from './object-decoder.ts';
export type {
  InformerFactorySettings,
  InformerForOptions,
  InformerLog,
  InformerRequest,
  SharedInformerFactory,
  TypedInformerRequest,
} from './typed-factory.ts';
export { PARTIAL_OBJECT_METADATA_ACCEPT, PARTIAL_OBJECT_METADATA_LIST_ACCEPT } from './metadata.ts';
export type { V1PartialObjectMetadata } from './metadata.ts';
export { typedResource } from './resource.ts';
export type { Resource } from './resource.ts';
export * from './resources.ts';
export { compareResourceVersion, InvalidResourceVersionError } from './resource-version.ts';
export { transformStripManagedFields } from './transform.ts';
export type { TransformFunc } from './transform.ts';
export type { IndexFunc, Indexer, Indexers } from './typed-indexer.ts';
export type { EventHandlerOptions, ResourceEventHandler, SharedIndexInformer } from './typed-informer.ts';

export type { GaugeMetric, HistogramMetric, InformerMetricsProvider, InformerNameAndResource } from './informer-metrics.ts';

/** Options of newSharedInformerFactory: where the apiserver is, and how the informers list and watch. */
export interface SharedInformerFactoryOptions extends InformerFactorySettings {
  /**
   * Where the apiserver is and how to authenticate, as client-node loads it (loadFromDefault,
   * loadFromCluster, loadFromFile): its current context when the first informer starts. Through
   * the kube-cache-proxy sidecar, the kubeconfig it writes.
   */
  readonly kubeConfig: KubeConfig;
}

/**
 * client-go NewSharedInformerFactoryWithOptions: a factory whose informers list and watch through
 * one connection pool to the apiserver of `options.kubeConfig`, closed by shutdown().
 */
export function newSharedInformerFactory(options: SharedInformerFactoryOptions): SharedInformerFactory {
  const { kubeConfig, ...settings } = options;
  const client = newKubeClient(kubeConfig);
  return newTypedInformerFactory(client, settings, () => client.close());
}
