import assert from 'node:assert/strict';
import { test } from 'node:test';
import { everythingLabelSelector, parseLabelSelector } from '../../../src/selector/label-selector.ts';
import { SelectorParseError } from '../../../src/selector/selector-error.ts';

function parseError(text: string): string {
  try {
    parseLabelSelector(text);
  } catch (err) {
    assert.ok(err instanceof SelectorParseError);
    assert.equal(err.code, 400);
    assert.equal(err.parameter, 'labelSelector');
    return err.message;
  }
  assert.fail(`${JSON.stringify(text)} parsed`);
}

const KEY_REGEX =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_REGEX =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

test('LabelSelector: empty and blank strings select everything', () => {
  for (const text of ['', '   ', '\t\n']) {
    const s = parseLabelSelector(text);
    assert.equal(s.empty(), true);
    assert.equal(s.matches({}), true);
  }
  assert.equal(everythingLabelSelector().matches({ a: 'b' }), true);
});

test('LabelSelector: requirements are parsed, sorted by key, values sorted and deduplicated', () => {
  const s = parseLabelSelector('z, !y, x in (c,a,a), w notin (), v=1, u==2, t!=3, s>4, r<5, q in (,b)');
  assert.deepEqual(s.requirements, [
    { key: 'q', operator: 'in', values: ['', 'b'] },
    { key: 'r', operator: 'lt', values: ['5'] },
    { key: 's', operator: 'gt', values: ['4'] },
    { key: 't', operator: '!=', values: ['3'] },
    { key: 'u', operator: '==', values: ['2'] },
    { key: 'v', operator: '=', values: ['1'] },
    { key: 'w', operator: 'notin', values: [''] },
    { key: 'x', operator: 'in', values: ['a', 'c'] },
    { key: 'y', operator: '!', values: [] },
    { key: 'z', operator: 'exists', values: [] },
  ]);
  assert.equal(s.toString(), 'q in (,b),r<5,s>4,t!=3,u==2,v=1,w notin (),x in (a,c),!y,z');
});

test('LabelSelector: in / notin keywords are identifiers where values are expected', () => {
  assert.deepEqual(parseLabelSelector('in in (in, notin)').requirements, [{ key: 'in', operator: 'in', values: ['in', 'notin'] }]);
  assert.deepEqual(parseLabelSelector('notin=notin').requirements, [{ key: 'notin', operator: '=', values: ['notin'] }]);
  assert.deepEqual(parseLabelSelector('a=,b').requirements, [
    { key: 'a', operator: '=', values: [''] },
    { key: 'b', operator: 'exists', values: [] },
  ]);
});

test('LabelSelector: matching follows Requirement.Matches', () => {
  const labels = { app: 'web', tier: '', n: '10', bad: 'x' };
  const cases: [string, boolean][] = [
    ['app', true],
    ['!app', false],
    ['missing', false],
    ['!missing', true],
    ['app=web', true],
    ['app==db', false],
    ['app!=web', false],
    ['missing!=web', true],
    ['app in (db,web)', true],
    ['missing in (db)', false],
    ['app notin (db)', true],
    ['missing notin (db)', true],
    ['tier in ()', true],
    ['tier=', true],
    ['tier notin ()', false],
    ['n>9', true],
    ['n>10', false],
    ['n<11', true],
    ['missing>1', false],
    ['bad>1', false],
    ['bad<1', false],
    ['app=web,n>1', true],
    ['app=web,n>100', false],
  ];
  for (const [text, want] of cases) assert.equal(parseLabelSelector(text).matches(labels), want, text);
  assert.equal(parseLabelSelector('n>9223372036854775806').matches({ n: '9223372036854775807' }), true);
  assert.equal(parseLabelSelector('n<1').matches({ n: '9223372036854775808' }), false, 'beyond int64: not an integer');
  assert.equal(parseLabelSelector('constructor').matches({}), false, 'only own labels exist');
});

test('LabelSelector: exact matches and label index lookups', () => {
  const s = parseLabelSelector('app in (a,b,c), tier=front, x notin (y)');
  assert.equal(s.requiresExactMatch('tier'), 'front');
  assert.equal(s.requiresExactMatch('app'), undefined);
  assert.equal(s.requiresExactMatch('x'), undefined);
  assert.deepEqual(s.labelIndexValues(), ['tier=front']);
  assert.deepEqual(parseLabelSelector('app in (b,a)').labelIndexValues(), ['app=a', 'app=b']);
  assert.equal(parseLabelSelector('app in (a)').requiresExactMatch('app'), 'a');
  assert.equal(parseLabelSelector('!app, x notin (y), n>1').labelIndexValues(), undefined);
});

test('LabelSelector: grammar errors carry the apiserver messages', () => {
  const cases: [string, string][] = [
    ['a b', "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"],
    ['x gt 1', "unable to parse requirement: found 'gt', expected: in, notin, =, ==, !=, gt, lt"],
    ['a in (b', "unable to parse requirement: found '', expected: ',' or ')'"],
    ['a in (b c)', "unable to parse requirement: found 'c', expected: ',' or ')'"],
    ['a in (b,(c)', "unable to parse requirement: found '(', expected: ',', or identifier"],
    ['a in b', "unable to parse requirement: found 'b' expected: '('"],
    ['a in (=)', "unable to parse requirement: found '=', expected: ',', ')' or identifier"],
    ['a=(b)', "unable to parse requirement: found '(', expected: identifier"],
    ['a=b=c', "found '=', expected: ',' or 'end of string'"],
    ['a=b c', "found 'c', expected: ',' or 'end of string'"],
    ['!app=web', "found '=', expected: ',' or 'end of string'"],
    [',a', "found ',', expected: !, identifier, or 'end of string'"],
    ['=b', "found '=', expected: !, identifier, or 'end of string'"],
    ['a,', "found '', expected: identifier after ','"],
    ['a,,b', "found ',', expected: identifier after ','"],
    ['!', "unable to parse requirement: found '', expected: identifier"],
    ['a!==b', "unable to parse requirement: found '=', expected: identifier"],
    ['x>=1', "unable to parse requirement: found '=', expected: identifier"],
    ['a\u0000b', "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"],
  ];
  for (const [text, message] of cases) assert.equal(parseError(text), message, text);
});

test('LabelSelector: key and value validation errors carry the apiserver messages', () => {
  assert.equal(parseError('A B'), "unable to parse requirement: found 'B', expected: in, notin, =, ==, !=, gt, lt");
  assert.equal(parseError('-a'), `unable to parse requirement: <nil>: Invalid value: "-a": name part ${KEY_REGEX}`);
  assert.equal(parseError('/a'), 'unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty');
  assert.equal(
    parseError('a/'),
    `unable to parse requirement: <nil>: Invalid value: "a/": name part must be non-empty; name part ${KEY_REGEX}`,
  );
  assert.equal(
    parseError('a/b/c'),
    `unable to parse requirement: <nil>: Invalid value: "a/b/c": a valid label key ${KEY_REGEX} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
  );
  assert.equal(
    parseError('Example.com/app'),
    `unable to parse requirement: <nil>: Invalid value: "Example.com/app": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
  );
  assert.equal(
    parseError('k'.repeat(64)),
    `unable to parse requirement: <nil>: Invalid value: "${'k'.repeat(64)}": name part must be no more than 63 bytes`,
  );
  assert.equal(
    parseError(`a=${'v'.repeat(64)}`),
    `unable to parse requirement: values[0][a]: Invalid value: "${'v'.repeat(64)}": must be no more than 63 bytes`,
  );
  assert.equal(parseError('a=-b'), `unable to parse requirement: values[0][a]: Invalid value: "-b": ${VALUE_REGEX}`);
  assert.equal(
    parseError('a in (-b,-c)'),
    `unable to parse requirement: [values[0][a]: Invalid value: "-b": ${VALUE_REGEX}, values[1][a]: Invalid value: "-c": ${VALUE_REGEX}]`,
  );
  assert.equal(
    parseError('x>a'),
    `unable to parse requirement: values[0]: Invalid value: "a": for 'Gt', 'Lt' operators, the value must be an integer`,
  );
  assert.equal(
    parseError('x>'),
    `unable to parse requirement: values[0]: Invalid value: "": for 'Gt', 'Lt' operators, the value must be an integer`,
  );
  assert.equal(
    parseError('x>a-'),
    `unable to parse requirement: [values[0]: Invalid value: "a-": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: "a-": ${VALUE_REGEX}]`,
  );
  assert.equal(parseError('x>-1'), `unable to parse requirement: values[0][x]: Invalid value: "-1": ${VALUE_REGEX}`);
  assert.equal(
    parseError('x>99999999999999999999'),
    `unable to parse requirement: values[0]: Invalid value: "99999999999999999999": for 'Gt', 'Lt' operators, the value must be an integer`,
  );
  // Go %q of non-ASCII and control characters.
  assert.equal(parseError('a=\u0001'), `unable to parse requirement: values[0][a]: Invalid value: "\\x01": ${VALUE_REGEX}`);
  assert.equal(parseError('a=b\u00a0'), `unable to parse requirement: values[0][a]: Invalid value: "b\\u00a0": ${VALUE_REGEX}`);
  assert.equal(parseError('é=1'), `unable to parse requirement: <nil>: Invalid value: "é": name part ${KEY_REGEX}`);
});
