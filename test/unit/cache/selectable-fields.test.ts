import assert from 'node:assert/strict';
import { test } from 'node:test';
import { customResourceSelectableFields, selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import type { ParsedObject } from '../../../src/informer/object.ts';

test('selectable fields: pods, with Go formatting and zero values', () => {
  const pod: ParsedObject = {
    metadata: { name: 'p', namespace: 'ns' },
    spec: { nodeName: 'n1', restartPolicy: 'Always', schedulerName: 'default-scheduler', serviceAccount: 'sa', hostNetwork: true },
    status: { phase: 'Running', podIPs: [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }] },
  };
  assert.deepEqual(selectableFieldsFor('', 'pods', true).extract(pod), {
    'metadata.name': 'p',
    'metadata.namespace': 'ns',
    'spec.nodeName': 'n1',
    'spec.restartPolicy': 'Always',
    'spec.schedulerName': 'default-scheduler',
    'spec.serviceAccountName': 'sa',
    'spec.hostNetwork': 'true',
    'status.phase': 'Running',
    'status.podIP': '10.0.0.1',
    'status.nominatedNodeName': '',
  });
  const bare = selectableFieldsFor('', 'pods', true).extract({ metadata: { name: 'q', namespace: 'ns' } });
  assert.equal(bare['spec.hostNetwork'], 'false');
  assert.equal(bare['status.podIP'], '');
});

test('selectable fields: nodes, namespaces, secrets, RCs, services, events', () => {
  assert.deepEqual(selectableFieldsFor('', 'nodes', false).extract({ metadata: { name: 'n' }, spec: { unschedulable: true } }), {
    'metadata.name': 'n',
    'spec.unschedulable': 'true',
  });
  assert.equal(selectableFieldsFor('', 'nodes', false).extract({ metadata: { name: 'n' } })['spec.unschedulable'], 'false');
  assert.equal(
    selectableFieldsFor('', 'namespaces', false).extract({ metadata: { name: 'x' }, status: { phase: 'Active' } })['status.phase'],
    'Active',
  );
  assert.equal(
    selectableFieldsFor('', 'secrets', true).extract({ metadata: { name: 's', namespace: 'n' }, type: 'Opaque' }).type,
    'Opaque',
  );
  assert.equal(selectableFieldsFor('', 'replicationcontrollers', true).extract({ metadata: { name: 'r' } })['status.replicas'], '0');
  assert.equal(
    selectableFieldsFor('', 'services', true).extract({ metadata: { name: 's' }, spec: { type: 'ClusterIP' } })['spec.type'],
    'ClusterIP',
  );
  const event = selectableFieldsFor('', 'events', true).extract({
    metadata: { name: 'e', namespace: 'n' },
    involvedObject: { kind: 'Pod', name: 'p' },
    reportingComponent: 'ctrl',
  });
  assert.equal(event.source, 'ctrl', 'source falls back to reportingComponent');
  assert.equal(event['involvedObject.kind'], 'Pod');
  const v1 = selectableFieldsFor('events.k8s.io', 'events', true);
  assert.equal(v1.conversion.aliases?.['regarding.name'], 'involvedObject.name');
  assert.equal(v1.extract({ metadata: { name: 'e' }, regarding: { name: 'p' } })['involvedObject.name'], 'p');
});

test('selectable fields: the default is metadata.name and metadata.namespace', () => {
  const cm = selectableFieldsFor('', 'configmaps', true);
  assert.deepEqual([...cm.conversion.allowed].sort(), ['metadata.name', 'metadata.namespace']);
  assert.deepEqual(cm.extract({ metadata: { name: 'c', namespace: 'n' } }), { 'metadata.name': 'c', 'metadata.namespace': 'n' });
  assert.deepEqual(selectableFieldsFor('rbac.authorization.k8s.io', 'clusterroles', false).extract({ metadata: { name: 'r' } }), {
    'metadata.name': 'r',
  });
  assert.deepEqual([...customResourceSelectableFields(false, ['spec.color']).conversion.allowed], ['metadata.name', 'spec.color']);
});
