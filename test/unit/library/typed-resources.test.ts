/**
 * The typed resources (src/library/resources.ts): informerFor infers the model from the resource
 * (a compile-time check: this file fails to type-check if it does not), and each entry names a
 * model client-node exports, the one its ObjectSerializer decodes that kind into.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as clientNode from '@kubernetes/client-node';
import type { KubernetesObject, V1Deployment, V1Pod } from '@kubernetes/client-node';
import type { SharedIndexInformer } from '../../../src/library/informer.ts';
import {
  builtInResources,
  clientNodeModel,
  deployments,
  events,
  eventsV1Events,
  pods,
  typedResource,
} from '../../../src/library/informer.ts';
import { newTypedInformerFactory } from '../../../src/library/typed-factory.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { newFakeUpstream } from '../../helpers/fake-upstream-client.ts';

/** True only when A and B are the same type (not merely assignable: V1Pod's fields are all optional). */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the type-equality idiom needs X once on each side
type Equals<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;

test('informerFor(pods) is a SharedIndexInformer<V1Pod> with no type argument; a plain GVR keeps its type argument', (t) => {
  const factory = newTypedInformerFactory(newFakeUpstream().client, { clock: new FakeClock() });
  t.after(() => factory.shutdown());
  const typed = factory.informerFor(pods);
  const scoped = factory.informerFor({ ...deployments, namespace: 'a' });
  const plain = factory.informerFor<V1Pod>({ version: 'v1', resource: 'pods' });
  const untyped = factory.informerFor({ version: 'v1', resource: 'pods' });
  interface Widget extends KubernetesObject {
    spec?: { size: number };
  }
  const widgets = factory.informerFor(typedResource<Widget>({ group: 'example.com', version: 'v1', resource: 'widgets' }));
  const checks: [
    Equals<typeof typed, SharedIndexInformer<V1Pod>>,
    Equals<typeof scoped, SharedIndexInformer<V1Deployment>>,
    Equals<typeof plain, SharedIndexInformer<V1Pod>>,
    Equals<typeof untyped, SharedIndexInformer<KubernetesObject>>,
    Equals<typeof widgets, SharedIndexInformer<Widget>>,
  ] = [true, true, true, true, true];
  assert.deepEqual(checks, [true, true, true, true, true]);
  assert.equal(typed, plain, 'the same scope, the same informer');
  assert.equal(untyped, plain);
  assert.equal(scoped.name, 'deployments.apps in a');
  assert.equal(widgets.name, 'widgets.example.com');
});

test('typed resources: each names a model client-node exports, the one it decodes that kind into; names are unique', () => {
  const exported = clientNode as unknown as Record<string, unknown>;
  const names = new Set<string>();
  for (const r of builtInResources) {
    const model = clientNodeModel({ apiVersion: r.group === '' ? r.version : `${r.group}/${r.version}`, kind: r.kind });
    assert.equal(typeof exported[model], 'function', `${r.resource}.${r.group}: client-node exports ${model}`);
    const key = `${r.group}/${r.resource}`;
    assert.ok(!names.has(key), `${key} once`);
    names.add(key);
    assert.ok(Object.isFrozen(r));
  }
  assert.deepEqual([events.group, eventsV1Events.group], ['', 'events.k8s.io'], "a shared name is the core group's");
  assert.deepEqual({ ...pods }, { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true });
});
