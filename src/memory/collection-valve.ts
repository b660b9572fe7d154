/**
 * A full garbage collection when the process's anonymous memory nears its limit. V8 collects
 * garbage ArrayBuffers (response pieces of closed connections, passed-through chunks) only when
 * its heap asks for a collection or their external memory has grown by about 64 MiB since the
 * last one: in a 160 MiB container, a burst of watches that stop reading or of Tables left that
 * much garbage on top of live data and got the proxy OOM-killed (#28). The memory budget
 * (memory-budget.ts) bounds what the proxy holds; this bounds what it has let go of.
 *
 * Anonymous memory is resident minus shared pages (/proc/self/statm): what the kernel cannot
 * reclaim from the process; the binary's code pages are file-backed and left out. The valve
 * checks every CHECK_MS, and collects at most every MIN_GAP_MS (a collection of a 50 MiB heap
 * takes tens of milliseconds), only while anonymous memory is above its threshold.
 *
 * `gc` is V8's own, exposed at run time (v8.setFlagsFromString('--expose-gc'), then read from a
 * fresh context), so the proxy needs no flag on its command line; only when a limit is known.
 */
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Clock, Timer } from '../clock/clock.ts';
import { realClock } from '../clock/clock.ts';

const CHECK_MS = 100;
const MIN_GAP_MS = 500;
/** statm counts pages of this size on every Linux the proxy runs on (x86-64, arm64 with 4 KiB pages). */
const PAGE_BYTES = 4096;

export interface CollectionValve {
  /** Collections made so far (a metric). */
  collections(): number;
  stop(): void;
}

export interface CollectionValveOptions {
  /** Anonymous bytes past which the valve collects. */
  readonly thresholdBytes: number;
  /** Anonymous memory now; default: /proc/self/statm. */
  readonly anonymousBytes?: () => number | undefined;
  /** A full collection; default: V8's gc, exposed at run time. */
  readonly collect?: () => void;
  readonly clock?: Clock;
}

/** Resident minus shared pages, from /proc/self/statm; undefined where there is none. */
export function anonymousBytes(): number | undefined {
  try {
    const [, resident, shared] = readFileSync('/proc/self/statm', 'utf8').split(' ').map(Number);
    if (resident === undefined || shared === undefined || !Number.isFinite(resident - shared)) return undefined;
    return (resident - shared) * PAGE_BYTES;
  } catch {
    return undefined;
  }
}

/** V8's full collection, exposed at run time: the flag, then `gc` read from a new context. */
function v8Collect(): () => void {
  setFlagsFromString('--expose-gc');
  const gc: unknown = runInNewContext('gc');
  if (typeof gc !== 'function') throw new Error('V8 did not expose gc');
  return () => {
    (gc as () => void)();
  };
}

export function startCollectionValve(options: CollectionValveOptions): CollectionValve {
  const clock = options.clock ?? realClock;
  const measure = options.anonymousBytes ?? anonymousBytes;
  const collect = options.collect ?? v8Collect();
  let collections = 0;
  let lastAt = Number.NEGATIVE_INFINITY;
  let timer: Timer | undefined;
  let stopped = false;
  const check = (): void => {
    if (stopped) return;
    const now = clock.now();
    const anon = measure();
    if (anon !== undefined && anon > options.thresholdBytes && now - lastAt >= MIN_GAP_MS) {
      lastAt = now;
      collections++;
      collect();
    }
    timer = clock.setTimeout(check, CHECK_MS);
    timer.unref?.();
  };
  check();
  return {
    collections: () => collections,
    stop() {
      stopped = true;
      timer?.cancel();
    },
  };
}
