/**
 * Where a bench run's figures go (bench/results.ts writeResults): the default run replaces
 * latest.json and latest.svg, the figures bench/RESULTS.md quotes; a run of a few named scenarios
 * writes its raw results only, so that a quick before-and-after never replaces them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { BenchResults } from '../../../bench/results.ts';
import { writeResults } from '../../../bench/results.ts';

function results(defaultRun: boolean): BenchResults {
  const row = { scenario: 'list-table', title: 'LIST as a Table', target: 'apiserver', p50: 900, p99: 1200 };
  return {
    environment: { date: '2026-11-29T10:55:00.000Z' },
    command: 'npm run bench',
    sizes: { defaultRun },
    load: [row],
    watch: [],
    sync: [],
    profiles: [],
  } as unknown as BenchResults;
}

test('bench results: the default run writes latest.json and latest.svg; a run of named scenarios its raw results only', (t) => {
  const out = mkdtempSync(join(tmpdir(), 'kcp-bench-results-'));
  t.after(() => {
    rmSync(out, { recursive: true, force: true });
  });
  assert.deepEqual(writeResults(out, results(false)), [join(out, 'run-2026-11-29T10-55-00Z.json')]);
  assert.deepEqual(readdirSync(out).sort(), ['run-2026-11-29T10-55-00Z.json']);
  writeResults(out, results(true));
  assert.deepEqual(readdirSync(out).sort(), ['latest.json', 'latest.svg', 'run-2026-11-29T10-55-00Z.json']);
});
