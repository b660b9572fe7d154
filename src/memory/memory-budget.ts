/**
 * What the proxy may hold, sized to the memory its container may use (memory-limit.ts), so that
 * load makes it slower or sends reads upstream, never gets it OOM-killed.
 *
 * The container's limit L, less the runtime's own floor (RUNTIME_FLOOR_BYTES: Node, the
 * libraries, the proxy's code, idle), leaves the working memory W, shared out once at start:
 *
 *   response bodies made from the cache  30% of W   LIST bodies (shared or per request), Tables,
 *                                                    metadata lists, indented JSON: taken before
 *                                                    a body is made, given back once written
 *   pooled LIST pieces kept between       5% of W   piece-writer.ts's pool
 *   unsent watch bytes                   10% of W   unsent-budget.ts: the slowest watchers close
 *   cached objects                       40% of W   an estimate of what the caches hold; past 90%
 *                                                    of it, no new lazily started cache (its reads
 *                                                    pass through), said once in the log, in a
 *                                                    metric and on /readyz
 *   decision caches                       2% of W   shared mode's kept SubjectAccessReview and
 *     (at most 8 MiB)                                TokenReview answers (auth/decision-cache.ts),
 *                                                    half each: least recently used out past it
 *   headroom                             13% of W   garbage between collections, sockets, code
 *   snapshots kept per cache for paging: one per 16 MiB of W, 2 to 16
 *
 * With no limit known the proxy keeps its fixed bounds (256 MiB of pieces and shared bodies,
 * 128 MiB of unsent watch bytes, 16 snapshots, 8 MiB of decisions) and refuses nothing; the
 * figures are still counted.
 *
 * A body that cannot be had waits for one, first come first served, up to BODY_WAIT_MS; then
 * the read goes to the apiserver, whose answer is streamed through (a few chunks held at a time).
 */
import { realClock } from '../clock/clock.ts';
import type { Clock } from '../clock/clock.ts';

/**
 * glibc's malloc keeps freed memory of up to its mmap threshold in its heaps, which fragment, and
 * raises the threshold itself (to 32 MiB) once a large block is freed: the pieces of every body
 * then stay resident after they are freed. With MALLOC_MMAP_THRESHOLD_ set (the image sets it
 * to this) blocks of 32 KiB and more are mapped for themselves and unmapped when freed: under a
 * 160 MiB limit, a LIST burst's peak fell from 156-170 MiB to 108-121 MiB, and with the
 * binary's pages charged to the container (its worst case) the proxy no longer thrashed (#28).
 */
export const MALLOC_MMAP_THRESHOLD_BYTES = 32 * 1024;

/** The proxy idle, measured (docs/memory.md): Node 24, fastify, undici, prom-client, the proxy's code; RSS with nothing cached. */
export const RUNTIME_FLOOR_BYTES = 96 * 1024 * 1024;
/** A limit so close to the floor still leaves this much to work with (reads then mostly pass through). */
const MIN_WORKING_BYTES = 16 * 1024 * 1024;
/** Past this share of the objects' budget, new lazy caches are refused; they are admitted again below PRESSURE_EXIT. */
const PRESSURE_ENTER = 0.9;
const PRESSURE_EXIT = 0.8;
/**
 * What a cached object costs beyond its JSON bytes (its record, key, B-tree and index entries:
 * bench/RESULTS.md, 220-300 B): the objects' estimate is (objects + window events) x (average
 * JSON bytes + this), a window event pinning a previous version of about the same size.
 */
const OBJECT_OVERHEAD_BYTES = 300;
/** How long a read waits for room for its body before it is passed through: a few LIST bodies' writing time. */
export const BODY_WAIT_MS = 2_000;

const MiB = 1024 * 1024;

/** The fixed bounds the proxy keeps when no limit is known. */
const UNLIMITED_PIECE_POOL_BYTES = 256 * MiB;
const UNLIMITED_SHARED_LISTS_BYTES = 256 * MiB;
const UNLIMITED_UNSENT_WATCH_BYTES = 128 * MiB;
const MAX_SNAPSHOTS = 16;
const SNAPSHOT_PER_BYTES = 16 * MiB;
/**
 * The decision caches' fixed cap, reached from deploy/node's 512 MiB limit on. One client's flood
 * of distinct denied reviews fills one half of it (4 MiB counted, ~10,000 decisions), well inside
 * the 16 MiB of RSS growth any one client's attack may cost (bench/decision-caches.ts measures it).
 */
const DECISION_CACHES_CAP_BYTES = 8 * MiB;
const DECISION_CACHES_SHARE = 0.02;

export interface BudgetSizes {
  /** The container's limit, or undefined when none is known (then nothing is refused). */
  readonly limitBytes: number | undefined;
  readonly workingBytes: number | undefined;
  readonly bodiesBytes: number;
  /** Shared LIST bodies kept for their next readers (within bodiesBytes). */
  readonly sharedListsBytes: number;
  readonly piecePoolBytes: number;
  readonly unsentWatchBytes: number;
  readonly objectsBytes: number;
  /** Shared mode's kept SubjectAccessReview and TokenReview answers, both caches together. */
  readonly decisionCachesBytes: number;
  /** Snapshots each cache keeps for the pages of a LIST. */
  readonly snapshots: number;
  /** Anonymous memory past which the collection valve collects (collection-valve.ts); undefined: no valve. */
  readonly collectAboveBytes: number | undefined;
}

/**
 * The process's code pages (the node binary's, ~50 MiB measured) are file-backed: they count
 * against a container's limit (charged on first touch) but are reclaimed, then read again, when
 * anonymous memory crowds them out. Past limit minus this, the proxy collects its garbage.
 */
const CODE_PAGES_BYTES = 48 * 1024 * 1024;

/** The rule above, for a limit of `limitBytes` (undefined: none known). */
export function budgetSizes(limitBytes: number | undefined): BudgetSizes {
  if (limitBytes === undefined) {
    return {
      limitBytes,
      workingBytes: undefined,
      bodiesBytes: Number.POSITIVE_INFINITY,
      sharedListsBytes: UNLIMITED_SHARED_LISTS_BYTES,
      piecePoolBytes: UNLIMITED_PIECE_POOL_BYTES,
      unsentWatchBytes: UNLIMITED_UNSENT_WATCH_BYTES,
      objectsBytes: Number.POSITIVE_INFINITY,
      decisionCachesBytes: DECISION_CACHES_CAP_BYTES,
      snapshots: MAX_SNAPSHOTS,
      collectAboveBytes: undefined,
    };
  }
  const working = Math.max(limitBytes - RUNTIME_FLOOR_BYTES, MIN_WORKING_BYTES);
  const bodies = Math.floor(working * 0.3);
  return {
    limitBytes,
    workingBytes: working,
    bodiesBytes: bodies,
    sharedListsBytes: Math.min(bodies, UNLIMITED_SHARED_LISTS_BYTES),
    piecePoolBytes: Math.min(Math.floor(working * 0.05), UNLIMITED_PIECE_POOL_BYTES),
    unsentWatchBytes: Math.min(Math.floor(working * 0.1), UNLIMITED_UNSENT_WATCH_BYTES),
    objectsBytes: Math.floor(working * 0.4),
    decisionCachesBytes: Math.min(Math.floor(working * DECISION_CACHES_SHARE), DECISION_CACHES_CAP_BYTES),
    snapshots: Math.max(2, Math.min(MAX_SNAPSHOTS, Math.floor(working / SNAPSHOT_PER_BYTES))),
    collectAboveBytes: Math.max(limitBytes - CODE_PAGES_BYTES, RUNTIME_FLOOR_BYTES),
  };
}

/**
 * Bytes taken and given back, with a bound (infinite: counted only). Waiters are served first
 * come, first served: a large body at the head is not overtaken by smaller ones.
 *
 * Invariant: used() <= maxBytes except after force(); every waiter waits for more than is free.
 */
export interface ByteBudget {
  readonly maxBytes: number;
  used(): number;
  /** Takes `bytes` now if they fit and nobody waits before; false otherwise. */
  tryTake(bytes: number): boolean;
  /** Takes `bytes` as soon as they fit, or gives up after `waitMs` (or when `signal` aborts): false. */
  take(bytes: number, waitMs: number, signal?: AbortSignal): Promise<boolean>;
  /** Takes `bytes` whether they fit or not (a body found larger than the share taken for it). */
  force(bytes: number): void;
  give(bytes: number): void;
}

interface Waiter {
  readonly bytes: number;
  resolve(taken: boolean): void;
}

export function newByteBudget(maxBytes: number, clock: Clock = realClock): ByteBudget {
  let used = 0;
  const waiters: Waiter[] = [];
  const serve = (): void => {
    while (waiters.length > 0) {
      const head = waiters[0];
      if (head === undefined || used + head.bytes > maxBytes) return;
      waiters.shift();
      used += head.bytes;
      head.resolve(true);
    }
  };
  return {
    maxBytes,
    used: () => used,
    tryTake(bytes) {
      if (waiters.length > 0 || used + bytes > maxBytes) return false;
      used += bytes;
      return true;
    },
    take(bytes, waitMs, signal) {
      if (waiters.length === 0 && used + bytes <= maxBytes) {
        used += bytes;
        return Promise.resolve(true);
      }
      if (bytes > maxBytes || waitMs <= 0 || signal?.aborted === true) return Promise.resolve(false);
      return new Promise((resolve) => {
        const done = (taken: boolean): void => {
          timer.cancel();
          signal?.removeEventListener('abort', giveUp);
          resolve(taken);
        };
        const waiter: Waiter = { bytes, resolve: done };
        const giveUp = (): void => {
          const at = waiters.indexOf(waiter);
          if (at < 0) return;
          waiters.splice(at, 1);
          done(false);
          // The head gave up: those behind it may fit now.
          serve();
        };
        const timer = clock.setTimeout(giveUp, waitMs);
        signal?.addEventListener('abort', giveUp, { once: true });
        waiters.push(waiter);
      });
    },
    force(bytes) {
      used += bytes;
    },
    give(bytes) {
      used = Math.max(0, used - bytes);
      serve();
    },
  };
}

/** What the caches hold, for the objects' estimate. */
export interface HeldObjects {
  readonly objects: number;
  /** Their JSON bytes. */
  readonly bytes: number;
  /** Events in the caches' windows (each pins a previous version of an object). */
  readonly windowEvents: number;
  /** Encodings derived from them and kept with them (derived-encodings.ts); default 0. */
  readonly derivedBytes?: number;
}

/** The objects' estimate of `held` (see OBJECT_OVERHEAD_BYTES). */
export function estimateObjects(held: HeldObjects): number {
  if (held.objects === 0) return 0;
  return (held.objects + held.windowEvents) * (held.bytes / held.objects + OBJECT_OVERHEAD_BYTES) + (held.derivedBytes ?? 0);
}

export type MemoryBudgetLog = (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;

export interface MemoryBudget {
  readonly sizes: BudgetSizes;
  /** Where the limit was read; undefined when none is known. */
  readonly limitSource: string | undefined;
  /** Response bodies made from the cache (shared LIST bodies included). */
  readonly bodies: ByteBudget;
  /** Reads passed through for want of room for their body (a metric). */
  passedThrough(): number;
  notePassedThrough(): void;
  /** Measures what the caches hold now (held) and returns the estimate. */
  measureObjects(): number;
  /** The last estimate. */
  objectsEstimate(): number;
  /** False while the objects' estimate is near its budget: a new lazily started cache is refused (and counted). */
  admitsNewCache(): boolean;
  /** True while the objects' estimate is near its budget (measured now). */
  underPressure(): boolean;
  /** Lazily started caches refused (a metric). */
  refusedCaches(): number;
  /** The /readyz line: always passing (reads pass through when the proxy is short of memory), saying how full it is. */
  state(): string;
  /** What the objects' estimate measures from now on (the cache registry's sum). */
  countObjectsOf(held: () => HeldObjects): void;
  /** Where the unsent watch bytes are counted (unsent-budget.ts), for the metrics. */
  countUnsentOf(total: () => number): void;
  unsentWatchBytes(): number;
  /** Where the decision caches' bytes are counted (shared mode's reviews), for the metrics. */
  countDecisionCachesOf(total: () => number): void;
  decisionCachesBytes(): number;
}

export interface MemoryBudgetOptions {
  readonly limit: { readonly bytes: number; readonly source: string } | undefined;
  readonly log?: MemoryBudgetLog;
  /** clock allows tests to manipulate time (waits for room). */
  readonly clock?: Clock;
}

export function newMemoryBudget(options: MemoryBudgetOptions): MemoryBudget {
  const sizes = budgetSizes(options.limit?.bytes);
  const bodies = newByteBudget(sizes.bodiesBytes, options.clock);
  const log = options.log ?? (() => undefined);
  let estimate = 0;
  let pressure = false;
  let refused = 0;
  let passed = 0;
  let held: (() => HeldObjects) | undefined;
  let unsent: () => number = () => 0;
  let decisions: () => number = () => 0;
  const mib = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`;
  const measure = (): number => {
    estimate = held === undefined ? 0 : estimateObjects(held());
    const share = estimate / sizes.objectsBytes;
    if (!pressure && share >= PRESSURE_ENTER) {
      pressure = true;
      log('warn', 'cached objects near their memory budget: new caches are refused, their reads passed through to the apiserver', {
        objectsBytes: Math.round(estimate),
        budgetBytes: sizes.objectsBytes,
        limitBytes: sizes.limitBytes,
      });
    } else if (pressure && share < PRESSURE_EXIT) {
      pressure = false;
      log('info', 'cached objects back within their memory budget: new caches are admitted again', {
        objectsBytes: Math.round(estimate),
        budgetBytes: sizes.objectsBytes,
      });
    }
    return estimate;
  };
  return {
    sizes,
    limitSource: options.limit?.source,
    bodies,
    passedThrough: () => passed,
    notePassedThrough: () => {
      passed++;
    },
    measureObjects: measure,
    objectsEstimate: () => estimate,
    admitsNewCache() {
      measure();
      if (pressure) refused++;
      return !pressure;
    },
    underPressure() {
      measure();
      return pressure;
    },
    refusedCaches: () => refused,
    countObjectsOf(source) {
      held = source;
    },
    countUnsentOf(total) {
      unsent = total;
    },
    unsentWatchBytes: () => unsent(),
    countDecisionCachesOf(total) {
      decisions = total;
    },
    decisionCachesBytes: () => decisions(),
    state() {
      measure();
      if (sizes.limitBytes === undefined) return `no memory limit known; cached objects ~${mib(estimate)}`;
      const held = `cached objects ~${mib(estimate)} of ${mib(sizes.objectsBytes)}, response bodies ${mib(bodies.used())} of ${mib(sizes.bodiesBytes)}`;
      const limit = `limit ${mib(sizes.limitBytes)} (${options.limit?.source ?? ''})`;
      return pressure ? `${limit}; ${held}: new caches refused, their reads passed through` : `${limit}; ${held}`;
    },
  };
}
