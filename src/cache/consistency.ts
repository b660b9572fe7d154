/**
 * How "most recent" (RV-unset) reads are answered, per type, and what the proxy's own writes
 * oblige its later reads to see. The delegator (delegator.ts) applies it to each read.
 *
 * - `bounded` (the default): from the cache while its upstream watch is open and has proven
 *   progress (an event or a bookmark) within `maxStalenessMs`; a read waits for the proxy's own
 *   writes of the type to reach the cache (read-your-writes), and after a write through the
 *   proxy that shows the cache behind (409 Conflict or AlreadyExists, 404 on an update or delete)
 *   the reads of that object wait until the cache has caught up with the apiserver (a probe), or
 *   pass through. Otherwise passed through.
 * - `strong`: linearizable, as the apiserver's own consistent reads, and never dearer than no
 *   proxy: an RV-unset GET passes straight through (the apiserver itself reads etcd for it,
 *   storage/cacher/delegator.go); an RV-unset LIST of a type with changes in flight probes the
 *   apiserver's RV and is served once the cache has reached it, else passed through.
 */
import { LRUCache } from 'lru-cache';
import { qualifiedResource } from '../kube/group-resource.ts';

export type ReadConsistency = 'bounded' | 'strong';

export interface ConsistencyPolicy {
  /** The mode of a type's RV-unset reads. */
  modeOf(group: string, resource: string): ReadConsistency;
  /** Bounded mode: the most time since the cache's watch last proved progress for a read to come from it. */
  readonly maxStalenessMs: number;
}

/**
 * The default bound: the apiserver sends each watcher a bookmark once a minute
 * (storage/cacher/cacher.go defaultBookmarkFrequency), so a quiet type proves its progress only
 * that often; this is one bookmark period plus the 15 s margin the apiserver's own watch cache
 * allows (watch_cache.go eventFreshDuration, 75 s). A smaller bound would send a quiet type's
 * reads to the apiserver between bookmarks. A watch that breaks is noticed at once, whatever the
 * bound: the bound only covers a connection that goes silent without breaking.
 */
export const DEFAULT_MAX_STALENESS_MS = 75_000;

export interface ConsistencyPolicyOptions {
  readonly mode?: ReadConsistency;
  /** Types (`resource` or `resource.group`) whose RV-unset reads are strong whatever `mode` says. */
  readonly strongTypes?: Iterable<string>;
  readonly maxStalenessMs?: number;
}

export function newConsistencyPolicy(options: ConsistencyPolicyOptions = {}): ConsistencyPolicy {
  const mode = options.mode ?? 'bounded';
  const strong = new Set(options.strongTypes ?? []);
  return {
    modeOf(group, resource) {
      return strong.has(qualifiedResource(group, resource)) ? 'strong' : mode;
    },
    maxStalenessMs: options.maxStalenessMs ?? DEFAULT_MAX_STALENESS_MS,
  };
}

/** What a write through the proxy touched: one object, or all of a namespace's (name ''), or the type's (both ''). */
export interface WriteTarget {
  readonly group: string;
  readonly resource: string;
  /** '' for a cluster-scoped type, or a write across namespaces. */
  readonly namespace: string;
  /** '' for a collection (create, deletecollection). */
  readonly name: string;
}

/** What a read covers: a GET of one object (name set) or a LIST or WATCH of a namespace's or all ('' each). */
export type ReadTarget = WriteTarget;

/**
 * A part of a type that reads must see at least at `need`: learnt from a probe sent after the
 * write that made it doubtful; undefined until such a probe answered.
 */
interface Doubt {
  readonly namespace: string;
  readonly name: string;
  /** The tracker's sequence when the doubt arose: a probe requested after it can settle it. */
  readonly seq: number;
  need: bigint | undefined;
}

interface TypeWrites {
  /** The newest RV a write of this type through the proxy was answered with. */
  written: bigint;
  doubts: Doubt[];
}

/** What a read must wait for before the cache may answer it. */
export interface ReadRequirement {
  /** The cache must reach this RV (the proxy's own writes); the events are a watch delivery away. */
  readonly written: bigint;
  /** The cache must reach this RV (learnt from a probe); 0n when nothing is doubted. */
  readonly caughtUp: bigint;
  /** A doubt covers the read but no probe has named its RV yet: probe first. */
  readonly probe: boolean;
}

export interface ReadYourWrites {
  /** A write of the type answered with an object at `rv`. */
  written(group: string, resource: string, rv: bigint): void;
  /**
   * A write whose answer names no RV (a delete answered with a Status, a collection delete), or
   * that shows the cache behind (a conflict): reads of the target wait for a probe.
   */
  doubt(target: WriteTarget): void;
  /** What a read of `target` must see. */
  requirement(target: ReadTarget): ReadRequirement;
  /** The current sequence: pass it to settle() with the RV of a probe requested after this call. */
  sequence(): number;
  /** A probe requested at `seq` answered `rv`: the doubts that arose before it need `rv`. */
  settle(group: string, resource: string, seq: number, rv: bigint): void;
  /** The cache of the type is at `rv`: the doubts it has reached are forgotten. */
  reached(group: string, resource: string, rv: bigint): void;
}

/** Types tracked at once: writes come from request paths, so an invented type must not grow memory. */
const MAX_TYPES = 1024;
/** Doubts kept per type; past this the whole type is doubted (one probe settles it). */
const MAX_DOUBTS = 256;

const NOTHING: ReadRequirement = { written: 0n, caughtUp: 0n, probe: false };

export function newReadYourWrites(): ReadYourWrites {
  const types = new LRUCache<string, TypeWrites>({ max: MAX_TYPES });
  let seq = 0;
  const entry = (group: string, resource: string): TypeWrites => {
    const key = `${group}/${resource}`;
    let writes = types.get(key);
    if (writes === undefined) {
      writes = { written: 0n, doubts: [] };
      types.set(key, writes);
    }
    return writes;
  };
  return {
    written(group, resource, rv) {
      const writes = entry(group, resource);
      if (rv > writes.written) writes.written = rv;
    },
    doubt(target) {
      const writes = entry(target.group, target.resource);
      seq++;
      if (writes.doubts.length >= MAX_DOUBTS) writes.doubts = [{ namespace: '', name: '', seq, need: undefined }];
      else writes.doubts.push({ namespace: target.namespace, name: target.name, seq, need: undefined });
    },
    requirement(target) {
      const writes = types.get(`${target.group}/${target.resource}`);
      if (writes === undefined) return NOTHING;
      let caughtUp = 0n;
      let probe = false;
      for (const doubt of writes.doubts) {
        if (!covers(target, doubt)) continue;
        if (doubt.need === undefined) probe = true;
        else if (doubt.need > caughtUp) caughtUp = doubt.need;
      }
      return { written: writes.written, caughtUp, probe };
    },
    sequence() {
      return seq;
    },
    settle(group, resource, at, rv) {
      const writes = types.get(`${group}/${resource}`);
      if (writes === undefined) return;
      for (const doubt of writes.doubts) if (doubt.need === undefined && doubt.seq <= at) doubt.need = rv;
    },
    reached(group, resource, rv) {
      const writes = types.get(`${group}/${resource}`);
      if (writes === undefined || writes.doubts.length === 0) return;
      writes.doubts = writes.doubts.filter((d) => d.need === undefined || d.need > rv);
    },
  };
}

/** Whether a read of `target` reads what `doubt` covers. */
function covers(target: ReadTarget, doubt: Doubt): boolean {
  if (doubt.namespace !== '' && target.namespace !== '' && doubt.namespace !== target.namespace) return false;
  return doubt.name === '' || target.name === '' || doubt.name === target.name;
}
