import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeObject, listItemStartOf } from '../../../src/informer/object.ts';

test('object: the list item of a typed object starts after its TypeMeta, found once at decode', () => {
  const raw = Buffer.from('{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"n"},"spec":{}}');
  const obj = decodeObject(raw);
  assert.equal(`{${raw.subarray(obj.listItemStart).toString()}`, '{"metadata":{"name":"p","namespace":"n"},"spec":{}}');
  assert.equal(listItemStartOf(Buffer.from('{"kind":"Deployment","apiVersion":"apps/v1","metadata":{}}')), 44);
});

test('object: without a leading TypeMeta the item is the object as it is', () => {
  for (const text of [
    '{"apiVersion":"kcp.test/v1","kind":"Widget","metadata":{"name":"w"}}',
    '{"metadata":{"name":"w"}}',
    '{"kind":"Pod","metadata":{"name":"w"}}',
    '{"kind":"Pod","apiVersion":"v1"}',
    '{"kind":"Pod',
    '{}',
  ]) {
    assert.equal(listItemStartOf(Buffer.from(text)), 1, text);
  }
});
