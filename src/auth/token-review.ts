/**
 * Authentication of a client's bearer token through the apiserver's TokenReview, as the
 * apiserver's webhook token authenticator and kube-rbac-proxy do it. Results, authenticated or
 * not, are kept for a TTL (the apiserver's --authentication-token-webhook-cache-ttl, 2 min) under
 * a SHA-256 of the token and the audiences: the token itself is never kept, logged or counted. A
 * review that fails (the apiserver unreachable, a 5xx) is not kept: the next request asks again.
 *
 * A token revoked upstream (its ServiceAccount deleted, its Secret removed) is therefore refused
 * no later than the TTL after its last successful review, and a JWT no later than its `exp`
 * (jwtExpiry): an authenticated result is kept no longer than the token is valid.
 *
 * The results are held in bytes (decision-cache.ts): least recently used first out, past the
 * bytes given.
 */
import { createHash } from 'node:crypto';
import { realClock } from '../clock/clock.ts';
import type { Clock } from '../clock/clock.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { jsonValueBytes, newDecisionCache } from './decision-cache.ts';
import type { UserInfo } from './user-info.ts';

/** The apiserver's default webhook token cache TTL. */
export const DEFAULT_TOKEN_CACHE_TTL_MS = 2 * 60_000;
/**
 * The results' bytes with no memory budget given (the proxy gives its share of the budget, the
 * same from a 512 MiB limit on): at ~1.4 KiB a ServiceAccount token's result (its user with the
 * pod's extra), ~2,900 tokens, where a node proxy's pods bring about a hundred.
 */
export const DEFAULT_TOKEN_CACHE_BYTES = 4 * 1024 * 1024;
/**
 * The largest token whose payload is read for its `exp`: a JWT the apiserver accepted is a few
 * KiB (a ServiceAccount token ~1 KiB; an OIDC token with many groups some more). A larger token
 * keeps the TTL.
 */
const MAX_JWT_BYTES = 64 * 1024;

/**
 * The `exp` of a JWT-shaped token (three base64url parts, the middle one a JSON object), in
 * milliseconds since the epoch; undefined for a token that is not one or has no numeric `exp`.
 * The signature is not checked: the apiserver did that when it accepted the token; `exp` only
 * shortens how long its acceptance is kept.
 */
export function jwtExpiry(token: string): number | undefined {
  if (token.length > MAX_JWT_BYTES) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const payload = parts[1] ?? '';
  if (!/^[A-Za-z0-9_-]+$/.test(payload)) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof claims !== 'object' || claims === null) return undefined;
  const exp = (claims as { exp?: unknown }).exp;
  // RFC 7519 NumericDate: seconds since the epoch, maybe with a fraction.
  return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
}

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
  /** Bytes the kept results are counted at (the memory budget's decision caches). */
  readonly cachedBytes: () => number;
}

export interface TokenAuthenticatorOptions {
  readonly client: UpstreamClient;
  /** The audiences the token must be for (TokenReview spec.audiences); empty: the apiserver's own. */
  readonly audiences?: readonly string[];
  readonly ttlMs?: number;
  /** The most the kept results may be counted at. */
  readonly maxBytes?: number;
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
  const ttl = options.ttlMs ?? DEFAULT_TOKEN_CACHE_TTL_MS;
  const cache = newDecisionCache<Authentication>({
    maxBytes: options.maxBytes ?? DEFAULT_TOKEN_CACHE_BYTES,
    valueBytes: jsonValueBytes,
    clock,
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
    cachedBytes: () => cache.bytes(),
    authenticate(token) {
      const key = createHash('sha256').update(token).digest('base64');
      const kept = cache.get(key);
      if (kept !== undefined) return Promise.resolve(kept);
      let pending = inFlight.get(key);
      if (pending === undefined) {
        pending = review(token).then((result) => {
          // An acceptance is kept no longer than the token is valid; a refusal for the TTL.
          const expiry = result.authenticated ? jwtExpiry(token) : undefined;
          cache.set(key, result, expiry === undefined ? ttl : Math.min(ttl, expiry - clock.wallNow()));
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
