// The library's build: `npm run build` (and prepack, so `npm pack` and `npm publish` ship it).
// Plain Node, no dependencies but the TypeScript compiler of devDependencies.
//
// 1. dist/ is made anew by tsc (tsconfig.build.json): JavaScript whose relative imports end in
//    .js (rewriteRelativeImportExtensions), and .d.ts types.
// 2. tsc leaves the sources' `.ts` extensions in the .d.ts files' imports; TypeScript 5 finds the
//    .d.ts beside them anyway, but tools that read the declarations as written (older compilers,
//    API extractors) would look for .ts files that are not shipped. They are rewritten to .js,
//    the files the declarations describe.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});

/** `from './x.ts'`, `import('./x.ts')`, `import './x.ts'`: relative specifiers only. */
const TS_SPECIFIER = /((?:from|import)\s*\(?\s*)(['"])(\.{1,2}\/[^'"]*?)\.ts\2/g;
let rewritten = 0;
for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
  const file = join(entry.parentPath, entry.name);
  const text = readFileSync(file, 'utf8');
  const fixed = text.replace(TS_SPECIFIER, '$1$2$3.js$2');
  if (fixed !== text) {
    writeFileSync(file, fixed);
    rewritten++;
  }
}
console.log(`dist/: the library built (${rewritten} declaration files' imports rewritten from .ts to .js)`);
