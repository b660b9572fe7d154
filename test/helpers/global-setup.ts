/**
 * node:test global set-up (--test-global-setup): one real control plane for the whole run,
 * shared by every integration suite (each test works in a namespace of its own). Test files find
 * it through $KCP_TEST_CONTROL_PLANE; see control-plane.ts in this folder.
 *
 * A reaper tied to the runner's pid stops it even if the run is interrupted before globalTeardown.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureControlPlaneBinaries } from '../../src/cli/dev-cluster/build.ts';
import { down, up } from '../../src/cli/dev-cluster/control-plane.ts';
import { attachReaper } from '../../src/cli/dev-cluster/reaper.ts';
import { newProgress } from '../../src/cli/progress.ts';
import { CONTROL_PLANE_ENV } from './control-plane.ts';

let dir: string | undefined;

export async function globalSetup(): Promise<void> {
  const progress = newProgress((line) => process.stderr.write(`[control plane] ${line}\n`));
  dir = mkdtempSync(join(tmpdir(), 'kcp-test-'));
  const binaries = await ensureControlPlaneBinaries(progress);
  await up({ dir, binaries, progress });
  attachReaper(dir, process.pid);
  process.env[CONTROL_PLANE_ENV] = dir;
}

export async function globalTeardown(): Promise<void> {
  if (dir !== undefined) await down(dir);
}
