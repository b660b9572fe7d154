/**
 * The library's documentation builds, and says what is true: TypeDoc builds the API reference
 * from the four entry points with every warning an error (each exported function, type,
 * property and method documented; every link and path resolved; nothing referenced left out),
 * and each TypeScript example of the pages in docs/ type-checks against the library (its
 * imports of `@kube-cache-proxy/client/...` resolved to the sources by tsconfig's `paths`, as in
 * this repository).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCommand } from '../../helpers/cli.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DOCS = join(ROOT, 'docs');
const PAGES = ['informer.md', 'workqueue.md', 'leaderelection.md'];

test(
  'docs: TypeDoc builds the API reference of the four entry points with no warning, each of the three parts with its page',
  { timeout: 120_000 },
  async (t) => {
    const out = mkdtempSync(join(tmpdir(), 'kcp-docs-'));
    t.after(() => {
      rmSync(out, { recursive: true, force: true });
    });
    const built = await runCommand(
      process.execPath,
      [join(ROOT, 'node_modules/typedoc/bin/typedoc'), '--options', join(ROOT, 'typedoc.json'), '--out', out],
      120_000,
    );
    assert.equal(built.code, 0, `${built.stdout}\n${built.stderr}`);
    assert.doesNotMatch(`${built.stdout}${built.stderr}`, /warning|error/i);
    const modules = readdirSync(join(out, 'modules')).sort();
    assert.deepEqual(modules, [
      '_kube-cache-proxy_client_informer.html',
      '_kube-cache-proxy_client_leaderelection.html',
      '_kube-cache-proxy_client_prometheus.html',
      '_kube-cache-proxy_client_workqueue.html',
    ]);
    const documents = readdirSync(join(out, 'documents')).sort();
    assert.equal(documents.length, 3, `a page per part: ${documents.join(', ')}`);
  },
);

test('docs: every TypeScript example of the pages type-checks against the library', { timeout: 120_000 }, async (t) => {
  // Inside the repository, so that the library's imports resolve to its sources (tsconfig's paths and self-reference).
  const dir = mkdtempSync(join(ROOT, '.doc-examples-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const files: string[] = [];
  for (const page of ['README.md', ...PAGES]) {
    const text = readFileSync(join(DOCS, page), 'utf8');
    let n = 0;
    for (const match of text.matchAll(/```ts\n([\s\S]*?)```/g)) {
      const file = `${page.replace('.md', '')}-${String(++n)}.ts`;
      // Each example is a module of its own (top-level await, its own names).
      writeFileSync(join(dir, file), `${match[1] ?? ''}\nexport {};\n`);
      files.push(file);
    }
  }
  assert.ok(files.length >= PAGES.length, `an example per page at least: ${files.join(', ')}`);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: '../tsconfig.json', include: [], files }));
  const checked = await runCommand(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], 120_000);
  assert.equal(checked.code, 0, `${checked.stdout}\n${checked.stderr}`);
});
