/**
 * tools/goclient (a client-go v0.37.2 program built from the pinned module), built once per
 * process with the project's Go toolchain, offline (the Go build cache makes a rebuild seconds).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

let built: Promise<string> | undefined;

/** The path of the built binary. */
export function buildGoClient(): Promise<string> {
  built ??= (async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'kcp-goclient-')), 'goclient');
    await promisify(execFile)('go', ['build', '-o', out, '.'], {
      cwd: join(import.meta.dirname, '..', '..', 'tools', 'goclient'),
      env: { ...process.env, GOTOOLCHAIN: 'local', GOWORK: 'off', GOFLAGS: '-mod=readonly' },
    });
    return out;
  })();
  return built;
}
