import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/kube-cache-proxy.mjs', import.meta.url));

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the `kube-cache-proxy` command as a user would, through its bin entry. */
export function runCli(args: readonly string[], timeoutMs = 300_000): Promise<CliRun> {
  return runCommand(process.execPath, [BIN, ...args], timeoutMs);
}

export function runCommand(command: string, args: readonly string[], timeoutMs = 60_000): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

export interface RunningCli {
  readonly child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
}

/** Starts the `kube-cache-proxy` command in the background, collecting its output. */
export function spawnCli(args: readonly string[], env: NodeJS.ProcessEnv = process.env): RunningCli {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { child, output: () => output, exited };
}
