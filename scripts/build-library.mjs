// Builds the library package, @kube-cache-proxy/client (packages/client/), from the same sources
// as the proxy: `node scripts/build-library.mjs [--out DIR]`, default packages/client/dist/;
// packages/client's prepack runs it, so `npm pack` there packs what it builds. Plain JavaScript
// with no dependency but the typescript devDependency.
//
// 1. tsc (tsconfig.library.json) compiles the entry points (src/library/informer.ts, workqueue.ts,
//    leaderelection.ts, prometheus.ts) and every file they import, and nothing else, to ES
//    modules with .d.ts types: DIR/esm/, marked "type": "module".
// 2. The .d.ts files' relative imports of `.ts` files are rewritten to `.js`, as scripts/build.mjs
//    does for the proxy.
// 3. Each ES module is transpiled to CommonJS (TypeScript's transpileModule: imports become
//    require() calls, `import()` a require() in a promise): DIR/cjs/, marked "type": "commonjs",
//    with the same .d.ts files, which TypeScript reads as CommonJS declarations there. The closure
//    has no `import.meta` and no top-level await, which CommonJS cannot have: the build fails if
//    one appears. @kubernetes/client-node ships ES modules only: the CommonJS build require()s it,
//    which Node allows from 22.12 (the package's engines say >= 22.19).
// 4. The closure is checked: every package a compiled module imports is a dependency or a peer
//    dependency of packages/client/package.json, and the three main entry points reach no module of
//    fastify, pino, pino-pretty or prom-client (only the optional `prometheus` entry point imports
//    prom-client, a peer dependency the application installs).
// 5. Each entry point of each build is loaded, in a process of its own (the repository's
//    node_modules standing in for an install's): a CommonJS module that cannot be one (a top-level
//    await) fails here, and the modules it loaded (Node's module hooks see import and require()
//    alike) must hold no server package for the main entry points.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const packageDir = join(root, 'packages', 'client');
const { values } = parseArgs({ options: { out: { type: 'string' } } });
const out = resolve(values.out ?? join(packageDir, 'dist'));
const esm = join(out, 'esm');
const cjs = join(out, 'cjs');

/** The entry points, as in packages/client/package.json `exports`; MAIN ones must not reach the server's packages. */
const ENTRIES = ['informer', 'workqueue', 'leaderelection', 'prometheus'];
const MAIN = ['informer', 'workqueue', 'leaderelection'];
const SERVER_PACKAGES = ['fastify', 'pino', 'pino-pretty', 'prom-client'];

function fail(message) {
  console.error(`build-library: ${message}`);
  process.exit(1);
}

// 1. tsc: the entry points and what they import.
rmSync(out, { recursive: true, force: true });
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.library.json'), '--outDir', esm], {
  cwd: root,
  stdio: 'inherit',
});
if (compiled.error) fail(`could not run tsc: ${compiled.error.message}`);
if (compiled.status !== 0) process.exit(compiled.status ?? 1);

const files = readdirSync(esm, { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile())
  .map((entry) => join(entry.parentPath, entry.name));

// 2. .d.ts imports of .ts files.
/** `from './x.ts'`, `import('./x.ts')`, `import './x.ts'`: relative specifiers only. */
const TS_SPECIFIER = /((?:from|import)\s*\(?\s*)(['"])(\.{1,2}\/[^'"]*?)\.ts\2/g;
for (const file of files.filter((f) => f.endsWith('.d.ts'))) {
  const text = readFileSync(file, 'utf8');
  const fixed = text.replace(TS_SPECIFIER, '$1$2$3.js$2');
  if (fixed !== text) writeFileSync(file, fixed);
}
writeFileSync(join(esm, 'package.json'), `${JSON.stringify({ type: 'module' }, null, 2)}\n`);

// 3. CommonJS.
const require = createRequire(import.meta.url);
const ts = require(join(root, 'node_modules', 'typescript'));
for (const file of files) {
  const target = join(cjs, relative(esm, file));
  mkdirSync(dirname(target), { recursive: true });
  const text = readFileSync(file, 'utf8');
  if (file.endsWith('.d.ts')) {
    writeFileSync(target, text);
    continue;
  }
  if (!file.endsWith('.js')) continue;
  if (/\bimport\.meta\b/.test(text)) fail(`${relative(out, file)} uses import.meta, which CommonJS has not`);
  const result = ts.transpileModule(text, {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2024,
    },
  });
  const errors = result.diagnostics ?? [];
  if (errors.length > 0) fail(`${relative(out, file)}: ${ts.flattenDiagnosticMessageText(errors[0].messageText, '\n')}`);
  writeFileSync(target, result.outputText);
}
writeFileSync(join(cjs, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);

// 4. The closure.
for (const entry of ENTRIES) {
  for (const file of [join(esm, 'library', `${entry}.js`), join(cjs, 'library', `${entry}.js`), join(cjs, 'library', `${entry}.d.ts`)]) {
    if (!existsSync(file)) fail(`entry point ${entry}: ${relative(out, file)} was not built`);
  }
}
const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
const packageOf = (specifier) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
/** What a compiled module imports: relative files resolved, packages by name. */
function importsOf(file) {
  const found = { files: [], packages: [] };
  // TypeScript's own scan: static and dynamic imports and re-exports, not what comments quote.
  for (const { fileName: specifier } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
    if (specifier.startsWith('.')) found.files.push(resolve(dirname(file), specifier));
    else if (!builtins.has(specifier)) found.packages.push(specifier);
  }
  return found;
}
for (const file of files.filter((f) => f.endsWith('.js'))) {
  for (const specifier of importsOf(file).packages) {
    if (!declared.has(packageOf(specifier))) fail(`${relative(out, file)} imports ${specifier}, not a dependency of packages/client`);
    if (specifier !== packageOf(specifier)) fail(`${relative(out, file)} imports ${specifier}: an internal file of a package`);
  }
}
for (const entry of MAIN) {
  const seen = new Set();
  const pending = [join(esm, 'library', `${entry}.js`)];
  while (pending.length > 0) {
    const file = pending.pop();
    if (seen.has(file)) continue;
    if (!existsSync(file)) fail(`${relative(out, file)} is imported but was not built`);
    seen.add(file);
    const { files: next, packages } = importsOf(file);
    const server = packages.find((p) => SERVER_PACKAGES.includes(packageOf(p)));
    if (server !== undefined) fail(`${entry}: ${relative(out, file)} imports ${server}`);
    pending.push(...next);
  }
}

// 5. Load each entry point.
const LOAD = `
import { createRequire, registerHooks } from 'node:module';
const [how, file] = process.argv.slice(1);
const loaded = [];
registerHooks({ resolve: (specifier, context, next) => { const r = next(specifier, context); loaded.push(r.url); return r; } });
if (how === 'require') createRequire(file)(file); else await import(new URL('file://' + file).href);
console.log(JSON.stringify(loaded));
`;
for (const entry of ENTRIES) {
  for (const [how, build] of [
    ['import', esm],
    ['require', cjs],
  ]) {
    const file = join(build, 'library', `${entry}.js`);
    const loaded = spawnSync(process.execPath, ['--input-type=module', '-e', LOAD, how, file], { cwd: root, encoding: 'utf8' });
    if (loaded.status !== 0) fail(`${how} ${relative(out, file)} failed:\n${loaded.stderr}`);
    if (!MAIN.includes(entry)) continue;
    const server = JSON.parse(loaded.stdout).find((url) => SERVER_PACKAGES.some((name) => url.includes(`/node_modules/${name}/`)));
    if (server !== undefined) fail(`${how} ${relative(out, file)} loads ${server}`);
  }
}
