/**
 * Per-flow limits, in the spirit of API Priority and Fairness's per-flow fairness
 * (k8s.io/apiserver pkg/util/flowcontrol): the requests of one client are one flow, and no flow
 * may hold more than its share of the proxy, so that one client never takes reads away from the
 * others. Where APF queues a flow's excess and serves flows in turn, the proxy refuses it at once
 * with the apiserver's own 429 (too-many-requests.ts), as APF does when a flow's queue is full: a
 * client-go client waits Retry-After and retries on its own.
 *
 * A flow holds seats of three kinds, each counted and limited on its own:
 * - `request`: a request in flight, from its identification to its response's end: reads the
 *   cache answers and pass-throughs alike, long-running ones (a followed log, a `proxy` stream)
 *   and upgrades (exec, attach, port-forward) for their whole life;
 * - `watch`: an open watch, served from the cache or passed through (not a request in flight as
 *   well: APF too counts a watch apart from the requests it executes);
 * - `review`: a SubjectAccessReview the flow's requests wait on (counted per request waiting: two
 *   requests with the same attributes share one review upstream, and hold two seats here).
 *
 * What a flow is (shared-gate.ts and app.ts say): in shared mode a user at a source address (an
 * anonymous client, or one whose token was not reviewed, by its address alone); in sidecar mode a
 * connection.
 *
 * Cost: take() and release() are O(1) (one Map lookup). A flow is held only while it holds a seat
 * (forgotten when its last seat is released), and at most `maxFlows` at once: past that, a new
 * flow's seats are counted in one shared overflow flow with the same limits, so memory stays
 * bounded whatever the number of clients, the flows already tracked keep their own seats, and a
 * client arriving then shares the overflow's (degraded, never unlimited).
 */

/** A flow's key: a string (shared mode: user and address) or an object (sidecar mode: the connection). */
export type FlowKey = string | object;

export type SeatKind = 'request' | 'watch' | 'review';

/** Why a seat was refused, as counted in kube_cache_proxy_rejected_requests_total{reason}. */
export type FlowRejection = 'requests-in-flight' | 'watches' | 'reviews-in-flight';

/** A seat held; release() gives it back (once: later calls do nothing). */
export interface Seat {
  release(): void;
}

/**
 * Retry-After for a seat refused, in seconds: the apiserver's first answer (APF's
 * dropped_requests_tracker.go starts at 1 s; maxinflight.go's retryAfter is "1"). Seats free up as
 * the flow's own requests end, in milliseconds for reads.
 */
export const FLOW_RETRY_AFTER_SECONDS = 1;

/** A seat that holds nothing (an exempt flow, or no limits). */
export const NO_SEAT: Seat = { release: () => undefined };

export interface FlowLimitSettings {
  /** Requests in flight per flow; 0: no limit. */
  readonly maxRequestsInflight: number;
  /** Open watches per flow; 0: no limit. */
  readonly maxWatches: number;
  /** SubjectAccessReviews a flow waits on at once; 0: no limit. */
  readonly maxReviewsInflight: number;
}

export interface FlowLimitsOptions extends FlowLimitSettings {
  /** Flows tracked at once, past which new flows share the overflow flow; default MAX_FLOWS. */
  readonly maxFlows?: number;
}

export interface FlowLimits {
  readonly settings: FlowLimitSettings;
  /**
   * A seat of `kind` for `flow`, or why not. Synchronous on purpose: no await between the count
   * read and its increment.
   */
  take(flow: FlowKey, kind: SeatKind): Seat | FlowRejection;
  /** Flows holding a seat now (the overflow flow counts as one). */
  flows(): number;
  /** Seats held now, by kind, over every flow. */
  held(): Readonly<Record<SeatKind, number>>;
  /** Seats refused since start, by reason. */
  rejected(): Readonly<Record<FlowRejection, number>>;
}

/**
 * Defaults: each past what a well-behaved client of kube-controller-manager's shape reaches (one
 * process as one user: 62 watches, one per informer, measured in bench/RESULTS.md's kcm run; its
 * clients' QPS 20 and burst 30 start at most ~30 requests at once, each waiting on at most one
 * SubjectAccessReview), and low enough that one flow at every limit holds at most ~16 MiB of a
 * node proxy's 512 MiB. Over TLS and HTTP/1.1 each watch is a connection, and a connection costs
 * what Node's TLS socket does, ~110-145 KiB of anonymous memory (a bare Node HTTPS server holding
 * 128 streams grew by 18 MiB, the proxy by 16-21 MiB: the proxy adds next to nothing per watch),
 * so 96 watches, KCM's 62 and half again, hold ~11-14 MiB (docs/shared-mode.md has the figures).
 */
export const DEFAULT_MAX_REQUESTS_INFLIGHT_PER_FLOW = 100;
export const DEFAULT_MAX_WATCHES_PER_FLOW = 96;
export const DEFAULT_MAX_REVIEWS_INFLIGHT_PER_FLOW = 64;

/**
 * Flows tracked at once. A node proxy serves its node's pods (110 at most by default, a few
 * clients each); a cluster proxy a few thousand clients. Each flow costs its key and three
 * counters (~200 bytes with a user name): at most ~2 MiB.
 */
export const MAX_FLOWS = 10_000;

/** The key of the flow that new flows share once MAX_FLOWS are tracked: no client's key is an empty object. */
const OVERFLOW: object = Object.freeze({});

interface Held {
  request: number;
  watch: number;
  review: number;
}

const REJECTION: Readonly<Record<SeatKind, FlowRejection>> = {
  request: 'requests-in-flight',
  watch: 'watches',
  review: 'reviews-in-flight',
};

export function newFlowLimits(options: FlowLimitsOptions): FlowLimits {
  const settings: FlowLimitSettings = {
    maxRequestsInflight: options.maxRequestsInflight,
    maxWatches: options.maxWatches,
    maxReviewsInflight: options.maxReviewsInflight,
  };
  const limit: Readonly<Record<SeatKind, number>> = {
    request: settings.maxRequestsInflight,
    watch: settings.maxWatches,
    review: settings.maxReviewsInflight,
  };
  const maxFlows = options.maxFlows ?? MAX_FLOWS;
  /** Invariant: every flow here holds at least one seat (its counts sum to more than 0). */
  const flows = new Map<FlowKey, Held>();
  const total: Held = { request: 0, watch: 0, review: 0 };
  const rejected: Record<FlowRejection, number> = { 'requests-in-flight': 0, watches: 0, 'reviews-in-flight': 0 };

  return {
    settings,
    take(flow, kind) {
      let key = flow;
      let held = flows.get(key);
      // The overflow flow is not one of the maxFlows: once a tracked flow goes, a new one is tracked again.
      if (held === undefined && flows.size - (flows.has(OVERFLOW) ? 1 : 0) >= maxFlows) {
        key = OVERFLOW;
        held = flows.get(key);
      }
      const max = limit[kind];
      if (max > 0 && (held?.[kind] ?? 0) >= max) {
        rejected[REJECTION[kind]]++;
        return REJECTION[kind];
      }
      if (held === undefined) {
        held = { request: 0, watch: 0, review: 0 };
        flows.set(key, held);
      }
      const seats = held;
      seats[kind]++;
      total[kind]++;
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          seats[kind]--;
          total[kind]--;
          if (seats.request === 0 && seats.watch === 0 && seats.review === 0) flows.delete(key);
        },
      };
    },
    flows: () => flows.size,
    held: () => ({ ...total }),
    rejected: () => ({ ...rejected }),
  };
}
