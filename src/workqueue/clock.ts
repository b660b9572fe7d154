/**
 * Time, injected (k8s.io/utils/clock): every timing rule of the workqueue, the reflector and the
 * leader elector reads the clock through this interface, so that tests drive a fake clock
 * (test/helpers/fake-clock.ts) instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds (at once for ms <= 0, on a later turn). */
  setTimeout(fn: () => void, ms: number): Timer;
}

export interface Timer {
  /** Cancels the timer; a no-op once it has fired. */
  cancel(): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const handle = setTimeout(fn, Math.max(0, ms));
    return {
      cancel: () => {
        clearTimeout(handle);
      },
    };
  },
};

/** Resolves after `ms` on `clock`, or at once when `signal` aborts (never rejects). */
export function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      timer.cancel();
      resolve();
    };
    const timer = clock.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
