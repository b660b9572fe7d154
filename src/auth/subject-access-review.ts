/**
 * Authorization of a request served from the cache through the apiserver's SubjectAccessReview,
 * as the apiserver's webhook authorizer does it (plugin/pkg/authorizer/webhook/webhook.go): the
 * review's spec, selectors included, is the cache key; an allow is kept 5 minutes and a denial 30
 * seconds (its --authorization-webhook-cache-authorized-ttl and -unauthorized-ttl defaults), so a
 * grant or a revocation is seen within those. A review that fails is not kept.
 *
 * The decisions are held in bytes (decision-cache.ts): what a client puts in its URL is part of
 * the key, so a key is counted as long as it is, and one too large is not kept (asked each time).
 */
import { realClock } from '../clock/clock.ts';
import type { Clock } from '../clock/clock.ts';
import type { FieldRequirement } from '../selector/field-selector.ts';
import type { LabelRequirement } from '../selector/label-selector.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { jsonValueBytes, newDecisionCache } from './decision-cache.ts';
import { objectMembers } from '../json/json-scan.ts';
import type { RequestAttributes } from './user-info.ts';

export const DEFAULT_ALLOWED_TTL_MS = 5 * 60_000;
export const DEFAULT_DENIED_TTL_MS = 30_000;
/**
 * The decisions' bytes with no memory budget given (the proxy gives its share of the budget, the
 * same from a 512 MiB limit on): at ~400 B a decision (a key of ~200 B, ENTRY_OVERHEAD_BYTES),
 * ~10,000 decisions, where a node proxy's clients need a few hundred.
 */
export const DEFAULT_DECISION_CACHE_BYTES = 4 * 1024 * 1024;

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
  /** Bytes the kept decisions are counted at (the memory budget's decision caches). */
  readonly cachedBytes: () => number;
}

export interface AuthorizerOptions {
  readonly client: UpstreamClient;
  readonly allowedTtlMs?: number;
  readonly deniedTtlMs?: number;
  /** The most the kept decisions may be counted at. */
  readonly maxBytes?: number;
  readonly clock?: Clock;
}

/** metav1.FieldSelectorRequirement, in its Go field order. */
interface FieldSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn';
  readonly values: readonly string[];
}

/** metav1.LabelSelectorRequirement, in its Go field order (values omitted when empty). */
interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

/**
 * webhook.go fieldSelectorToAuthorizationAPI: `=` and `==` as In, `!=` as NotIn, one value each.
 * Undefined when nothing is left: the review is then of the unrestricted action.
 */
function fieldSelectorAttributes(requirements: readonly FieldRequirement[]): { requirements: FieldSelectorRequirement[] } | undefined {
  if (requirements.length === 0) return undefined;
  return {
    requirements: requirements.map((r) => ({ key: r.field, operator: r.operator === '=' ? 'In' : 'NotIn', values: [r.value] })),
  };
}

/**
 * webhook.go labelSelectorToAuthorizationAPI: `=`, `==` and `in` as In, `!=` and `notin` as NotIn,
 * exists and `!` as Exists and DoesNotExist; `>` and `<` left out (requirements are ANDed, so
 * leaving one out only broadens what is checked). Undefined when nothing is left.
 */
function labelSelectorAttributes(requirements: readonly LabelRequirement[]): { requirements: LabelSelectorRequirement[] } | undefined {
  const out: LabelSelectorRequirement[] = [];
  for (const r of requirements) {
    const values = r.values.length > 0 ? { values: r.values } : {};
    switch (r.operator) {
      case '=':
      case '==':
      case 'in':
        out.push({ key: r.key, operator: 'In', ...values });
        break;
      case '!=':
      case 'notin':
        out.push({ key: r.key, operator: 'NotIn', ...values });
        break;
      case 'exists':
        out.push({ key: r.key, operator: 'Exists', ...values });
        break;
      case '!':
        out.push({ key: r.key, operator: 'DoesNotExist', ...values });
        break;
      case 'gt':
      case 'lt':
        break;
    }
  }
  return out.length === 0 ? undefined : { requirements: out };
}

/** SubjectAccessReviewSpec, in its Go field order (the key is its JSON, as webhook.go's). */
function reviewSpec(a: RequestAttributes): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  if (a.resourceRequest) {
    const fieldSelector = fieldSelectorAttributes(a.fieldSelector ?? []);
    const labelSelector = labelSelectorAttributes(a.labelSelector ?? []);
    spec['resourceAttributes'] = {
      namespace: a.namespace,
      verb: a.verb,
      group: a.apiGroup,
      version: a.apiVersion,
      resource: a.resource,
      subresource: a.subresource,
      name: a.name,
      ...(fieldSelector === undefined ? {} : { fieldSelector }),
      ...(labelSelector === undefined ? {} : { labelSelector }),
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
  const cache = newDecisionCache<Decision>({
    maxBytes: options.maxBytes ?? DEFAULT_DECISION_CACHE_BYTES,
    valueBytes: jsonValueBytes,
    clock,
  });
  const inFlight = new Map<string, Promise<Decision>>();
  let reviews = 0;

  /**
   * `specJson` is the spec as JSON (the cache key): the request body is built around it, and of
   * the answer only `status` is parsed, since the apiserver echoes the spec (whose namespace and
   * name may each be up to a request head long: copies of them are what a hostile client's
   * reviews would cost, in the large-object space a full collection sweeps).
   */
  const review = async (specJson: string): Promise<Decision> => {
    reviews++;
    const res = await options.client.request({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":${specJson}}`,
    });
    if (res.statusCode !== 201 && res.statusCode !== 200) throw new Error(`SubjectAccessReview answered ${String(res.statusCode)}`);
    const span = objectMembers(res.body).get('status');
    const status =
      span === undefined
        ? undefined
        : (JSON.parse(res.body.toString('utf8', span.start, span.end)) as { allowed?: boolean; denied?: boolean; reason?: string });
    // Allowed and denied both set is the webhook's error case: a denial.
    const allowed = status?.allowed === true && status.denied !== true;
    return { allowed, reason: status?.reason ?? '' };
  };

  return {
    reviews: () => reviews,
    cachedBytes: () => cache.bytes(),
    authorize(attributes) {
      const spec = reviewSpec(attributes);
      const key = JSON.stringify(spec);
      const kept = cache.get(key);
      if (kept !== undefined) return Promise.resolve(kept);
      let pending = inFlight.get(key);
      if (pending === undefined) {
        pending = review(key).then((decision) => {
          cache.set(key, decision, decision.allowed ? allowedTtl : deniedTtl);
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
