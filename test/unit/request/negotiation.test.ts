import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_SORTED_CLAUSES, negotiateRead, parseAccept, parseGoFloat32, prettyByRequest } from '../../../src/request/negotiation.ts';
import type * as Negotiation from '../../../src/request/negotiation.ts';
import { runsInLinearTime } from '../../helpers/linear-work.ts';

const KUBECTL_GET = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const METADATA_CLIENT =
  'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const TYPED_PROTOBUF = 'application/vnd.kubernetes.protobuf, */*';
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

test('negotiateRead: what the apiserver would answer in plain JSON, the cache answers', () => {
  for (const accept of [
    undefined,
    '',
    'application/json',
    '*/*',
    '*',
    'application/*',
    BROWSER,
    'application/json;q=0',
    'application/json;stream=watch',
    'application/json, application/yaml',
  ]) {
    assert.deepEqual(negotiateRead(accept, true), { kind: 'json', pretty: false }, String(accept));
  }
  assert.deepEqual(negotiateRead('application/json;pretty=1', true), { kind: 'json', pretty: true });
  assert.deepEqual(
    negotiateRead('application/json;charset=utf-8', true),
    { kind: 'json', pretty: false },
    'unknown parameters are ignored',
  );
});

test('negotiateRead: YAML and the unacceptable go to the apiserver', () => {
  for (const [accept, reason] of [
    ['application/yaml', 'yaml'],
    ['application/yaml, application/json', 'yaml'],
    ['application/json;q=0.5, application/yaml', 'yaml'],
    ['text/plain', 'not-acceptable'],
    ['application/yaml;stream=watch', 'not-acceptable'],
  ] as const) {
    assert.deepEqual(negotiateRead(accept, true), { kind: 'apiserver', reason }, accept);
  }
});

test('negotiateRead: client-go’s metadata client gets PartialObjectMetadata(List) in protobuf, its first choice; in JSON when asked first', () => {
  assert.deepEqual(negotiateRead(METADATA_CLIENT, true), { kind: 'metadata', version: 'v1', list: true, pretty: false, protobuf: true });
  assert.deepEqual(negotiateRead('application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1,application/json', true), {
    kind: 'metadata',
    version: 'v1beta1',
    list: false,
    pretty: false,
    protobuf: false,
  });
  assert.deepEqual(
    negotiateRead('application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;pretty=1,application/json', true),
    { kind: 'metadata', version: 'v1', list: false, pretty: false, protobuf: true },
    'protobuf is never indented',
  );
});

test('negotiateRead: kubectl get gets a JSON Table, v1 or v1beta1 as asked first', () => {
  assert.deepEqual(negotiateRead(KUBECTL_GET, true), { kind: 'table', version: 'v1', pretty: false });
  assert.deepEqual(negotiateRead('application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json', true), {
    kind: 'table',
    version: 'v1beta1',
    pretty: false,
  });
  assert.deepEqual(
    negotiateRead('application/yaml;as=Table;v=v1;g=meta.k8s.io', true),
    { kind: 'apiserver', reason: 'yaml' },
    'a YAML Table',
  );
});

test('negotiateRead: a conversion the apiserver cannot do is skipped, as it skips it', () => {
  // as=Table without g and v, or in another group: not a conversion the endpoint does; the next clause decides.
  assert.deepEqual(negotiateRead('application/json;as=Table, application/json', true), { kind: 'json', pretty: false });
  assert.deepEqual(negotiateRead('application/json;as=Table;g=apps;v=v1, application/json', true), { kind: 'json', pretty: false });
  // A Table in protobuf is not served: the JSON Table after it is the apiserver's choice.
  assert.deepEqual(
    negotiateRead('application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/json;as=Table;g=meta.k8s.io;v=v1', true),
    { kind: 'table', version: 'v1', pretty: false },
  );
});

test('negotiateRead: client-go typed clients get protobuf for built-in types, JSON for custom resources (which have none)', () => {
  assert.deepEqual(negotiateRead(TYPED_PROTOBUF, true), { kind: 'protobuf' });
  assert.deepEqual(negotiateRead('application/vnd.kubernetes.protobuf', true), { kind: 'protobuf' }, 'protobuf alone');
  assert.deepEqual(negotiateRead(TYPED_PROTOBUF, false), { kind: 'json', pretty: false });
  assert.deepEqual(
    negotiateRead('application/vnd.kubernetes.protobuf', false),
    { kind: 'apiserver', reason: 'protobuf-only' },
    '406 for a custom resource',
  );
});

test('parseAccept: preference order as goautoneg sorts it, quirks included (Go insertion-sorts with a Less that is no strict order)', () => {
  const order = (parseAccept('*/*;q=0.8, text/*, application/json;q=0.9, application/yaml') ?? []).map((c) => `${c.type}/${c.subType}`);
  // application/json (q=0.9) before text/* (q=1): Go's Less puts a specific subtype before a wildcard whatever the q.
  assert.deepEqual(order, ['application/yaml', 'application/json', 'text/*', '*/*']);
  assert.deepEqual(
    (parseAccept('application, a/b/c, application/json;q=x') ?? []).map((c) => `${c.type}/${c.subType}:${String(c.q)}`),
    ['application/json:0'],
  );
});

test('prettyByRequest: ?pretty= as strconv.ParseBool, else curl, Wget and browsers', () => {
  const q = (s: string): URLSearchParams => new URLSearchParams(s);
  assert.equal(prettyByRequest(q(''), 'curl/8.5.0'), true);
  assert.equal(prettyByRequest(q(''), 'Wget/1.21'), true);
  assert.equal(prettyByRequest(q(''), 'Mozilla/5.0 (X11; Linux x86_64)'), true);
  assert.equal(prettyByRequest(q(''), 'kubectl/v1.37.2'), false);
  assert.equal(prettyByRequest(q(''), undefined), false);
  for (const v of ['1', 't', 'T', 'true', 'TRUE', 'True']) assert.equal(prettyByRequest(q(`pretty=${v}`), 'go'), true, v);
  for (const v of ['0', 'false', 'yes', 'xyz']) assert.equal(prettyByRequest(q(`pretty=${v}`), 'curl/8'), false, v);
  assert.equal(prettyByRequest(q('pretty='), 'curl/8'), true, 'an empty value leaves it to the User-Agent');
});

test('negotiateRead: goautoneg’s parsing to the letter (cases the apiserver was asked, each answered as it answered)', () => {
  const table = 'application/json;as=Table;g=meta.k8s.io;v=v1';
  // A parameter without a value is dropped: `q=` leaves q at 1, `as=` asks for nothing.
  assert.deepEqual(negotiateRead(`application/json;q=,${table};q=0.5`, true), { kind: 'json', pretty: false });
  assert.deepEqual(negotiateRead(`application/json;as=,${table}`, true), { kind: 'json', pretty: false });
  // sv=v1 is the meta group's version: allowed.
  assert.deepEqual(negotiateRead(`application/json;sv=v1, ${table}`, true), { kind: 'json', pretty: false });
  // ParseFloat reads Inf.
  assert.deepEqual(negotiateRead(`${table};q=0.9,application/json;q=Inf`, true), { kind: 'json', pretty: false });
  // Only spaces are trimmed: a tab makes `\tapplication/json` another type, and `\tg` another parameter.
  assert.deepEqual(negotiateRead('text/html,\tapplication/json', true), { kind: 'apiserver', reason: 'not-acceptable' });
  assert.deepEqual(negotiateRead('application/json;as=Table;\tg=meta.k8s.io;v=v1, application/json', true), {
    kind: 'json',
    pretty: false,
  });
  // Past 12 clauses Go's sort is another algorithm: the apiserver decides.
  const thirteen =
    'text/html;q=0.5,image/png;q=0.1,application/yaml;q=0.5,image/png;q=0.9,image/png;q=0.5,*/*,*/*,*/*;q=0.1,text/plain,text/plain;q=0.5,*/*,image/png,text/html;q=0.9';
  assert.deepEqual(negotiateRead(thirteen, true), { kind: 'apiserver', reason: 'too-many-accept-clauses' });
  // A custom resource's metadata in protobuf is served (conversions have protobuf): not the plain JSON after it.
  assert.deepEqual(
    negotiateRead('application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json', false),
    { kind: 'metadata', version: 'v1', list: true, pretty: false, protobuf: true },
  );
});

test('parseGoFloat32: strconv.ParseFloat(s, 32) with its error ignored', () => {
  assert.equal(parseGoFloat32('0.5'), 0.5);
  assert.equal(parseGoFloat32('Inf'), Infinity);
  assert.equal(parseGoFloat32('-infinity'), -Infinity);
  assert.ok(Number.isNaN(parseGoFloat32('NaN')));
  assert.equal(parseGoFloat32('1e39'), Infinity, 'out of float32 range');
  assert.equal(parseGoFloat32('0x1p-2'), 0.25);
  assert.equal(parseGoFloat32('0x1_0p0'), 16);
  assert.equal(parseGoFloat32(' 0.5'), 0, 'not trimmed');
  assert.equal(parseGoFloat32('1_0'), 0, 'underscores only after a base prefix');
  assert.equal(parseGoFloat32(''), 0);
});

test('parseAccept: a header past MAX_SORTED_CLAUSES is left to the apiserver, read no further than the clause past the limit', () => {
  const clauses = (n: number): string => Array.from({ length: n }, (_, i) => `a/b;q=0.${String(i).padStart(3, '0')}`).join(',');
  assert.equal(parseAccept(clauses(MAX_SORTED_CLAUSES))?.length, MAX_SORTED_CLAUSES);
  assert.equal(parseAccept(clauses(MAX_SORTED_CLAUSES + 1)), undefined);
  // Skipped clauses (no subtype, empty) do not count, as goautoneg never keeps them.
  assert.equal(parseAccept(`${clauses(MAX_SORTED_CLAUSES)},x,,  ,a/b/c`)?.length, MAX_SORTED_CLAUSES);
  // Only the parameters negotiation reads are kept: a clause of many holds a map of few.
  const many = parseAccept(`application/json;${Array.from({ length: 1000 }, (_, i) => `k${String(i)}=v`).join(';')};as=Table;pretty=1`);
  assert.deepEqual(
    [...(many?.[0]?.params ?? [])],
    [
      ['as', 'Table'],
      ['pretty', '1'],
    ],
  );
});

test('parseGoFloat32: a hexadecimal float of many digits reads as Go reads it (13 significant digits, the rest in the exponent)', () => {
  assert.equal(parseGoFloat32(`0x1${'0'.repeat(1000)}p-4000`), 1);
  assert.equal(parseGoFloat32(`0x${'0'.repeat(1000)}1p0`), 1);
  assert.equal(parseGoFloat32(`0x0.${'0'.repeat(99)}1p400`), 1);
  assert.equal(parseGoFloat32(`0x0p${'9'.repeat(400)}`), 0);
  assert.equal(parseGoFloat32(`-0x1p${'9'.repeat(400)}`), -Infinity);
  // Past float32's 24 bits, a digit beyond the 13th still rounds up (a sticky bit), as Go's one rounding does.
  // 0x1.000001 is halfway between float32's 1 and 1 + 2^-23 (results checked with Go's strconv).
  assert.equal(parseGoFloat32(`0x1.000001${'0'.repeat(20)}1p0`), 1 + 2 ** -23);
  assert.equal(parseGoFloat32('0x1.000001p0'), 1, 'a tie rounds to even');
});

/** Worst-case Accept headers of 1 MiB (built in the worker, linear-work.ts), with the quadratic form each one hit. */
const worstAccepts: Record<string, (m: typeof Negotiation) => unknown> = {
  // 32,000 clauses in rising q: insertion sort moved each one to the front.
  'clauses in rising q': (m) =>
    m.negotiateRead(Array.from({ length: 70_000 }, (_, i) => `a/b;q=0.${String(i).padStart(6, '0')}`).join(','), true),
  // A run of spaces inside a clause: ` +$` retried at every space.
  'spaces inside a clause': (m) => m.negotiateRead(`a/b${' '.repeat(2 ** 20)}x`, true),
  // A q of digits that is no number: `\d+\.?\d*` split the run in every way.
  'a q of digits': (m) => m.negotiateRead(`a/b;q=${'1'.repeat(2 ** 20)}x`, true),
  'a hexadecimal q': (m) => m.negotiateRead(`a/b;q=0x${'1'.repeat(2 ** 20)}p1`, true),
  'empty clauses': (m) => m.negotiateRead(','.repeat(2 ** 20), true),
  'invalid clauses': (m) => m.negotiateRead('x,'.repeat(2 ** 19), true),
  parameters: (m) => m.negotiateRead(`a/b${';k=v'.repeat(2 ** 18)}`, true),
};

for (const [name, run] of Object.entries(worstAccepts)) {
  test(`negotiateRead: a 1 MiB Accept header of ${name} is read in linear time`, async () => {
    const result = await runsInLinearTime(new URL('../../../src/request/negotiation.ts', import.meta.url), run);
    assert.match(result, /"kind":"apiserver"/);
  });
}
