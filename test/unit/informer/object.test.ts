import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeObject,
  fieldValue,
  hasName,
  objectByteLength,
  objectBytes,
  objectName,
  objectText,
  typeMetaEnd,
} from '../../../src/informer/object.ts';
import { parseFieldSelector } from '../../../src/selector/field-selector.ts';
import { objectMatchesFields, selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';

test('object: a typed object is kept as its TypeMeta (shared by the type) and the rest, found once at decode', () => {
  const raw = Buffer.from('{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"n"},"spec":{}}');
  const obj = decodeObject(raw);
  assert.equal(obj.typeMeta, '"kind":"Pod","apiVersion":"v1",');
  assert.equal(`{${obj.rest}`, '{"metadata":{"name":"p","namespace":"n"},"spec":{}}', 'the typed list item');
  assert.ok(objectBytes(obj).equals(raw), 'the object as received');
  assert.equal(objectByteLength(obj), raw.length);
  const other = decodeObject(Buffer.from('{"kind":"Pod","apiVersion":"v1","metadata":{"name":"q"}}'));
  assert.equal(other.typeMeta, obj.typeMeta);
  assert.equal(typeMetaEnd(Buffer.from('{"kind":"Deployment","apiVersion":"apps/v1","metadata":{}}')), 44);
});

test('object: without a leading TypeMeta the rest is the object after its brace; a list item gets its list’s TypeMeta', () => {
  for (const text of [
    '{"apiVersion":"kcp.test/v1","kind":"Widget","metadata":{"name":"w"}}',
    '{"metadata":{"name":"w"}}',
    '{"kind":"Pod","metadata":{"name":"w"}}',
  ]) {
    assert.equal(typeMetaEnd(Buffer.from(text)), 1, text);
  }
  assert.equal(typeMetaEnd(Buffer.from('{"kind":"Pod')), 1);
  assert.equal(typeMetaEnd(Buffer.from('{}')), 1);
  const item = Buffer.from('[{"metadata":{"name":"i"}}]');
  const obj = decodeObject(item, undefined, 1, item.length - 1, '"kind":"Pod","apiVersion":"v1",');
  assert.equal(objectBytes(obj).toString(), '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"i"}}');
});

test('object: non-ASCII JSON is kept byte for byte (one character a byte) and decodes as UTF-8', () => {
  const raw = Buffer.from('{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"},"data":{"k":"café 日本 😀"}}');
  const obj = decodeObject(raw);
  assert.equal(obj.rest.length, raw.length - 1 - obj.typeMeta.length, 'one character a byte');
  assert.ok(objectBytes(obj).equals(raw));
  assert.equal((JSON.parse(objectText(obj)) as { data: { k: string } }).data.k, 'café 日本 😀');
});

test('object: labels and selectable fields are shared by the objects that have the same ones; name and namespace are read apart', () => {
  const pod = (name: string, node: string, labels: Record<string, string>): ReturnType<typeof decodeObject> =>
    decodeObject(
      Buffer.from(JSON.stringify({ kind: 'Pod', apiVersion: 'v1', metadata: { name, namespace: 'n', labels }, spec: { nodeName: node } })),
      (p) => ({
        'metadata.name': p.metadata.name ?? '',
        'metadata.namespace': p.metadata.namespace ?? '',
        'spec.nodeName': (p['spec'] as { nodeName: string }).nodeName,
      }),
    );
  const a = pod('a', 'node-1', { app: 'web', hash: 'x' });
  const b = pod('b', 'node-1', { app: 'web', hash: 'x' });
  const c = pod('c', 'node-2', { app: 'web', hash: 'y' });
  assert.equal(a.labels, b.labels, 'one record for the same labels');
  assert.notEqual(a.labels, c.labels);
  assert.deepEqual(c.labels, { app: 'web', hash: 'y' });
  assert.equal(a.fields, b.fields, 'one record for the same fields');
  assert.deepEqual(a.fields, { 'spec.nodeName': 'node-1' });
  assert.ok(Object.isFrozen(a.labels) && Object.isFrozen(a.fields), 'shared records cannot be changed');
  assert.deepEqual(
    ['metadata.name', 'metadata.namespace', 'spec.nodeName', 'status.phase'].map((f) => fieldValue(b, f)),
    ['b', 'n', 'node-1', undefined],
  );
  // A key spelled with lengths: values that would run together stay apart.
  const d = pod('d', 'node-1', { ab: 'c' });
  const e = pod('e', 'node-1', { a: 'bc' });
  assert.notEqual(d.labels, e.labels);
  const cluster = decodeObject(Buffer.from('{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}'));
  assert.equal(fieldValue(cluster, 'metadata.namespace'), undefined, 'a cluster-scoped object has no namespace field');
});

test('object: the name is the key after the namespace; hasName compares without making it', () => {
  const namespaced = decodeObject(Buffer.from('{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-1","namespace":"ns"}}'));
  const cluster = decodeObject(Buffer.from('{"kind":"Node","apiVersion":"v1","metadata":{"name":"node-1"}}'));
  assert.deepEqual([objectName(namespaced), objectName(cluster)], ['web-1', 'node-1']);
  assert.deepEqual(
    ['web-1', 'b-1', 's/web-1', '', 'ns/web-1'].map((n) => hasName(namespaced, n)),
    [true, false, false, false, false],
  );
  assert.deepEqual(
    ['node-1', 'node-2', ''].map((n) => hasName(cluster, n)),
    [true, false, false],
  );
  const selector = parseFieldSelector('metadata.name=web-1,metadata.namespace!=other', selectableFieldsFor('', 'pods', true).conversion);
  assert.equal(objectMatchesFields(selector, namespaced), true);
  assert.equal(
    objectMatchesFields(parseFieldSelector('metadata.name!=web-1', selectableFieldsFor('', 'pods', true).conversion), namespaced),
    false,
  );
});
