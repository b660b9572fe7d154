/**
 * The event window of one watch cache (kube-apiserver's cacher/watch_cache_history.go): a ring
 * buffer of the most recent changes, in RV order, so that a watch from a recent RV replays
 * exactly the events after it. Its capacity follows the event rate as the apiserver's does:
 * doubled (up to UPPER_BOUND_CAPACITY) when full while its oldest event is still fresh, halved
 * (down to LOWER_BOUND_CAPACITY) when full and even the newest quarter is stale.
 *
 * Invariant: the events in [#start, #end) are stored at index % #capacity, in strictly
 * increasing RV order; #end - #start <= #capacity.
 */
import type { Clock } from '../clock/clock.ts';
import { realClock } from '../clock/clock.ts';
import type { WindowEvent } from './window-event.ts';

/** defaultLowerBoundCapacity (watch_cache_history.go). */
export const LOWER_BOUND_CAPACITY = 100;
/** defaultUpperBoundCapacity (watch_cache_history.go). */
export const UPPER_BOUND_CAPACITY = 100 * 1024;
/**
 * DefaultEventFreshDuration (cacher.go): a minute of bookmark frequency plus 15 s, so that a
 * watcher that got its last bookmark a minute ago can still resume from the window.
 */
export const EVENT_FRESH_MS = 75_000;

/** A replay: the events after the requested RV, or the apiserver's reason to refuse it. */
export type Interval =
  | { readonly kind: 'events'; readonly events: readonly WindowEvent[] }
  | { readonly kind: 'too-old'; readonly requested: bigint; readonly oldest: bigint };

export interface EventWindow {
  append(event: WindowEvent): void;
  /** A relist replaced the state at `listResourceVersion`: the history before it is no history of it. */
  reset(listResourceVersion: bigint): void;
  /** The events with an RV greater than `resourceVersion` (GetIntervalLocked). */
  since(resourceVersion: bigint): Interval;
  capacity(): number;
  size(): number;
  /** The RV of the oldest event held, or undefined when empty. */
  oldestResourceVersion(): bigint | undefined;
  /** What the window holds, oldest first, to be saved (cache-state.ts) and restored after a restart. */
  contents(): WindowContents;
  /**
   * Holds `contents` (a saved window) in place of what it held, as of now: the restored events
   * count as recorded now for resizing, as their age is unknown.
   */
  restore(contents: WindowContents): void;
}

/** A window's events and where its history begins (since() answers from them alone). */
export interface WindowContents {
  /** The RV of the last relist; the window's history reaches back to it while `complete`. */
  readonly listResourceVersion: bigint;
  /** No event has fallen out since that relist: a watch from the list's RV replays exactly the events held. */
  readonly complete: boolean;
  /** In strictly increasing RV order. */
  readonly events: readonly WindowEvent[];
}

interface Slot {
  readonly event: WindowEvent;
  readonly recordedAt: number;
}

export function newEventWindow(clock: Clock = realClock): EventWindow {
  let capacity = LOWER_BOUND_CAPACITY;
  let slots: (Slot | undefined)[] = new Array<Slot | undefined>(capacity);
  let start = 0;
  let end = 0;
  let listResourceVersion = 0n;
  /** An event fell out since the last relist: the oldest deliverable is the first one held. */
  let removedSinceRelist = false;

  const at = (i: number): Slot | undefined => slots[i % capacity];
  const full = (): boolean => end === start + capacity;
  const resize = (to: number): void => {
    const next = new Array<Slot | undefined>(to);
    if (to < capacity) start = end - to;
    for (let i = start; i < end; i++) next[i % to] = at(i);
    slots = next;
    capacity = to;
  };
  /** resizeCacheLocked: grow while events stay fresh, shrink when a quarter of the window is stale. */
  const resizeFor = (now: number): void => {
    if (!full()) return;
    const oldest = at(start);
    if (oldest !== undefined && now - oldest.recordedAt < EVENT_FRESH_MS) {
      const to = Math.min(capacity * 2, UPPER_BOUND_CAPACITY);
      if (to > capacity) resize(to);
      return;
    }
    const quarterBack = at(end - Math.floor(capacity / 4));
    if (quarterBack !== undefined && now - quarterBack.recordedAt > EVENT_FRESH_MS) {
      const to = Math.max(Math.floor(capacity / 2), LOWER_BOUND_CAPACITY);
      if (to < capacity) resize(to);
    }
  };

  return {
    append(event) {
      const now = clock.now();
      resizeFor(now);
      if (full()) {
        slots[start % capacity] = undefined;
        start++;
        removedSinceRelist = true;
      }
      slots[end % capacity] = { event, recordedAt: now };
      end++;
    },
    reset(rv) {
      slots = new Array<Slot | undefined>(capacity);
      start = end;
      listResourceVersion = rv;
      removedSinceRelist = false;
    },
    since(resourceVersion) {
      const size = end - start;
      let oldest: bigint;
      if (listResourceVersion > 0n && !removedSinceRelist) oldest = listResourceVersion + 1n;
      else oldest = at(start)?.event.resourceVersion ?? listResourceVersion + 1n;
      if (resourceVersion < oldest - 1n) return { kind: 'too-old', requested: resourceVersion, oldest: oldest - 1n };
      // The first index whose event is newer than the requested RV (binary search, RVs increase).
      let lo = 0;
      let hi = size;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((at(start + mid)?.event.resourceVersion ?? 0n) > resourceVersion) hi = mid;
        else lo = mid + 1;
      }
      const events: WindowEvent[] = [];
      for (let i = start + lo; i < end; i++) {
        const slot = at(i);
        if (slot !== undefined) events.push(slot.event);
      }
      return { kind: 'events', events };
    },
    capacity: () => capacity,
    size: () => end - start,
    contents() {
      const events: WindowEvent[] = [];
      for (let i = start; i < end; i++) {
        const slot = at(i);
        if (slot !== undefined) events.push(slot.event);
      }
      return { listResourceVersion, complete: !removedSinceRelist, events };
    },
    restore(contents) {
      const now = clock.now();
      let to = LOWER_BOUND_CAPACITY;
      while (to < contents.events.length && to < UPPER_BOUND_CAPACITY) to *= 2;
      const kept = contents.events.slice(Math.max(0, contents.events.length - to));
      capacity = to;
      slots = new Array<Slot | undefined>(capacity);
      start = 0;
      end = kept.length;
      kept.forEach((event, i) => {
        slots[i] = { event, recordedAt: now };
      });
      listResourceVersion = contents.listResourceVersion;
      removedSinceRelist = !contents.complete || kept.length < contents.events.length;
    },
    oldestResourceVersion: () => (end > start ? at(start)?.event.resourceVersion : undefined),
  };
}
