// Compiles src/ to JavaScript for what ships: `npm run build` (and prepack, so `npm pack`, the
// image and `npm publish` ship it): `node scripts/build.mjs [--out DIR]`, default dist/. Plain
// JavaScript with no dependency but the typescript devDependency.
//
// One build serves both things the package ships: the proxy the image runs (dist/cli/main.js)
// and the library's three entry points with their .d.ts types (dist/library/*.js).
//
// Why ship JavaScript when Node 24 runs the TypeScript sources: type stripping loads a
// WebAssembly build of SWC into every process that imports a .ts file (docs/memory.md), and
// Node strips no types inside node_modules. A checkout still runs the sources
// (bin/kube-cache-proxy.mjs prefers them; the library's imports resolve to them through the
// `kube-cache-proxy-source` condition), so nothing needs building to develop or test.
//
// 1. tsc (tsconfig.build.json) emits JavaScript whose relative imports end in .js
//    (rewriteRelativeImportExtensions), and .d.ts types.
// 2. tsc leaves the sources' `.ts` extensions in the .d.ts files' imports; TypeScript 5 finds the
//    .d.ts beside them anyway, but tools that read the declarations as written (older compilers,
//    API extractors) would look for .ts files that are not shipped. They are rewritten to .js.
// 3. What the sources read beside themselves at run time (the status page's HTML) is copied.
//
// The output is a tree of its own, importable where a package.json with "type": "module" and
// the dependencies are found above it: dist/ in the checkout or the packed app; elsewhere
// (--out outside the checkout) the bench and the tests link them beside it.
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { out: { type: 'string' } } });
const out = resolve(values.out ?? join(root, 'dist'));

rmSync(out, { recursive: true, force: true });
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', out], {
  cwd: root,
  stdio: 'inherit',
});
if (compiled.error) {
  console.error(`build: could not run tsc: ${compiled.error.message}`);
  process.exit(1);
}
if (compiled.status !== 0) process.exit(compiled.status ?? 1);

/** `from './x.ts'`, `import('./x.ts')`, `import './x.ts'`: relative specifiers only. */
const TS_SPECIFIER = /((?:from|import)\s*\(?\s*)(['"])(\.{1,2}\/[^'"]*?)\.ts\2/g;
for (const entry of readdirSync(out, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
  const file = join(entry.parentPath, entry.name);
  const text = readFileSync(file, 'utf8');
  const fixed = text.replace(TS_SPECIFIER, '$1$2$3.js$2');
  if (fixed !== text) writeFileSync(file, fixed);
}

const src = join(root, 'src');
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || entry.name.endsWith('.ts')) continue;
  const from = join(entry.parentPath, entry.name);
  cpSync(from, join(out, relative(src, from)));
}
