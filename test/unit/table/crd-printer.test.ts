/**
 * CRD printer columns (src/table/crd-printer.ts) against the apiextensions-apiserver's
 * tableconvertor: the cases of its tableconvertor_test.go, and cells checked against
 * tableconvertor.New + ConvertToTable run on the same columns and objects (decoded as the
 * apiserver decodes them), at a fixed `now`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CREATION_TIMESTAMP_DESCRIPTION, NAME_COLUMN } from '../../../src/table/columns.ts';
import { crdPrinter } from '../../../src/table/crd-printer.ts';
import type { Cell, KubeJson, Printer } from '../../../src/table/model.ts';

const NOW = Date.parse('2026-01-01T00:00:00Z');

function crd(versions: readonly KubeJson[]): KubeJson {
  return { spec: { group: 'kcp.test', names: { plural: 'widgets' }, versions } };
}

function printerOf(columns: readonly KubeJson[]): Printer {
  const p = crdPrinter(crd([{ name: 'v1', additionalPrinterColumns: columns }]), 'v1');
  assert.ok(p !== undefined);
  return p;
}

function cells(p: Printer, spec: unknown, status: unknown = {}): readonly Cell[] {
  const rows = p.print({ metadata: { name: 'w' }, spec, status }, NOW);
  assert.equal(rows.length, 1);
  return rows[0]?.cells.slice(1) ?? [];
}

/** One column of `type` on `.spec.v`: the cell printed for each value. */
function cellsOf(type: string, values: readonly unknown[], jsonPath = '.spec.v'): Cell[] {
  const p = printerOf([{ name: 'C', type, jsonPath }]);
  return values.map((v) => cells(p, { v })[0] ?? null);
}

test('crdPrinter: columns as New declares them: Name, then each column with its type, format, priority and description', () => {
  const p = printerOf([
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Size', type: 'integer', format: 'int64', priority: 1, description: 'How big', jsonPath: '.spec.size' },
  ]);
  assert.equal(p.group, 'kcp.test');
  assert.equal(p.resource, 'widgets');
  assert.deepEqual(p.columns, [
    NAME_COLUMN,
    {
      name: 'Phase',
      type: 'string',
      format: '',
      description: 'Custom resource definition column (in JSONPath format): .status.phase',
      priority: 0,
    },
    { name: 'Size', type: 'integer', format: 'int64', description: 'How big', priority: 1 },
  ]);
});

test('crdPrinter: a version without columns prints Age (serveDefaultColumnsIfEmpty); an unknown version has no printer', () => {
  const c = crd([{ name: 'v1', additionalPrinterColumns: [{ name: 'X', type: 'string', jsonPath: '.x' }] }, { name: 'v2' }]);
  const p = crdPrinter(c, 'v2');
  assert.ok(p !== undefined);
  assert.deepEqual(p.columns, [
    NAME_COLUMN,
    { name: 'Age', type: 'date', format: '', description: CREATION_TIMESTAMP_DESCRIPTION, priority: 0 },
  ]);
  assert.deepEqual(p.print({ metadata: { name: 'a', creationTimestamp: '2025-12-31T23:00:00Z' } }, NOW), [{ cells: ['a', '60m'] }]);
  assert.equal(crdPrinter(c, 'v3'), undefined);
});

test('crdPrinter: a path Parse rejects ends the columns there, as New returns its partial convertor', () => {
  const p = printerOf([
    { name: 'A', type: 'string', jsonPath: '.spec.a' },
    { name: 'Bad', type: 'string', jsonPath: '.spec[x' },
    { name: 'After', type: 'string', jsonPath: '.spec.a' },
  ]);
  assert.deepEqual(
    p.columns.map((c) => c.name),
    ['Name', 'A'],
  );
  assert.deepEqual(cells(p, { a: 'x' }), ['x']);
});

test('crdPrinter: a path this port cannot evaluate as Go does (range) gives no printer', () => {
  assert.equal(
    crdPrinter(crd([{ name: 'v1', additionalPrinterColumns: [{ name: 'R', type: 'string', jsonPath: '.a}{range .b}{end' }] }]), 'v1'),
    undefined,
  );
});

test('crdPrinter: string columns print what PrintResults prints (tableconvertor_test.go: multiple values)', () => {
  const p = printerOf([
    { name: 'valueOnly', type: 'string', jsonPath: '.spec.servers[0].hosts[0]' },
    { name: 'single1', type: 'string', jsonPath: '.spec.servers[0].hosts' },
    { name: 'single2', type: 'string', jsonPath: '.spec.servers[1].hosts' },
    { name: 'multi', type: 'string', jsonPath: '.spec.servers[*].hosts' },
    { name: 'ints', type: 'string', jsonPath: '.spec.foo[*].bar' },
    { name: 'int', type: 'integer', jsonPath: '.spec.foo[0].bar[0]' },
    { name: 'intOfList', type: 'integer', jsonPath: '.spec.foo[0].bar' },
  ]);
  const spec = { servers: [{ hosts: ['foo'] }, { hosts: ['bar', 'baz'] }], foo: [{ bar: [1] }, { bar: [2, 3] }] };
  assert.deepEqual(cells(p, spec), ['foo', '["foo"]', '["bar","baz"]', '["foo"]', '[1]', 1, null]);
});

test('crdPrinter: cellForJSONValue per type (tableconvertor_test.go Test_cellForJSONValue)', () => {
  assert.deepEqual(cellsOf('integer', [42, 3.14, true, 'foo']), [42, 3, null, null]);
  assert.deepEqual(cellsOf('number', [42, 3.14, true, 'foo']), [42, 3.14, null, null]);
  assert.deepEqual(cellsOf('boolean', [42, 3.14, true, 'foo']), [null, null, true, null]);
  assert.deepEqual(cellsOf('date', [42, 3.14, true, '2025-12-31T11:30:00Z', '2026-01-01T12:30:00Z', '']), [
    null,
    null,
    null,
    '12h',
    '<invalid>',
    '<unknown>',
  ]);
  assert.deepEqual(cellsOf('unknown', ['foo']), [null]);
});

test('crdPrinter: numbers as the apiserver holds them: int64 when integral, else float64 (checked against Go)', () => {
  // int64(f) truncates; out of int64's range amd64 gives the minimum
  assert.deepEqual(cellsOf('integer', [1.5, -1.5, -0.5, 1e21, -1e21, 9.3e18, -0]), [1, -1, 0, -(2 ** 63), -(2 ** 63), -(2 ** 63), 0]);
  assert.ok(Object.is(cellsOf('integer', [-0.5])[0], 0));
  assert.deepEqual(cellsOf('number', [1, 1.5, 1e21, 0.00001, 1e-7]), [1, 1.5, 1e21, 0.00001, 1e-7]);
  assert.ok(Object.is(cellsOf('number', [-0])[0], 0), '-0 reads back as int64 0');
  // string: fmt's %v of float64 (%e from exponent 6 on and below -4), JSON for maps and arrays
  assert.deepEqual(cellsOf('string', [1, 1.5, 1e21, 1e20, 1234567.5, 100000.5, 0.00001, 0.0001, 1e-7, -0, true, null]), [
    '1',
    '1.5',
    '1e+21',
    '1e+20',
    '1.2345675e+06',
    '100000.5',
    '1e-05',
    '0.0001',
    '1e-07',
    '0',
    'true',
    '<no value>',
  ]);
  assert.deepEqual(cellsOf('string', [{ b: 1e21, a: '<x>', c: [1, 2.5, 1e-7] }, [], {}]), [
    '{"a":"\\u003cx\\u003e","b":1e+21,"c":[1,2.5,1e-7]}',
    '[]',
    '{}',
  ]);
});

test('crdPrinter: path literals and string bytes keep their Go types (int and uint8 are neither int64 nor float64)', () => {
  assert.deepEqual(cellsOf('integer', [1], '.spec.v 5'), [null]);
  assert.deepEqual(cellsOf('integer', [1], '.spec.v 5.7'), [5]);
  assert.deepEqual(cellsOf('number', [1], '.spec.v 5.0'), [5]);
  assert.deepEqual(cellsOf('string', ['hé'], '.spec.v.*'), ['104']);
  assert.deepEqual(cellsOf('integer', ['hé'], '.spec.v.*'), [null]);
});

test('crdPrinter: missing paths, wrong types and errors print null', () => {
  const p = printerOf([
    { name: 'Missing', type: 'string', jsonPath: '.spec.nothere' },
    { name: 'NotList', type: 'string', jsonPath: '.spec.m[0]' },
    { name: 'OutOfRange', type: 'string', jsonPath: '.spec.l[5]' },
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'BadCompare', type: 'string', jsonPath: '.status.conditions[?(@.n==1)].type' },
    { name: 'Empty', type: 'string', jsonPath: '.spec.l[0:0]' },
  ]);
  const status = {
    conditions: [
      { type: 'Synced', status: 'False', n: 1 },
      { type: 'Ready', status: 'True', n: 1.5 },
    ],
  };
  assert.deepEqual(cells(p, { m: { a: 1 }, l: [1] }, status), [null, null, null, 'True', null, null]);
});

test('crdPrinter: date columns parse as time.Parse(RFC3339) does and print HumanDuration at now', () => {
  assert.deepEqual(
    cellsOf('date', [
      '2025-12-31T23:59:55Z',
      '2025-12-31T23:59:55.999999999999Z',
      '2025-12-31T22:00:00-01:00',
      '2025-12-31T1:00:00Z',
      '2025-12-31T23:00:00,5Z',
      '2025-12-31T23:00:00+24:00',
      '2024-02-29T00:00:00Z',
      '0001-01-01T00:00:00Z',
      '0001-01-01T01:00:00+01:00',
      '0005-01-01T00:00:00Z',
      'null',
      '2025-12-31t23:00:00z',
      '2025-02-29T00:00:00Z',
      '2025-12-31T24:00:00Z',
      '2025-12-31T23:00:00+25:00',
      '2025-12-31',
      '2025-12-31T23:00:00',
    ]),
    [
      '5s',
      '4s',
      '60m',
      '23h',
      '59m',
      '25h',
      '672d',
      '<unknown>',
      '<unknown>',
      '292y',
      '<unknown>',
      '<invalid>',
      '<invalid>',
      '<invalid>',
      '<invalid>',
      '<invalid>',
      '<invalid>',
    ],
  );
});
