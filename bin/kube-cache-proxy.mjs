#!/usr/bin/env node
// Entry point of the `kube-cache-proxy` command.
//
// A packed install (npm pack, the image) holds the JavaScript compiled from the sources (dist/,
// scripts/build.mjs) and no sources: it runs that, on any Node the package's engines allow. A
// checkout holds the TypeScript sources and runs them as they are, by Node's type stripping
// (Node >= 22.18), so that nothing needs building and no stale build is ever run. This shim is
// plain JavaScript on purpose: on a machine whose system Node is older (Node 20 here) it
// re-executes itself with the Node 24 binary of the `node@24` devDependency, so
// `npx kube-cache-proxy` and the npm scripts work on a fresh clone either way.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const sources = join(root, 'src', 'cli', 'main.ts');
const compiled = join(root, 'dist', 'cli', 'main.js');

if (!existsSync(sources) && existsSync(compiled)) {
  await import(pathToFileURL(compiled).href);
} else if (process.features.typescript) {
  await import(pathToFileURL(sources).href);
} else {
  const node24 = join(root, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(node24)) {
    console.error(
      `kube-cache-proxy needs Node.js >= 22.19 (this is ${process.version}).\n` +
        `Run \`npm ci\` in ${root} to install the node@24 devDependency, or install Node.js 24.`,
    );
    process.exit(1);
  }
  const child = spawn(node24, [sources, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}
