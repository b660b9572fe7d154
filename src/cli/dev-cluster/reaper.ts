/**
 * The reaper: a small detached process that stops a control plane when its owner process exits,
 * however it exits (a test runner killed mid-run, a terminal closed). Without it an interrupted
 * `npm test` would leave etcd and kube-apiserver running.
 *
 * Run as `node reaper.ts DIR OWNER_PID`; exits by itself once `down` has removed DIR's state.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REAPER_NAME, down, readState, recordProcess } from './control-plane.ts';
import { isProcessAlive, startDetached } from './processes.ts';

const POLL_MS = 500;

/** Starts a reaper for the control plane in `dir`, tied to `ownerPid`, and records it there. */
export function attachReaper(dir: string, ownerPid: number): void {
  const script = fileURLToPath(import.meta.url);
  const reaper = startDetached(REAPER_NAME, process.execPath, [script, dir, String(ownerPid)], join(dir, 'logs', 'reaper.log'));
  recordProcess(dir, reaper);
}

async function reap(dir: string, ownerPid: number): Promise<void> {
  for (;;) {
    if (readState(dir) === undefined) return;
    if (!isProcessAlive(ownerPid)) {
      const { stopped } = await down(dir);
      console.log(`owner ${ownerPid} exited; stopped ${stopped.map((p) => `${p.name} (${p.pid})`).join(', ') || 'nothing'}`);
      return;
    }
    await sleep(POLL_MS);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [dir, owner] = process.argv.slice(2);
  if (dir === undefined || owner === undefined) {
    console.error('usage: reaper.ts DIR OWNER_PID');
    process.exit(2);
  }
  await reap(dir, Number(owner));
}
