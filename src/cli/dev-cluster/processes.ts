/**
 * The processes a control plane starts, and how they are stopped: only by recorded pid, and only
 * while that pid is still the binary we started (a recycled pid is never signalled).
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface RecordedProcess {
  readonly name: string;
  readonly pid: number;
  /** argv[0] as started: compared with /proc/<pid>/cmdline before any signal. */
  readonly executable: string;
  readonly args: readonly string[];
  readonly logFile: string;
}

/** Starts `executable` detached (its own process group, so a terminal's Ctrl-C does not reach it), output to `logFile`. */
export function startDetached(
  name: string,
  executable: string,
  args: readonly string[],
  logFile: string,
  env?: NodeJS.ProcessEnv,
): RecordedProcess {
  const log = openSync(logFile, 'a');
  try {
    const child = spawn(executable, args, { detached: true, stdio: ['ignore', log, log], env: env ?? process.env });
    if (child.pid === undefined) throw new Error(`could not start ${executable}`);
    child.unref();
    return { name, pid: child.pid, executable, args, logFile };
  } finally {
    closeSync(log);
  }
}

/** True while a process with this pid exists (whatever it runs). */
export function isProcessAlive(pid: number): boolean {
  try {
    globalThis.process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, owned by someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True while `process` runs and is still the executable we started. */
export function isRunning(process: RecordedProcess): boolean {
  try {
    const cmdline = readFileSync(`/proc/${process.pid}/cmdline`, 'utf8');
    const argv0 = cmdline.split('\0')[0];
    // A zombie (exited, not yet reaped by its parent) has an empty cmdline: it runs no more.
    return argv0 === process.executable;
  } catch {
    return false;
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when none of `processes` runs. */
export async function stopProcesses(processes: readonly RecordedProcess[], graceMs = 10_000): Promise<void> {
  const signal = (sig: NodeJS.Signals): void => {
    for (const p of processes) {
      if (isRunning(p)) {
        try {
          globalThis.process.kill(p.pid, sig);
        } catch {
          // gone between the check and the signal
        }
      }
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (processes.some(isRunning)) {
    if (Date.now() > deadline) {
      signal('SIGKILL');
      await sleep(100);
      if (Date.now() > deadline + 5_000) return;
    }
    await sleep(50);
  }
}

/**
 * SIGKILL at once, no grace: what an OOM kill or a crashed node does to a process, for fault
 * injection. Resolves when none of `processes` runs (a zombie counts as gone).
 */
export async function killProcesses(processes: readonly RecordedProcess[]): Promise<void> {
  for (const p of processes) {
    if (!isRunning(p)) continue;
    try {
      globalThis.process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone between the check and the signal
    }
  }
  while (processes.some(isRunning)) await sleep(20);
}

/** A TCP port free on 127.0.0.1 at the time of the call (the caller retries if it is taken meanwhile). */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolve(port);
      });
    });
  });
}
