/**
 * The workqueue: client-go's util/workqueue in TypeScript (see README.md). A leaf of the source
 * tree: it imports nothing from the rest of the proxy, and no metrics library (the prom-client
 * provider, prometheus-metrics.ts, is imported by whoever wants it).
 */
export { realClock } from '../clock/clock.ts';
export type { Clock, Timer } from '../clock/clock.ts';
export { newQueue } from './queue.ts';
export type { GetResult, Queue, QueueOptions } from './queue.ts';
export { newDelayingQueue } from './delaying-queue.ts';
export type { DelayingQueue, DelayingQueueOptions } from './delaying-queue.ts';
export { newRateLimitingQueue } from './rate-limiting-queue.ts';
export type { RateLimitingQueue, RateLimitingQueueOptions } from './rate-limiting-queue.ts';
export {
  defaultControllerRateLimiter,
  defaultItemBasedRateLimiter,
  newBucketRateLimiter,
  newItemExponentialFailureRateLimiter,
  newItemFastSlowRateLimiter,
  newMaxOfRateLimiter,
  newWithMaxWaitRateLimiter,
} from './default-rate-limiters.ts';
export type { RateLimiter } from './default-rate-limiters.ts';
export type { CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric } from './metrics.ts';
