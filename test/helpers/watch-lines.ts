/** Watch streams read as the apiserver frames them in JSON: one event object per line. */

/** Reads events from `body` until `count` have arrived (or the stream ends). */
export async function readWatchEvents<T = { type: string; object: unknown }>(
  body: AsyncIterable<Buffer>,
  count: number,
  /** Which events are read and counted; the others are skipped (default: every event). */
  kept: (event: T, kept: readonly T[]) => boolean = () => true,
): Promise<T[]> {
  const events: T[] = [];
  let pending = '';
  for await (const chunk of body) {
    pending += chunk.toString();
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const event = JSON.parse(pending.slice(0, nl)) as T;
      pending = pending.slice(nl + 1);
      if (kept(event, events)) events.push(event);
      if (events.length === count) return events;
    }
  }
  return events;
}

/**
 * For readWatchEvents: every event but a periodic BOOKMARK. The initial-events-end bookmark of a
 * WatchList is kept (it is part of the answer); any other comes when the apiserver's timers say
 * (its cacher may send one as soon as its RV moves), so a comparison of two streams skips them.
 */
export function notPeriodicBookmark(event: { type: string; object: unknown }): boolean {
  if (event.type !== 'BOOKMARK') return true;
  const annotations = (event.object as { metadata?: { annotations?: Record<string, string> } }).metadata?.annotations;
  return annotations?.['k8s.io/initial-events-end'] === 'true';
}
