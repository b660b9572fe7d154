/**
 * How old an upstream proxy's answer is: what a proxy tells the proxy in front of it about the
 * proof of freshness behind each answer it serves from its cache, so that a chain of proxies
 * keeps one staleness bound end to end. No Kubernetes counterpart: the apiserver answers from
 * etcd or from a cache that etcd's progress notifications keep current, and a client of it never
 * needs to know how old that state is.
 *
 * The age of an answer is, on the serving proxy's clock, the time since its cache last proved
 * progress (an event, a bookmark or a list from its own upstream, as of that one's proof; a
 * freshness proof, as of when it asked): the state it serves is known to hold every write made
 * before (now - age). The downstream counts that state as proven at (its arrival - age), never
 * later: an age only ever makes it older.
 *
 * - Every answer served from a cache (GET, LIST, and the head of a WATCH) carries
 *   PROOF_AGE_HEADER. An answer without it is the apiserver's (passed through by any number of
 *   proxies, which copy response headers as they are): fresh as of its arrival. A passed-through
 *   answer of a further proxy keeps that proxy's header, as pass-through copies it.
 * - A WATCH's head also carries PROOF_RESOURCE_VERSION_HEADER, the cache's resourceVersion when
 *   the watch opened: the events up to it (the replay of the window after the requested RV, or
 *   the initial state of a WatchList) are only as fresh as the head's age says; the events after
 *   it are live (the serving proxy received them from its upstream just before sending them).
 * - A BOOKMARK is the serving cache's RV on a timer, an RV the cache may have reached long before
 *   it was sent: for a watch that asked for it with PROOF_AGES_REQUEST_HEADER, each BOOKMARK
 *   object carries PROOF_AGE_ANNOTATION, the age of its RV's proof when it was written. Only when
 *   asked, so that every other client's bytes stay exactly the apiserver's; a proxy's own
 *   upstream watches ask for it (harmless to the apiserver, which ignores the header).
 *
 * Limit: a live event is counted fresh at its arrival. It is, one hop up: its sender applied it
 * from its own upstream just before. A chain of three, whose middle proxy replays a window from
 * its upstream and sends it live to the last, counts that replay fresh at the last.
 */

/** Response header: the answer's proof age, in whole milliseconds (an integer >= 0). */
export const PROOF_AGE_HEADER = 'x-kube-cache-proxy-proof-age';
/** WATCH response header: the serving cache's resourceVersion when the watch opened (decimal). */
export const PROOF_RESOURCE_VERSION_HEADER = 'x-kube-cache-proxy-proof-resource-version';
/** Request header of a WATCH whose BOOKMARKs should carry PROOF_AGE_ANNOTATION; its value is PROOF_AGES_BOOKMARKS. */
export const PROOF_AGES_REQUEST_HEADER = 'x-kube-cache-proxy-proof-ages';
export const PROOF_AGES_BOOKMARKS = 'bookmarks';
/** The BOOKMARK object's annotation: the proof age of its resourceVersion when it was written, in whole ms. */
export const PROOF_AGE_ANNOTATION = 'kube-cache-proxy.io/proof-age-ms';

/** Digits only, at most 15 (beyond 31,000 years, and exact as a JS number). */
const AGE = /^[0-9]{1,15}$/;
const RESOURCE_VERSION = /^[1-9][0-9]{0,19}$/;

/** An age as written: whole milliseconds, rounded up (the downstream may count the state older, never fresher). */
export function formatProofAge(ageMs: number): string {
  return String(Number.isFinite(ageMs) ? Math.max(0, Math.ceil(ageMs)) : 0);
}

/**
 * A proof age as received (a header, as Node gives it, or the annotation): undefined when absent
 * (the apiserver's answer: fresh); +Infinity when present but not an age (a value that cannot be
 * read proves nothing); the largest of several values.
 */
export function parseProofAge(value: string | readonly string[] | undefined): number | undefined {
  if (value === undefined) return undefined;
  const values = typeof value === 'string' ? [value] : value;
  if (values.length === 0) return undefined;
  let age = 0;
  for (const text of values) {
    const trimmed = text.trim();
    if (!AGE.test(trimmed)) return Number.POSITIVE_INFINITY;
    age = Math.max(age, Number(trimmed));
  }
  return age;
}

/** The watch head's resourceVersion, or undefined when absent or not one. */
export function parseProofResourceVersion(value: string | readonly string[] | undefined): bigint | undefined {
  const text = typeof value === 'string' ? value : value?.length === 1 ? value[0] : undefined;
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  return RESOURCE_VERSION.test(trimmed) ? BigInt(trimmed) : undefined;
}

/** True when a WATCH request (its header as Node gives it) asks for the age of each bookmark. */
export function asksProofAges(value: string | readonly string[] | undefined): boolean {
  if (value === undefined) return false;
  const values = typeof value === 'string' ? [value] : value;
  return values.some((v) => v.split(',').some((token) => token.trim().toLowerCase() === PROOF_AGES_BOOKMARKS));
}

/**
 * When, on the receiver's clock, a state that arrived at `arrivedAt` with `ageMs` was proven
 * current upstream: arrivedAt itself for an answer without an age (the apiserver's).
 */
export function provenAt(arrivedAt: number, ageMs: number | undefined): number {
  return ageMs === undefined ? arrivedAt : arrivedAt - ageMs;
}
