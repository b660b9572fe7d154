/**
 * The chaos run's faults, sizes and bounds: `npm run chaos -- [fault...] [--flag value...]`, each
 * flag also an environment variable `KCP_CHAOS_<FLAG>` (e.g. `KCP_CHAOS_WATCHERS=400`). A fault
 * argument selects every fault whose name starts with it.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MAX_STALENESS_MS } from '../src/cache/consistency.ts';

/** In the order they run: each in a namespace of its own, with watchers of its own. */
export const FAULT_NAMES = [
  'connection-cut',
  'apiserver-kill',
  'etcd-restart',
  'compaction-outage',
  '410-storm',
  'slow-readers',
  'silent-link',
  'quiet',
  'late-bookmark',
  'proxy-restart',
  'state-truncated',
] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

export interface ChaosOptions {
  readonly faults: readonly FaultName[];
  /** Reflector-style client watchers of each fault's namespace, through the proxy. */
  readonly watchers: number;
  /** Acknowledged writes per fault, at least: a third before the fault, the rest during and after it. */
  readonly writes: number;
  readonly writeRate: number;
  /** Distinct pods each fault's writer creates, updates and deletes. */
  readonly objects: number;
  /** How long each outage lasts (the apiserver or etcd down, the link cut or silent), ms. */
  readonly outageMs: number;
  /** Writing goes on at least this long after the upstream is back, ms. */
  readonly settleMs: number;
  /** slow-readers: watchers that read slowly while big events are written to their namespace. */
  readonly slowReaders: number;
  /** The proxy's --max-staleness, and the bound a read is checked against. */
  readonly maxStalenessMs: number;
  /** Acceptance: the longest silence after the upstream's return, ms. */
  readonly maxSilenceMs: number;
  readonly seed: number;
  /** The chaos run's own control plane (never the tests' shared one). */
  readonly dir: string;
  /** Prints every request of each fault's first watcher (KCP_CHAOS_TRACE=1). */
  readonly trace: boolean;
}

export const CHAOS_USAGE = `Usage: npm run chaos -- [fault...] [options]

Faults (default: all, in this order): ${FAULT_NAMES.join(', ')}; a prefix selects (e.g. etcd).
The hostile-client suite is a run of its own: npm run chaos -- hostile --help.

Options (each also KCP_CHAOS_<NAME>, e.g. KCP_CHAOS_WATCHERS=400):
  --watchers N        reflector-style client watchers per fault (default 100)
  --writes N          acknowledged pod writes per fault, at least (default 300)
  --write-rate N      writes per second (default 25)
  --objects N         distinct pods written per fault (default 50)
  --outage S          seconds each outage lasts (default 10)
  --settle S          seconds of writing after the upstream is back, at least (default 5)
  --slow-readers N    slow watchers in slow-readers (default 20)
  --max-staleness S   the proxy's --max-staleness and the bound reads are checked against (default ${String(DEFAULT_MAX_STALENESS_MS / 1000)})
  --max-silence S     acceptance bound on the longest silence after the upstream is back (default 10)
  --seed N            seed of every random choice (default 1)
  --dir DIR           the chaos control plane's directory (default $TMPDIR/kcp-chaos)
  --trace             print every LIST and WATCH of each fault's first watcher

Exits 1 when anything was lost, duplicated or reordered, a read was staler than the bound or
missed its own write, or a silence passed --max-silence; 2 on a usage error.`;

const FLAGS = {
  watchers: { type: 'string' },
  writes: { type: 'string' },
  'write-rate': { type: 'string' },
  objects: { type: 'string' },
  outage: { type: 'string' },
  settle: { type: 'string' },
  'slow-readers': { type: 'string' },
  'max-staleness': { type: 'string' },
  'max-silence': { type: 'string' },
  seed: { type: 'string' },
  dir: { type: 'string' },
  trace: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type ValueFlag = Exclude<keyof typeof FLAGS, 'help' | 'trace'>;

export function parseChaosOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ChaosOptions | 'help' {
  const { values, positionals } = parseArgs({ args: [...argv], options: FLAGS, allowPositionals: true, strict: true });
  if (values.help === true) return 'help';
  const setting = (name: ValueFlag): string | undefined => values[name] ?? env[`KCP_CHAOS_${name.toUpperCase().replaceAll('-', '_')}`];
  const num = (name: ValueFlag, fallback: number, min = 1): number => {
    const raw = setting(name);
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min) throw new Error(`--${name} must be a number ≥ ${String(min)}, not ${raw}`);
    return value;
  };
  const unknown = positionals.filter((p) => !FAULT_NAMES.some((f) => f.startsWith(p)));
  if (unknown.length > 0) throw new Error(`unknown fault ${unknown.join(', ')}; known: ${FAULT_NAMES.join(', ')}`);
  return {
    faults: positionals.length === 0 ? FAULT_NAMES : FAULT_NAMES.filter((f) => positionals.some((p) => f.startsWith(p))),
    watchers: Math.round(num('watchers', 100)),
    writes: Math.round(num('writes', 300, 3)),
    writeRate: num('write-rate', 25),
    objects: Math.round(num('objects', 50)),
    outageMs: num('outage', 10, 0) * 1000,
    settleMs: num('settle', 5, 0) * 1000,
    slowReaders: Math.round(num('slow-readers', 20, 0)),
    maxStalenessMs: num('max-staleness', DEFAULT_MAX_STALENESS_MS / 1000) * 1000,
    maxSilenceMs: num('max-silence', 10) * 1000,
    seed: Math.round(num('seed', 1, 0)),
    dir: setting('dir') ?? join(tmpdir(), 'kcp-chaos'),
    trace: values.trace === true || env.KCP_CHAOS_TRACE === '1',
  };
}
