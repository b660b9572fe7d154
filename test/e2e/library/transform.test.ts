/**
 * setTransform against the real apiserver: a pod informer that strips managedFields, and one
 * whose transform blanks resourceVersion (client-go's pitfall since 0.33: every update then looks
 * like a resync and reaches only handlers with a resync period), each with a handler that asked
 * for no resync. Every pod's last change must reach both handlers and both Indexers.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { SharedIndexInformer, TransformFunc } from '../../../src/library/informer.ts';
import { newSharedInformerFactory, pods, transformStripManagedFields } from '../../../src/library/informer.ts';
import type { V1Pod } from '@kubernetes/client-node';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

const PODS = 3;
const STEPS = 5;

const blankResourceVersion: TransformFunc = (obj: KubernetesObject) => {
  if (obj.metadata !== undefined) obj.metadata.resourceVersion = '';
  return transformStripManagedFields(obj);
};

/** A pod informer with `transform` in a factory of its own; returns it and the `step` label of each pod's updates, in order. */
async function watched(
  t: TestContext,
  namespace: string,
  transform: TransformFunc,
): Promise<{ informer: SharedIndexInformer<V1Pod>; steps: Map<string, string[]> }> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(shared.cp.kubeconfig);
  const factory = newSharedInformerFactory({ kubeConfig });
  t.after(() => factory.shutdown());
  const informer = factory.informerFor({ ...pods, namespace });
  informer.setTransform(transform);
  const steps = new Map<string, string[]>();
  informer.addEventHandler({
    onUpdate: (_old, pod) => {
      const name = pod.metadata?.name ?? '';
      steps.set(name, [...(steps.get(name) ?? []), pod.metadata?.labels?.['step'] ?? '']);
    },
  });
  factory.start();
  await factory.waitForCacheSync();
  return { informer, steps };
}

test('setTransform against the apiserver: stripping managedFields or blanking resourceVersion, no update is lost', async (t) => {
  const namespace = await testNamespace(t, shared.admin);
  const path = `/api/v1/namespaces/${namespace}/pods`;
  for (let i = 0; i < PODS; i++) {
    await kube(shared.admin, 'POST', path, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `p${String(i)}`, labels: { step: '0' } },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    });
  }
  const stripped = await watched(t, namespace, transformStripManagedFields);
  const blanked = await watched(t, namespace, blankResourceVersion);
  for (let step = 1; step <= STEPS; step++) {
    for (let i = 0; i < PODS; i++)
      await kube(shared.admin, 'PATCH', `${path}/p${String(i)}`, { metadata: { labels: { step: String(step) } } });
  }
  const last = String(STEPS);
  for (const [label, { informer, steps }] of [
    ['strip managedFields', stripped],
    ['blank resourceVersion', blanked],
  ] as const) {
    await eventually(`${label}: every pod's last step reaches the handler`, () =>
      Array.from({ length: PODS }, (_, i) => steps.get(`p${String(i)}`)?.at(-1)).every((s) => s === last),
    );
    for (let i = 0; i < PODS; i++) {
      const held = informer.getIndexer().getByKey(`${namespace}/p${String(i)}`);
      assert.ok(held?.metadata !== undefined);
      assert.equal(held.metadata.labels?.['step'], last, `${label}: the Indexer holds the last step`);
      assert.equal(held.metadata.managedFields, undefined, `${label}: stored without managedFields`);
      const seen = steps.get(`p${String(i)}`) ?? [];
      assert.deepEqual(seen, [...seen].sort(), `${label}: in order`);
    }
  }
  assert.equal(blanked.informer.getIndexer().getByKey(`${namespace}/p0`)?.metadata?.resourceVersion, '', 'what the transform left');
});
