/**
 * One budget of unsent watch bytes for the whole proxy. Each watcher is capped on its own
 * (MAX_PENDING_BYTES in cache-watcher.ts), but a cap per watcher is no bound on the proxy: 200
 * clients that stop reading may each hold up to that cap. The budget bounds their sum: when it
 * is passed, the watchers holding the most are closed until the sum fits again (their clients
 * re-watch from their last RV and replay from the window, as after any closed watch).
 *
 * Watchers report what they hold when it changes in ways they see (a batch of events written, a
 * drain, a close); between reports a connection may have sent more than the budget knows, so
 * before closing anyone the budget asks every holder for its current figure.
 *
 * Invariant: #total is the sum of the figures in #held; a holder with nothing unsent is not held.
 */

export interface UnsentHolder {
  /** Bytes written and not yet taken by the connection, now. */
  unsentBytes(): number;
  /** Ends the watch for slowness (it then releases its share). */
  closeForSlowness(): void;
}

export interface UnsentBudget {
  readonly maxBytes: number;
  /** `holder` holds `bytes` unsent; when the total passes the budget, the largest holders are closed. */
  report(holder: UnsentHolder, bytes: number): void;
  /** `holder` holds nothing any more (drained, or closed). */
  release(holder: UnsentHolder): void;
  /** The sum of the last reported figures. */
  total(): number;
}

/** 8 watchers at their own cap: a few seconds of a busy type for a handful of slow clients. */
export const DEFAULT_MAX_UNSENT_BYTES = 128 * 1024 * 1024;

export function newUnsentBudget(maxBytes: number = DEFAULT_MAX_UNSENT_BYTES): UnsentBudget {
  const held = new Map<UnsentHolder, number>();
  let total = 0;

  const set = (holder: UnsentHolder, bytes: number): void => {
    total += bytes - (held.get(holder) ?? 0);
    if (bytes > 0) held.set(holder, bytes);
    else held.delete(holder);
  };

  /** Re-measures every holder, then closes the largest until the total fits. */
  const enforce = (): void => {
    for (const holder of [...held.keys()]) set(holder, holder.unsentBytes());
    while (total > maxBytes) {
      let largest: UnsentHolder | undefined;
      let largestBytes = 0;
      for (const [holder, bytes] of held) {
        if (bytes > largestBytes) {
          largest = holder;
          largestBytes = bytes;
        }
      }
      if (largest === undefined) return;
      // Released here as well as by the holder's close, so the loop ends whatever the holder does.
      set(largest, 0);
      largest.closeForSlowness();
    }
  };

  return {
    maxBytes,
    report(holder, bytes) {
      set(holder, bytes);
      if (total > maxBytes) enforce();
    },
    release(holder) {
      set(holder, 0);
    },
    total: () => total,
  };
}
