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
 *   proxy (strong-reads.ts): an RV-unset GET passes straight through (the apiserver itself reads
 *   etcd for it, storage/cacher/delegator.go); an RV-unset LIST probes the apiserver's RV and is
 *   served once the cache has reached it, a quiet type's cache after a freshness proof.
 *
 * What the proxy's own writes oblige the reads after them to see: read-your-writes.ts.
 */
import { qualifiedResource } from '../kube/group-resource.ts';
import type { WatchCache } from './watch-cache.ts';

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

/**
 * A type whose last change is older than this is quiet: its cache trails the cluster's RV (which
 * every write of any type moves) until its next bookmark or freshness proof. Under a steady
 * stream of changes (the bench's 200 writes/s) every probe is overtaken within milliseconds by
 * the type's own next event.
 */
export const IN_FLIGHT_MS = 1_000;

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

/**
 * How old the cache's proof of freshness is at `now` (on the cache's clock): the time since it
 * last proved progress. What a proxy tells the proxy in front of it with each answer served from
 * the cache (protocol/proof-age.ts), so that the one in front counts that state as proven no
 * later than it was here, and a chain keeps one bound. Never negative.
 */
export function proofAgeMs(cache: Pick<WatchCache, 'lastProgressAt'>, now: number): number {
  return Math.max(0, now - cache.lastProgressAt());
}
