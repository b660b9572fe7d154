import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeObject, parseTime } from '../../../src/protobuf/encode-object.ts';
import { Writer } from '../../../src/protowire/wire.ts';

test('protobuf: RFC 3339 times as Go reads them: whole seconds, the fraction as nanos, offsets, and the zero time as nothing', () => {
  assert.deepEqual(parseTime('1970-01-01T00:00:00Z'), { seconds: 0n, nanos: 0 });
  assert.deepEqual(parseTime('2026-11-26T16:40:54Z'), { seconds: BigInt(Date.UTC(2026, 10, 26, 16, 40, 54) / 1000), nanos: 0 });
  assert.deepEqual(parseTime('2026-01-02T03:04:05.123456Z'), { seconds: BigInt(Date.UTC(2026, 0, 2, 3, 4, 5) / 1000), nanos: 123_456_000 });
  assert.deepEqual(parseTime('2026-01-02T05:04:05+02:00'), { seconds: BigInt(Date.UTC(2026, 0, 2, 3, 4, 5) / 1000), nanos: 0 });
  assert.deepEqual(parseTime('1969-12-31T23:59:59Z'), { seconds: -1n, nanos: 0 });
  assert.equal(parseTime('0001-01-01T00:00:00Z'), undefined);
  assert.throws(() => parseTime('yesterday'), /not an RFC 3339 time/);
});

test('protobuf: varints of negative numbers are ten bytes, as Go writes uint64(int64(v))', () => {
  const w = new Writer();
  w.varintBig(-1n);
  assert.equal(w.finish().toString('hex'), 'ffffffffffffffffff01');
  const big = new Writer();
  big.varintBig(2n ** 63n - 1n);
  assert.equal(big.finish().toString('hex'), 'ffffffffffffffff7f');
});

test('protobuf: a ConfigMap: non-pointer fields written even when absent, maps sorted by key, nil bytes left out, pointers only when set', () => {
  const json = Buffer.from(
    JSON.stringify({
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name: 'n' },
      data: { b: '2', a: '1' },
      binaryData: { x: '', y: null },
    }),
  );
  const bytes = encodeObject('k8s.io/api/core/v1.ConfigMap', json);
  // metadata {1: name "n", 2: generateName "", 3: namespace "", 4: selfLink "", 5: uid "", 6: resourceVersion "", 7: generation 0, 8: creationTimestamp (zero: empty)}
  const meta = '0a016e' + '1200' + '1a00' + '2200' + '2a00' + '3200' + '3800' + '4200';
  const data = '1206' + '0a0161' + '120131' + '1206' + '0a0162' + '120132';
  const binary = '1a05' + '0a0178' + '1200' + '1a03' + '0a0179';
  assert.equal(bytes.toString('hex'), `0a${(meta.length / 2).toString(16).padStart(2, '0')}${meta}${data}${binary}`);
});
