/**
 * Rate limiters for requeues (client-go util/workqueue/default_rate_limiters.go): each says how long
 * an item should wait before it is added again. Delays are in milliseconds.
 *
 * The per-item limiters remember every item they were asked about until `forget(item)`: call it
 * when an item succeeds or is given up on, or they track failures forever.
 */
import { realClock } from '../clock/clock.ts';
import type { Clock } from '../clock/clock.ts';

/** default_rate_limiters.go TypedRateLimiter. */
export interface RateLimiter<T> {
  /** How long `item` should wait (ms) before it is added again; counts as one more requeue. */
  when(item: T): number;
  /** Stops tracking `item`, whether it finally succeeded or was given up on. */
  forget(item: T): void;
  /** How many times `item` has been requeued since it was last forgotten. */
  numRequeues(item: T): number;
}

/** DefaultTypedControllerRateLimiter: per-item exponential backoff, first delay (ms). */
const CONTROLLER_BASE_DELAY_MS = 5;
/** DefaultTypedControllerRateLimiter: per-item exponential backoff, largest delay (ms, 1000 s). */
const CONTROLLER_MAX_DELAY_MS = 1_000_000;
/** DefaultTypedControllerRateLimiter: "10 qps, 100 bucket size. This is only for retry speed and its only the overall factor (not per item)". */
const CONTROLLER_QPS = 10;
const CONTROLLER_BURST = 100;
/** DefaultTypedItemBasedRateLimiter: first delay (ms). */
const ITEM_BASED_BASE_DELAY_MS = 1;

/**
 * default_rate_limiters.go DefaultTypedControllerRateLimiter: the worse of a per-item exponential
 * backoff (5 ms doubling up to 1000 s) and an overall token bucket (10 qps, burst 100).
 */
export function defaultControllerRateLimiter<T>(clock: Clock = realClock): RateLimiter<T> {
  return newMaxOfRateLimiter<T>(
    newItemExponentialFailureRateLimiter<T>(CONTROLLER_BASE_DELAY_MS, CONTROLLER_MAX_DELAY_MS),
    newBucketRateLimiter<T>(CONTROLLER_QPS, CONTROLLER_BURST, clock),
  );
}

/** default_rate_limiters.go DefaultTypedItemBasedRateLimiter: 1 ms doubling up to 1000 s. */
export function defaultItemBasedRateLimiter<T>(): RateLimiter<T> {
  return newItemExponentialFailureRateLimiter<T>(ITEM_BASED_BASE_DELAY_MS, CONTROLLER_MAX_DELAY_MS);
}

/**
 * default_rate_limiters.go TypedItemExponentialFailureRateLimiter: the n-th requeue of an item
 * (from 0) waits baseDelayMs * 2^n, at most maxDelayMs. "dealing with max failures and expiration
 * are up to the caller".
 */
export function newItemExponentialFailureRateLimiter<T>(baseDelayMs: number, maxDelayMs: number): RateLimiter<T> {
  const failures = new Map<T, number>();
  return {
    when(item) {
      const exp = failures.get(item) ?? 0;
      failures.set(item, exp + 1);
      // Go caps the float product before converting it to an int64 Duration so that it "never
      // overflows"; here 2 ** exp is Infinity past exp 1023, and Infinity > maxDelayMs. A zero base
      // is checked first because 0 * Infinity is NaN.
      if (baseDelayMs <= 0) return Math.min(0, maxDelayMs);
      const backoff = baseDelayMs * 2 ** exp;
      return backoff > maxDelayMs ? maxDelayMs : backoff;
    },
    forget(item) {
      failures.delete(item);
    },
    numRequeues(item) {
      return failures.get(item) ?? 0;
    },
  };
}

/**
 * default_rate_limiters.go TypedItemFastSlowRateLimiter: the first maxFastAttempts requeues of an
 * item wait fastDelayMs, the later ones slowDelayMs.
 */
export function newItemFastSlowRateLimiter<T>(fastDelayMs: number, slowDelayMs: number, maxFastAttempts: number): RateLimiter<T> {
  const failures = new Map<T, number>();
  return {
    when(item) {
      const attempts = (failures.get(item) ?? 0) + 1;
      failures.set(item, attempts);
      return attempts <= maxFastAttempts ? fastDelayMs : slowDelayMs;
    },
    forget(item) {
      failures.delete(item);
    },
    numRequeues(item) {
      return failures.get(item) ?? 0;
    },
  };
}

/**
 * default_rate_limiters.go TypedMaxOfRateLimiter: asks every limiter (each counts the requeue) and
 * returns the longest delay. "When used with a token bucket limiter, the burst could be apparently
 * exceeded in cases where particular items were separately delayed a longer time."
 */
export function newMaxOfRateLimiter<T>(...limiters: readonly RateLimiter<T>[]): RateLimiter<T> {
  return {
    when(item) {
      let longest = 0;
      for (const limiter of limiters) {
        const delay = limiter.when(item);
        if (delay > longest) longest = delay;
      }
      return longest;
    },
    forget(item) {
      for (const limiter of limiters) limiter.forget(item);
    },
    numRequeues(item) {
      let most = 0;
      for (const limiter of limiters) {
        const n = limiter.numRequeues(item);
        if (n > most) most = n;
      }
      return most;
    },
  };
}

/** default_rate_limiters.go TypedWithMaxWaitRateLimiter: `limiter`, its delays capped at maxDelayMs. */
export function newWithMaxWaitRateLimiter<T>(limiter: RateLimiter<T>, maxDelayMs: number): RateLimiter<T> {
  return {
    when: (item) => Math.min(limiter.when(item), maxDelayMs),
    forget: (item) => {
      limiter.forget(item);
    },
    numRequeues: (item) => limiter.numRequeues(item),
  };
}

/**
 * default_rate_limiters.go TypedBucketRateLimiter: one token bucket for all items, as
 * golang.org/x/time/rate's `Limiter.Reserve().Delay()`. The bucket holds `burst` tokens and refills
 * at `qps` tokens a second; each when() takes a token, and when there is none it reserves a future
 * one (the count goes negative) and returns the wait until then. So from a full bucket, `burst`
 * calls wait 0, then call k past the burst waits k / qps seconds. It tracks no item: forget is a
 * no-op and numRequeues is 0.
 */
export function newBucketRateLimiter<T>(qps: number, burst: number, clock: Clock = realClock): RateLimiter<T> {
  /** Tokens at `last`; negative when future tokens are reserved. */
  let tokens = burst;
  /** When `tokens` was computed (ms); undefined before the first call. */
  let last: number | undefined;
  return {
    when() {
      // rate.Limiter: an infinite rate allows every event at once.
      if (qps === Infinity) return 0;
      const now = clock.now();
      // rate.go advance: refill for the time since the last call, at most to the burst.
      const since = last === undefined ? 0 : Math.max(0, now - last);
      const remaining = Math.min(burst, tokens + (since * qps) / 1000) - 1;
      // rate.go durationFromTokens: at a zero rate a missing token never comes (InfDuration).
      const wait = remaining >= 0 ? 0 : qps > 0 ? (-remaining * 1000) / qps : Infinity;
      // rate.go reserveN: a reservation of more tokens than the burst is refused (its Delay is
      // InfDuration) and not recorded.
      if (burst < 1) return Infinity;
      last = now;
      tokens = remaining;
      return wait;
    },
    forget() {
      // Tracks no item.
    },
    numRequeues() {
      return 0;
    },
  };
}
