import assert from 'node:assert/strict';
import { test } from 'node:test';
import { klogHeader, klogLine, newProxyLogger } from '../../../src/proxy/logging.ts';

test("klogHeader: klog's formatHeader (severity, mmdd, local time to the microsecond, pid padded to 7, source)", () => {
  const time = new Date(2026, 10, 29, 1, 57, 23, 123);
  assert.equal(klogHeader(30, time, 12345), 'I1129 01:57:23.123000   12345 kube-cache-proxy] ');
  assert.equal(klogHeader(20, time, 1), 'I1129 01:57:23.123000       1 kube-cache-proxy] ');
  assert.equal(klogHeader(40, time, 7), 'W1129 01:57:23.123000       7 kube-cache-proxy] ');
  assert.equal(klogHeader(50, time, 7), 'E1129 01:57:23.123000       7 kube-cache-proxy] ');
});

test('klogLine: the message quoted, then each field as key=value (strings quoted, numbers and booleans bare, the rest JSON)', () => {
  const time = new Date(2026, 0, 2, 3, 4, 5, 6).getTime();
  const line = klogLine(
    JSON.stringify({ level: 40, time, msg: 'not cached: "x"', resource: 'pods', n: 3, ok: true, list: ['a', 'b'], none: null }),
    42,
  );
  assert.equal(
    line,
    'W0102 03:04:05.006000      42 kube-cache-proxy] "not cached: \\"x\\"" resource="pods" n=3 ok=true list=["a","b"] none=null\n',
  );
});

test('newProxyLogger: text writes klog lines; json writes ts, v (info), msg, err (error, as a string) and the fields, nothing of pino', () => {
  const lines: string[] = [];
  const out = { write: (line: string) => lines.push(line) };
  const text = newProxyLogger({ level: 'debug', format: 'text', out });
  text.info({ upstream: 'https://x' }, 'proxying');
  text.debug('a request');
  text.error({ err: new Error('boom') }, 'failed');
  assert.equal(lines.length, 3);
  assert.match(lines[0] ?? '', /^I\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ kube-cache-proxy\] "proxying" upstream="https:\/\/x"\n$/);
  assert.match(lines[1] ?? '', /^I.* "a request"\n$/);
  assert.match(lines[2] ?? '', /^E.* "failed" err="boom"\n$/);

  lines.length = 0;
  const json = newProxyLogger({ level: 'debug', format: 'json', out });
  json.info({ upstream: 'https://x' }, 'proxying');
  json.debug('a request');
  json.warn('careful');
  json.error({ err: new Error('boom') }, 'failed');
  const entries = lines
    .join('')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const withoutTs = entries.map(({ ts, ...rest }) => {
    assert.equal(typeof ts, 'number');
    assert.ok(Math.abs((ts as number) - Date.now() / 1000) < 60, 'seconds since the epoch');
    return rest;
  });
  assert.deepEqual(withoutTs, [
    { v: 0, upstream: 'https://x', msg: 'proxying' },
    { v: 4, msg: 'a request' },
    { v: 0, msg: 'careful' },
    { err: 'boom', msg: 'failed' },
  ]);
  // Below the level, nothing.
  lines.length = 0;
  newProxyLogger({ level: 'info', format: 'text', out }).debug('hidden');
  assert.deepEqual(lines, []);
});
