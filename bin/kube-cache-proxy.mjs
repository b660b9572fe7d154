#!/usr/bin/env node
// Entry point of the `kube-cache-proxy` command.
//
// The proxy is TypeScript run directly by Node's type stripping (Node >= 22.18), so there is no
// build step. This shim is plain JavaScript on purpose: on a machine whose system Node is older
// (Node 20 here) it re-executes itself with the Node 24 binary of the `node@24` devDependency, so
// `npx kube-cache-proxy` and the npm scripts work on a fresh clone either way.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const main = join(root, 'src', 'cli', 'main.ts');

if (process.features.typescript) {
  await import(pathToFileURL(main).href);
} else {
  const node24 = join(root, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(node24)) {
    console.error(
      `kube-cache-proxy needs Node.js >= 22.19 (this is ${process.version}).\n` +
        `Run \`npm ci\` in ${root} to install the node@24 devDependency, or install Node.js 24.`,
    );
    process.exit(1);
  }
  const child = spawn(node24, [main, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}
