/** The continue token: round trip, and Go's error texts (recorded from kube-apiserver v1.37.2). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ContinueTokenError, decodeContinue, encodeContinue, goPathClean } from '../../../src/request/continue-token.ts';
import { MAX_NESTING_DEPTH } from '../../../src/kube/go-json-syntax.ts';

const b64 = (s: string): string => Buffer.from(s).toString('base64url');

function decodeError(token: string): string {
  try {
    decodeContinue(token, '/registry/configmaps/');
  } catch (e) {
    assert.ok(e instanceof ContinueTokenError);
    return e.message;
  }
  return 'no error';
}

test('ContinueToken: encode is base64url of {"v","rv","start"} relative to the prefix, and decodes back', () => {
  const token = encodeContinue('/registry/configmaps/ns/a\u0000', '/registry/configmaps/', 42);
  assert.equal(Buffer.from(token, 'base64url').toString(), '{"v":"meta.k8s.io/v1","rv":42,"start":"ns/a\\u0000"}');
  assert.doesNotMatch(token, /[=+/]/);
  assert.deepEqual(decodeContinue(token, '/registry/configmaps/'), { fromKey: '/registry/configmaps/ns/a\u0000', resourceVersion: 42 });
  assert.throws(() => encodeContinue('/other/x', '/registry/configmaps/', 1), /the key and key prefix do not match/);
});

test('ContinueToken: Go base64 errors', () => {
  assert.equal(decodeError('abc='), 'continue key is not valid: illegal base64 data at input byte 3');
  assert.equal(decodeError('a'), 'continue key is not valid: illegal base64 data at input byte 0');
  assert.equal(decodeError('a b'), 'continue key is not valid: illegal base64 data at input byte 1');
});

test('ContinueToken: Go JSON errors', () => {
  assert.equal(decodeError('garbage'), "continue key is not valid: invalid character '\\u0081' looking for beginning of value");
  assert.equal(decodeError(b64('{"v":"meta.k8s.io/v1","rv":5,')), 'continue key is not valid: unexpected end of JSON input');
  assert.equal(
    decodeError(b64('"x"')),
    'continue key is not valid: json: cannot unmarshal string into Go value of type storage.continueToken',
  );
  assert.equal(
    decodeError(b64('{"v":1}')),
    'continue key is not valid: json: cannot unmarshal number into Go struct field continueToken.v of type string',
  );
  assert.equal(
    decodeError(b64('{"v":"meta.k8s.io/v1","rv":5.5,"start":"a"}')),
    'continue key is not valid: json: cannot unmarshal number 5.5 into Go struct field continueToken.rv of type int64',
  );
  assert.equal(
    decodeError(b64('{"v":"meta.k8s.io/v1","rv":"5","start":"a"}')),
    'continue key is not valid: json: cannot unmarshal string into Go struct field continueToken.rv of type int64',
  );
  assert.equal(decodeError(b64('{"v" 1}')), "continue key is not valid: invalid character '1' after object key");
  assert.equal(decodeError(b64('{"v":tru}')), "continue key is not valid: invalid character '}' in literal true (expecting 'e')");
});

test('ContinueToken: continue.go checks', () => {
  assert.equal(
    decodeError(b64('{"v":"meta.k8s.io/v1","rv":0,"start":"a"}')),
    'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
  );
  assert.equal(
    decodeError(b64('{"v":"meta.k8s.io/v1","rv":5,"start":""}')),
    'continue key is not valid: encoded start key empty (version meta.k8s.io/v1)',
  );
  assert.equal(
    decodeError(b64('{"v":"meta.k8s.io/v2","rv":5,"start":"a"}')),
    'continue key is not valid: server does not recognize this encoded version meta.k8s.io/v2',
  );
  assert.equal(decodeError(b64('{"v":"meta.k8s.io/v1","rv":5,"start":"../a"}')), 'continue key is not valid: ../a');
  assert.equal(decodeError(b64('null')), 'continue key is not valid: server does not recognize this encoded version ');
  // Field names match case-insensitively, as encoding/json does; rv -1 is valid (continue at latest).
  assert.deepEqual(decodeContinue(b64('{"V":"meta.k8s.io/v1","RV":-1,"Start":"ns/a"}'), '/p/'), {
    fromKey: '/p/ns/a',
    resourceVersion: -1,
  });
});

test('ContinueToken: path.Clean as Go does it', () => {
  assert.equal(goPathClean('/a/../b'), '/b');
  assert.equal(goPathClean('/a//b/'), '/a/b');
  assert.equal(goPathClean('/../a'), '/a');
  assert.equal(goPathClean('/a/./b'), '/a/b');
  assert.equal(goPathClean(''), '.');
  // Relative paths, answers from Go's path.Clean.
  for (const [path, clean] of [
    ['a/../../b', '../b'],
    ['../..', '../..'],
    ['a/b/../..', '.'],
    ['/a/b/../../..', '/'],
    ['./', '.'],
    ['a/./b/', 'a/b'],
    ['..//a', '../a'],
  ]) {
    assert.equal(goPathClean(path ?? ''), clean, path);
  }
});

test('ContinueToken: base64 errors at Go’s positions, with CR and LF skipped as Go skips them', () => {
  assert.equal(
    decodeError(`${b64('{"v":"meta.k8s.io/v1"')}*`),
    `continue key is not valid: illegal base64 data at input byte ${String(b64('{"v":"meta.k8s.io/v1"').length)}`,
  );
  assert.equal(decodeError('ab\r\ncd*'), 'continue key is not valid: illegal base64 data at input byte 6');
  assert.equal(decodeError('ab*\r\n'), 'continue key is not valid: illegal base64 data at input byte 2');
  assert.equal(decodeError('abcde'), 'continue key is not valid: illegal base64 data at input byte 4');
  assert.equal(decodeError('é'), 'continue key is not valid: illegal base64 data at input byte 0');
});

test('ContinueToken: a token nested deep is read without recursion, refused past Go’s maxNestingDepth as Go refuses it (answers checked with Go’s encoding/json)', () => {
  const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
  // 5,000 deep overflowed the stack of the recursive reader (a RangeError, not the apiserver's 400).
  assert.equal(
    decodeError(b64(nested(5_000))),
    'continue key is not valid: json: cannot unmarshal array into Go value of type storage.continueToken',
  );
  assert.equal(decodeError(b64(nested(MAX_NESTING_DEPTH + 1))), "continue key is not valid: invalid character '[' exceeded max depth");
  assert.equal(
    decodeError(b64(`{"x":${'{"a":'.repeat(MAX_NESTING_DEPTH)}1${'}'.repeat(MAX_NESTING_DEPTH)}}`)),
    "continue key is not valid: invalid character '{' exceeded max depth",
  );
  // At the limit, a deep member the token does not have is skipped, as Go skips an unknown field.
  const deep = `{"x":${nested(MAX_NESTING_DEPTH - 1)},"v":"meta.k8s.io/v1","rv":5,"start":"ns/a"}`;
  assert.deepEqual(decodeContinue(b64(deep), '/p/'), { fromKey: '/p/ns/a', resourceVersion: 5 });
  assert.equal(
    decodeError(b64(`{"v":"meta.k8s.io/v1","rv":5,"start":${nested(MAX_NESTING_DEPTH - 1)}}`)),
    'continue key is not valid: json: cannot unmarshal array into Go struct field continueToken.start of type string',
  );
});

test('ContinueToken: members are decoded in document order, duplicates included, as Go decodes them', () => {
  // The first member's type error is reported though a later duplicate is well typed.
  assert.equal(
    decodeError(b64('{"v":1,"v":"meta.k8s.io/v1","rv":5,"start":"a"}')),
    'continue key is not valid: json: cannot unmarshal number into Go struct field continueToken.v of type string',
  );
  assert.deepEqual(decodeContinue(b64(' {"start":"x", "v":"meta.k8s.io/v1","rv":5,"start":"a\\u0062", "x":[{"}":"]"}]} '), '/p/'), {
    fromKey: '/p/ab',
    resourceVersion: 5,
  });
});
