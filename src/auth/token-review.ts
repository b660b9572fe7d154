/**
 * Authentication of a client's bearer token through the apiserver's TokenReview, as the
 * apiserver's webhook token authenticator and kube-rbac-proxy do it. Results, authenticated or
 * not, are kept for a TTL (the apiserver's --authentication-token-webhook-cache-ttl, 2 min) under
 * a SHA-256 of the token and the audiences: the token itself is never kept, logged or counted. A
 * review that fails (the apiserver unreachable, a 5xx) is not kept: the next request asks again.
 *
 * A token revoked upstream (its ServiceAccount deleted, its Secret removed) is therefore refused
 * no later than the TTL after its last successful review.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { realClock } from '../clock/clock.ts';
import type { Clock } from '../clock/clock.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { UserInfo } from './user-info.ts';

/** The apiserver's default webhook token cache TTL. */
export const DEFAULT_TOKEN_CACHE_TTL_MS = 2 * 60_000;
/** Distinct tokens kept; past it the least recently used are reviewed again. */
export const DEFAULT_TOKEN_CACHE_ENTRIES = 10_000;

export type Authentication =
  { readonly authenticated: true; readonly user: UserInfo } | { readonly authenticated: false; readonly reason: string };

export interface TokenAuthenticator {
  /** The token's user, or why not; rejects when the review itself failed (not kept). */
  authenticate(token: string): Promise<Authentication>;
  /**
   * Whether authenticate(token) would answer without sending a review (a result kept, or a review
   * of it in flight): the shared gate's limit on reviews of unknown tokens sits in front of it.
   */
  known?(token: string): boolean;
  /** TokenReviews sent (for the bench and the status page). */
  readonly reviews: () => number;
}

export interface TokenAuthenticatorOptions {
  readonly client: UpstreamClient;
  /** The audiences the token must be for (TokenReview spec.audiences); empty: the apiserver's own. */
  readonly audiences?: readonly string[];
  readonly ttlMs?: number;
  readonly maxEntries?: number;
  readonly clock?: Clock;
}

interface ReviewStatus {
  readonly authenticated?: boolean;
  readonly user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  readonly audiences?: string[];
  readonly error?: string;
}

export function newTokenAuthenticator(options: TokenAuthenticatorOptions): TokenAuthenticator {
  const clock = options.clock ?? realClock;
  const audiences = options.audiences ?? [];
  const cache = new LRUCache<string, Authentication>({
    max: options.maxEntries ?? DEFAULT_TOKEN_CACHE_ENTRIES,
    ttl: options.ttlMs ?? DEFAULT_TOKEN_CACHE_TTL_MS,
    perf: { now: () => clock.now() },
    // Read the clock at each check (the default caches it for 1 ms of real time, past a fake clock's steps).
    ttlResolution: 0,
  });
  /** Reviews in flight, so that a burst of one token's requests sends one review. */
  const inFlight = new Map<string, Promise<Authentication>>();
  let reviews = 0;

  // One review answers every request waiting on it: no one request's abort may cancel it.
  const review = async (token: string): Promise<Authentication> => {
    reviews++;
    const res = await options.client.request({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences } }),
    });
    if (res.statusCode !== 201 && res.statusCode !== 200) {
      // Never the body: it could echo the request.
      throw new Error(`TokenReview answered ${String(res.statusCode)}`);
    }
    const status = (JSON.parse(res.body.toString('utf8')) as { status?: ReviewStatus }).status ?? {};
    if (status.authenticated !== true || status.user === undefined) {
      return { authenticated: false, reason: status.error ?? 'token not authenticated' };
    }
    // The review answers for the audiences it was asked; a token for none of them is refused (the
    // apiserver's audience check, authenticator.Audiences.Intersect).
    if (audiences.length > 0 && !(status.audiences ?? []).some((a) => audiences.includes(a))) {
      return { authenticated: false, reason: 'token audiences are not accepted' };
    }
    const u = status.user;
    return {
      authenticated: true,
      user: { username: u.username ?? '', uid: u.uid ?? '', groups: u.groups ?? [], extra: u.extra ?? {} },
    };
  };

  return {
    reviews: () => reviews,
    authenticate(token) {
      const key = createHash('sha256').update(token).digest('base64');
      const kept = cache.get(key);
      if (kept !== undefined) return Promise.resolve(kept);
      let pending = inFlight.get(key);
      if (pending === undefined) {
        pending = review(token).then((result) => {
          cache.set(key, result);
          return result;
        });
        const forget = (): void => {
          inFlight.delete(key);
        };
        pending.then(forget, forget);
        inFlight.set(key, pending);
      }
      return pending;
    },
    known(token) {
      const key = createHash('sha256').update(token).digest('base64');
      return cache.get(key) !== undefined || inFlight.has(key);
    },
  };
}
