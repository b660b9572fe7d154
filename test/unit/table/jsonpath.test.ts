/**
 * client-go's util/jsonpath as CRD columns use it (src/table/jsonpath.ts). The expectations are
 * what k8s.io/client-go@v0.37.2/util/jsonpath answers for the same template and data, decoded as
 * the apiserver decodes an object (k8s.io/apimachinery util/json: int64 where a number is an
 * integer, else float64), with AllowMissingKeys(true): each result printed as the CRD table
 * convertor prints a string cell (PrintResults of the value). The store document is the one of
 * client-go's jsonpath_test.go, grown with the cases CRD columns meet: conditions, dotted keys,
 * nulls, floats Go prints otherwise than JS.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  GoScalar,
  JsonPathParseError,
  JsonPathUnsupportedError,
  goFormatFloat,
  parseJsonPath,
  printResult,
} from '../../../src/table/jsonpath.ts';

const store = {
  kind: 'List',
  store: {
    book: [
      { category: 'reference', author: 'Nigel Rees', title: 'Sayings of the Century', price: 8.95 },
      { category: 'fiction', author: 'Evelyn Waugh', title: 'Sword of Honour', price: 12.99 },
      { category: 'fiction', author: 'Herman Melville', title: 'Moby Dick', isbn: '0-553-21311-3', price: 8, count: 3 },
      { category: 'fiction', author: 'J. R. R. Tolkien', title: 'The Lord of the Rings', isbn: '0-395-19395-8', price: 22.99, count: null },
    ],
    bicycle: [{ color: 'red', price: 19.95, 'a.b': 'dotted', empty: {}, arr: [] }],
    labels: { 'kubernetes.io/hostname': 'node1', 'web.app': 'x' },
  },
  status: {
    conditions: [
      { type: 'Ready', status: 'True', n: 1 },
      { type: 'Synced', status: 'False', n: 2.5 },
      { type: 'Ready', status: 'Dup' },
    ],
  },
  nums: [1, 1.5, 1e21, 100000000000000000000, 1234567.5, 0.00001, 1e-7, -0, 123456, 1000000, 0.0001, -2.5e-5],
  nul: null,
  s: 'héllo',
  html: { '<a>': '&b', z: [1, { y: null }], u: '\u2028' },
};

type Expect = { readonly results: readonly (readonly string[])[] } | { readonly error: string } | { readonly parseError: true };

/** [template, what Go answers]: results printed per value, Go's FindResults error, or a Parse error. */
const CASES: readonly (readonly [string, Expect])[] = [
  ['{.kind}', { results: [['List']] }],
  ['{.store.book[0].title}', { results: [['Sayings of the Century']] }],
  ['{.store.book[*].author}', { results: [['Nigel Rees', 'Evelyn Waugh', 'Herman Melville', 'J. R. R. Tolkien']] }],
  ['{.store.book[-1].title}', { results: [['The Lord of the Rings']] }],
  ['{.store.book[0:2].title}', { results: [['Sayings of the Century', 'Sword of Honour']] }],
  ['{.store.book[1:].price}', { results: [['12.99', '8', '22.99']] }],
  ['{.store.book[:2].price}', { results: [['8.95', '12.99']] }],
  ['{.store.book[::2].title}', { results: [['Sayings of the Century', 'Moby Dick']] }],
  ['{.store.book[0:4:2].title}', { results: [['Sayings of the Century', 'Moby Dick']] }],
  ['{.store.book[5]}', { error: 'array index out of bounds: index 5, length 4' }],
  ['{.store.book[-5]}', { error: 'array index out of bounds: index -1, length 4' }],
  ['{.store.book[2:2]}', { results: [[]] }],
  ['{.store.book[3:1]}', { error: 'starting index 3 is greater than ending index 1' }],
  ['{.store.book[0:1:0]}', { error: 'step must be > 0' }],
  ['{.store.book[0:1:-1]}', { error: 'step must be > 0' }],
  ['{.store.book[?(@.price<10)].title}', { error: 'incompatible types for comparison' }],
  ['{.store.book[?(@.price<10.0)].title}', { error: 'incompatible types for comparison' }],
  ['{.store.book[?(@.price==8)].title}', { error: 'incompatible types for comparison' }],
  ['{.store.book[?(@.price>=12.99)].title}', { error: 'incompatible types for comparison' }],
  ['{.store.book[?(@.isbn)].title}', { results: [['Moby Dick', 'The Lord of the Rings']] }],
  ['{.store.book[?(@.count)].title}', { results: [['Moby Dick', 'The Lord of the Rings']] }],
  ['{.store.book[?(@.count==3)].title}', { error: 'invalid type for comparison' }],
  ['{.store.book[?(@.category!="fiction")].title}', { results: [['Sayings of the Century']] }],
  ["{.store.book[?(@.category=='fiction')].title}", { results: [['Sword of Honour', 'Moby Dick', 'The Lord of the Rings']] }],
  ['{.store.book[?(@.author<"I")].author}', { results: [['Evelyn Waugh', 'Herman Melville']] }],
  ['{.store.book[?(@.title=="Moby Dick")].price}', { results: [['8']] }],
  ['{.status.conditions[?(@.type=="Ready")].status}', { results: [['True', 'Dup']] }],
  ['{.status.conditions[?(@.n>1)].type}', { error: 'incompatible types for comparison' }],
  ['{.status.conditions[?(@.n>1.0)].type}', { error: 'incompatible types for comparison' }],
  ['{.status.conditions[?(@.type=Ready)].status}', { error: 'unrecognized identifier Ready' }],
  [
    '{.status.conditions[?(@.type=="Ready")]}',
    { results: [['{"n":1,"status":"True","type":"Ready"}', '{"status":"Dup","type":"Ready"}']] },
  ],
  ['{.status.conditions[?(@.n=="1")].type}', { error: 'incompatible types for comparison' }],
  [
    '{.status.conditions[?(@)]}',
    {
      results: [
        ['{"n":1,"status":"True","type":"Ready"}', '{"n":2.5,"status":"False","type":"Synced"}', '{"status":"Dup","type":"Ready"}'],
      ],
    },
  ],
  [
    '{.status.conditions[?(@.type x)]}',
    {
      results: [
        ['{"n":1,"status":"True","type":"Ready"}', '{"n":2.5,"status":"False","type":"Synced"}', '{"status":"Dup","type":"Ready"}'],
      ],
    },
  ],
  ['{.store.bicycle[0].a\\.b}', { results: [['dotted']] }],
  ["{.store.bicycle[0]['a.b']}", { results: [[]] }],
  ["{.store.labels['kubernetes.io/hostname']}", { results: [[]] }],
  ['{.store.labels.kubernetes\\.io/hostname}', { results: [['node1']] }],
  ["{.store.labels['web\\.app']}", { results: [['x']] }],
  ['{.store.bicycle[*]}', { results: [['{"a.b":"dotted","arr":[],"color":"red","empty":{},"price":19.95}']] }],
  ['{.s.*}', { results: [['104', '195', '169', '108', '108', '111']] }],
  ['{.s[0]}', { error: 'string is not array or slice' }],
  ['{.store[0]}', { error: 'map[string]interface {} is not array or slice' }],
  ['{.nul}', { results: [['<no value>']] }],
  ['{.nul[0]}', { results: [[]] }],
  ['{.nul.x}', { results: [[]] }],
  ['{.nul[?(@.x)]}', { error: '<nil> is not array or slice and cannot be filtered' }],
  ['{.store.book[?(@.x)]}', { results: [[]] }],
  ['{.store.bicycle[0].empty}', { results: [['{}']] }],
  ['{.store.bicycle[0].arr}', { results: [['[]']] }],
  ['{.store.book[0,1].title}', { results: [['Sayings of the Century', 'Sword of Honour']] }],
  ["{.store.book[0]['title','author']}", { results: [['Sayings of the Century', 'Nigel Rees']] }],
  ['{.store.book[*].count}', { results: [['3', '<no value>']] }],
  ['{.missing}', { results: [[]] }],
  ['{.}', { results: [[]] }],
  ['{$.kind}', { results: [['List']] }],
  ['{@.kind}', { results: [['List']] }],
  ['{.kind.x}', { results: [[]] }],
  ['{"lit"}', { results: [['lit']] }],
  ['{.kind 5}', { results: [['5']] }],
  ['{.kind 5.5}', { results: [['5.5']] }],
  ['{.kind true}', { results: [['true']] }],
  ['{.kind}{.store.book[9]}', { error: 'array index out of bounds: index 9, length 4' }],
  ['{.kind}x{.s}', { results: [['List'], ['x'], ['héllo']] }],
  ['{.kind', { parseError: true }],
  ['{.store.book[}', { parseError: true }],
  ['{.store.book[?(@.x}', { parseError: true }],
  ['{.store.book[a]}', { parseError: true }],
  ['{.store.book[-]}', { parseError: true }],
  ['{.kind "unterminated}', { parseError: true }],
  ['{.a..b}', { results: [[]] }],
  ['{.kind ( }', { parseError: true }],
  ['{.kind abc}', { error: 'unrecognized identifier abc' }],
  ['{.store.book[?(@.price<"x")].title}', { error: 'incompatible types for comparison' }],
  ['{.store.book[?(@.x<1)].title}', { results: [[]] }],
  ['{.store.book[?(@.price=<10)].title}', { error: 'unrecognized filter operator =<' }],
  ['{.store.book[?(@.price=10)].title}', { error: 'unrecognized filter operator =' }],
  ['{.kind "a\\"b"}', { results: [['a"b']] }],
  ["{.kind 'a\\'b'}", { results: [["a'b"]] }],
  ['{.kind "\\u00e9\\x41\\101"}', { results: [['éAA']] }],
  ['{.kind "\\q"}', { parseError: true }],
  ['{+5}', { results: [['5']] }],
  ['{-.5}', { results: [['-0.5']] }],
  ['{1.2.3}', { parseError: true }],
  ['{.store.book[0].price -0.0}', { results: [['-0']] }],
  ['{.store.book[?(@.category=="fiction"),?(@.x)]}', { parseError: true }],
  ['{.s.*}', { results: [['104', '195', '169', '108', '108', '111']] }],
  ['{.store.book[0:9]}', { error: 'array index out of bounds: index 8, length 4' }],
  ['{.store.book[-9:]}', { error: 'array index out of bounds: index -5, length 4' }],
  ['{.nums[0:0]}', { results: [[]] }],
  ['{.store.book[*].price[0]}', { error: 'float64 is not array or slice' }],
  ['{.status.conditions[*].n}', { results: [['1', '2.5']] }],
  ['{.store.book[99999999999999999999]}', { parseError: true }],
  [
    '{.store.book[0:2,3]}',
    {
      results: [
        [
          '{"author":"Nigel Rees","category":"reference","price":8.95,"title":"Sayings of the Century"}',
          '{"author":"Evelyn Waugh","category":"fiction","price":12.99,"title":"Sword of Honour"}',
          '{"author":"J. R. R. Tolkien","category":"fiction","count":null,"isbn":"0-395-19395-8","price":22.99,"title":"The Lord of the Rings"}',
        ],
      ],
    },
  ],
  ['{ .kind }', { results: [['List']] }],
  ['{.kind\t}', { parseError: true }],
  ['{.kind\n}', { parseError: true }],
  ['{.store.book[?(@.title=="a)b")].price}', { results: [[]] }],
  ['{.store.book[?(@.price>8)].title}', { error: 'incompatible types for comparison' }],
];

function run(template: string): Expect {
  let path;
  try {
    path = parseJsonPath(template);
  } catch (err) {
    if (err instanceof JsonPathParseError) return { parseError: true };
    throw err;
  }
  const found = path.findResults(store);
  return found.ok ? { results: found.results.map((list) => list.map(printResult)) } : { error: found.error };
}

test('jsonpath: FindResults and PrintResults as client-go answers them', () => {
  for (const [template, expected] of CASES) {
    const got = run(template);
    if ('error' in expected) assert.ok('error' in got, `${template}: Go fails with ${expected.error}; ours ${JSON.stringify(got)}`);
    else assert.deepEqual(got, expected, template);
  }
});

test('jsonpath: maps are walked in Go sorted key order (Go itself walks them at random)', () => {
  assert.deepEqual(run('{.store.bicycle[0].*}'), { results: [['dotted', '[]', 'red', '{}', '19.95']] });
  assert.deepEqual(run('{..price}'), { results: [['19.95', '8.95', '12.99', '8', '22.99']] });
});

test('jsonpath: numbers print as Go prints them: int64 in decimal, float64 as %v, in JSON as encoding/json', () => {
  assert.deepEqual(run('{.nums[*]}'), {
    results: [['1', '1.5', '1e+21', '1e+20', '1.2345675e+06', '1e-05', '1e-07', '0', '123456', '1000000', '0.0001', '-2.5e-05']],
  });
  assert.deepEqual(run('{.nums}'), {
    results: [['[1,1.5,1e+21,100000000000000000000,1234567.5,0.00001,1e-7,0,123456,1000000,0.0001,-0.000025]']],
  });
  assert.equal(goFormatFloat(-0), '-0');
  assert.equal(goFormatFloat(123456.5), '123456.5');
  assert.equal(goFormatFloat(1e100), '1e+100');
  assert.equal(goFormatFloat(1.5e-300), '1.5e-300');
});

test('jsonpath: JSON of maps has sorted keys and HTML-safe escapes, as json.Marshal writes it', () => {
  assert.deepEqual(run('{.html}'), { results: [['{"\\u003ca\\u003e":"\\u0026b","u":"\\u2028","z":[1,{"y":null}]}']] });
});

test('jsonpath: a JSON null prints as <no value>, literals and string bytes keep their Go types', () => {
  assert.equal(printResult(null), '<no value>');
  assert.deepEqual(run('{.s.*}'), { results: [['104', '195', '169', '108', '108', '111']] });
  assert.deepEqual(parseJsonPath('{.kind 5}').findResults(store), { ok: true, results: [[new GoScalar('int', 5)]] });
});

test('jsonpath: range and end, which keep state across rows, and non-UTF-8 byte escapes are refused', () => {
  assert.throws(() => parseJsonPath('{range .a[*]}{.b}{end}'), JsonPathUnsupportedError);
  assert.throws(() => parseJsonPath('{.kind end}'), JsonPathUnsupportedError);
  assert.throws(() => parseJsonPath('{.kind "\\xff"}'), JsonPathUnsupportedError);
  assert.throws(() => parseJsonPath('{.kind "\\377"}'), JsonPathUnsupportedError);
});
