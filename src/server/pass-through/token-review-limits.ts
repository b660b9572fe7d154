/**
 * Limits on the TokenReviews that clients' unknown bearer tokens cost (shared mode). Every
 * distinct bearer string the token cache does not hold costs one TokenReview, sent with the
 * proxy's own identity: spent from the API Priority and Fairness share its own informers need.
 * So before such a review is sent (shared-gate.ts):
 * - a token bucket per source address and one for the whole proxy (golang.org/x/time/rate's
 *   Limiter.Allow: `burst` tokens, refilled at `qps` a second) must each hold a token, and both
 *   are taken together;
 * - fewer than `maxInflight` TokenReviews may be in flight.
 * Past either, the request gets the apiserver's 429 with Retry-After, and no review is sent.
 *
 * A review that authenticates its token gives both tokens back: only tokens the apiserver refuses
 * (and reviews that fail) spend the buckets. A fleet of real clients presents valid tokens (a
 * pod's projected token rotates hourly, each reviewed once per token cache TTL), so it never
 * drains a bucket, however many of its pods share an address (hostNetwork pods, a NAT); what the
 * buckets limit is the flood of invented or stale tokens, one review each. And a token
 * authenticated within the last RECENTLY_AUTHENTICATED_MS (a SHA-256 of it remembered, never the
 * token) is reviewed again past the buckets, within the bound in flight only: a flood from a
 * client's address, which keeps its bucket empty, never stops the client's own token from being
 * reviewed again when the token cache's TTL is over.
 *
 * Cost: O(1) per review (an LRU lookup, and at most two stale buckets dropped). A bucket refilled to
 * its burst holds no information and is dropped when it is the least recently used one and the
 * next review comes; at most `maxAddresses` are held, past which the least recently used is
 * dropped (its address starts again with a full bucket: the global bucket still bounds the total).
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { realClock } from '../../clock/clock.ts';
import type { Clock } from '../../clock/clock.ts';
import type { Seat } from './flow-limits.ts';

export interface TokenReviewLimitSettings {
  /** Per source address: tokens a second, and the bucket's size; qps 0: no per-address limit. */
  readonly qpsPerAddress: number;
  readonly burstPerAddress: number;
  /** The whole proxy: tokens a second, and the bucket's size; qps 0: no global limit. */
  readonly qps: number;
  readonly burst: number;
  /** TokenReviews in flight at once; 0: no limit. */
  readonly maxInflight: number;
}

export interface TokenReviewLimitsOptions extends TokenReviewLimitSettings {
  /** Source addresses whose buckets are held at once; default MAX_ADDRESSES. */
  readonly maxAddresses?: number;
  /** Tokens remembered as authenticated; default MAX_RECENTLY_AUTHENTICATED. */
  readonly maxRecentlyAuthenticated?: number;
  readonly clock?: Clock;
}

/** Why a review was refused, as counted in kube_cache_proxy_rejected_requests_total{reason}. */
export type TokenReviewRejection = 'token-reviews-per-address' | 'token-reviews' | 'token-reviews-in-flight';

/** A review that may be sent: released once its outcome is known; `authenticated` gives the tokens back. */
export interface ReviewSeat extends Seat {
  /** The token was authenticated: its bucket tokens come back (then the seat is released). */
  authenticated(): void;
}

export interface Refusal {
  readonly reason: TokenReviewRejection;
  /** Whole seconds until a retry may pass, at least 1 (the Retry-After header). */
  readonly retryAfterSeconds: number;
}

export interface TokenReviewLimits {
  readonly settings: TokenReviewLimitSettings;
  /** Room for one review of `token` from `address`, or why not. Synchronous: no await between check and take. */
  take(address: string, token: string): ReviewSeat | Refusal;
  /** TokenReviews in flight now. */
  inflight(): number;
  /** Source addresses whose buckets are held now. */
  addresses(): number;
  /** Reviews refused since start, by reason. */
  rejected(): Readonly<Record<TokenReviewRejection, number>>;
}

/**
 * Defaults. Only refused tokens spend the buckets (authenticated ones give theirs back), and a
 * refused token is kept for the token cache's TTL (2 min): an address presenting stale tokens
 * (expired, or of a deleted ServiceAccount) costs one review per such token per TTL, a handful,
 * where the bucket allows a burst of 20 and 1 a second (120 per TTL). The proxy as a whole: 20 a
 * second after a burst of 100. In flight: 64, where valid tokens meet no other limit: reviews take
 * milliseconds, so 50 clients presenting new tokens at the same instant (a benchmark's first
 * contact) stay under it, and a node proxy's ~110 pods, reconnecting over a second or more after
 * its restart, far under it (a few in flight); and 64 keeps the proxy's own
 * APF flow far from its priority level's queues (workload-low: a hand of 6 queues of 50 per
 * flow), so that its informers' LISTs are never rejected behind its reviews.
 */
export const DEFAULT_TOKEN_REVIEW_QPS_PER_ADDRESS = 1;
export const DEFAULT_TOKEN_REVIEW_BURST_PER_ADDRESS = 20;
export const DEFAULT_TOKEN_REVIEW_QPS = 20;
export const DEFAULT_TOKEN_REVIEW_BURST = 100;
export const DEFAULT_MAX_TOKEN_REVIEWS_INFLIGHT = 64;

/**
 * How long a token authenticated once passes the buckets when reviewed again: an hour, a projected
 * ServiceAccount token's default life (expirationSeconds 3607; the kubelet replaces it at 80%).
 */
export const RECENTLY_AUTHENTICATED_MS = 60 * 60_000;
/** Tokens remembered as authenticated: a node proxy's pods bring about a hundred; ~2 MiB at most (a hash, the LRU's slots). */
export const MAX_RECENTLY_AUTHENTICATED = 10_000;

/** Source addresses held: ~300 bytes each (an IPv6 address, its bucket, the LRU's slots), ~3 MiB at most. */
export const MAX_ADDRESSES = 10_000;

/**
 * Retry-After while TokenReviews in flight are at their bound: as the apiserver's max-in-flight
 * filter (maxinflight.go retryAfter "1"), a review takes milliseconds.
 */
const INFLIGHT_RETRY_AFTER_SECONDS = 1;

/** A token bucket at `at` (ms): `tokens` then, refilling since. */
export interface Bucket {
  tokens: number;
  at: number;
}

/** Tokens now: refilled at `qps` since `at`, at most `burst` (rate.go advance). */
export function tokensNow(bucket: Bucket, qps: number, burst: number, now: number): number {
  return Math.min(burst, bucket.tokens + ((now - bucket.at) * qps) / 1000);
}

/** Whole seconds until the bucket holds one token, at least 1. */
function secondsToOne(tokens: number, qps: number): number {
  return Math.max(1, Math.ceil((1 - tokens) / qps));
}

export function newTokenReviewLimits(options: TokenReviewLimitsOptions): TokenReviewLimits {
  const clock = options.clock ?? realClock;
  const settings: TokenReviewLimitSettings = {
    qpsPerAddress: options.qpsPerAddress,
    burstPerAddress: options.burstPerAddress,
    qps: options.qps,
    burst: options.burst,
    maxInflight: options.maxInflight,
  };
  const { qpsPerAddress, burstPerAddress, qps, burst, maxInflight } = settings;
  const maxAddresses = options.maxAddresses ?? MAX_ADDRESSES;
  /** Per address; lru-cache's list keeps the least recently used at its end, reached in O(1). */
  const buckets = new LRUCache<string, Bucket>({ max: maxAddresses });
  const global: Bucket = { tokens: burst, at: clock.now() };
  /** SHA-256 (base64) of tokens authenticated within RECENTLY_AUTHENTICATED_MS. */
  const recentlyAuthenticated = new LRUCache<string, true>({
    max: options.maxRecentlyAuthenticated ?? MAX_RECENTLY_AUTHENTICATED,
    ttl: RECENTLY_AUTHENTICATED_MS,
    perf: { now: () => clock.now() },
    // Read the clock at each check (the default caches it for 1 ms of real time, past a fake clock's steps).
    ttlResolution: 0,
  });
  let inflight = 0;
  const rejected: Record<TokenReviewRejection, number> = {
    'token-reviews-per-address': 0,
    'token-reviews': 0,
    'token-reviews-in-flight': 0,
  };

  /** Drops up to two least recently used buckets that have refilled to their burst: each take adds at most one. */
  const dropFull = (now: number): void => {
    for (let i = 0; i < 2; i++) {
      // The last one stays: lru-cache clears its arrays (O(max)) when its last entry is deleted.
      if (buckets.size <= 1) return;
      const oldest = buckets.rkeys().next();
      if (oldest.done === true) return;
      const bucket = buckets.peek(oldest.value);
      if (bucket !== undefined && tokensNow(bucket, qpsPerAddress, burstPerAddress, now) < burstPerAddress) return;
      buckets.delete(oldest.value);
    }
  };

  const refuse = (reason: TokenReviewRejection, retryAfterSeconds: number): Refusal => {
    rejected[reason]++;
    return { reason, retryAfterSeconds };
  };

  return {
    settings,
    take(address, token) {
      const now = clock.now();
      if (maxInflight > 0 && inflight >= maxInflight) return refuse('token-reviews-in-flight', INFLIGHT_RETRY_AFTER_SECONDS);
      const key = createHash('sha256').update(token).digest('base64');
      const vouched = recentlyAuthenticated.has(key);
      dropFull(now);
      let bucket: Bucket | undefined;
      if (qpsPerAddress > 0 && !vouched) {
        // get() makes it the most recently used; set() of a new one drops the least recently used past maxAddresses.
        bucket = buckets.get(address);
        if (bucket === undefined) {
          bucket = { tokens: burstPerAddress, at: now };
          buckets.set(address, bucket);
        }
        bucket.tokens = tokensNow(bucket, qpsPerAddress, burstPerAddress, now);
        bucket.at = now;
        if (bucket.tokens < 1) return refuse('token-reviews-per-address', secondsToOne(bucket.tokens, qpsPerAddress));
      }
      const charged = qps > 0 && !vouched;
      if (charged) {
        global.tokens = tokensNow(global, qps, burst, now);
        global.at = now;
        if (global.tokens < 1) return refuse('token-reviews', secondsToOne(global.tokens, qps));
        global.tokens--;
      }
      const own = bucket;
      if (own !== undefined) own.tokens--;
      inflight++;
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        inflight--;
      };
      return {
        release,
        authenticated() {
          if (released) return;
          recentlyAuthenticated.set(key, true);
          const at = clock.now();
          // Given back as of now, never past the burst; a bucket dropped meanwhile is full already.
          if (own !== undefined && buckets.peek(address) === own) {
            own.tokens = Math.min(burstPerAddress, tokensNow(own, qpsPerAddress, burstPerAddress, at) + 1);
            own.at = at;
          }
          if (charged) {
            global.tokens = Math.min(burst, tokensNow(global, qps, burst, at) + 1);
            global.at = at;
          }
          release();
        },
      };
    },
    inflight: () => inflight,
    addresses: () => buckets.size,
    rejected: () => ({ ...rejected }),
  };
}
