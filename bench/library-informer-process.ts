/**
 * kube-cache-proxy's own informers as a library user runs them (kube-cache-proxy/informer, the
 * compiled dist/ of `npm run build`: newSharedInformerFactory with a client-node KubeConfig) for
 * pods and configmaps across all namespaces, in a child process:
 * `node --expose-gc bench/library-informer-process.ts KUBECONFIG`.
 * The same protocol as informer-process.ts (client-node's makeInformer), so that the two are
 * measured alike: a baseline memory sample (the library and client-node loaded, nothing listed),
 * then `synced` with the objects held; answers 'measure' and 'stop'.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
// The package's own name: the compiled dist/ that an installed copy runs (sync.ts builds it first).
import { newSharedInformerFactory } from 'kube-cache-proxy/informer';
import { answerParent, sampleMemory } from './memory-probe.ts';

const kubeconfig = process.argv[2];
if (kubeconfig === undefined) throw new Error('usage: library-informer-process.ts KUBECONFIG');
const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(kubeconfig);
process.send?.({ type: 'baseline', ...sampleMemory() });
const factory = newSharedInformerFactory({ kubeConfig });
const pods = factory.informerFor<V1Pod>({ version: 'v1', resource: 'pods' });
const configmaps = factory.informerFor<V1ConfigMap>({ version: 'v1', resource: 'configmaps' });
factory.start();
await factory.waitForCacheSync();
process.send?.({ type: 'synced', objects: pods.getIndexer().len() + configmaps.getIndexer().len() });
answerParent(() => factory.shutdown());
