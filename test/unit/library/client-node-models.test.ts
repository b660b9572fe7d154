/**
 * The library's decoding over client-node's public model classes (src/library/client-node-models.ts)
 * gives what client-node's own serializer gives: the same model class, the same fields, Dates
 * where client-node makes them. client-node's serializer is imported here by its internal path, as a
 * reference only: the library never loads it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ObjectSerializer as Reference } from '@kubernetes/client-node/dist/serializer.js';
import { ObjectSerializer } from '../../../src/library/client-node-models.ts';
import { clientNodeModel } from '../../../src/library/object-decoder.ts';

const objects: readonly unknown[] = [
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web-0',
      namespace: 'default',
      creationTimestamp: '2026-01-02T03:04:05Z',
      labels: { app: 'web' },
      managedFields: [{ manager: 'kubectl', operation: 'Apply', time: '2026-01-02T03:04:05Z', fieldsV1: { 'f:metadata': {} } }],
    },
    spec: { containers: [{ name: 'app', image: 'nginx', ports: [{ containerPort: 80 }], resources: { limits: { cpu: '1' } } }] },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-02T03:04:06Z' }],
      unknownField: 1,
    },
  },
  { apiVersion: 'v1', kind: 'Event', metadata: { name: 'e' }, involvedObject: { kind: 'Pod' }, firstTimestamp: '2026-01-02T03:04:05Z' },
  { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l' }, spec: { renewTime: '2026-01-02T03:04:05.123456Z' } },
  { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', creationTimestamp: '2026-01-02T03:04:05Z' }, spec: { size: 3 } },
  { apiVersion: 'v1', kind: 'NoSuchKind', metadata: { name: 'x' }, extra: [1, 2] },
];

test('client-node-models: each object decodes as client-node decodes it (class, fields, Dates)', () => {
  for (const json of objects) {
    const type = clientNodeModel(json);
    const ours = ObjectSerializer.deserialize(structuredClone(json), type);
    const theirs: unknown = Reference.deserialize(structuredClone(json), type);
    assert.deepEqual(JSON.parse(JSON.stringify(ours)), JSON.parse(JSON.stringify(theirs)), type);
    // An object without a model is a plain object here, an instance of client-node's private KubernetesObject class there.
    const modelled = (theirs as object).constructor.name !== 'KubernetesObject';
    if (modelled) assert.equal((ours as object).constructor, (theirs as object).constructor, `${type}: the same model class`);
    else assert.equal((ours as object).constructor, Object, `${type}: a plain object`);
    const created = (ours as { metadata?: { creationTimestamp?: unknown } }).metadata?.creationTimestamp;
    if (created !== undefined) assert.ok(created instanceof Date, `${type}: metadata timestamps are Dates`);
  }
});

test('client-node-models: null, arrays and primitives pass as client-node passes them', () => {
  for (const [data, type] of [
    [null, 'V1Pod'],
    [undefined, 'V1Pod'],
    ['x', 'string'],
    [[{ name: 'a' }], 'Array<V1Container>'],
    [{ a: '1' }, '{ [key: string]: string; }'],
  ] as const) {
    assert.deepEqual(ObjectSerializer.deserialize(data, type), Reference.deserialize(data, type), type);
  }
});
