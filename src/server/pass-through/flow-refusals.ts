/**
 * A limit on what a flow's refused requests cost a shared proxy (shared mode). The apiserver
 * pays for each request it refuses with a seat of its flow (APF), on as many cores as it has; the
 * proxy answers much of what it refuses itself, from memory (a 410 for an expired continue token,
 * a 400 for a bad selector, a 403 it was told before), on one event loop, as fast as a client
 * sends. One client sending such requests one after another, each as soon as the last is
 * answered, stays within every bound on what it has in flight and still takes the loop, and so
 * reads, from every other client: what each of its requests costs (a 13 KB continue token
 * nested 5,000 deep is ~0.3 ms to read and refuse, with its garbage) times the rate it is
 * answered at.
 *
 * So each flow (a user at an address) has a token bucket (golang.org/x/time/rate: `burst`
 * tokens refilled at `qps`) that only its refused answers spend, once answered. While the bucket
 * holds a token every request of the flow is let through, and spends nothing unless refused;
 * when empty, the flow's requests get the apiserver's 429 with Retry-After and their connection
 * is held unread for it (too-many-requests.ts), so a flow's refusals come at the refill rate at
 * most. Requests let through at once may all be refused: the bucket then goes below zero, and the
 * flow waits for it to refill (as rate.Limiter's reservations owe tokens).
 *
 * A refusal is an answer of 4xx but 404 (an object asked for that is not there: kubectl apply's
 * GET before each create, a controller's after a delete), 409 (a write that lost a race, retried
 * at once by design: client-go's RetryOnConflict) and 429 (a limit's, the apiserver's or this
 * proxy's). A well-behaved client meets refusals rarely and then backs off (client-go's
 * reflector relists after a 410 and waits 0.8 s to 30 s between failed LISTs), so only a client
 * that repeats what it was refused meets this limit.
 *
 * Cost: an LRU lookup per request of an identified flow, another per refusal. At most
 * `maxFlows` buckets are held (the least recently used dropped past it, its flow starting again
 * with a full bucket).
 */
import { LRUCache } from 'lru-cache';
import { realClock } from '../../clock/clock.ts';
import type { Clock } from '../../clock/clock.ts';
import { tokensNow } from './token-review-limits.ts';
import type { Bucket } from './token-review-limits.ts';

/**
 * Defaults: 10 refusals a second per flow after a burst of 100. A controller missing a
 * permission for every type it watches is refused ~60 times at start, then at its reflectors'
 * backoff; a relist after a restart costs each watch one 410. A flow repeating a refused request
 * is answered ten times a second.
 */
export const DEFAULT_REFUSALS_QPS_PER_FLOW = 10;
export const DEFAULT_REFUSALS_BURST_PER_FLOW = 100;
/** Flows whose buckets are held: ~300 bytes each, ~3 MiB at most. */
export const MAX_REFUSAL_FLOWS = 10_000;

/** Statuses of 400 and more that are no refusal: see the file's comment. */
const NOT_REFUSALS: ReadonlySet<number> = new Set([404, 409, 429]);

/** Whether an answer's status spends its flow's bucket. */
export function isRefusal(statusCode: number): boolean {
  return statusCode >= 400 && statusCode < 500 && !NOT_REFUSALS.has(statusCode);
}

export interface FlowRefusalLimitSettings {
  /** Refused requests a second, per flow; 0: no limit. */
  readonly qpsPerFlow: number;
  /** The bucket's size (at least 1 when qpsPerFlow limits). */
  readonly burstPerFlow: number;
}

export interface FlowRefusalLimitsOptions extends FlowRefusalLimitSettings {
  readonly maxFlows?: number;
  readonly clock?: Clock;
}

export interface FlowRefusalLimits {
  readonly settings: FlowRefusalLimitSettings;
  /**
   * Room for one request of `flow`: the function to tell its answer's status (a refusal spends a
   * token), or the whole seconds until one could pass (Retry-After, at least 1).
   */
  take(flow: string): ((statusCode: number) => void) | number;
  /** Requests refused since start. */
  rejected(): number;
}

const UNLIMITED = (): void => undefined;

export function newFlowRefusalLimits(options: FlowRefusalLimitsOptions): FlowRefusalLimits {
  const clock = options.clock ?? realClock;
  const settings: FlowRefusalLimitSettings = { qpsPerFlow: options.qpsPerFlow, burstPerFlow: options.burstPerFlow };
  const { qpsPerFlow: qps, burstPerFlow: burst } = settings;
  const buckets = new LRUCache<string, Bucket>({ max: options.maxFlows ?? MAX_REFUSAL_FLOWS });
  const refilled = (flow: string, now: number): Bucket => {
    const bucket = buckets.get(flow) ?? { tokens: burst, at: now };
    bucket.tokens = tokensNow(bucket, qps, burst, now);
    bucket.at = now;
    return bucket;
  };
  let rejected = 0;
  const answered = (flow: string, statusCode: number): void => {
    if (!isRefusal(statusCode)) return;
    const bucket = refilled(flow, clock.now());
    bucket.tokens--;
    buckets.set(flow, bucket);
  };
  return {
    settings,
    take(flow) {
      if (qps <= 0) return UNLIMITED;
      const bucket = buckets.get(flow);
      if (bucket !== undefined) {
        const tokens = tokensNow(bucket, qps, burst, clock.now());
        if (tokens < 1) {
          rejected++;
          return Math.max(1, Math.ceil((1 - tokens) / qps));
        }
      }
      let told = false;
      return (statusCode) => {
        if (told) return;
        told = true;
        answered(flow, statusCode);
      };
    },
    rejected: () => rejected,
  };
}
