/**
 * The memory the proxy's container may use: what the kernel OOM-kills it past. Read where the
 * kubelet's limit lands (the container's cgroup): cgroup v2's `memory.max`, or cgroup v1's
 * `memory.limit_in_bytes` where the memory controller is on v1 (hybrid hosts), each the lowest
 * of the process's own cgroup and its ancestors (a parent's limit binds its children). A
 * `--memory-limit` flag wins: for a limit the cgroup files do not show (a VM, a sandbox), or one
 * to stay below on purpose.
 *
 * Paths: /proc/self/cgroup names the process's cgroup relative to the hierarchy's root, and
 * /sys/fs/cgroup[/memory] is where that root is mounted. Inside a container with its own cgroup
 * namespace the two agree and the path is `/`; without one (cgroup v1 Docker) the mount is the
 * container's own cgroup while the path names it from the host's root, so a path missing under
 * the mount is read at the mount itself.
 */
import { existsSync, readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';

export interface MemoryLimit {
  readonly bytes: number;
  /** Where it was read, for logs, /readyz and the status page (`cgroup v2 memory.max`, ...). */
  readonly source: string;
}

export interface ReadMemoryLimitOptions {
  /** The --memory-limit flag, in bytes: wins over the cgroup. */
  readonly flagBytes?: number | undefined;
  /** Where /proc and /sys are (tests); default `/`. */
  readonly root?: string;
  /** The machine's memory: a limit at or above it limits nothing. Default os.totalmem(). */
  readonly physicalBytes?: number;
}

/** cgroup v1 writes "no limit" as the largest page-aligned signed 64-bit value (9223372036854771712). */
const V1_UNLIMITED = 2 ** 62;

/** The limit that binds the process, or undefined when none is set. */
export function readMemoryLimit(options: ReadMemoryLimitOptions = {}): MemoryLimit | undefined {
  const physical = options.physicalBytes ?? totalmem();
  if (options.flagBytes !== undefined) return { bytes: options.flagBytes, source: '--memory-limit' };
  const root = options.root ?? '/';
  let membership: string;
  try {
    membership = readFileSync(join(root, 'proc/self/cgroup'), 'utf8');
  } catch {
    return undefined; // not Linux, or no /proc: no cgroup to read
  }
  const found = cgroupV2Limit(root, membership) ?? cgroupV1Limit(root, membership);
  return found === undefined || found.bytes >= physical ? undefined : found;
}

/** The unified hierarchy, when it holds the memory controller. */
function cgroupV2Limit(root: string, membership: string): MemoryLimit | undefined {
  const mount = join(root, 'sys/fs/cgroup');
  const controllers = readText(join(mount, 'cgroup.controllers'));
  if (controllers === undefined || !controllers.split(/\s+/).includes('memory')) return undefined;
  const path = /^0::(\/.*)$/m.exec(membership)?.[1];
  if (path === undefined) return undefined;
  const bytes = lowestAlong(mount, path, 'memory.max', (text) => (text === 'max' ? undefined : Number(text)));
  return bytes === undefined ? undefined : { bytes, source: 'cgroup v2 memory.max' };
}

/** The v1 memory hierarchy (`N:memory:/path`, the controller possibly co-mounted: `N:cpu,memory:/path`). */
function cgroupV1Limit(root: string, membership: string): MemoryLimit | undefined {
  const mount = join(root, 'sys/fs/cgroup/memory');
  const path = /^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:(\/.*)$/m.exec(membership)?.[1];
  if (path === undefined || !existsSync(mount)) return undefined;
  const bytes = lowestAlong(mount, path, 'memory.limit_in_bytes', (text) => {
    const value = Number(text);
    return value >= V1_UNLIMITED ? undefined : value;
  });
  return bytes === undefined ? undefined : { bytes, source: 'cgroup v1 memory.limit_in_bytes' };
}

/**
 * The lowest limit in `file` from the process's cgroup up to the mount (its ancestors bind it
 * too); a cgroup path absent under the mount (no cgroup namespace) is read at the mount alone.
 */
function lowestAlong(mount: string, path: string, file: string, parse: (text: string) => number | undefined): number | undefined {
  const segments = path.split('/').filter((s) => s !== '');
  if (!existsSync(join(mount, ...segments))) segments.length = 0;
  let lowest: number | undefined;
  for (let depth = segments.length; depth >= 0; depth--) {
    const text = readText(join(mount, ...segments.slice(0, depth), file));
    const value = text === undefined ? undefined : parse(text);
    if (value !== undefined && Number.isFinite(value) && value > 0 && (lowest === undefined || value < lowest)) lowest = value;
  }
  return lowest;
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}
