/**
 * Authorization of a request served from the cache through the apiserver's SubjectAccessReview,
 * as the apiserver's webhook authorizer does it (plugin/pkg/authorizer/webhook/webhook.go): the
 * review's spec is the cache key, an allow is kept 5 minutes and a denial 30 seconds (its
 * --authorization-webhook-cache-authorized-ttl and -unauthorized-ttl defaults), so a grant or a
 * revocation is seen within those. A review that fails is not kept.
 */
import { LRUCache } from 'lru-cache';
import { realClock } from '../clock/clock.ts';
import type { Clock } from '../clock/clock.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { RequestAttributes } from './user-info.ts';

export const DEFAULT_ALLOWED_TTL_MS = 5 * 60_000;
export const DEFAULT_DENIED_TTL_MS = 30_000;
export const DEFAULT_DECISION_CACHE_ENTRIES = 100_000;

export interface Decision {
  readonly allowed: boolean;
  /** The authorizer's reason (RBAC's evaluation errors, a webhook's words); '' when none. */
  readonly reason: string;
}

export interface Authorizer {
  /** The decision; rejects when the review itself failed (not kept). */
  authorize(attributes: RequestAttributes): Promise<Decision>;
  /** SubjectAccessReviews sent. */
  readonly reviews: () => number;
}

export interface AuthorizerOptions {
  readonly client: UpstreamClient;
  readonly allowedTtlMs?: number;
  readonly deniedTtlMs?: number;
  readonly maxEntries?: number;
  readonly clock?: Clock;
}

/** SubjectAccessReviewSpec, in its Go field order (the key is its JSON, as webhook.go's). */
function reviewSpec(a: RequestAttributes): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  if (a.resourceRequest) {
    spec['resourceAttributes'] = {
      namespace: a.namespace,
      verb: a.verb,
      group: a.apiGroup,
      version: a.apiVersion,
      resource: a.resource,
      subresource: a.subresource,
      name: a.name,
    };
  } else {
    spec['nonResourceAttributes'] = { path: a.path, verb: a.verb };
  }
  spec['user'] = a.user.username;
  spec['groups'] = a.user.groups;
  spec['extra'] = a.user.extra;
  spec['uid'] = a.user.uid;
  return spec;
}

export function newSubjectAccessReviewAuthorizer(options: AuthorizerOptions): Authorizer {
  const clock = options.clock ?? realClock;
  const allowedTtl = options.allowedTtlMs ?? DEFAULT_ALLOWED_TTL_MS;
  const deniedTtl = options.deniedTtlMs ?? DEFAULT_DENIED_TTL_MS;
  const cache = new LRUCache<string, Decision>({
    max: options.maxEntries ?? DEFAULT_DECISION_CACHE_ENTRIES,
    ttl: allowedTtl,
    perf: { now: () => clock.now() },
    // Read the clock at each check (the default caches it for 1 ms of real time, past a fake clock's steps).
    ttlResolution: 0,
  });
  const inFlight = new Map<string, Promise<Decision>>();
  let reviews = 0;

  const review = async (spec: Record<string, unknown>): Promise<Decision> => {
    reviews++;
    const res = await options.client.request({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec }),
    });
    if (res.statusCode !== 201 && res.statusCode !== 200) throw new Error(`SubjectAccessReview answered ${String(res.statusCode)}`);
    const status = (JSON.parse(res.body.toString('utf8')) as { status?: { allowed?: boolean; denied?: boolean; reason?: string } }).status;
    // Allowed and denied both set is the webhook's error case: a denial.
    const allowed = status?.allowed === true && status.denied !== true;
    return { allowed, reason: status?.reason ?? '' };
  };

  return {
    reviews: () => reviews,
    authorize(attributes) {
      const spec = reviewSpec(attributes);
      const key = JSON.stringify(spec);
      const kept = cache.get(key);
      if (kept !== undefined) return Promise.resolve(kept);
      let pending = inFlight.get(key);
      if (pending === undefined) {
        pending = review(spec).then((decision) => {
          cache.set(key, decision, { ttl: decision.allowed ? allowedTtl : deniedTtl });
          return decision;
        });
        const forget = (): void => {
          inFlight.delete(key);
        };
        pending.then(forget, forget);
        inFlight.set(key, pending);
      }
      return pending;
    },
  };
}
