/**
 * Whether the apiserver answers again, for the informers' reflectors backing off after
 * connection errors: their exponential backoff (up to 30 s) would otherwise keep every cache
 * silent for that long after the apiserver is back. While anyone waits, one probe (`GET /readyz`,
 * readable by every identity: system:public-info-viewer) is sent every PROBE_INTERVAL_MS,
 * whatever the number of waiters; the first 200 wakes them all.
 */
import type { Clock } from '../clock/clock.ts';
import { realClock, sleep } from '../clock/clock.ts';
import type { UpstreamClient } from './client.ts';

/** One request a second while the apiserver is away: negligible, and recovery within about a second. */
export const PROBE_INTERVAL_MS = 1_000;

export interface UpstreamHealth {
  /** Resolves once the apiserver's /readyz answers 200 (after at most one interval); never rejects. Abort to stop waiting. */
  whenReachable(signal: AbortSignal): Promise<void>;
}

export function newUpstreamHealth(client: UpstreamClient, clock: Clock = realClock): UpstreamHealth {
  let waiters = 0;
  let round: Promise<void> | undefined;
  /** Never aborted: a probe round ends when no one waits (checked after each interval). */
  const stop = new AbortController();

  /** Probes until /readyz answers 200 or no one waits any more. */
  const probeUntilReachable = async (): Promise<void> => {
    for (;;) {
      if (waiters === 0) return;
      try {
        const res = await client.request({ method: 'GET', path: '/readyz', headers: { accept: 'text/plain' } });
        if (res.statusCode === 200) return;
      } catch {
        // still unreachable
      }
      await sleep(clock, PROBE_INTERVAL_MS, stop.signal);
    }
  };

  return {
    whenReachable(signal) {
      if (signal.aborted) return Promise.resolve();
      waiters++;
      round ??= probeUntilReachable().finally(() => {
        round = undefined;
      });
      const current = round;
      return new Promise<void>((resolve) => {
        let waiting = true;
        const done = (): void => {
          if (!waiting) return;
          waiting = false;
          signal.removeEventListener('abort', done);
          waiters--;
          resolve();
        };
        signal.addEventListener('abort', done, { once: true });
        void current.then(done);
      });
    },
  };
}
