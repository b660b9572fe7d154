import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FieldLabelConversion } from '../../../src/selector/field-selector.ts';
import { everythingFieldSelector, parseFieldSelector } from '../../../src/selector/field-selector.ts';
import { SelectorParseError } from '../../../src/selector/selector-error.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';

const configmaps: FieldLabelConversion = selectableFieldsFor('', 'configmaps', true).conversion;
const pods: FieldLabelConversion = selectableFieldsFor('', 'pods', true).conversion;

function parseError(text: string, conversion: FieldLabelConversion = pods): string {
  try {
    parseFieldSelector(text, conversion);
  } catch (err) {
    assert.ok(err instanceof SelectorParseError);
    assert.equal(err.code, 400);
    assert.equal(err.parameter, 'fieldSelector');
    return err.message;
  }
  assert.fail(`${JSON.stringify(text)} parsed`);
}

test('FieldSelector: empty terms are skipped; an empty selector selects everything', () => {
  for (const text of ['', ',', ',,']) {
    const s = parseFieldSelector(text, pods);
    assert.equal(s.empty(), true);
    assert.equal(s.matches({}), true);
  }
  assert.equal(everythingFieldSelector().empty(), true);
});

test('FieldSelector: terms are sorted, operators split at the first one, values unescaped', () => {
  const s = parseFieldSelector('status.phase!=Running,metadata.name==a\\,b\\=c\\\\d,spec.nodeName=', pods);
  assert.deepEqual(s.requirements, [
    { field: 'metadata.name', operator: '=', value: 'a,b=c\\d' },
    { field: 'spec.nodeName', operator: '=', value: '' },
    { field: 'status.phase', operator: '!=', value: 'Running' },
  ]);
  assert.equal(s.toString(), 'metadata.name=a,b=c\\d,spec.nodeName=,status.phase!=Running');
  assert.equal(s.requiresExactMatch('metadata.name'), 'a,b=c\\d');
  assert.equal(s.requiresExactMatch('status.phase'), undefined);
});

test('FieldSelector: pods accept spec.host as spec.nodeName', () => {
  const s = parseFieldSelector('spec.host=node-a', pods);
  assert.deepEqual(s.requirements, [{ field: 'spec.nodeName', operator: '=', value: 'node-a' }]);
  assert.equal(s.requiresExactMatch('spec.nodeName'), 'node-a');
});

test('FieldSelector: matching compares strings; a missing field is ""', () => {
  const fields = { 'metadata.name': 'p1', 'spec.nodeName': '' };
  assert.equal(parseFieldSelector('metadata.name=p1', pods).matches(fields), true);
  assert.equal(parseFieldSelector('metadata.name!=p1', pods).matches(fields), false);
  assert.equal(parseFieldSelector('spec.nodeName=', pods).matches(fields), true);
  assert.equal(parseFieldSelector('status.podIPs=', pods).matches(fields), true);
  assert.equal(parseFieldSelector('status.podIPs!=', pods).matches(fields), false);
  assert.equal(parseFieldSelector('metadata.name=p1,spec.nodeName!=', pods).matches(fields), false);
});

test('FieldSelector: syntax and escape errors carry the apiserver messages', () => {
  assert.equal(parseError('a'), "invalid selector: 'a'; can't understand 'a'");
  assert.equal(parseError('metadata.name=p1,bogus'), "invalid selector: 'metadata.name=p1,bogus'; can't understand 'bogus'");
  assert.equal(parseError('metadata.name=a\\x'), 'invalid field selector: invalid escape sequence: \\x');
  assert.equal(parseError('metadata.name=\\é'), 'invalid field selector: invalid escape sequence: \\é');
  assert.equal(parseError('metadata.name=a\\'), 'invalid field selector: invalid escape sequence: \\');
  assert.equal(parseError('metadata.name=a=b'), 'invalid field selector: unescaped character in value: 61');
  // Every term parses before any is converted: the escape error wins over the unknown field.
  assert.equal(parseError('aaa=1,metadata.name=a\\'), 'invalid field selector: invalid escape sequence: \\');
});

test('FieldSelector: unknown fields are worded per resource, first in sorted order', () => {
  assert.equal(parseError('foo=bar'), 'field label not supported: foo');
  assert.equal(parseError('zzz=1,aaa=2'), 'field label not supported: aaa');
  assert.equal(parseError('spec.nodeName =x'), 'field label not supported: spec.nodeName ');
  assert.equal(parseError('=x'), 'field label not supported: ');
  assert.equal(
    parseError('spec.nodeName=x', configmaps),
    '"spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"',
  );
  assert.equal(parseError('a\\,b=c', configmaps), '"a\\\\,b" is not a known field selector: only "metadata.name", "metadata.namespace"');
  assert.equal(
    parseError('metadata.namespace=x', selectableFieldsFor('', 'namespaces', false).conversion),
    'field label not supported: metadata.namespace',
  );
  assert.equal(parseError('x=1', selectableFieldsFor('batch', 'jobs', true).conversion), 'field label "x" not supported for Job');
});
