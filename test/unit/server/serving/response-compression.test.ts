import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  GZIP_LEVEL,
  GZIP_THRESHOLD_BYTES,
  acceptsGzip,
  firstAcceptEncoding,
  gzipsAnswer,
} from '../../../../src/server/serving/response-compression.ts';

test('acceptsGzip: a comma-separated token that is exactly gzip once trimmed (compression.go ContentEncodingSupported)', () => {
  const cases: readonly [string | undefined, boolean][] = [
    [undefined, false],
    ['', false],
    ['gzip', true],
    [' gzip ', true],
    ['deflate, gzip', true],
    ['gzip,deflate', true],
    ['br,\tgzip', true],
    // client-go's transport (Go's net/http) sends exactly this.
    ['gzip', true],
    // Parameters are not parsed: q-values make the token something else.
    ['gzip;q=1', false],
    ['gzip;q=0', false],
    ['GZIP', false],
    ['x-gzip', false],
    ['*', false],
    ['identity', false],
    ['deflate, br', false],
  ];
  for (const [header, want] of cases) assert.equal(acceptsGzip(header), want, `Accept-Encoding: ${String(header)}`);
});

test('gzipsAnswer: only bodies longer than 128 KiB, only when asked (writers.go defaultGzipThresholdBytes)', () => {
  assert.equal(GZIP_THRESHOLD_BYTES, 131_072);
  assert.equal(gzipsAnswer('gzip', GZIP_THRESHOLD_BYTES), false, 'exactly the threshold: not more than it');
  assert.equal(gzipsAnswer('gzip', GZIP_THRESHOLD_BYTES + 1), true);
  assert.equal(gzipsAnswer('gzip', 100), false);
  assert.equal(gzipsAnswer(undefined, 10 * GZIP_THRESHOLD_BYTES), false);
  assert.equal(gzipsAnswer('gzip;q=1', 10 * GZIP_THRESHOLD_BYTES), false);
  assert.equal(gzipsAnswer('deflate', 10 * GZIP_THRESHOLD_BYTES), false);
});

test("the level is the apiserver pool's (compression.go gzipContentEncodingLevel)", () => {
  assert.equal(GZIP_LEVEL, 1);
});

test("firstAcceptEncoding: the first header only, as Go's Header.Get", () => {
  assert.equal(firstAcceptEncoding(['Host', 'x', 'Accept-Encoding', 'br', 'accept-encoding', 'gzip']), 'br');
  assert.equal(firstAcceptEncoding(['ACCEPT-ENCODING', 'gzip']), 'gzip');
  assert.equal(firstAcceptEncoding(['Accept', 'application/json']), undefined);
});
