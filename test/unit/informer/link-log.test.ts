import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newLinkLog } from '../../../src/informer/link-log.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

test('LinkLog: an outage begun by a 410 (info) that turns into an unreachable apiserver says so once at warn', () => {
  const lines: string[] = [];
  const clock = new FakeClock();
  const log = newLinkLog('pods', (level, message) => lines.push(`${level} ${message}`), clock);
  log.failed('info', 'watch expired (410)');
  log.failed('warn', 'connect ECONNREFUSED');
  log.failed('warn', 'connect ECONNREFUSED');
  clock.step(3000);
  log.watching();
  assert.deepEqual(
    lines.map((l) => l.split(' ')[0]),
    ['info', 'warn', 'debug', 'info'],
    lines.join('\n'),
  );
  assert.match(lines[3] ?? '', /watching again after 3\.0 s \(3 failed attempts, first: watch expired \(410\)\)/);
});
