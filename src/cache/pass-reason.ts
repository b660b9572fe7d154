/**
 * Why a read went to the apiserver: one catalogue of the reasons, in the manner of fastify's
 * lib/errors.js. Every exit of the read path that passes a GET, LIST or WATCH through names one
 * of these; the proxy counts it (`kube_cache_proxy_pass_through_total{resource,reason}`), logs it
 * at debug, and shows each type's most frequent ones on the status page.
 *
 * A code is a metric label value and a log field: a code once retired stays retired (never reused
 * for another meaning), so dashboards and alerts built on it do not silently change. Retired:
 * `young-cache` (a watch from before the cache's first list: now the cache's 410).
 */

/** The codes, by the stage that decides them, each with what it means for the operator. */
export const PASS_REASONS = {
  // The request: not a read the cache answers.
  'not-a-resource': 'not a resource request: discovery, /version, /openapi, a path the apiserver refuses',
  'not-a-read': 'not a GET, LIST or WATCH of a resource (HEAD, OPTIONS, another method)',
  subresource: 'a subresource (log, status, scale, exec, ...): the apiserver serves it',
  'named-watch': 'a watch of one named object (the apiserver makes it a field selector)',
  'export-parameter': 'a GET with ?export, which the apiserver refuses in its own words',
  impersonation: 'the client asks to act as someone else: the apiserver grants or refuses it',
  'shared-forward': 'shared mode: not a read the cache may answer for this client, passed as the client',
  'unclean-path': 'a path spelled otherwise than the apiserver routes it (//, trailing slash, . or ..): its answer',
  'unusual-name': 'a name or namespace the apiserver refuses or quotes as raw bytes: its answer',
  'bad-query': 'a query the apiserver refuses (a bad integer, an invalid option): its 400 or 422',
  'bad-resource-version': 'a resourceVersion that is not "", "0" or a decimal RV: the apiserver words the error',
  'bad-continue': 'a continue token the apiserver refuses: its 400',
  'continue-with-resource-version': 'a continue token beside a resourceVersion, or at an RV the apiserver words',
  'bad-selector': 'a label or field selector the apiserver refuses: its 400',
  'selector-too-large':
    'a selector longer than 4 KiB, or of more than 64 terms (selector/selector-bounds.ts): more than a shared cache holds per filter',

  // The cache of the type.
  uncached: 'no cache answers this type in this scope (not cached, not allowed to the proxy, not synced in time)',
  'cluster-scoped-in-namespace': "a cluster-scoped type asked for in a namespace: the apiserver's 404",
  'not-synced': 'the cache holds no list yet',
  'cache-closed': 'the cache was stopped while the read waited',

  // The representation (content negotiation).
  yaml: 'YAML asked for: the apiserver writes it',
  'protobuf-only': 'only protobuf acceptable, and the type is not served in protobuf (a custom resource)',
  'not-acceptable': 'no representation the apiserver serves is acceptable: its 406',
  'too-many-accept-clauses': 'more Accept clauses than Go sorts the same way',
  'unsupported-conversion': 'a conversion (as=...) the cache does not make',
  'no-protobuf-schema': 'protobuf asked for a type the protobuf schema does not hold',
  'no-printer': 'a Table of a type with no ported printer, or a custom resource whose CRD is not cached',
  'bad-include-object': 'a Table with an includeObject the apiserver words',
  'metadata-kind-mismatch': "a PartialObjectMetadataList for a GET or the item kind for a LIST (the apiserver's 406), or for a watch",
  'not-found-converted': 'a GET of a missing object in a converted form (Table, metadata): the apiserver words the 404',

  // The resourceVersion asked for.
  'rv-not-reached': 'the cache did not reach the resourceVersion asked for within the wait',
  'no-snapshot': 'an exact resourceVersion (Exact, limit with an RV, continue) whose state the cache no longer keeps',

  // Consistency of RV-unset reads (also counted in kube_cache_proxy_consistency_pass_through_total).
  'not-watching': "the type's upstream watch is not open: the cache may be behind",
  stale: 'the cache has not proven progress within --max-staleness',
  'own-write-pending': 'a write through the proxy has not reached the cache within the wait',
  doubted:
    'a write (a conflict, a collection delete) made the cache doubtful: a small LIST, or a GET of the object doubted, is its own probe, or the cache did not catch up within the wait',
  'doubted-quiet':
    'a write (a conflict, a collection delete) made the cache of a quiet type doubtful: a LIST answer, a GET answer for its object, or a proof settles it',
  'probe-failed': "the consistency probe could not learn the apiserver's current RV",
  'strong-get': "strong consistency: a GET while the quiet type's cache trails the cluster's RV, until a freshness proof",
  'strong-quiet': "strong consistency: the type is quiet and its cache trails the cluster's RV until a freshness proof",
  'strong-behind': 'strong consistency: the cache did not reach the probed RV within the wait',

  // The proxy's own limits.
  'no-room': 'the memory budget for response bodies had no room within the wait',
  'cache-error': 'serving from the cache failed (a bug, logged at warn): the apiserver answers',
} as const satisfies Record<string, string>;

export type PassReason = keyof typeof PASS_REASONS;

/** The consistency reasons: what the delegator decides for an RV-unset read. */
export type ConsistencyReason = Code<
  | 'not-watching'
  | 'stale'
  | 'own-write-pending'
  | 'doubted'
  | 'doubted-quiet'
  | 'probe-failed'
  | 'strong-get'
  | 'strong-quiet'
  | 'strong-behind'
>;

/** Codes of the catalogue only: a misspelt one fails to compile. */
type Code<T extends PassReason> = T;

/** True for a catalogue code (a string from elsewhere: a metric label read back, a test). */
export function isPassReason(code: string): code is PassReason {
  return Object.hasOwn(PASS_REASONS, code);
}
