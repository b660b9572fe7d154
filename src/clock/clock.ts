/**
 * Time, injected (k8s.io/utils/clock): every timing rule of every layer (the workqueue, the
 * reflector, the watch cache, the leader elector) reads the clock through this interface, so that
 * tests drive a fake clock (test/helpers/fake-clock.ts) instead of sleeping. A leaf module: it
 * imports nothing of the project.
 *
 * Two readings, as Go's time.Time carries both: `now()` is monotonic and is what durations,
 * deadlines and expiries are measured on (a lease must not expire, nor a watch time out, because
 * NTP stepped the wall clock); `wallNow()` is the wall clock, only for times written into
 * objects that other processes read (a Lease's acquireTime and renewTime).
 */
export interface Clock {
  /** Monotonic milliseconds from an arbitrary origin: for durations and deadlines only. */
  now(): number;
  /** Milliseconds since the epoch, from the wall clock: for timestamps written into objects. */
  wallNow(): number;
  /** Calls `fn` once after `ms` milliseconds (at once for ms <= 0, on a later turn). */
  setTimeout(fn: () => void, ms: number): Timer;
}

/** A pending setTimeout of a Clock. */
export interface Timer {
  /** Cancels the timer; a no-op once it has fired. */
  cancel(): void;
  /**
   * Lets the process exit while only this timer is pending (Node's timeout.unref()), for
   * housekeeping that must not keep a process alive on its own. Optional: fake clocks have no process.
   */
  unref?(): void;
}

/**
 * Node's longest timer: a longer delay fires after 1 ms instead (a watch with timeoutSeconds of
 * 2,147,484 or more would end at once). Longer delays are waited out in legs of at most this.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The process's clock: performance.now() for durations, Date.now() for timestamps, Node's timers. */
export const realClock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimeout(fn, ms) {
    const due = performance.now() + Math.max(0, ms);
    let handle: NodeJS.Timeout;
    let unref = false;
    const arm = (): void => {
      const left = due - performance.now();
      if (left > MAX_TIMER_MS) handle = setTimeout(arm, MAX_TIMER_MS);
      else handle = setTimeout(fn, Math.max(0, left));
      if (unref) handle.unref();
    };
    arm();
    return {
      cancel: () => {
        clearTimeout(handle);
      },
      unref: () => {
        unref = true;
        handle.unref();
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

/**
 * Resolves true once `promise` settles, or false when `ms` pass on `clock` or `signal` aborts
 * first (never rejects): a bounded wait for something shared that goes on either way.
 */
export function within(clock: Clock, promise: Promise<unknown>, ms: number, signal?: AbortSignal): Promise<boolean> {
  if (ms <= 0 || signal?.aborted === true) return Promise.resolve(false);
  return new Promise((resolve) => {
    const finish = (settled: boolean): void => {
      timer.cancel();
      signal?.removeEventListener('abort', onAbort);
      resolve(settled);
    };
    const onAbort = (): void => {
      finish(false);
    };
    const timer = clock.setTimeout(() => {
      finish(false);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
    promise.then(
      () => {
        finish(true);
      },
      () => {
        finish(true);
      },
    );
  });
}
