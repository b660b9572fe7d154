// @kubernetes/client-node's own informers (makeInformer) in a process of their own, for the
// footprint scenario (bench/footprint.ts): `node bench/informer-footprint.mjs KUBECONFIG
// [resource[@namespace]...]` (pods or configmaps; none: client-node loaded, nothing listed).
// Plain JavaScript on purpose: a .ts file would load Node's type stripping into the process and
// weigh on client-node's figures, not the proxy's. Tells the parent `synced` with the objects
// held once every informer has listed; answers `sample` with its memory as it is (no collection
// forced, as the proxy's is read) and `stop`.
import { CoreV1Api, KubeConfig, makeInformer } from '@kubernetes/client-node';

const [kubeconfig, ...wanted] = process.argv.slice(2);
if (kubeconfig === undefined) throw new Error('usage: informer-footprint.mjs KUBECONFIG [resource[@namespace]...]');
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const api = kc.makeApiClient(CoreV1Api);

const lists = {
  pods: (namespace) => (namespace === undefined ? api.listPodForAllNamespaces() : api.listNamespacedPod({ namespace })),
  configmaps: (namespace) => (namespace === undefined ? api.listConfigMapForAllNamespaces() : api.listNamespacedConfigMap({ namespace })),
};

const informers = wanted.map((spec) => {
  const [resource, namespace] = spec.split('@');
  const list = lists[resource];
  if (list === undefined) throw new Error(`informer-footprint.mjs: no informer for ${spec}`);
  const path = namespace === undefined ? `/api/v1/${resource}` : `/api/v1/namespaces/${namespace}/${resource}`;
  return makeInformer(kc, path, () => list(namespace));
});
await Promise.all(informers.map((informer) => informer.start()));
process.send?.({ type: 'synced', objects: informers.reduce((sum, informer) => sum + informer.list().length, 0) });

process.on('message', (message) => {
  if (message === 'sample') {
    const usage = process.memoryUsage();
    process.send?.({ type: 'sample', heapUsed: usage.heapUsed, heapTotal: usage.heapTotal, external: usage.external });
  }
  if (message === 'stop') {
    void Promise.all(informers.map((informer) => informer.stop())).finally(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
