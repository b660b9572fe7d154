/**
 * A clock that moves only when a test says so (k8s.io/utils/clock/testing FakeClock).
 * Timers fire synchronously inside step()/setTime(), in due-time order, each seeing now() equal
 * to its own due time.
 */
import type { Clock, Timer } from '../../src/clock/clock.ts';

interface Waiter {
  readonly due: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #waiters: Waiter[] = [];

  constructor(start = 1_700_000_000_000) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  /** The same reading: a fake clock's wall and monotonic time never part. */
  wallNow(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const waiter: Waiter = { due: this.#now + Math.max(0, ms), seq: this.#seq++, fn, cancelled: false };
    this.#waiters.push(waiter);
    return {
      cancel: () => {
        waiter.cancelled = true;
      },
    };
  }

  /** Advances time by `ms`, firing every timer that falls due on the way. */
  step(ms: number): void {
    this.setTime(this.#now + ms);
  }

  setTime(time: number): void {
    for (;;) {
      this.#waiters = this.#waiters.filter((w) => !w.cancelled);
      const next = this.#waiters.filter((w) => w.due <= time).sort((a, b) => a.due - b.due || a.seq - b.seq)[0];
      if (next === undefined) break;
      this.#waiters.splice(this.#waiters.indexOf(next), 1);
      this.#now = Math.max(this.#now, next.due);
      next.fn();
    }
    this.#now = Math.max(this.#now, time);
  }

  /** Timers not yet fired nor cancelled. */
  waiters(): number {
    return this.#waiters.filter((w) => !w.cancelled).length;
  }
}
