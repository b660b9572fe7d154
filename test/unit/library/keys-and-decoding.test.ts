import assert from 'node:assert/strict';
import { test } from 'node:test';
import { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import {
  clientNodeDecoder,
  clientNodeModel,
  deletionHandlingMetaNamespaceKeyFunc,
  isDeletedFinalStateUnknown,
  jsonDecoder,
  metaNamespaceKeyFunc,
  splitMetaNamespaceKey,
} from '../../../src/library/informer.ts';
import type { ObjectWithMetadata } from '../../../src/library/informer.ts';

test('keys: namespace/name, name for cluster-scoped objects; DeletedFinalStateUnknown keeps its key; split inverts', () => {
  assert.equal(metaNamespaceKeyFunc({ metadata: { namespace: 'a', name: 'p' } }), 'a/p');
  assert.equal(metaNamespaceKeyFunc({ metadata: { name: 'node-1' } }), 'node-1');
  assert.throws(() => metaNamespaceKeyFunc({ metadata: {} }), TypeError);
  assert.equal(deletionHandlingMetaNamespaceKeyFunc({ kind: 'DeletedFinalStateUnknown', key: 'a/gone', obj: undefined }), 'a/gone');
  assert.equal(deletionHandlingMetaNamespaceKeyFunc({ metadata: { namespace: 'a', name: 'p' } }), 'a/p');
  assert.equal(isDeletedFinalStateUnknown<ObjectWithMetadata>({ metadata: { name: 'p' } }), false);
  assert.deepEqual(splitMetaNamespaceKey('a/p'), { namespace: 'a', name: 'p' });
  assert.deepEqual(splitMetaNamespaceKey('node-1'), { namespace: '', name: 'node-1' });
  assert.throws(() => splitMetaNamespaceKey('a/b/c'), /unexpected key format/);
});

test('decoding: client-node model names by apiVersion and kind, the two Events apart; others metadata only', () => {
  assert.equal(clientNodeModel({ apiVersion: 'v1', kind: 'Pod' }), 'V1Pod');
  assert.equal(clientNodeModel({ apiVersion: 'apps/v1', kind: 'Deployment' }), 'V1Deployment');
  assert.equal(clientNodeModel({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }), 'V1Lease');
  assert.equal(clientNodeModel({ apiVersion: 'storage.k8s.io/v1beta1', kind: 'VolumeAttributesClass' }), 'V1beta1VolumeAttributesClass');
  assert.equal(clientNodeModel({ apiVersion: 'v1', kind: 'Event' }), 'CoreV1Event');
  assert.equal(clientNodeModel({ apiVersion: 'events.k8s.io/v1', kind: 'Event' }), 'EventsV1Event');
  assert.equal(clientNodeModel({ apiVersion: 'example.com/v1', kind: 'Widget' }), 'KubernetesObject');
  assert.equal(clientNodeModel({ kind: 'Pod' }), 'KubernetesObject');
  assert.equal(clientNodeModel('not an object'), 'KubernetesObject');
});

test('decoding: clientNodeDecoder gives what client-node API calls give (model instances, Dates); jsonDecoder the wire JSON', () => {
  const json = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'a', creationTimestamp: '2026-11-20T10:00:00Z' },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
    status: { phase: 'Running', startTime: '2026-11-20T10:00:05Z' },
  };
  const pod: unknown = clientNodeDecoder(structuredClone(json));
  assert.ok(pod instanceof V1Pod);
  assert.ok(pod.metadata instanceof V1ObjectMeta);
  assert.ok(pod.status?.startTime instanceof Date);
  assert.equal(pod.status.startTime.toISOString(), '2026-11-20T10:00:05.000Z');
  const widget = clientNodeDecoder({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', creationTimestamp: '2026-11-20T10:00:00Z' },
    spec: { size: 3 },
  });
  assert.ok(widget.metadata?.creationTimestamp instanceof Date, 'a custom resource: its metadata decoded');
  assert.deepEqual((widget as unknown as { spec: unknown }).spec, { size: 3 }, 'the rest as sent');
  assert.deepEqual(jsonDecoder(structuredClone(json)), json);
});
