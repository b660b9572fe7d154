import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { answeredObject } from '../../../../src/server/serving/written-resource-version.ts';
import { ANSWER_HEAD_BYTES, listResourceVersion, objectHead } from '../../../../src/server/serving/answer-head.ts';

// A protobuf encoder for the few messages the test needs (apimachinery's generated.proto field numbers).
function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return Buffer.from(out);
}
function bytesField(number: number, value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value) : value;
  return Buffer.concat([varint(number * 8 + 2), varint(bytes.length), bytes]);
}
function varintField(number: number, value: number): Buffer {
  return Buffer.concat([varint(number * 8), varint(value)]);
}
/** k8s\0 + runtime.Unknown{typeMeta{apiVersion, kind}, raw, contentEncoding, contentType}. */
function envelope(kind: string, raw: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from('k8s\u0000', 'latin1'),
    bytesField(1, Buffer.concat([bytesField(1, 'v1'), bytesField(2, kind)])),
    bytesField(2, raw),
    bytesField(3, ''),
    bytesField(4, ''),
  ]);
}
/** A ConfigMap: ObjectMeta{name 1, namespace 3, uid 5, resourceVersion 6, generation 7 (varint)} as field 1, data as field 2. */
function configMap(rv: string): Buffer {
  const meta = Buffer.concat([bytesField(1, 'cm'), bytesField(3, 'ns'), bytesField(5, 'uid'), bytesField(6, rv), varintField(7, 300)]);
  return Buffer.concat([bytesField(1, meta), bytesField(2, Buffer.concat([bytesField(1, 'k'), bytesField(2, 'v')]))]);
}

const PROTOBUF = 'application/vnd.kubernetes.protobuf';

/** The RV the answer names, when it is an object of `kind` (what lessonOf learns from, given the object matches). */
function rvOf(contentType: string, encoding: string, body: Buffer, kind = 'ConfigMap'): bigint | undefined {
  const object = answeredObject(contentType, encoding, body);
  return object?.kind === kind ? object.resourceVersion : undefined;
}

test('answered object: compact and indented JSON (as curl gets it), gzip or not', () => {
  const object = {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name: 'cm', namespace: 'ns', resourceVersion: '12345' },
    data: { resourceVersion: '9' },
  };
  assert.deepEqual(answeredObject('application/json', '', Buffer.from(JSON.stringify(object))), {
    kind: 'ConfigMap',
    name: 'cm',
    namespace: 'ns',
    resourceVersion: 12345n,
  });
  assert.equal(rvOf('application/json; charset=utf-8', '', Buffer.from(JSON.stringify(object, null, 2))), 12345n);
  assert.equal(rvOf('application/json', 'gzip', gzipSync(JSON.stringify(object))), 12345n);
  // A custom resource's keys are sorted: labels and annotations come before resourceVersion.
  const cr = { apiVersion: 'x/v1', kind: 'W', metadata: { labels: { resourceVersion: '1' }, name: 'w', resourceVersion: '77' } };
  assert.deepEqual(answeredObject('application/json', '', Buffer.from(JSON.stringify(cr))), {
    kind: 'W',
    name: 'w',
    namespace: '',
    resourceVersion: 77n,
  });
});

test('answered object: a Status or a list is what it is (no object of the type); an unreadable answer is none', () => {
  const status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: 'cm' } };
  assert.deepEqual(answeredObject('application/json', '', Buffer.from(JSON.stringify(status))), {
    kind: 'Status',
    name: '',
    namespace: '',
    resourceVersion: undefined,
  });
  const list = { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '5' }, items: [] };
  assert.equal(answeredObject('application/json', '', Buffer.from(JSON.stringify(list)))?.kind, 'ConfigMapList');
  assert.equal(answeredObject('application/json', '', Buffer.from(JSON.stringify(list)))?.items, 0);
  const two = { ...list, items: [{ metadata: { name: 'a' } }, { metadata: { name: 'b' } }] };
  assert.equal(answeredObject('application/json', '', Buffer.from(JSON.stringify(two)))?.items, 2);
  // A custom resource's list, keys sorted (items before metadata), and an object is no list.
  const crs = { apiVersion: 'x/v1', items: [], kind: 'WList', metadata: { resourceVersion: '5' } };
  assert.equal(answeredObject('application/json', '', Buffer.from(JSON.stringify(crs)))?.items, 0);
  const notList = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'cm' }, items: [] };
  assert.equal(answeredObject('application/json', '', Buffer.from(JSON.stringify(notList)))?.items, undefined);
  assert.equal(rvOf('application/json', '', Buffer.from(JSON.stringify(list))), undefined);
  assert.equal(answeredObject('application/json', '', Buffer.from('{"kind":"ConfigMap","metadata":{"resourceV')), undefined);
  assert.equal(answeredObject('application/json', '', Buffer.from('{"metadata":{"resourceVersion":"5"}}')), undefined, 'no kind');
  assert.equal(answeredObject('application/yaml', '', Buffer.from('kind: ConfigMap')), undefined);
  assert.equal(answeredObject('application/json', 'br', Buffer.from('{}')), undefined);
  assert.equal(answeredObject('application/json', 'gzip', Buffer.from('not gzip')), undefined);
});

test('answered object: protobuf, from the envelope without a schema', () => {
  assert.deepEqual(answeredObject(PROTOBUF, '', envelope('ConfigMap', configMap('987654321012'))), {
    kind: 'ConfigMap',
    name: 'cm',
    namespace: 'ns',
    resourceVersion: 987654321012n,
  });
  assert.equal(rvOf(PROTOBUF, 'gzip', gzipSync(envelope('ConfigMap', configMap('42')))), 42n);
  const statusMeta = bytesField(1, Buffer.concat([bytesField(2, '')]));
  assert.equal(answeredObject(PROTOBUF, '', envelope('Status', Buffer.concat([statusMeta, bytesField(2, 'Success')])))?.kind, 'Status');
  // A list: ListMeta{resourceVersion 2} as field 1, each item as field 2.
  const listMeta = bytesField(1, bytesField(2, '5'));
  assert.deepEqual(answeredObject(PROTOBUF, '', envelope('ConfigMapList', listMeta)), {
    kind: 'ConfigMapList',
    name: '',
    namespace: '',
    resourceVersion: 5n,
    items: 0,
  });
  const items = Buffer.concat([listMeta, bytesField(2, configMap('3')), bytesField(2, configMap('4'))]);
  assert.equal(answeredObject(PROTOBUF, '', envelope('ConfigMapList', items))?.items, 2);
  assert.equal(answeredObject(PROTOBUF, '', envelope('ConfigMap', configMap('4')))?.items, undefined);
  // Truncated or not protobuf at all.
  const whole = envelope('ConfigMap', configMap('42'));
  assert.equal(answeredObject(PROTOBUF, '', whole.subarray(0, whole.length - 12)), undefined);
  assert.equal(answeredObject(PROTOBUF, '', Buffer.from('{"kind":"ConfigMap"}')), undefined);
});

test('listed RV: a LIST answer’s RV from its first bytes, only where the list metadata comes before the items', () => {
  const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
  const items = [{ metadata: { name: 'a', resourceVersion: '3' } }];
  assert.equal(
    listResourceVersion(
      'application/json',
      '',
      json({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '77' }, items }),
    ),
    77n,
  );
  const table = { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: '78', continue: 'x' }, columnDefinitions: [] };
  assert.equal(listResourceVersion('application/json; charset=utf-8', '', json(table)), 78n);
  // Only the head is read: a body cut after its metadata still shows it.
  const long = json({
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: { resourceVersion: '79' },
    items: Array.from({ length: 500 }, () => items[0]),
  });
  assert.equal(listResourceVersion('application/json', '', long.subarray(0, ANSWER_HEAD_BYTES)), 79n);
  // A custom resource's list (keys sorted: items first), indented JSON, gzip, an object: none.
  const sorted = { apiVersion: 'x/v1', items, kind: 'WList', metadata: { resourceVersion: '80' } };
  assert.equal(listResourceVersion('application/json', '', json(sorted)), undefined);
  const indented = Buffer.from(
    JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '81' }, items }, null, 2),
  );
  assert.equal(listResourceVersion('application/json', '', indented), undefined);
  assert.equal(listResourceVersion('application/json', 'gzip', gzipSync(json({ kind: 'ConfigMapList' }))), undefined);
  assert.equal(
    listResourceVersion('application/json', '', json({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '82' } })),
    undefined,
  );
  // Protobuf: ListMeta{resourceVersion 2} as the list's field 1; the envelope's raw may run past the head.
  const listMeta = bytesField(1, bytesField(2, '83'));
  const list = envelope('ConfigMapList', Buffer.concat([listMeta, ...Array.from({ length: 200 }, () => bytesField(2, configMap('4')))]));
  assert.equal(listResourceVersion(PROTOBUF, '', list), 83n);
  assert.equal(listResourceVersion(PROTOBUF, '', list.subarray(0, 60)), 83n, 'the head alone');
  assert.equal(listResourceVersion(PROTOBUF, '', envelope('Table', listMeta)), 83n);
  assert.equal(listResourceVersion(PROTOBUF, '', envelope('ConfigMap', configMap('84'))), undefined, 'an object is no list');
  assert.equal(listResourceVersion(PROTOBUF, '', list.subarray(0, 20)), undefined, 'cut before its ListMeta');
  const itemFirst = envelope('ConfigMapList', Buffer.concat([bytesField(2, configMap('4')), listMeta]));
  assert.equal(listResourceVersion(PROTOBUF, '', itemFirst), undefined, 'an item before the ListMeta');
});

test('object head: a GET answer’s kind, name, namespace and RV from its first bytes, only where the ObjectMeta comes first', () => {
  const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
  const meta = { name: 'cm', namespace: 'ns', uid: 'u-1', resourceVersion: '90', creationTimestamp: '2026-01-01T00:00:00Z' };
  const expected = { kind: 'ConfigMap', name: 'cm', namespace: 'ns', resourceVersion: 90n };
  assert.deepEqual(
    objectHead('application/json', '', json({ kind: 'ConfigMap', apiVersion: 'v1', metadata: meta, data: { k: 'v' } })),
    expected,
  );
  // generateName and selfLink may come between; a cluster-scoped object has no namespace.
  const generated = { name: 'cm', generateName: 'c', namespace: 'ns', selfLink: '/x', uid: 'u', resourceVersion: '90' };
  assert.deepEqual(objectHead('application/json', '', json({ kind: 'ConfigMap', apiVersion: 'v1', metadata: generated })), expected);
  assert.deepEqual(
    objectHead(
      'application/json',
      '',
      json({ kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'ns', uid: 'u', resourceVersion: '91' } }),
    ),
    { kind: 'Namespace', name: 'ns', namespace: '', resourceVersion: 91n },
  );
  // Only the head is read: an object with a large body still shows its metadata.
  const big = json({ kind: 'ConfigMap', apiVersion: 'v1', metadata: meta, data: { k: 'v'.repeat(100_000) } });
  assert.deepEqual(objectHead('application/json', '', big.subarray(0, ANSWER_HEAD_BYTES)), expected);
  // A custom resource's object (keys sorted), indented JSON, gzip, a list, a Table, a Status: none.
  const sorted = { apiVersion: 'x/v1', kind: 'W', metadata: { name: 'w', resourceVersion: '92' } };
  assert.equal(objectHead('application/json', '', json(sorted)), undefined);
  const indented = Buffer.from(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: meta }, null, 2));
  assert.equal(objectHead('application/json', '', indented), undefined);
  assert.equal(objectHead('application/json', 'gzip', gzipSync(json({ kind: 'ConfigMap', apiVersion: 'v1', metadata: meta }))), undefined);
  assert.equal(
    objectHead('application/json', '', json({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '93' } })),
    undefined,
  );
  assert.equal(
    objectHead('application/json', '', json({ kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: '93' } })),
    undefined,
  );
  assert.equal(objectHead('application/json', '', json({ kind: 'Status', apiVersion: 'v1', metadata: {}, code: 404 })), undefined);
  // Protobuf: ObjectMeta as the object's field 1, resourceVersion its field 6.
  const object = envelope('ConfigMap', configMap('94'));
  assert.deepEqual(objectHead(PROTOBUF, '', object), { kind: 'ConfigMap', name: 'cm', namespace: 'ns', resourceVersion: 94n });
  const large = envelope('ConfigMap', Buffer.concat([configMap('94'), bytesField(2, 'x'.repeat(100_000))]));
  assert.deepEqual(objectHead(PROTOBUF, '', large.subarray(0, ANSWER_HEAD_BYTES)), objectHead(PROTOBUF, '', object), 'the head alone');
  assert.equal(objectHead(PROTOBUF, '', object.subarray(0, 30)), undefined, 'cut before its resourceVersion');
  assert.equal(objectHead(PROTOBUF, '', envelope('ConfigMapList', bytesField(1, bytesField(2, '95')))), undefined, 'a list is no object');
  const noRv = envelope('ConfigMap', bytesField(1, Buffer.concat([bytesField(1, 'cm'), varintField(7, 3)])));
  assert.equal(objectHead(PROTOBUF, '', noRv), undefined, 'no resourceVersion before the later fields');
});
