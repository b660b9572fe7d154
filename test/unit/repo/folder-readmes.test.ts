/**
 * Every folder of src/ has a README.md that names each of its files and subfolders, so that a
 * file added without a line saying what it mirrors fails here rather than going unexplained.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';

const SRC = join(import.meta.dirname, '..', '..', '..', 'src');

function folders(dir: string): string[] {
  const subfolders = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory());
  return [dir, ...subfolders.flatMap((e) => folders(join(dir, e.name)))];
}

test('source tree: every folder of src/ has a README naming its files and subfolders', () => {
  const missing: string[] = [];
  for (const dir of folders(SRC).filter((d) => d !== SRC)) {
    const entries = readdirSync(dir, { withFileTypes: true }).filter((e) => e.name !== 'README.md');
    let readme: string;
    try {
      readme = readFileSync(join(dir, 'README.md'), 'utf8');
    } catch {
      missing.push(`${relative(SRC, dir)}/README.md`);
      continue;
    }
    for (const e of entries) {
      const name = e.isDirectory() ? `${e.name}/` : e.name;
      if (!readme.includes(`\`${name}\``)) missing.push(`${relative(SRC, dir)}: ${name}`);
    }
  }
  assert.deepEqual(missing, []);
});
