/**
 * Shared mode at the server's door (auth/shared-access.ts decides; this file answers): every
 * request is identified before anything else, as the apiserver's authentication filter comes
 * first, and a read the cache may answer is authorized before it is looked at, as the
 * apiserver's authorization filter comes before its handlers (so a denied request with a bad
 * query gets the 403, as from the apiserver).
 *
 * What is not the cache's to answer goes upstream as the client (its own token, or the proxy
 * impersonating a certificate's user, or no credentials for an anonymous client): the apiserver
 * decides and words it, and the proxy's own rights are never lent to anyone.
 *
 * Between the two, as the apiserver's priority-and-fairness filter sits between its authentication
 * and authorization filters, each request takes a seat of its client's flow (flow-limits.ts), and a
 * token the token cache does not know is reviewed only within the TokenReview limits
 * (token-review-limits.ts): past a limit, the apiserver's 429 (too-many-requests.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerToken } from '../../auth/shared-access.ts';
import type { Identified, SharedAccess } from '../../auth/shared-access.ts';
import { unauthorized } from '../../auth/forbidden.ts';
import type { ForwardIdentity } from '../../upstream/client.ts';
import type { ParsedRequest } from '../../request/parsed-request.ts';
import { asksImpersonation } from './pass-through.ts';
import { MAX_SELECTOR_BYTES, selectorTooLong } from '../../selector/selector-bounds.ts';
import { StatusError, serviceUnavailable } from '../../kube/status.ts';
import type { FlowLimits, FlowRejection, Seat, SeatKind } from './flow-limits.ts';
import { FLOW_RETRY_AFTER_SECONDS, NO_SEAT } from './flow-limits.ts';
import type { TokenReviewLimits, TokenReviewRejection } from './token-review-limits.ts';
import type { AnonymousRefusalLimits } from './anonymous-refusals.ts';
import type { FlowRefusalLimits } from './flow-refusals.ts';
import type { RequestHeadLimits } from './request-head-limits.ts';
import type { FlowTurns } from './flow-turns.ts';
import { writeTooManyRequests } from './too-many-requests.ts';
import type { AfterTooManyRequests } from './too-many-requests.ts';

/** What the gate let through, or that it answered. */
export type Admission =
  /** Refused: this is the answer (the apiserver's 401 or 403). */
  | { readonly kind: 'refused'; readonly error: StatusError }
  /** Over a limit: the apiserver's 429 (too-many-requests.ts), nothing sent upstream. */
  | {
      readonly kind: 'rejected';
      readonly reason: FlowRejection | TokenReviewRejection | typeof ANONYMOUS_REFUSALS_PER_ADDRESS | typeof REFUSALS_PER_FLOW;
      readonly retryAfterSeconds: number;
      /** What becomes of the connection (too-many-requests.ts): a flow's bounds close it, the limits on reviews hold it unread. */
      readonly after: AfterTooManyRequests;
    }
  /**
   * The apiserver's to answer, as the client; `seat` (of `flow`) is held until the answer ends.
   * `answered`, when given (an anonymous request's bucket, or an identified flow's refusals), is
   * to be told the answer's status.
   */
  | {
      readonly kind: 'forward';
      readonly as: ForwardIdentity;
      readonly seat: Seat;
      readonly flow: string;
      readonly answered?: (statusCode: number) => void;
    }
  /** An authorized read: the cache may answer it; if it does not, it goes upstream as the client. */
  | {
      readonly kind: 'read';
      readonly as: ForwardIdentity;
      readonly seat: Seat;
      readonly flow: string;
      readonly answered?: (statusCode: number) => void;
    };

/**
 * The limits at the door (flow-limits.ts, token-review-limits.ts). In shared mode a flow is a user
 * at a source address (every replica of a Deployment or DaemonSet shares its ServiceAccount, and
 * every member of a node pool the proxies' own: each is a client of its own), or an address alone
 * for a client the gate has not identified (no credentials, or a token whose review failed).
 */
export interface Fairness {
  readonly flows: FlowLimits;
  /** Shared mode: reviews of tokens the token cache does not know; none: unlimited. */
  readonly tokenReviews?: TokenReviewLimits | undefined;
  /** Shared mode: anonymous requests the apiserver refuses, per source address; none: unlimited. */
  readonly anonymousRefusals?: AnonymousRefusalLimits | undefined;
  /** Shared mode: an identified flow's requests refused, by the proxy or the apiserver; none: unlimited. */
  readonly flowRefusals?: FlowRefusalLimits | undefined;
  /** Shared mode: what large request heads may cost, per source address; none: unlimited. */
  readonly requestHeads?: RequestHeadLimits | undefined;
  /** Shared mode: each flow's share of each turn of the event loop (flow-turns.ts); none: first come, first served. */
  readonly turns?: FlowTurns | undefined;
}

/**
 * The group of the apiserver's `exempt` FlowSchema (apis/flowcontrol/bootstrap/default.go
 * MandatoryFlowSchemaExempt, user.SystemPrivilegedGroup), which APF never queues or rejects, and
 * which maxinflight.go also lets past its limit: "A system:master is so powerful that they should
 * always get an answer."
 */
const EXEMPT_GROUP = 'system:masters';

/** The reason counted when an address's refused anonymous requests are over their limit (anonymous-refusals.ts). */
export const ANONYMOUS_REFUSALS_PER_ADDRESS = 'anonymous-refusals-per-address';

/** The reason counted when an identified flow's refused requests are over their limit (flow-refusals.ts). */
export const REFUSALS_PER_FLOW = 'refusals-per-flow';

/** Requests answered 429 since start by the limits at the door, by reason (kube_cache_proxy_rejected_requests_total). */
export function rejectedByReason({ flows, tokenReviews, requestHeads, anonymousRefusals, flowRefusals }: Fairness): Record<string, number> {
  return {
    ...flows.rejected(),
    ...tokenReviews?.rejected(),
    ...(requestHeads === undefined ? {} : { 'large-request-heads': requestHeads.rejected() }),
    ...(anonymousRefusals === undefined ? {} : { [ANONYMOUS_REFUSALS_PER_ADDRESS]: anonymousRefusals.rejected() }),
    ...(flowRefusals === undefined ? {} : { [REFUSALS_PER_FLOW]: flowRefusals.rejected() }),
  };
}

/** The client's address: the flow of a client not identified, and the TokenReview bucket of its unknown tokens. */
export function sourceAddress(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? '';
}

/** The seat a request takes: a watch, or a request in flight (upgrades included). */
export function seatKind(request: ParsedRequest | undefined): SeatKind {
  return request?.verb === 'watch' ? 'watch' : 'request';
}

/** The verbs of the reads the cache answers (a GET of a resource, no subresource). */
const CACHEABLE_VERBS = new Set(['get', 'list', 'watch']);

/**
 * A request the cache could answer: only those are authorized here; the apiserver authorizes the
 * rest itself. Kept as wide as what cached-reads.ts may answer (tryServe, tryWatch: GETs of a
 * resource, no subresource, and no LIST or WATCH with selectors longer than a cache takes,
 * selector-bounds.ts): a read the cache answers must never miss this gate. A read with such
 * selectors goes upstream unreviewed, as the client: its review would carry every requirement of
 * a selector the apiserver parses anyway (a 1 MiB labelSelector is ~120,000 of them).
 */
export function cacheable(request: ParsedRequest): boolean {
  const info = request.info;
  if (!(request.method === 'GET' && info?.isResourceRequest === true && info.subresource === '' && CACHEABLE_VERBS.has(info.verb)))
    return false;
  if (info.verb === 'get') return true;
  if (selectorCertainlyTooLong(request.url)) return false;
  // A query long enough to hold such a selector is read here and let go: kept by the request (its
  // query()), it would be held, in three copies, for the whole life of a watch passed upstream.
  const query = request.url.length > MAX_SELECTOR_BYTES ? new URL(request.url, 'http://proxy').searchParams : request.query();
  return !selectorTooLong({ labelSelector: query.get('labelSelector') ?? '', fieldSelector: query.get('fieldSelector') ?? '' });
}

const SELECTOR_PARAMETERS = ['labelSelector=', 'fieldSelector='] as const;

/**
 * Whether `url`'s first labelSelector or fieldSelector is longer than a cache takes, told from its
 * raw length alone, without decoding the query: a value's decoded bytes are at least a third of
 * its raw characters (`%XX` is three of them), so one past three times the bound is past it.
 * Decoding a 1 MiB query holds the loop 20-30 ms. A parameter spelled otherwise (`label%53elector`)
 * is left to the decoded check: false here is never wrong, only slower.
 */
function selectorCertainlyTooLong(url: string): boolean {
  const mark = url.indexOf('?');
  if (mark < 0 || url.length - mark <= 3 * MAX_SELECTOR_BYTES) return false;
  const seen = new Set<string>();
  for (let at = mark + 1; at < url.length;) {
    let end = url.indexOf('&', at);
    if (end < 0) end = url.length;
    const name = SELECTOR_PARAMETERS.find((p) => url.startsWith(p, at));
    if (name !== undefined && !seen.has(name)) {
      seen.add(name);
      if (end - at - name.length > 3 * MAX_SELECTOR_BYTES) return true;
    }
    at = end + 1;
  }
  return false;
}

/** The answer for a client known by its certificate that asks to impersonate someone. */
function impersonationRefused(): StatusError {
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message:
      'impersonation through kube-cache-proxy needs a bearer token: a client known by its certificate is itself impersonated upstream, and cannot impersonate another user in turn',
    reason: 'Forbidden',
    code: 403,
  });
}

export function writeStatus(res: ServerResponse, error: StatusError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = error.body();
  res.writeHead(error.code, { ...error.headers, 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

/**
 * Identifies the client of `req`, takes its flow's seat and, for a read the cache could answer
 * (`request`, when given), authorizes it: authentication, then APF, then authorization, the
 * apiserver's filter order (DefaultBuildHandlerChain). Upgrades (exec, port-forward) give no
 * request: they always go upstream, holding a request seat for their whole life.
 *
 * The seat of an admission is the caller's to release when the answer ends.
 */
export async function admit(
  access: SharedAccess,
  req: IncomingMessage,
  request: ParsedRequest | undefined,
  fairness?: Fairness,
): Promise<Admission> {
  const who = await identify(access, req, fairness?.tokenReviews);
  if (who.kind === 'refused' || who.kind === 'rejected') return who;
  const address = sourceAddress(req);
  const anonymous = who.kind === 'forward' && who.why === 'anonymous' ? fairness?.anonymousRefusals?.take(address) : undefined;
  if (typeof anonymous === 'number')
    return { kind: 'rejected', reason: ANONYMOUS_REFUSALS_PER_ADDRESS, retryAfterSeconds: anonymous, after: 'hold-unread' };
  const exempt = who.kind === 'user' && who.user.groups.includes(EXEMPT_GROUP);
  // An address has no space in it, so `address user` never equals another flow's key.
  const flow = who.kind === 'user' ? `${address} ${who.user.username}` : address;
  const refusals = who.kind === 'user' && !exempt ? fairness?.flowRefusals?.take(flow) : undefined;
  if (typeof refusals === 'number')
    return { kind: 'rejected', reason: REFUSALS_PER_FLOW, retryAfterSeconds: refusals, after: 'hold-unread' };
  // Told the answer's status: an anonymous request's, or an identified flow's (never both).
  const answered = anonymous?.answered ?? refusals;
  const taken = fairness === undefined || exempt ? NO_SEAT : fairness.flows.take(flow, seatKind(request));
  if (typeof taken === 'string') {
    // Not sent upstream: not a refusal of the apiserver's.
    anonymous?.answered(0);
    return { kind: 'rejected', reason: taken, retryAfterSeconds: FLOW_RETRY_AFTER_SECONDS, after: 'close' };
  }
  const seat = taken;
  // Past its share of this turn of the loop, the flow's request waits for a later one.
  const turn = exempt ? undefined : fairness?.turns?.enter(flow);
  if (turn !== undefined) await turn;
  const told = answered === undefined ? {} : { answered };
  if (who.kind !== 'user') return { kind: 'forward', as: who.as, seat, flow, ...told };
  // Impersonation: the cache would answer as the client, not as the one it impersonates.
  if (asksImpersonation(req.headers)) {
    if (who.as.kind !== 'impersonate') return { kind: 'forward', as: who.as, seat, flow, ...told };
    seat.release();
    answered?.(403);
    return { kind: 'refused', error: impersonationRefused() };
  }
  if (request === undefined || !cacheable(request)) return { kind: 'forward', as: who.as, seat, flow, ...told };
  const review = fairness === undefined || exempt ? NO_SEAT : fairness.flows.take(flow, 'review');
  if (typeof review === 'string') {
    seat.release();
    return { kind: 'rejected', reason: review, retryAfterSeconds: FLOW_RETRY_AFTER_SECONDS, after: 'close' };
  }
  let decision;
  try {
    decision = await access.authorizeRead(who.user, request);
  } finally {
    review.release();
  }
  switch (decision.kind) {
    case 'allowed':
      return { kind: 'read', as: who.as, seat, flow, ...told };
    case 'refused':
      seat.release();
      answered?.(decision.error.code);
      return decision;
    case 'undecided':
      return { kind: 'forward', as: who.as, seat, flow, ...told };
  }
}

/**
 * access.identify(req), behind the limit on reviews of unknown tokens: a token the token cache
 * does not know costs a TokenReview, which must fit the limits first (else the 429, and no review).
 */
async function identify(
  access: SharedAccess,
  req: IncomingMessage,
  limits: TokenReviewLimits | undefined,
): Promise<Identified | Extract<Admission, { kind: 'rejected' }>> {
  if (limits === undefined || !access.needsTokenReview(req)) return access.identify(req);
  const room = limits.take(sourceAddress(req), bearerToken(req.headers.authorization) ?? '');
  if (!('release' in room))
    return { kind: 'rejected', reason: room.reason, retryAfterSeconds: room.retryAfterSeconds, after: 'hold-unread' };
  try {
    const who = await access.identify(req);
    if (who.kind === 'user') room.authenticated();
    return who;
  } finally {
    room.release();
  }
}

/**
 * The proxy's own pages (/metrics, the status page): only for an authenticated client that the
 * apiserver's authorizer lets `get` the path (a nonResourceURLs rule, as for the apiserver's own
 * /metrics). An anonymous client is refused with the 401: the proxy cannot tell what the
 * apiserver would let it see. Resolves true when the page may be served.
 */
export async function admitOwnPage(
  access: SharedAccess,
  req: IncomingMessage,
  res: ServerResponse,
  request: ParsedRequest,
  tokenReviews?: TokenReviewLimits,
): Promise<boolean> {
  // Behind the same limit on reviews of unknown tokens as every other path: a flood aimed at these
  // pages spends no more reviews than one aimed at the API.
  const who = await identify(access, req, tokenReviews);
  if (who.kind === 'rejected') {
    writeTooManyRequests(res, who.retryAfterSeconds, who.after);
    return false;
  }
  if (who.kind !== 'user') {
    // A token the review could not judge (the apiserver unreachable) is not refused as bad.
    const error =
      who.kind === 'refused'
        ? who.error
        : who.why === 'unreviewed'
          ? serviceUnavailable('the authentication of this request could not be reviewed; retry later')
          : unauthorized();
    writeStatus(res, error);
    return false;
  }
  const decision = await access.authorizeRead(who.user, request);
  if (decision.kind === 'allowed') return true;
  writeStatus(
    res,
    decision.kind === 'refused'
      ? decision.error
      : serviceUnavailable('the authorization of this request could not be reviewed; retry later'),
  );
  return false;
}
