/**
 * Every link inside the repository's pages leads somewhere: each relative link of every Markdown
 * file (README, docs/, deploy/, src/ READMEs, bench and chaos results) names a file or folder
 * that exists, and a `#fragment` into a Markdown file names one of its headings (GitHub's slugs).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The repository's Markdown files: tracked or new, not what git ignores. */
function markdownFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '*.md'], { cwd: ROOT })
    .toString()
    .split('\0')
    .filter((f) => f !== '' && existsSync(join(ROOT, f)));
}

/** GitHub's heading anchor: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
export function githubSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown file's headings (a repeated heading gets -1, -2, … as on GitHub). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const match = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (match === null) continue;
    const slug = githubSlug(match[1] ?? '');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${String(n)}`);
  }
  return out;
}

/** The link targets of a Markdown text, outside code (fenced blocks and `inline code`). */
function links(text: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    const prose = line.replace(/`[^`]*`/g, '');
    for (const match of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push(match[1] ?? '');
  }
  return out;
}

test('docs: every relative link of every Markdown file names a file that exists, and a fragment a heading of it', () => {
  const files = markdownFiles();
  assert.ok(files.length > 20, `Markdown files found: ${String(files.length)}`);
  const broken: string[] = [];
  let checked = 0;
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    for (const target of links(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      checked++;
      const [path = '', fragment] = target.split('#');
      const resolved = path === '' ? join(ROOT, file) : normalize(join(dirname(join(ROOT, file)), decodeURIComponent(path)));
      if (!resolved.startsWith(ROOT)) {
        broken.push(`${file}: ${target} leaves the repository`);
        continue;
      }
      if (!existsSync(resolved)) {
        broken.push(`${file}: ${target} (no ${relative(ROOT, resolved)})`);
        continue;
      }
      if (fragment !== undefined && fragment !== '' && resolved.endsWith('.md') && !/^L\d+/.test(fragment)) {
        if (!anchors(readFileSync(resolved, 'utf8')).has(fragment)) broken.push(`${file}: ${target} (no heading #${fragment})`);
      }
    }
  }
  assert.ok(checked > 50, `links checked: ${String(checked)}`);
  assert.deepEqual(broken, []);
});

test('githubSlug: headings as GitHub anchors them', () => {
  assert.equal(githubSlug('Limits between clients'), 'limits-between-clients');
  assert.equal(githubSlug('`npm start` and `npm test`'), 'npm-start-and-npm-test');
  assert.equal(githubSlug('Read-your-writes (RYW): what, why?'), 'read-your-writes-ryw-what-why');
});
