/**
 * The work queue (client-go util/workqueue/queue.go, promises from doc.go):
 *   - Fair: items are processed in the order in which they are added.
 *   - Stingy: an item is never handed to two workers at once, and an item added many times before
 *     it is processed is processed once.
 *   - Many producers and consumers; an item may be added again while it is being processed, and is
 *     then processed again after `done`.
 *   - Shutdown notifications.
 *
 * Items are compared by identity, as Map/Set keys (client-go requires `comparable` items): use
 * strings ("namespace/name", cache.MetaNamespaceKeyFunc's keys) or other primitives. Two objects
 * with the same content are two different items.
 *
 * Node has no locks: every method that reads and then writes the three sets is synchronous on
 * purpose (no await between the read and the write), which is what client-go's `cond.L.Lock()`
 * buys. `get()` takes its item synchronously, at the call when one is queued, or inside the `add`
 * or `done` that supplies it; only the delivery of the result is asynchronous.
 */
import { realClock } from '../clock/clock.ts';
import type { Clock, Timer } from '../clock/clock.ts';
import { newFifo } from './fifo.ts';
import { newQueueMetrics } from './metrics.ts';
import type { MetricsProvider, QueueMetrics } from './metrics.ts';

/** What `get()` resolves to: an item to process, or the news that the queue is shut down. */
export type GetResult<T> =
  | {
      /** An item to process. */
      readonly shutdown: false;
      /** Being processed until `done(item)`. */
      readonly item: T;
    }
  | {
      /** The queue is shut down and empty: the worker stops. */
      readonly shutdown: true;
      /** No item. */
      readonly item?: undefined;
    };

/** queue.go TypedInterface. */
export interface Queue<T> {
  /**
   * Marks `item` as needing processing. A no-op if it already does (it is dirty); if it is being
   * processed, it is queued again when the worker calls `done`. Ignored once the queue is shutting
   * down.
   */
  add(item: T): void;
  /**
   * How many items wait in the queue (not those being processed), for informational purposes only:
   * don't gate a call to add() or get() on it (queue.go).
   */
  len(): number;
  /**
   * Resolves with the next item, which is then being processed until `done(item)`, or with
   * `shutdown: true` once the queue is shutting down and empty: the worker should then stop. Getters
   * are served in the order they called.
   */
  get(): Promise<GetResult<T>>;
  /**
   * Marks `item` as processed; if it was added again while being processed, it is queued again.
   * Every item from get() must be given back here, or shutDownWithDrain never resolves.
   */
  done(item: T): void;
  /**
   * Ignores later adds and releases waiting getters with `shutdown: true`; items already queued are
   * still handed out, then get() reports the shutdown. Also releases a pending shutDownWithDrain.
   */
  shutDown(): void;
  /**
   * Like shutDown, and resolves once no item is being processed, that is after the last `done`
   * (queue.go waits on `processing.Len() != 0`; items still queued are not waited for).
   */
  shutDownWithDrain(): Promise<void>;
  /** True once shutDown or shutDownWithDrain was called. */
  shuttingDown(): boolean;
}

/** Options of newQueue. */
export interface QueueOptions {
  /** The queue's name, the `name` label of its metrics; without a name no metrics are kept. */
  readonly name?: string;
  /** Makes the metrics; without one the queue keeps no metrics and starts no timer. */
  readonly metricsProvider?: MetricsProvider;
  /** Time for metrics; tests pass a fake clock. Default: realClock. */
  readonly clock?: Clock;
}

/** queue.go defaultUnfinishedWorkUpdatePeriod (ms): how often the unfinished-work gauges are set. */
const UNFINISHED_WORK_UPDATE_PERIOD_MS = 500;

/** One shared result for every getter told about the shutdown. */
const SHUT_DOWN: GetResult<never> = Object.freeze({ shutdown: true });

/** queue.go NewTypedWithConfig. */
export function newQueue<T>(options: QueueOptions = {}): Queue<T> {
  const clock = options.clock ?? realClock;
  return new WorkQueue<T>(clock, newQueueMetrics<T>(options.metricsProvider, options.name ?? '', clock));
}

class WorkQueue<T> implements Queue<T> {
  /**
   * The order in which items are handed out. Invariant: every item in #queue is in #dirty and not
   * in #processing, and appears once.
   */
  readonly #queue = newFifo<T>();
  /** Every item that needs processing: those in #queue, and those re-added while processing. */
  readonly #dirty = new Set<T>();
  /**
   * The items handed out and not yet done. They may be in #dirty at the same time; `done` then
   * puts them back in #queue.
   */
  readonly #processing = new Set<T>();
  /** Pending get() calls, oldest first. Invariant: non-empty only while #queue is empty. */
  readonly #getters = newFifo<(result: GetResult<T>) => void>();
  /** Pending shutDownWithDrain() calls, resolved when #processing becomes empty. */
  #drainers: (() => void)[] = [];
  #shuttingDown = false;
  readonly #clock: Clock;
  readonly #metrics: QueueMetrics<T>;
  #unfinishedWorkTimer: Timer | undefined;

  constructor(clock: Clock, metrics: QueueMetrics<T>) {
    this.#clock = clock;
    this.#metrics = metrics;
    // queue.go: the update loop is not started for noMetrics, "so we don't consume resources
    // unnecessarily".
    if (metrics.enabled) this.#scheduleUnfinishedWorkUpdate();
  }

  add(item: T): void {
    if (this.#shuttingDown) return;
    if (this.#dirty.has(item)) return;
    this.#metrics.add(item);
    this.#dirty.add(item);
    // Being processed: `done` queues it again; queueing it now could hand it to a second worker.
    if (this.#processing.has(item)) return;
    this.#queue.push(item);
    this.#serveGetter();
  }

  len(): number {
    return this.#queue.length;
  }

  get(): Promise<GetResult<T>> {
    // Items queued before a shutdown are still handed out (queue.go Get: the loop ends on an empty
    // queue, not on shuttingDown).
    if (this.#queue.length > 0) return Promise.resolve({ shutdown: false, item: this.#take() });
    if (this.#shuttingDown) return Promise.resolve(SHUT_DOWN);
    return new Promise((resolve) => {
      this.#getters.push(resolve);
    });
  }

  done(item: T): void {
    // Unlike queue.go, a done() for an item that is not being processed is ignored: pushing it
    // again would put a dirty item in #queue twice.
    if (!this.#processing.delete(item)) return;
    this.#metrics.done(item);
    if (this.#dirty.has(item)) {
      // queue.go Done: still pushed while shutting down, so that the re-add is not lost.
      this.#queue.push(item);
      this.#serveGetter();
    }
    if (this.#processing.size === 0) this.#releaseDrainers();
  }

  shutDown(): void {
    this.#startShutdown();
    // queue.go: "ShutDown can be called after ShutDownWithDrain to force ShutDownWithDrain to stop
    // waiting."
    this.#releaseDrainers();
  }

  shutDownWithDrain(): Promise<void> {
    this.#startShutdown();
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#drainers.push(resolve);
    });
  }

  shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Pops the head of #queue and marks it as being processed. Precondition: #queue is not empty. */
  #take(): T {
    const item = this.#queue.shift();
    this.#metrics.get(item);
    this.#processing.add(item);
    this.#dirty.delete(item);
    return item;
  }

  /** Hands the head of #queue to the oldest waiting getter, if there is one. */
  #serveGetter(): void {
    if (this.#getters.length > 0 && this.#queue.length > 0) this.#getters.shift()({ shutdown: false, item: this.#take() });
  }

  #startShutdown(): void {
    this.#shuttingDown = true;
    this.#unfinishedWorkTimer?.cancel();
    this.#unfinishedWorkTimer = undefined;
    // Getters wait only on an empty queue, and adds are now ignored: nothing will come for them.
    while (this.#getters.length > 0) this.#getters.shift()(SHUT_DOWN);
  }

  #releaseDrainers(): void {
    const drainers = this.#drainers;
    this.#drainers = [];
    for (const resolve of drainers) resolve();
  }

  /** queue.go updateUnfinishedWorkLoop: a tick every period until shutdown. */
  #scheduleUnfinishedWorkUpdate(): void {
    this.#unfinishedWorkTimer = this.#clock.setTimeout(() => {
      if (this.#shuttingDown) return;
      this.#metrics.updateUnfinishedWork();
      this.#scheduleUnfinishedWorkUpdate();
    }, UNFINISHED_WORK_UPDATE_PERIOD_MS);
  }
}
