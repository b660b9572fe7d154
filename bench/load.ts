/**
 * Load for the request scenarios: autocannon (npm), run as its own process with its CLI
 * (`autocannon -j`), so that the load generator's CPU is never the measured process's. It speaks
 * HTTPS to the apiserver (it does not verify certificates: loopback, our own CA) and sends the
 * target's headers. Latency is autocannon's: from the request written to the response's last byte.
 */
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import type { Target } from './targets.ts';

const AUTOCANNON = join(dirname(createRequire(import.meta.url).resolve('autocannon/package.json')), 'autocannon.js');
/** Preloaded into autocannon: it keeps no response body (autocannon-bodies.ts says why). */
const KEEP_NO_BODIES = ['--import', join(import.meta.dirname, 'autocannon-bodies.ts')];
/** Per-request timeout: a 10,000-pod LIST from a busy apiserver can take seconds; autocannon's 10 s default would cut it. */
const REQUEST_TIMEOUT_S = 60;

export interface LoadSpec {
  /** Path and query, e.g. `/api/v1/pods?resourceVersion=0`. */
  readonly path: string;
  readonly connections: number;
  readonly seconds: number;
  /** Requests to make instead of running for `seconds` (a slow target still answers enough of them). */
  readonly amount?: number;
  /** The Accept header; default application/json. */
  readonly accept?: string;
  /**
   * The load generator's nice value (default 0). Where the figure measured is not the load's
   * own latency, a positive one keeps this 2-core machine's scheduler from giving the proxy's
   * CPU to a generator that stands for clients on other machines.
   */
  readonly niceness?: number;
}

export interface LoadResult {
  readonly p50: number;
  readonly p99: number;
  /** Requests per second (mean over the run). */
  readonly rps: number;
  /** Response bytes per second. */
  readonly bytesPerSecond: number;
  readonly requests: number;
  /** Errors, timeouts and non-2xx answers: any makes the run suspect. */
  readonly failures: number;
}

/** What autocannon's `-j` prints, the fields read (bench/identity-load.ts prints the same). */
export interface AutocannonJson {
  latency: { p50: number; p99: number };
  requests: { average: number; total: number };
  throughput: { average: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}

export function runLoad(target: Target, spec: LoadSpec): Promise<LoadResult> {
  const args = [
    ...KEEP_NO_BODIES,
    AUTOCANNON,
    '-j',
    '-n',
    '-c',
    String(spec.connections),
    ...(spec.amount === undefined ? ['-d', String(spec.seconds)] : ['-a', String(spec.amount)]),
    '-t',
    String(REQUEST_TIMEOUT_S),
    '-H',
    `accept=${spec.accept ?? 'application/json'}`,
    ...Object.entries(target.headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]),
    `${target.url}${spec.path}`,
  ];
  return runLoadProcess(args, 'autocannon', spec.niceness);
}

/** Runs a load generator as a Node process (`args` after node) and reads the autocannon JSON it prints. */
export function runLoadProcess(args: readonly string[], what: string, niceness = 0): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    if (niceness !== 0 && child.pid !== undefined) setPriority(child.pid, niceness);
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err = (err + chunk.toString()).slice(-4000)));
    child.on('error', reject);
    child.on('exit', (code) => {
      try {
        if (code !== 0) throw new Error(`${what} exited ${String(code)}: ${err.slice(-2000)}`);
        const json = JSON.parse(out) as AutocannonJson;
        resolve({
          p50: json.latency.p50,
          p99: json.latency.p99,
          rps: json.requests.average,
          bytesPerSecond: json.throughput.average,
          requests: json.requests.total,
          failures: json.errors + json.timeouts + json.non2xx,
        });
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  });
}
