/**
 * Writes at a steady rate: `write(j)` for j = 0, 1, 2... each at its slot (started + j / rate, on
 * the monotonic clock, never early), with at most `maxInFlight` unanswered: a slow apiserver makes
 * the writer fall behind rather than pile up requests. `write` returns undefined for a slot it
 * skips. A write that rejects makes stop() reject with its error (the loop may have ended at it
 * already, when it waited for room); a writer that counts failures catches its own.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface PacedWrites {
  /** Makes no more writes; resolves once every write made has answered. */
  stop(): Promise<void>;
}

export function startPacedWrites(rate: number, maxInFlight: number, write: (j: number) => Promise<void> | undefined): PacedWrites {
  const state = { stopped: false };
  const loop: Promise<void> = (async () => {
    const inFlight = new Set<Promise<void>>();
    const started = performance.now();
    const interval = 1000 / rate;
    for (let j = 0; !state.stopped; j++) {
      const wait = started + j * interval - performance.now();
      if (wait > 1) await sleep(wait);
      while (inFlight.size >= maxInFlight) await Promise.race(inFlight);
      const made = write(j);
      if (made === undefined) continue;
      const tracked = made.finally(() => inFlight.delete(tracked));
      // Handled here so that a failure waits for stop(), which reports it; the loop still sees it.
      tracked.catch(() => undefined);
      inFlight.add(tracked);
    }
    await Promise.all(inFlight);
  })();
  loop.catch(() => undefined);
  return {
    async stop() {
      state.stopped = true;
      await loop;
    },
  };
}
