import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatDuration, newProgress } from '../../../src/cli/progress.ts';

test('formatDuration: seconds with a decimal under a minute, then minutes and padded seconds', () => {
  assert.equal(formatDuration(0), '0.0s');
  assert.equal(formatDuration(12_345), '12.3s');
  assert.equal(formatDuration(65_000), '1m05s');
  assert.equal(formatDuration(25 * 60_000 + 59_999), '25m59s');
});

test('progress: a step prints its start, ticks with the detail, and its end', async () => {
  const lines: string[] = [];
  const progress = newProgress((line) => lines.push(line), 5);
  let compiled = 0;
  const step = progress.step('building', () => `${++compiled} packages`);
  await new Promise<void>((resolve) => {
    const poll = setInterval(() => {
      if (lines.length >= 3) {
        clearInterval(poll);
        resolve();
      }
    }, 1);
  });
  step.done('ok');
  assert.equal(lines[0], 'building...');
  assert.match(lines[1] ?? '', /^ {2}building: \d+\.\ds, 1 packages$/);
  assert.match(lines.at(-1) ?? '', /^ {2}building: done in \d+\.\ds \(ok\)$/);
});
