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
