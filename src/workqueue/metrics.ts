/**
 * Workqueue metrics (client-go util/workqueue/metrics.go): what a queue measures and when, behind a
 * MetricsProvider that makes the metric objects. A queue measures only when it has both a name and
 * a provider; otherwise it gets the no-op metrics below and starts no timer, so an unobserved queue
 * pays one empty call per operation and nothing else.
 *
 * The Prometheus provider, with client-go's metric names, is in prometheus-metrics.ts.
 */
import type { Clock } from '../clock/clock.ts';

/** A value that goes up and down (depth). */
export interface GaugeMetric {
  /** One more. */
  inc(): void;
  /** One less. */
  dec(): void;
}

/** A value that is set (unfinished work, longest running processor). */
export interface SettableGaugeMetric {
  /** The value now. */
  set(value: number): void;
}

/** A value that only goes up (adds, retries). */
export interface CounterMetric {
  /** One more. */
  inc(): void;
}

/** Observations in seconds (queue latency, work duration). */
export interface HistogramMetric {
  /** One observation, in seconds. */
  observe(value: number): void;
}

/**
 * Makes the metrics of one queue; `name` is the queue's name, the metrics' `name` label. Method
 * names follow client-go's MetricsProvider.
 */
export interface MetricsProvider {
  /** Items waiting in the queue (`workqueue_depth`). */
  newDepthMetric(name: string): GaugeMetric;
  /** Adds handled (`workqueue_adds_total`). */
  newAddsMetric(name: string): CounterMetric;
  /** Seconds an item waits in the queue before it is handed out (`workqueue_queue_duration_seconds`). */
  newLatencyMetric(name: string): HistogramMetric;
  /** Seconds an item is processed, from get to done (`workqueue_work_duration_seconds`). */
  newWorkDurationMetric(name: string): HistogramMetric;
  /** Seconds of work in progress not yet observed by the work duration (`workqueue_unfinished_work_seconds`). */
  newUnfinishedWorkSecondsMetric(name: string): SettableGaugeMetric;
  /** Seconds the longest-running item has been processed (`workqueue_longest_running_processor_seconds`). */
  newLongestRunningProcessorSecondsMetric(name: string): SettableGaugeMetric;
  /** Retries (addAfter calls) handled (`workqueue_retries_total`). */
  newRetriesMetric(name: string): CounterMetric;
}

/**
 * What the queue reports, called from its synchronous methods (client-go: "expects the caller to
 * lock"; here: never called across an await, so no other call interleaves).
 */
export interface QueueMetrics<T> {
  /** The item became dirty: counted as an add and as depth. */
  add(item: T): void;
  /** The item was handed to a worker: leaves the depth, its wait is observed. */
  get(item: T): void;
  /** The worker finished the item: its work duration is observed. */
  done(item: T): void;
  /** Sets the unfinished-work and longest-running gauges from the items being processed. */
  updateUnfinishedWork(): void;
  /** False for the no-op metrics: the queue then starts no update timer. */
  readonly enabled: boolean;
}

export interface RetryMetrics {
  retry(): void;
}

const noop = (): void => undefined;

/** metrics.go noMetrics: used when the queue has no name or no provider. */
const NO_METRICS: QueueMetrics<never> = { add: noop, get: noop, done: noop, updateUnfinishedWork: noop, enabled: false };
const NO_RETRY_METRICS: RetryMetrics = { retry: noop };

/** metrics.go newQueueMetrics: real metrics only for a named queue with a provider. */
export function newQueueMetrics<T>(provider: MetricsProvider | undefined, name: string, clock: Clock): QueueMetrics<T> {
  if (provider === undefined || name === '') return NO_METRICS;
  return new DefaultQueueMetrics<T>(provider, name, clock);
}

/** metrics.go newRetryMetrics. */
export function newRetryMetrics(provider: MetricsProvider | undefined, name: string): RetryMetrics {
  if (provider === undefined || name === '') return NO_RETRY_METRICS;
  const retries = provider.newRetriesMetric(name);
  return {
    retry: () => {
      retries.inc();
    },
  };
}

/** metrics.go defaultQueueMetrics, the same rules; times are the clock's ms, reported in seconds. */
class DefaultQueueMetrics<T> implements QueueMetrics<T> {
  readonly enabled = true;
  readonly #clock: Clock;
  readonly #depth: GaugeMetric;
  readonly #adds: CounterMetric;
  readonly #latency: HistogramMetric;
  readonly #workDuration: HistogramMetric;
  readonly #unfinishedWorkSeconds: SettableGaugeMetric;
  readonly #longestRunningProcessor: SettableGaugeMetric;
  /** When each dirty item was first added since it was last handed out. */
  readonly #addTimes = new Map<T, number>();
  /** When each item being processed was handed out. */
  readonly #processingStartTimes = new Map<T, number>();

  constructor(provider: MetricsProvider, name: string, clock: Clock) {
    this.#clock = clock;
    this.#depth = provider.newDepthMetric(name);
    this.#adds = provider.newAddsMetric(name);
    this.#latency = provider.newLatencyMetric(name);
    this.#workDuration = provider.newWorkDurationMetric(name);
    this.#unfinishedWorkSeconds = provider.newUnfinishedWorkSecondsMetric(name);
    this.#longestRunningProcessor = provider.newLongestRunningProcessorSecondsMetric(name);
  }

  add(item: T): void {
    this.#adds.inc();
    this.#depth.inc();
    if (!this.#addTimes.has(item)) this.#addTimes.set(item, this.#clock.now());
  }

  get(item: T): void {
    this.#depth.dec();
    const now = this.#clock.now();
    this.#processingStartTimes.set(item, now);
    const added = this.#addTimes.get(item);
    if (added !== undefined) {
      this.#latency.observe((now - added) / 1000);
      this.#addTimes.delete(item);
    }
  }

  done(item: T): void {
    const started = this.#processingStartTimes.get(item);
    if (started !== undefined) {
      this.#workDuration.observe((this.#clock.now() - started) / 1000);
      this.#processingStartTimes.delete(item);
    }
  }

  updateUnfinishedWork(): void {
    // metrics.go: "a summary metric would be better for this, but prometheus doesn't seem to have
    // non-hacky ways to reset the summary metrics."
    const now = this.#clock.now();
    let total = 0;
    let oldest = 0;
    for (const started of this.#processingStartTimes.values()) {
      const age = (now - started) / 1000;
      total += age;
      if (age > oldest) oldest = age;
    }
    this.#unfinishedWorkSeconds.set(total);
    this.#longestRunningProcessor.set(oldest);
  }
}
