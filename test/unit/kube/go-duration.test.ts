import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseGoDurationMs } from '../../../src/kube/go-duration.ts';

test("parseGoDurationMs: what Go's time.ParseDuration reads, in milliseconds", () => {
  const cases: [string, number][] = [
    ['0', 0],
    ['-0', 0],
    ['75s', 75_000],
    ['1m30s', 90_000],
    ['1.5h', 5_400_000],
    ['500ms', 500],
    ['.5s', 500],
    ['1.s', 1_000],
    ['-300ms', -300],
    ['+2m', 120_000],
    ['1h2m3s4ms', 3_723_004],
    ['1500us', 1.5],
    ['1500µs', 1.5],
    ['1500μs', 1.5],
    ['2000000ns', 2],
    ['1s1s', 2_000],
  ];
  for (const [text, ms] of cases) assert.equal(parseGoDurationMs(text), ms, text);
});

test('parseGoDurationMs: what Go refuses (missing unit, unknown unit, junk, overflow)', () => {
  for (const text of ['', '-', '15', '1.5', 's', '.s', '1d', '1 s', ' 1s', '1s ', '1.5.5h', '1sec', 'ms', '3000000h', '1e3s', '--1s']) {
    assert.equal(parseGoDurationMs(text), undefined, JSON.stringify(text));
  }
});
