/**
 * @kubernetes/client-node's own informers (makeInformer) for pods and configmaps across all
 * namespaces, in a child process: `node --expose-gc bench/informer-process.ts KUBECONFIG`. Sends a
 * baseline memory sample (client-node loaded, nothing listed), then `synced` with the time from
 * start to both informers listed and watching and the objects held; answers 'measure' and 'stop'.
 */
import { CoreV1Api, KubeConfig, makeInformer } from '@kubernetes/client-node';
import { answerParent, sampleMemory } from './memory-probe.ts';

const kubeconfig = process.argv[2];
if (kubeconfig === undefined) throw new Error('usage: informer-process.ts KUBECONFIG');
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const api = kc.makeApiClient(CoreV1Api);
process.send?.({ type: 'baseline', ...sampleMemory() });
const started = performance.now();
const pods = makeInformer(kc, '/api/v1/pods', () => api.listPodForAllNamespaces());
const configmaps = makeInformer(kc, '/api/v1/configmaps', () => api.listConfigMapForAllNamespaces());
await Promise.all([pods.start(), configmaps.start()]);
process.send?.({ type: 'synced', ms: performance.now() - started, objects: pods.list().length + configmaps.list().length });
answerParent(async () => {
  await Promise.all([pods.stop(), configmaps.stop()]);
});
