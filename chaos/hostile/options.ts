/**
 * The hostile-client suite's attacks, sizes and bounds: `npm run chaos -- hostile [attack...]
 * [--flag value...]` (or `node chaos/hostile/run.ts ...`), each flag also an environment variable
 * `KCP_HOSTILE_<FLAG>` (e.g. `KCP_HOSTILE_CLIENTS=20`). An attack argument selects every attack
 * whose name starts with it.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseMemoryQuantity } from '../../src/cli/proxy-options.ts';

/** In the order they run, each on a proxy of its own (see run.ts). */
export const ATTACK_NAMES = [
  'sar-names',
  'token-flood',
  'accept',
  'ryw-poison',
  'huge-selector',
  'deep-continue',
  'read-flood',
  'junk-paths',
  'fairness',
] as const;
export type AttackName = (typeof ATTACK_NAMES)[number];

export interface HostileOptions {
  readonly attacks: readonly AttackName[];
  /** Well-behaved clients, each an identity of its own. */
  readonly clients: number;
  /** Namespaces the good clients are spread over (each with a writer of its own). */
  readonly namespaces: number;
  /** Reads per second of each good client (LIST and GET of pods and ConfigMaps, in turn). */
  readonly readRate: number;
  /** Pod writes per second, over all the namespaces. */
  readonly writeRate: number;
  /** How long each phase (the baseline, each attack) lasts, ms. */
  readonly phaseMs: number;
  /** How long an attack holds what it opened, sending nothing, after its phase (the proxy's held RSS is read then), ms. */
  readonly holdMs: number;
  /** How long the good clients run on a fresh proxy before a phase starts, ms. */
  readonly warmupMs: number;
  /** How long the same proxy is measured without the attack just before it (the p99 it is judged against), ms; 0: the baseline phase's. */
  readonly beforeMs: number;
  /** The proxy's memory limit (--memory-limit, and its cgroup's where one can be made). */
  readonly memoryLimit: string;
  readonly memoryLimitBytes: number;
  /** Services seeded in the attacker's namespace (the type the attacks read). */
  readonly services: number;
  readonly seed: number;
  /** The suite's own control plane. */
  readonly dir: string;
  /** A running control plane to use instead (left running): a dev-cluster directory. */
  readonly controlPlane: string | undefined;
}

export const HOSTILE_USAGE = `Usage: npm run chaos -- hostile [attack...] [options]
       node chaos/hostile/run.ts [attack...] [options]

Attacks (default: all, in this order; a prefix selects, e.g. acc):
  sar-names      GETs with ~1 MiB distinct names and namespaces, from a token with no rights
  token-flood    a distinct bearer string per request, from an unauthenticated client
  accept         an Accept header of ~1 MB: 66,000 clauses in rising q
  ryw-poison     a write through a pod's .../proxy/... answered by a body claiming resourceVersion 10^19
  huge-selector  watches with a valid ~1 MiB labelSelector (~120,000 requirements), 8 at once
  deep-continue  a continue token nested 5,000 deep
  read-flood     GETs of one Service, one at a time, as fast as they are answered
  junk-paths     distinct junk paths from an anonymous client
  fairness       one identity opening watches and requests in flight without bound

Each runs from one client against a fresh shared proxy while the good clients read; a baseline
phase without attack comes first.

Options (each also KCP_HOSTILE_<NAME>, e.g. KCP_HOSTILE_CLIENTS=20):
  --clients N        well-behaved clients, each its own ServiceAccount (default 50)
  --namespaces N     namespaces the good clients and the writers are spread over (default 10)
  --read-rate N      reads per second of each good client (default 1)
  --write-rate N     pod writes per second over all namespaces (default 10)
  --phase S          seconds each phase lasts (default 30)
  --hold S           seconds an attack then holds what it opened, sending nothing, while the
                     proxy's held memory is read (default 20: V8 collects garbage after ~8 s quiet)
  --warmup S         seconds the good clients run on a fresh proxy before a phase (default 5)
  --before S         seconds the good clients are measured on the same proxy just before the
                     attack, without it: the p99 the attack's is judged against (default: the
                     phase's; 0: the baseline phase's p99 instead)
  --memory-limit Q   the proxy's memory limit (default 512Mi, deploy/node's)
  --services N       Services in the attacker's namespace (default 200)
  --seed N           seed of every random choice (default 1)
  --dir DIR          the suite's control plane directory (default $TMPDIR/kcp-hostile)
  --control-plane D  use the running control plane of dev-cluster directory D instead (left running)

Figures to stdout as a Markdown table, progress to stderr. Exits 1 when an attack breaks a bound
(RSS held > 16 MiB over the baseline's, event-loop delay max > 100 ms, good reads not from the
cache, failed, or their p99 above 2x the same proxy's just before the attack, an event lost, an
internal error of the proxy); 2 on a usage error.`;

const FLAGS = {
  clients: { type: 'string' },
  namespaces: { type: 'string' },
  'read-rate': { type: 'string' },
  'write-rate': { type: 'string' },
  phase: { type: 'string' },
  hold: { type: 'string' },
  warmup: { type: 'string' },
  before: { type: 'string' },
  'memory-limit': { type: 'string' },
  services: { type: 'string' },
  seed: { type: 'string' },
  dir: { type: 'string' },
  'control-plane': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type ValueFlag = Exclude<keyof typeof FLAGS, 'help'>;

export function parseHostileOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): HostileOptions | 'help' {
  const { values, positionals } = parseArgs({ args: [...argv], options: FLAGS, allowPositionals: true, strict: true });
  if (values.help === true) return 'help';
  const setting = (name: ValueFlag): string | undefined => values[name] ?? env[`KCP_HOSTILE_${name.toUpperCase().replaceAll('-', '_')}`];
  const num = (name: ValueFlag, fallback: number, min = 1): number => {
    const raw = setting(name);
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min) throw new Error(`--${name} must be a number ≥ ${String(min)}, not ${raw}`);
    return value;
  };
  const unknown = positionals.filter((p) => !ATTACK_NAMES.some((a) => a.startsWith(p)));
  if (unknown.length > 0) throw new Error(`unknown attack ${unknown.join(', ')}; known: ${ATTACK_NAMES.join(', ')}`);
  const memoryLimit = setting('memory-limit') ?? '512Mi';
  const memoryLimitBytes = parseMemoryQuantity(memoryLimit);
  if (memoryLimitBytes === undefined) throw new Error(`--memory-limit must be a quantity such as 512Mi, not ${memoryLimit}`);
  return {
    attacks: positionals.length === 0 ? ATTACK_NAMES : ATTACK_NAMES.filter((a) => positionals.some((p) => a.startsWith(p))),
    clients: Math.round(num('clients', 50)),
    namespaces: Math.round(num('namespaces', 10)),
    readRate: num('read-rate', 1, 0.1),
    writeRate: num('write-rate', 10, 0.1),
    phaseMs: num('phase', 30) * 1000,
    holdMs: num('hold', 20, 0) * 1000,
    warmupMs: num('warmup', 5, 0) * 1000,
    beforeMs: num('before', num('phase', 30), 0) * 1000,
    memoryLimit,
    memoryLimitBytes,
    services: Math.round(num('services', 200)),
    seed: Math.round(num('seed', 1, 0)),
    dir: setting('dir') ?? join(tmpdir(), 'kcp-hostile'),
    controlPlane: setting('control-plane'),
  };
}
