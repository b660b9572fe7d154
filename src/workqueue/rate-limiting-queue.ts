/**
 * A DelayingQueue whose requeues wait as long as a RateLimiter says (client-go util/workqueue/
 * rate_limiting_queue.go). It wraps a DelayingQueue and adds only the limiter's bookkeeping.
 *
 * Remember to call forget(item) when an item succeeds or is given up on: the per-item limiters
 * otherwise keep counting its failures forever.
 */
import type { Clock } from '../clock/clock.ts';
import { newDelayingQueue } from './delaying-queue.ts';
import type { DelayingQueue } from './delaying-queue.ts';
import type { RateLimiter } from './default-rate-limiters.ts';
import type { MetricsProvider } from './metrics.ts';
import type { GetResult } from './queue.ts';

/** rate_limiting_queue.go TypedRateLimitingInterface. */
export interface RateLimitingQueue<T> extends DelayingQueue<T> {
  /** Adds `item` after the delay the rate limiter gives it (addAfter(item, limiter.when(item))). */
  addRateLimited(item: T): void;
  /**
   * Stops the rate limiter tracking `item`, after success or a permanent failure. "This only
   * clears the rateLimiter, you still have to call Done on the queue."
   */
  forget(item: T): void;
  /** How many times `item` was requeued through addRateLimited since it was last forgotten. */
  numRequeues(item: T): number;
}

/** Options of newRateLimitingQueue. */
export interface RateLimitingQueueOptions<T> {
  /** The name of the queue and of its metrics. */
  readonly name?: string;
  /** Makes the metrics; without one (or without a name) the queue keeps none. */
  readonly metricsProvider?: MetricsProvider;
  /** Time for the delaying queue; tests pass a fake clock (give the limiter the same). Default: realClock. */
  readonly clock?: Clock;
  /** The delaying queue to wrap. Default: newDelayingQueue with the same name, provider and clock. */
  readonly delayingQueue?: DelayingQueue<T>;
}

/** rate_limiting_queue.go NewTypedRateLimitingQueueWithConfig. */
export function newRateLimitingQueue<T>(rateLimiter: RateLimiter<T>, options: RateLimitingQueueOptions<T> = {}): RateLimitingQueue<T> {
  const delayingQueue =
    options.delayingQueue ?? newDelayingQueue<T>({ name: options.name, metricsProvider: options.metricsProvider, clock: options.clock });
  return new RateLimitingType(delayingQueue, rateLimiter);
}

class RateLimitingType<T> implements RateLimitingQueue<T> {
  readonly #queue: DelayingQueue<T>;
  readonly #rateLimiter: RateLimiter<T>;

  constructor(queue: DelayingQueue<T>, rateLimiter: RateLimiter<T>) {
    this.#queue = queue;
    this.#rateLimiter = rateLimiter;
  }

  add(item: T): void {
    this.#queue.add(item);
  }

  len(): number {
    return this.#queue.len();
  }

  get(): Promise<GetResult<T>> {
    return this.#queue.get();
  }

  done(item: T): void {
    this.#queue.done(item);
  }

  shutDown(): void {
    this.#queue.shutDown();
  }

  shutDownWithDrain(): Promise<void> {
    return this.#queue.shutDownWithDrain();
  }

  shuttingDown(): boolean {
    return this.#queue.shuttingDown();
  }

  addAfter(item: T, ms: number): void {
    this.#queue.addAfter(item, ms);
  }

  addRateLimited(item: T): void {
    this.#queue.addAfter(item, this.#rateLimiter.when(item));
  }

  forget(item: T): void {
    this.#rateLimiter.forget(item);
  }

  numRequeues(item: T): number {
    return this.#rateLimiter.numRequeues(item);
  }
}
