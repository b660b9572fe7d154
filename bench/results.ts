/**
 * One run's results: the figures of every scenario, with what they were measured on (date,
 * machine, Kubernetes version, commit), written as JSON: `<out>/run-<date>.json` (not committed)
 * and `<out>/latest.json`, beside the chart `<out>/latest.svg`.
 */
import type { RestartRow, StateCost } from './restart.ts';
import type { CheckCostRow } from './consistency-check.ts';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import type { BenchOptions } from './options.ts';
import type { LoadResult } from './load.ts';
import type { SyncResult } from './sync.ts';
import type { TargetName } from './targets.ts';
import type { WatchResult } from './watch-fanout.ts';
import type { PollResult } from './poll.ts';
import type { SharedModeRow } from './shared-mode.ts';
import type { QuietRow } from './quiet.ts';
import type { ColdRow } from './cold.ts';
import type { KcmRow } from './controller-manager.ts';
import type { KcmWireRow } from './controller-manager-tls.ts';
import type { GoClientRow } from './go-client.ts';
import type { FleetResult } from './fleet.ts';
import type { ScaleRow } from './scale.ts';
import type { FootprintResult } from './footprint.ts';
import { renderScaleChart } from './scale.ts';
import { renderChart } from './chart.ts';

export interface LoadRow {
  readonly scenario: string;
  readonly title: string;
  readonly target: TargetName;
  readonly connections: number;
  /** Medians over the repeats. */
  readonly p50: number;
  readonly p99: number;
  readonly rps: number;
  /** (max - min) / median of the repeats' p50. */
  readonly spread: number;
  readonly unstable: boolean;
  /** Requests of the resource the apiserver served during the measured runs, and client requests made. */
  readonly upstreamRequests: number;
  readonly clientRequests: number;
  readonly failures: number;
  /** For the proxies: the client requests of the measured runs answered from the cache. */
  readonly fromCache: number | undefined;
  readonly runs: readonly LoadResult[];
}

export interface PollRow extends PollResult {
  readonly target: TargetName;
}

export interface WatchRow extends WatchResult {
  readonly target: TargetName;
}

export interface ProfileSummary {
  readonly scenario: string;
  readonly file: string;
  readonly totalMs: number;
  readonly top: readonly { readonly name: string; readonly selfMs: number; readonly share: number }[];
}

export interface Environment {
  readonly date: string;
  readonly machine: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly loadAverageAtStart: readonly number[];
  readonly node: string;
  readonly kubernetes: string;
  readonly commit: string;
}

export interface BenchResults {
  readonly environment: Environment;
  readonly command: string;
  readonly sizes: Omit<BenchOptions, 'dir' | 'out'> & { readonly dir: undefined; readonly out: undefined };
  readonly load: readonly LoadRow[];
  readonly watch: readonly WatchRow[];
  /** Absent in results written before the poll scenario existed. */
  readonly poll?: readonly PollRow[];
  /** The scale curve (`npm run bench -- scale`). */
  readonly scale?: readonly ScaleRow[];
  /** The footprint scenario (`npm run bench -- footprint`). */
  readonly footprint?: FootprintResult;
  /** The shared-mode scenario (`npm run bench -- shared`). */
  readonly shared?: readonly SharedModeRow[];
  /** The quiet and cold scenarios (`npm run bench -- quiet cold`). */
  readonly quiet?: readonly QuietRow[];
  readonly cold?: readonly ColdRow[];
  /** The consistency checks' cost (`npm run bench -- consistency-check`). */
  readonly consistencyCheck?: readonly CheckCostRow[];
  /** --state-dir restarts beside a cold start (bench/restart.ts). */
  readonly restart?: { readonly rows: readonly RestartRow[]; readonly cost: StateCost | undefined };
  readonly kcm?: readonly KcmRow[];
  /** The kcm scenario's wire rows: KCM through a shared TLS proxy, its HTTP/2 client on and off, the proxy's upstream h2 or HTTP/1.1. */
  readonly kcmWire?: readonly KcmWireRow[];
  readonly goClient?: readonly GoClientRow[];
  /** The fleet simulation (`npm run bench -- fleet`). */
  readonly fleet?: FleetResult;
  readonly sync: readonly SyncResult[];
  readonly profiles: readonly ProfileSummary[];
  readonly warnings: readonly string[];
  readonly durationSeconds: number;
}

/** The measured code's commit: `-dirty` when src/ or bin/ differ from it. */
function commit(): string {
  try {
    const root = join(import.meta.dirname, '..');
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty =
      execFileSync('git', ['--no-optional-locks', 'status', '--porcelain', '--untracked-files=no', '--', 'src', 'bin'], {
        cwd: root,
        encoding: 'utf8',
      }).trim() !== '';
    return dirty ? `${sha}-dirty` : sha;
  } catch {
    return 'unknown';
  }
}

export function environment(kubernetes: string): Environment {
  const cpu = cpus();
  return {
    date: new Date().toISOString(),
    machine: `${String(cpu.length)} cores, ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${String(Math.round(totalmem() / 2 ** 30))} GiB`,
    cores: cpu.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverageAtStart: loadavg().map((l) => Math.round(l * 100) / 100),
    node: process.version,
    kubernetes,
    commit: commit(),
  };
}

/**
 * Writes run-<date>.json, and for the default run latest.json and latest.svg (bench/RESULTS.md's
 * figures: a run of a few named scenarios must not replace them); a scale-only or footprint-only
 * run writes scale.json or footprint.json instead. Returns the paths written.
 */
export function writeResults(out: string, results: BenchResults): string[] {
  mkdirSync(out, { recursive: true });
  const text = `${JSON.stringify(results, null, 2)}\n`;
  const date = results.environment.date.replaceAll(':', '-').replace(/\.\d+Z$/, 'Z');
  const scale = results.scale ?? [];
  // A scale-only or footprint-only run keeps the latest full run's files (bench/RESULTS.md's) and writes its own.
  const only = results.load.length === 0 && results.watch.length === 0 && results.sync.length === 0;
  const scaleOnly = only && scale.length > 0;
  const footprintOnly = only && scale.length === 0 && results.footprint !== undefined;
  const name = scaleOnly ? 'scale' : footprintOnly ? 'footprint' : 'latest';
  const stamped = join(out, `${scaleOnly || footprintOnly ? name : 'run'}-${date}.json`);
  const latest = join(out, `${name}.json`);
  writeFileSync(stamped, text);
  if (!scaleOnly && !footprintOnly && !results.sizes.defaultRun) return [stamped];
  writeFileSync(latest, text);
  const written = [stamped, latest];
  if (!scaleOnly && !footprintOnly) {
    writeFileSync(join(out, 'latest.svg'), renderChart(results));
    written.push(join(out, 'latest.svg'));
  }
  if (scale.length > 0) {
    writeFileSync(join(out, 'scale.svg'), renderScaleChart(scale));
    written.push(join(out, 'scale.svg'));
  }
  return written;
}
