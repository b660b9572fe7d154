/**
 * Leader-election candidates as separate processes, through the real command
 * (`kube-cache-proxy leader-election`), for the integration tests: each one's stdout lines are
 * read as they arrive, so the test knows at any moment what each process believes.
 *
 * A process believes it leads from its "started leading" line to its "stopped leading" line (the
 * CLI prints them from onStartedLeading and from the AbortSignal that ends the term). Each line
 * carries the child's own timestamp (same machine, same clock as the test).
 *
 * Children are killed when the test ends (t.after), whatever its outcome; if the test process
 * dies first, each child stops by itself (--owner-pid), and on exit we SIGKILL what is left.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';
import { eventually } from './eventually.ts';

const BIN = fileURLToPath(new URL('../../bin/kube-cache-proxy.mjs', import.meta.url));

export interface ElectorLine {
  /** The child's timestamp of the line (epoch ms). */
  readonly at: number;
  readonly text: string;
}

export interface ElectorOptions {
  readonly kubeconfig: string;
  readonly namespace: string;
  readonly lease: string;
  readonly identity: string;
  readonly leaseDurationSeconds: number;
  readonly renewDeadlineSeconds: number;
  readonly retryPeriodSeconds: number;
  readonly releaseOnCancel?: boolean;
}

export interface ElectorProcess {
  readonly identity: string;
  readonly child: ChildProcess;
  /** Every stdout line so far. */
  readonly lines: readonly ElectorLine[];
  /** Between its "started leading" and "stopped leading" lines. */
  believesLeading(): boolean;
  /** The first line (after index `from`) matching `pattern`, waiting for it if need be. */
  waitFor(pattern: RegExp, from?: number, timeoutMs?: number): Promise<ElectorLine>;
  /** Resolves with the exit code (null if killed by a signal) once the process has exited. */
  readonly exited: Promise<number | null>;
  /** When the test saw it exit (epoch ms), undefined while it runs. */
  exitedAt(): number | undefined;
  /** stdout and stderr so far, for failure messages. */
  output(): string;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Starts a candidate and resolves once it runs (its first line is out, with its own pid). */
export async function startElector(t: TestContext, options: ElectorOptions): Promise<ElectorProcess> {
  const args = [
    BIN,
    'leader-election',
    `--kubeconfig=${options.kubeconfig}`,
    `--namespace=${options.namespace}`,
    `--lease=${options.lease}`,
    `--identity=${options.identity}`,
    `--lease-duration=${String(options.leaseDurationSeconds)}s`,
    `--renew-deadline=${String(options.renewDeadlineSeconds)}s`,
    `--retry-period=${String(options.retryPeriodSeconds)}s`,
    `--owner-pid=${String(process.pid)}`,
    ...(options.releaseOnCancel === true ? ['--release-on-cancel'] : []),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  let exitedAt: number | undefined;
  const exited = new Promise<number | null>((resolve) => {
    // 'close', not 'exit': every line it printed has been read by then.
    child.once('close', (code) => {
      exitedAt = Date.now();
      live.delete(child);
      resolve(code);
    });
  });
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });

  const lines: ElectorLine[] = [];
  let transcript = '';
  let leading = false;
  createInterface({ input: child.stdout }).on('line', (line) => {
    transcript += `[stdout] ${line}\n`;
    const space = line.indexOf(' ');
    const entry = { at: Date.parse(line.slice(0, space)), text: line.slice(space + 1) };
    lines.push(entry);
    if (entry.text === 'started leading') leading = true;
    if (entry.text.startsWith('stopped leading')) leading = false;
  });
  createInterface({ input: child.stderr }).on('line', (line) => {
    transcript += `[stderr] ${line}\n`;
  });

  const elector: ElectorProcess = {
    identity: options.identity,
    child,
    lines,
    believesLeading: () => leading,
    async waitFor(pattern, from = 0, timeoutMs = 30_000) {
      let found: ElectorLine | undefined;
      let gone = false;
      void exited.then(() => (gone = true));
      await eventually(
        `${options.identity} to print ${String(pattern)}`,
        () => {
          found = lines.slice(from).find((l) => pattern.test(l.text));
          if (found === undefined && gone) throw new Error(`${options.identity} exited before printing ${String(pattern)}:\n${transcript}`);
          return found !== undefined;
        },
        timeoutMs,
      );
      if (found === undefined) throw new Error('unreachable');
      return found;
    },
    exited,
    exitedAt: () => exitedAt,
    output: () => transcript,
  };
  const first = await elector.waitFor(/^candidate /, 0, 60_000);
  // The pid it prints is the one we spawned: no shim process in between, so a SIGKILL reaches it.
  if (!first.text.endsWith(`(pid ${String(child.pid)})`)) throw new Error(`unexpected first line: ${first.text}`);
  return elector;
}

/** A kubeconfig for the control plane's admin whose server is `server` (e.g. a TCP proxy in front of it). */
export function writeKubeconfig(dir: string, cp: ControlPlaneState, server: string): string {
  const file = join(dir, `kubeconfig-${String(Date.now())}-${String(Math.random()).slice(2, 8)}`);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'certificate-authority': cp.caFile } }],
      users: [{ name: 'admin', user: { token: cp.users.admin.token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'admin' } }],
      'current-context': 'c',
    }),
  );
  return file;
}

/**
 * The leadership terms in the processes' own lines: [start, end) per "started"/"stopped leading"
 * pair; a process that died leading (kill -9) ends its term when it exited; Infinity if it leads.
 */
export function leadershipTerms(electors: readonly ElectorProcess[]): { identity: string; start: number; end: number }[] {
  const terms: { identity: string; start: number; end: number }[] = [];
  for (const e of electors) {
    let start: number | undefined;
    for (const line of e.lines) {
      if (line.text === 'started leading') start = line.at;
      if (line.text.startsWith('stopped leading') && start !== undefined) {
        terms.push({ identity: e.identity, start, end: line.at });
        start = undefined;
      }
    }
    if (start !== undefined) terms.push({ identity: e.identity, start, end: e.exitedAt() ?? Number.POSITIVE_INFINITY });
  }
  return terms.sort((a, b) => a.start - b.start);
}

/** Pairs of terms that overlap in time (should be none). */
export function overlappingTerms(terms: ReturnType<typeof leadershipTerms>): string[] {
  const overlaps: string[] = [];
  for (let i = 0; i < terms.length; i++) {
    for (let j = i + 1; j < terms.length; j++) {
      const a = terms[i];
      const b = terms[j];
      if (a !== undefined && b !== undefined && a.start < b.end && b.start < a.end) {
        overlaps.push(`${a.identity} [${String(a.start)}, ${String(a.end)}) overlaps ${b.identity} [${String(b.start)}, ${String(b.end)})`);
      }
    }
  }
  return overlaps;
}
