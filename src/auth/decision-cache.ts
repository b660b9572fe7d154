/**
 * The reviews' answers kept for a while, as the apiserver keeps its webhooks' (apimachinery
 * pkg/util/cache/lruexpirecache.go, which the webhook authorizer's responseCache is, and the
 * token cache of apiserver pkg/authentication/token/cache): an LRU whose entries expire, bounded
 * here in bytes rather than in entries, because a key holds what a client sent (a review's spec
 * carries the URL's namespace, name and selectors: up to ~1 MiB each).
 *
 * Contracts:
 * - bytes() <= maxBytes: each entry counts its key, its value and a fixed overhead (entryBytes).
 * - An entry larger than maxEntryBytes is not kept. Its review is still answered, only asked again
 *   next time: correct whatever is kept, and only keys no well-behaved client sends are that large
 *   (names are at most 253 bytes, namespaces 63, label values 63), so the reviews it costs are
 *   the sender's own, spent from its per-identity share of reviews in flight.
 * - Expired entries are dropped within PURGE_INTERVAL_MS of their expiry, whether or not anyone
 *   asks: an idle proxy gives their memory back. A purge is scheduled only while something is
 *   kept, and its timer never keeps the process alive.
 */
import { LRUCache } from 'lru-cache';
import { realClock } from '../clock/clock.ts';
import type { Clock, Timer } from '../clock/clock.ts';

/**
 * What an entry costs beyond its key's and value's bytes: the LRU's map slot, list indexes, TTL
 * and size slots, the value's object and the strings' headers. Measured: a 76-character key with
 * a denial held 234 B of heap, a 366-character one 522 B (about the key + 160 B); rounded up.
 */
export const ENTRY_OVERHEAD_BYTES = 200;
/** The largest entry kept, unless a sixteenth of the cache is less: see the contract above. */
export const MAX_ENTRY_BYTES = 64 * 1024;
/**
 * How often expired entries are dropped while any are kept: the apiserver's shortest cache TTL
 * (denials, 30 s), so that an entry outlives its TTL by at most as much again.
 */
export const PURGE_INTERVAL_MS = 30_000;

/** Bytes V8 holds for a string's characters: one per Latin-1 character, two when any is not. */
export function stringBytes(s: string): number {
  return /[\u0100-\uffff]/.test(s) ? 2 * s.length : s.length;
}

/**
 * Bytes a value parsed from a review's JSON holds: its JSON's, twice (V8's objects, arrays and
 * string headers take about as much again as the text: a ServiceAccount's TokenReview user of
 * 588 JSON bytes held 1,114 B with its 44-byte key, measured).
 */
export function jsonValueBytes(value: unknown): number {
  return 2 * stringBytes(JSON.stringify(value));
}

export interface DecisionCache<V> {
  /** The value kept under `key`, unless it has expired. */
  get(key: string): V | undefined;
  /**
   * Keeps `value` under `key` for `ttlMs` (milliseconds on the cache's clock). False when it is not
   * kept: larger than maxEntryBytes, or a TTL of none (<= 0).
   */
  set(key: string, value: V, ttlMs: number): boolean;
  /** Bytes counted for what is kept (expired entries not yet purged included). */
  bytes(): number;
  /** Entries kept (expired entries not yet purged included). */
  size(): number;
  readonly maxBytes: number;
  readonly maxEntryBytes: number;
}

export interface DecisionCacheOptions<V> {
  readonly maxBytes: number;
  /** The bytes of a value (the key's are counted apart, with ENTRY_OVERHEAD_BYTES). */
  readonly valueBytes: (value: V) => number;
  /** clock allows tests to manipulate time (expiry and purges). */
  readonly clock?: Clock;
}

export function newDecisionCache<V extends object>(options: DecisionCacheOptions<V>): DecisionCache<V> {
  const clock = options.clock ?? realClock;
  const maxBytes = Math.max(1, Math.floor(options.maxBytes));
  const maxEntryBytes = Math.max(1, Math.min(MAX_ENTRY_BYTES, Math.floor(maxBytes / 16)));
  const newLru = (): LRUCache<string, V> =>
    new LRUCache<string, V>({
      // Bounded by bytes alone: `max` would allocate its index arrays for that many entries at once.
      maxSize: maxBytes,
      maxEntrySize: maxEntryBytes,
      perf: { now: () => clock.now() },
      // Read the clock at each check (the default caches it for 1 ms of real time, past a fake clock's steps).
      ttlResolution: 0,
    });
  let lru = newLru();
  let purgeTimer: Timer | undefined;

  const purge = (): void => {
    purgeTimer = undefined;
    lru.purgeStale();
    // The LRU's index arrays keep the length of its largest fill: an emptied cache starts anew.
    if (lru.size === 0) lru = newLru();
    else schedulePurge();
  };
  const schedulePurge = (): void => {
    if (purgeTimer !== undefined) return;
    purgeTimer = clock.setTimeout(purge, PURGE_INTERVAL_MS);
    purgeTimer.unref?.();
  };

  return {
    maxBytes,
    maxEntryBytes,
    get: (key) => lru.get(key),
    set(key, value, ttlMs) {
      const ttl = Math.floor(ttlMs);
      if (ttl <= 0) return false;
      const size = stringBytes(key) + options.valueBytes(value) + ENTRY_OVERHEAD_BYTES;
      if (size > maxEntryBytes) return false;
      lru.set(key, value, { ttl, size });
      schedulePurge();
      return true;
    },
    bytes: () => lru.calculatedSize,
    size: () => lru.size,
  };
}
