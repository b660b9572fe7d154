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
 * A connection shared by several watches (an HTTP/2 session's streams) is bounded as one: a
 * connection whose watchers together hold more than `maxPerConnection` has the largest of them
 * closed until it fits, as one HTTP/1.1 watch is closed at its own cap. Its other streams go on:
 * one slow stream ends alone, and a client that reads none of its streams loses them one by one,
 * never more than one watcher's cap held for it however many streams it opened.
 *
 * Invariant: #total is the sum of the figures in #held, and each connection's figure the sum of
 * its holders'; a holder with nothing unsent is not held.
 */

export interface UnsentHolder {
  /** Bytes written and not yet taken by the connection, now. */
  unsentBytes(): number;
  /** Ends the watch for slowness (it then releases its share). */
  closeForSlowness(): void;
  /** The connection the holder writes to, shared with other holders over HTTP/2; none: its own. */
  readonly connection?: object | undefined;
}

export interface UnsentBudget {
  readonly maxBytes: number;
  readonly maxPerConnection: number;
  /** `holder` holds `bytes` unsent; when the total passes the budget, the largest holders are closed. */
  report(holder: UnsentHolder, bytes: number): void;
  /** `holder` holds nothing any more (drained, or closed). */
  release(holder: UnsentHolder): void;
  /** The sum of the last reported figures. */
  total(): number;
}

/** 8 watchers at their own cap: a few seconds of a busy type for a handful of slow clients. */
export const DEFAULT_MAX_UNSENT_BYTES = 128 * 1024 * 1024;
/**
 * A connection of many streams holds at most a quarter of the budget: two watchers at their own
 * cap (cache-watcher.ts MAX_PENDING_BYTES, 16 MiB), or 32 watches starting at once, each at its
 * initial events' high water (1 MiB) — a controller manager syncing its informers over one h2
 * connection — while one client's streams never hold the whole budget from the others.
 */
export const DEFAULT_MAX_UNSENT_BYTES_PER_CONNECTION = 32 * 1024 * 1024;

/** The largest of `holders` by their figures in `held`, if any holds anything. */
function largestOf(holders: Iterable<UnsentHolder>, held: ReadonlyMap<UnsentHolder, number>): UnsentHolder | undefined {
  let largest: UnsentHolder | undefined;
  let largestBytes = 0;
  for (const holder of holders) {
    const bytes = held.get(holder) ?? 0;
    if (bytes > largestBytes) {
      largest = holder;
      largestBytes = bytes;
    }
  }
  return largest;
}

export function newUnsentBudget(
  maxBytes: number = DEFAULT_MAX_UNSENT_BYTES,
  maxPerConnection: number = DEFAULT_MAX_UNSENT_BYTES_PER_CONNECTION,
): UnsentBudget {
  const held = new Map<UnsentHolder, number>();
  /** Per shared connection: its holders with anything unsent, and their sum. */
  const connections = new Map<object, { holders: Set<UnsentHolder>; bytes: number }>();
  let total = 0;

  const set = (holder: UnsentHolder, bytes: number): void => {
    const delta = bytes - (held.get(holder) ?? 0);
    total += delta;
    if (bytes > 0) held.set(holder, bytes);
    else held.delete(holder);
    const key = holder.connection;
    if (key === undefined) return;
    let connection = connections.get(key);
    if (connection === undefined) {
      if (bytes === 0) return;
      connection = { holders: new Set(), bytes: 0 };
      connections.set(key, connection);
    }
    connection.bytes += delta;
    if (bytes > 0) connection.holders.add(holder);
    else connection.holders.delete(holder);
    if (connection.holders.size === 0) connections.delete(key);
  };

  /** Re-measures the holders of `key`'s connection, then closes its largest until the connection fits. */
  const enforceConnection = (key: object): void => {
    const connection = connections.get(key);
    if (connection === undefined) return;
    for (const holder of [...connection.holders]) set(holder, holder.unsentBytes());
    for (;;) {
      const now = connections.get(key);
      if (now === undefined || now.bytes <= maxPerConnection) return;
      const largest = largestOf(now.holders, held);
      if (largest === undefined) return;
      set(largest, 0);
      largest.closeForSlowness();
    }
  };

  /** Re-measures every holder, then closes the largest until the total fits. */
  const enforce = (): void => {
    for (const holder of [...held.keys()]) set(holder, holder.unsentBytes());
    while (total > maxBytes) {
      const largest = largestOf(held.keys(), held);
      if (largest === undefined) return;
      // Released here as well as by the holder's close, so the loop ends whatever the holder does.
      set(largest, 0);
      largest.closeForSlowness();
    }
  };

  return {
    maxBytes,
    maxPerConnection,
    report(holder, bytes) {
      set(holder, bytes);
      const key = holder.connection;
      if (key !== undefined && (connections.get(key)?.bytes ?? 0) > maxPerConnection) enforceConnection(key);
      if (total > maxBytes) enforce();
    },
    release(holder) {
      set(holder, 0);
    },
    total: () => total,
  };
}
