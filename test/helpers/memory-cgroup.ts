/**
 * A memory cgroup of the test's own, with a limit, to run a process under as a container runs
 * (needs root): cgroup v2 where the memory controller is on the unified hierarchy, else v1's
 * memory controller (hybrid hosts, this machine). Made as a child of the cgroup the test runs in
 * (v1), or of the first of it and its parent that delegates the memory controller to its
 * children (v2, whose cgroups with processes cannot), so the test's own limits still bind it.
 *
 * A process is started inside it by a shell that moves itself in, then execs the command: every
 * page it ever touches is charged to the cgroup.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

export interface MemoryCgroup {
  readonly path: string;
  readonly version: 1 | 2;
  /** The command line that runs `argv` inside the cgroup. */
  wrap(argv: readonly string[]): { readonly command: string; readonly args: string[] };
  /** Processes the kernel's OOM killer killed in it. */
  oomKills(): number;
  /** The most memory it was charged at once (v1 max_usage_in_bytes, v2 memory.peak), if the kernel says. */
  peakBytes(): number | undefined;
  /** Removes it; its processes must have exited. */
  remove(): void;
}

const V2_ROOT = '/sys/fs/cgroup';
const V1_ROOT = '/sys/fs/cgroup/memory';

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The cgroup to make the child in, and the version; or why there is none. */
function parentCgroup(): { readonly dir: string; readonly version: 1 | 2 } | string {
  if (process.getuid?.() !== 0) return 'making a memory cgroup needs root';
  const membership = read('/proc/self/cgroup') ?? '';
  const v2Controllers = read(join(V2_ROOT, 'cgroup.controllers'));
  if (v2Controllers?.split(/\s+/).includes('memory') === true) {
    const own = /^0::(\/.*)$/m.exec(membership)?.[1];
    if (own === undefined) return 'cgroup v2: the process’s cgroup is not in /proc/self/cgroup';
    const candidates = [own, own.replace(/\/[^/]*$/, '') || '/'];
    for (const path of candidates) {
      const dir = join(V2_ROOT, path);
      if (read(join(dir, 'cgroup.subtree_control'))?.split(/\s+/).includes('memory') === true) return { dir, version: 2 };
    }
    return `cgroup v2: neither ${candidates.join(' nor ')} delegates the memory controller (cgroup.subtree_control)`;
  }
  const own = /^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:(\/.*)$/m.exec(membership)?.[1];
  if (own === undefined || !existsSync(V1_ROOT)) return 'no memory controller: neither cgroup v2’s nor v1’s is mounted';
  const dir = join(V1_ROOT, own);
  return existsSync(dir) ? { dir, version: 1 } : `cgroup v1: ${dir} is not there (a cgroup namespace?)`;
}

/** A new memory cgroup limited to `limitBytes`; throws, saying why, where one cannot be made. */
export function createMemoryCgroup(limitBytes: number): MemoryCgroup {
  const parent = parentCgroup();
  if (typeof parent === 'string') throw new Error(`cannot run the proxy under a memory limit here: ${parent}`);
  const path = join(parent.dir, `kcp-test-${String(process.pid)}-${randomBytes(3).toString('hex')}`);
  mkdirSync(path);
  const { version } = parent;
  writeFileSync(join(path, version === 2 ? 'memory.max' : 'memory.limit_in_bytes'), String(limitBytes));
  if (version === 2 && existsSync(join(path, 'memory.swap.max'))) writeFileSync(join(path, 'memory.swap.max'), '0');
  const counter = (file: string, name: string): number =>
    Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(read(join(path, file)) ?? '')?.[1] ?? 0);
  return {
    path,
    version,
    wrap(argv) {
      // $0 is the cgroup; "$@" the command, exec'd in place of the shell (same pid, already moved).
      return { command: '/bin/sh', args: ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', path, ...argv] };
    },
    oomKills: () => (version === 2 ? counter('memory.events', 'oom_kill') : counter('memory.oom_control', 'oom_kill')),
    peakBytes() {
      const text = read(join(path, version === 2 ? 'memory.peak' : 'memory.max_usage_in_bytes'));
      return text === undefined ? undefined : Number(text.trim());
    },
    remove() {
      rmdirSync(path);
    },
  };
}
