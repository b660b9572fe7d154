/**
 * A limit on what anonymous clients' refused requests cost a shared proxy (shared mode). A request
 * without credentials is the apiserver's to decide (auth/shared-access.ts, `anonymous`): the proxy
 * passes it through as it came, and the apiserver answers, for any path it does not let
 * system:anonymous read, its 401 or 403 (or a 404). Each such request costs the proxy a
 * pass-through (a fraction of a millisecond of the loop, a connection's work upstream) and the
 * apiserver a request, so a client sending them as fast as they are answered, from one address,
 * takes a share of the loop and of the apiserver that every other client's reads wait behind,
 * though it is refused every time.
 *
 * So before an anonymous request goes upstream it takes a token from its source address's bucket
 * (golang.org/x/time/rate's Limiter.Allow: `burst` tokens refilled at `qps`), and an answer below
 * 400 gives the token back (answered): only refused anonymous requests spend the bucket, as only
 * refused tokens spend token-review-limits.ts's. What anonymous clients are meant to read (the
 * apiserver's system:public-info-viewer paths: /version, /healthz, /livez, /readyz) is answered
 * 200 and never drains it. Past it, the apiserver's 429 with Retry-After, nothing sent upstream,
 * and the connection held unread for the Retry-After (too-many-requests.ts), so an address's
 * refused anonymous requests reach the apiserver at the refill rate at most, however many
 * connections it sends them on.
 *
 * By source address: an anonymous client has nothing else to tell it by. Pods that share an
 * address (hostNetwork agents, a NAT) share the bucket, which only refusals spend: a client with
 * credentials never meets this limit.
 *
 * Cost: an LRU lookup per anonymous request. At most `maxAddresses` buckets are held (the least
 * recently used dropped past it, its address starting again with a full bucket).
 */
import { LRUCache } from 'lru-cache';
import { realClock } from '../../clock/clock.ts';
import type { Clock } from '../../clock/clock.ts';
import { tokensNow } from './token-review-limits.ts';
import type { Bucket } from './token-review-limits.ts';

/**
 * Defaults: 2 refusals a second per address after a burst of 20. A person or a script without
 * credentials meets a refusal now and then (kubectl before its kubeconfig is right: a handful); a
 * monitor probing an anonymous path the apiserver refuses, once every few seconds. A flood of
 * refused requests from one address reaches the apiserver twice a second.
 */
export const DEFAULT_ANONYMOUS_REFUSALS_QPS_PER_ADDRESS = 2;
export const DEFAULT_ANONYMOUS_REFUSALS_BURST_PER_ADDRESS = 20;
/** Source addresses whose buckets are held: ~250 bytes each, ~2.5 MiB at most. */
export const MAX_ANONYMOUS_ADDRESSES = 10_000;

export interface AnonymousRefusalLimitSettings {
  /** Refused anonymous requests a second, per source address; 0: no limit. */
  readonly qpsPerAddress: number;
  /** The bucket's size (at least 1 when qpsPerAddress limits). */
  readonly burstPerAddress: number;
}

export interface AnonymousRefusalLimitsOptions extends AnonymousRefusalLimitSettings {
  readonly maxAddresses?: number;
  readonly clock?: Clock;
}

/** An anonymous request let through: told its answer's status once known (a 2xx or 3xx gives its token back). */
export interface AnonymousPass {
  readonly answered: (statusCode: number) => void;
}

export interface AnonymousRefusalLimits {
  readonly settings: AnonymousRefusalLimitSettings;
  /**
   * Room for one anonymous request from `address`: a pass to tell its answer, or the whole
   * seconds until one could pass (Retry-After, at least 1). Synchronous: no await between check and take.
   */
  take(address: string): AnonymousPass | number;
  /** Requests refused since start. */
  rejected(): number;
}

const UNLIMITED: AnonymousPass = { answered: () => undefined };

export function newAnonymousRefusalLimits(options: AnonymousRefusalLimitsOptions): AnonymousRefusalLimits {
  const clock = options.clock ?? realClock;
  const settings: AnonymousRefusalLimitSettings = { qpsPerAddress: options.qpsPerAddress, burstPerAddress: options.burstPerAddress };
  const { qpsPerAddress: qps, burstPerAddress: burst } = settings;
  const buckets = new LRUCache<string, Bucket>({ max: options.maxAddresses ?? MAX_ANONYMOUS_ADDRESSES });
  const refill = (bucket: Bucket, now: number): void => {
    bucket.tokens = tokensNow(bucket, qps, burst, now);
    bucket.at = now;
  };
  let rejected = 0;
  return {
    settings,
    take(address) {
      if (qps <= 0) return UNLIMITED;
      const now = clock.now();
      let bucket = buckets.get(address);
      if (bucket === undefined) {
        bucket = { tokens: burst, at: now };
        buckets.set(address, bucket);
      }
      refill(bucket, now);
      if (bucket.tokens < 1) {
        rejected++;
        return Math.max(1, Math.ceil((1 - bucket.tokens) / qps));
      }
      bucket.tokens--;
      const own = bucket;
      let told = false;
      return {
        answered: (statusCode) => {
          if (told) return;
          told = true;
          // Given back as of now, never past the burst; a bucket dropped meanwhile is full already.
          if (statusCode >= 400 || buckets.peek(address) !== own) return;
          refill(own, clock.now());
          own.tokens = Math.min(burst, own.tokens + 1);
        },
      };
    },
    rejected: () => rejected,
  };
}
