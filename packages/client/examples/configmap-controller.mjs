// A leader-elected controller in plain JavaScript (ES modules), runnable from an install:
//
//   KUBECONFIG=~/.kube/config node node_modules/@kube-cache-proxy/client/examples/configmap-controller.mjs NAMESPACE [--once]
//
// An informer of the namespace's ConfigMaps feeds a rate-limited workqueue with their keys; the
// replica that holds the Lease `configmap-controller` reconciles them: here, one line per
// ConfigMap with its number of data keys. Run two and only one reconciles; stop it and the other
// takes over. `--once` stops after the ConfigMaps listed at start are reconciled, releasing the
// Lease. configmap-controller.cjs is the same with require().
import { hostname } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { metaNamespaceKeyFunc, newSharedInformerFactory } from '@kube-cache-proxy/client/informer';
import { newLeaderElector, newLeaseLock } from '@kube-cache-proxy/client/leaderelection';
import { defaultControllerRateLimiter, newRateLimitingQueue } from '@kube-cache-proxy/client/workqueue';

const [namespace, flag] = process.argv.slice(2);
if (namespace === undefined) throw new Error('usage: configmap-controller.mjs NAMESPACE [--once]');
const once = flag === '--once';
const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();

const stop = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => stop.abort());

const factory = newSharedInformerFactory({ kubeConfig, namespace });
const configMaps = factory.informerFor({ version: 'v1', resource: 'configmaps' });
const queue = newRateLimitingQueue(defaultControllerRateLimiter(), { name: 'configmaps' });
const enqueue = (configMap) => queue.add(metaNamespaceKeyFunc(configMap));
configMaps.addEventHandler({ onAdd: enqueue, onUpdate: (_old, configMap) => enqueue(configMap), onDelete: enqueue });
factory.start(stop.signal);
await factory.waitForCacheSync(stop.signal);
let remaining = configMaps.getIndexer().listKeys().length;

/** Reconciles one key: the ConfigMap as the informer holds it now (undefined once deleted). */
function reconcile(key) {
  const configMap = configMaps.getIndexer().getByKey(key);
  if (configMap === undefined) console.log(`${key}: deleted`);
  else
    console.log(
      `${key}: ${Object.keys(configMap.data ?? {}).length} data keys, created ${configMap.metadata?.creationTimestamp?.toISOString()}`,
    );
}

async function work(signal) {
  while (!signal.aborted) {
    const next = await queue.get();
    if (next.shutdown) return;
    try {
      reconcile(next.item);
      queue.forget(next.item);
    } catch (error) {
      console.error(`${next.item}: ${error}`);
      queue.addRateLimited(next.item);
    } finally {
      queue.done(next.item);
    }
    if (once && --remaining <= 0) stop.abort();
  }
}

const lock = newLeaseLock({ kubeConfig, namespace, name: 'configmap-controller', identity: `${hostname()}-${process.pid}` });
const elector = newLeaderElector({
  lock,
  releaseOnCancel: true,
  callbacks: {
    onStartedLeading: (signal) => {
      console.log('leading');
      void work(signal);
    },
    onStoppedLeading: () => queue.shutDown(),
  },
});
if (once && remaining === 0) stop.abort();
await elector.run(stop.signal);
queue.shutDown();
await factory.shutdown();
await lock.close();
