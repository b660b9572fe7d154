import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareGoStrings, goLen, goQuote } from '../../../src/kube/go-format.ts';

test('goQuote: renders as Go %q', () => {
  assert.equal(goQuote('abc'), '"abc"');
  assert.equal(goQuote('a"b\\c'), '"a\\"b\\\\c"');
  assert.equal(goQuote('\n\t\r\x07\b\f\v'), '"\\n\\t\\r\\a\\b\\f\\v"');
  assert.equal(goQuote('\x01\x7f'), '"\\x01\\x7f"');
  assert.equal(goQuote('é😀'), '"é😀"');
  assert.equal(goQuote('\u00a0\u2028\u0085'), '"\\u00a0\\u2028\\u0085"');
  assert.equal(goQuote('\u{e0001}'), '"\\U000e0001"');
  // A lone surrogate (Go cannot hold one) is U+FFFD, also among printable runes.
  assert.equal(goQuote('a\ud800b'), '"a\ufffdb"');
  // Printable runes with quotes and backslashes, and the same with one rune that is not printable:
  // each is quoted as the rune-by-rune rule quotes it.
  assert.equal(goQuote('a "b" \\ é😀 ¿?'), '"a \\"b\\" \\\\ é😀 ¿?"');
  assert.equal(goQuote('a "b"\u00a0'), '"a \\"b\\"\\u00a0"');
  // A ~1 MiB name, as a 403 quotes it.
  const long = `${'n'.repeat(1024 * 1024)}"`;
  assert.equal(goQuote(long), `"${'n'.repeat(1024 * 1024)}\\""`);
});

test('compareGoStrings: UTF-8 byte order; goLen: UTF-8 bytes', () => {
  assert.ok(compareGoStrings('\u{1F600}', '\uffff') > 0, 'astral sorts after the BMP, unlike UTF-16 order');
  assert.ok(compareGoStrings('a', 'ab') < 0);
  assert.equal(compareGoStrings('x', 'x'), 0);
  assert.equal(goLen('é'), 2);
});
