/**
 * A Queue that can add an item later (client-go util/workqueue/delaying_queue.go), to requeue after
 * a failure without a hot loop. It wraps a Queue: the waiting items sit in a min-heap of ready
 * times, and a single timer, due at the earliest ready time, moves the ready ones into the queue.
 *
 * delaying_queue.go runs a goroutine fed by a channel; here addAfter works on the heap directly,
 * synchronously (the heap and the timer are never read and written across an await).
 */
import { realClock } from '../clock/clock.ts';
import type { Clock, Timer } from '../clock/clock.ts';
import { newHeap } from './heap.ts';
import type { HeapEntry } from './heap.ts';
import { newRetryMetrics } from './metrics.ts';
import type { MetricsProvider, RetryMetrics } from './metrics.ts';
import { newQueue } from './queue.ts';
import type { GetResult, Queue } from './queue.ts';

/** delaying_queue.go TypedDelayingInterface. */
export interface DelayingQueue<T> extends Queue<T> {
  /**
   * Adds `item` once `ms` milliseconds have passed; at once for ms <= 0. An item already waiting
   * keeps the earlier of its two ready times. Ignored once the queue is shutting down; items still
   * waiting at shutdown are dropped.
   */
  addAfter(item: T, ms: number): void;
}

/** Options of newDelayingQueue. */
export interface DelayingQueueOptions<T> {
  /** The name of the queue and of its metrics (`workqueue_retries_total` counts addAfter calls). */
  readonly name?: string;
  /** Makes the metrics; without one (or without a name) the queue keeps none. */
  readonly metricsProvider?: MetricsProvider;
  /** Time for the ready times and the timer; tests pass a fake clock. Default: realClock. */
  readonly clock?: Clock;
  /** The queue to wrap. Default: newQueue with the same name, provider and clock. */
  readonly queue?: Queue<T>;
}

/**
 * The longest the timer is set for (ms). delaying_queue.go's heartbeat (maxWait, 10 s) is "insurance
 * against weird things happening": a ready item never waits more than this for the timer, even if
 * the wall clock jumps. It also keeps every timer under Node's setTimeout limit (2^31 - 1 ms), above
 * which the timer would fire at once.
 */
const MAX_WAIT_MS = 10_000;

/** delaying_queue.go waitFor: an item and when it should be added. */
interface WaitFor<T> extends HeapEntry {
  readonly item: T;
  readyAt: number;
  /** Order of arrival: of two items ready at the same time, the first added is added first. */
  readonly seq: number;
}

const earlier = <T>(a: WaitFor<T>, b: WaitFor<T>): boolean => a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.seq < b.seq);

/** delaying_queue.go NewTypedDelayingQueueWithConfig. */
export function newDelayingQueue<T>(options: DelayingQueueOptions<T> = {}): DelayingQueue<T> {
  const clock = options.clock ?? realClock;
  const name = options.name ?? '';
  const queue = options.queue ?? newQueue<T>({ name, clock, metricsProvider: options.metricsProvider });
  return new DelayingType(queue, clock, newRetryMetrics(options.metricsProvider, name));
}

class DelayingType<T> implements DelayingQueue<T> {
  readonly #queue: Queue<T>;
  readonly #clock: Clock;
  readonly #metrics: RetryMetrics;
  /** The waiting items by ready time. Invariant: #waiting and #entries hold the same entries. */
  readonly #waiting = newHeap<WaitFor<T>>(earlier);
  /** The waiting entry of each item (delaying_queue.go waitingEntryByData): one entry per item. */
  readonly #entries = new Map<T, WaitFor<T>>();
  #seq = 0;
  /**
   * Invariant: set iff #waiting is not empty, due at #timerDue <= the head's ready time (or at
   * most MAX_WAIT_MS away).
   */
  #timer: Timer | undefined;
  #timerDue = Infinity;

  constructor(queue: Queue<T>, clock: Clock, metrics: RetryMetrics) {
    this.#queue = queue;
    this.#clock = clock;
    this.#metrics = metrics;
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

  shuttingDown(): boolean {
    return this.#queue.shuttingDown();
  }

  shutDown(): void {
    this.#queue.shutDown();
    this.#stop();
  }

  shutDownWithDrain(): Promise<void> {
    const drained = this.#queue.shutDownWithDrain();
    this.#stop();
    return drained;
  }

  addAfter(item: T, ms: number): void {
    if (this.#queue.shuttingDown()) return;
    this.#metrics.retry();
    // "immediately add things with no delay" (delaying_queue.go AddAfter); NaN counts as no delay.
    if (!(ms > 0)) {
      this.#queue.add(item);
      return;
    }
    const readyAt = this.#clock.now() + ms;
    const existing = this.#entries.get(item);
    if (existing !== undefined) {
      // delaying_queue.go insert: "update the time only if it would cause the item to be queued
      // sooner".
      if (readyAt >= existing.readyAt) return;
      existing.readyAt = readyAt;
      this.#waiting.fix(existing);
    } else {
      const entry: WaitFor<T> = { item, readyAt, seq: this.#seq++, index: -1 };
      this.#waiting.push(entry);
      this.#entries.set(item, entry);
    }
    this.#arm();
  }

  /** Sets the timer for the head of #waiting, unless the current one fires soon enough. */
  #arm(): void {
    const head = this.#waiting.peek();
    if (head === undefined) return;
    const now = this.#clock.now();
    const due = Math.min(head.readyAt, now + MAX_WAIT_MS);
    if (this.#timer !== undefined && this.#timerDue <= due) return;
    this.#timer?.cancel();
    this.#timerDue = due;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.#timerDue = Infinity;
      this.#addReady();
    }, due - now);
  }

  /** delaying_queue.go waitingLoop, one turn: adds every entry whose time has come, re-arms. */
  #addReady(): void {
    if (this.#queue.shuttingDown()) {
      this.#stop();
      return;
    }
    const now = this.#clock.now();
    for (let head = this.#waiting.peek(); head !== undefined && head.readyAt <= now; head = this.#waiting.peek()) {
      this.#waiting.pop();
      this.#entries.delete(head.item);
      this.#queue.add(head.item);
    }
    this.#arm();
  }

  /** Drops the waiting items and the timer, so that nothing keeps the process alive. */
  #stop(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#timerDue = Infinity;
    this.#waiting.clear();
    this.#entries.clear();
  }
}
