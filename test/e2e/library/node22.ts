/**
 * A Node 22 binary for the library's install test, installed the way the project gets Node 24
 * (the `node` package of the npm registry, which ships the binary for this platform), but
 * outside the repository and its dependencies: into the machine's cache beside the control plane
 * binaries (src/cli/dev-cluster/build.ts cacheRoot), once. $KCP_NODE22 names another binary.
 *
 * Not a devDependency: the `node` package's bin is `node`, so a second one in node_modules would
 * fight node@24 for node_modules/.bin/node, which every npm script runs.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot } from '../../../src/cli/dev-cluster/build.ts';
import { mustRun, npmEnv } from '../deploy/run.ts';

export async function node22(): Promise<string> {
  const given = process.env.KCP_NODE22;
  if (given !== undefined && given !== '') return given;
  const dir = join(cacheRoot(), 'node-22');
  const bin = join(dir, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(bin)) {
    await mustRun('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', '--prefer-offline', 'node@22'], {
      env: npmEnv(),
      timeoutMs: 240_000,
    });
  }
  const version = (await mustRun(bin, ['--version'])).trim();
  if (!version.startsWith('v22.')) throw new Error(`${bin} is ${version}, not Node 22`);
  return bin;
}
