/**
 * What a node pool's followers and leader agree on, so that a follower can tell a leader it may
 * read from (its answers are the apiserver's, as its cache holds them, over a live upstream watch)
 * from one it must leave for the apiserver. No Kubernetes counterpart: the apiserver has no
 * upstream but etcd.
 *
 * - A follower marks its LISTs and WATCHes of pool-wide types `Cache-Control: only-if-cached`
 *   (RFC 9111 §5.2.1.7: "the client only wishes to obtain a stored response"). The leader answers
 *   such a read from its cache, and only while the type's upstream watch is open; otherwise it
 *   refuses it with a 503 ServiceUnavailable Status naming why (never passes it through: the
 *   follower asks the apiserver itself, as itself, which costs the leader nothing). A 503, not the
 *   RFC's 504: no timeout happened, and Kubernetes clients read 503 as "retry elsewhere or later".
 * - The leader ends a follower's watch (cleanly, as at its timeout) when the type's upstream watch
 *   closes: the follower re-watches from its resourceVersion, is refused, and reads that type from
 *   the apiserver, from the same resourceVersion (resourceVersions are global).
 * - The leader sends a follower's watch a heartbeat, a BOOKMARK at the resourceVersion the watch
 *   already reached, after LEADER_HEARTBEAT_MS without a frame. It claims nothing new (every
 *   event up to that RV was sent), so the follower takes it as a sign of life only and never as a
 *   proof of freshness; a follower's watch silent for SILENT_LEADER_WATCH_MS is a failed leader.
 *
 * The bound: a follower leaves a leader it cannot use within FAILOVER_BOUND_MS of the failure
 * (a refused or broken connection, a TLS verification failure: at once; an unanswered connection
 * or request: LEADER_CONNECT_TIMEOUT_MS or LEADER_HEADERS_TIMEOUT_MS; a silent watch:
 * SILENT_LEADER_WATCH_MS; a leader whose upstream watch ended: one round trip).
 */

/** The request header a follower's reads carry, and its directive. */
export const ONLY_IF_CACHED_HEADER = 'cache-control';
export const ONLY_IF_CACHED = 'only-if-cached';

/**
 * The leader's heartbeat period on a follower's watch with nothing to send: 4 of them fit in
 * SILENT_LEADER_WATCH_MS, so that a leader whose event loop is held a few seconds (a large LIST,
 * a garbage collection on a loaded node) is not taken for dead. A BOOKMARK frame is ~150 bytes:
 * 100 followers × 5 pool-wide types cost the leader 250 small writes a second at most.
 */
export const LEADER_HEARTBEAT_MS = 2_000;
/** A follower's watch on the leader with nothing received for this long: the leader is failed. */
export const SILENT_LEADER_WATCH_MS = 8_000;
/**
 * A connection to the leader not established within this: the leader is failed. Members reach
 * each other on the node network (pod IPs), where a connection takes well under a second.
 */
export const LEADER_CONNECT_TIMEOUT_MS = 5_000;
/**
 * A request to the leader whose response head has not come within this: the leader is failed.
 * The leader makes a follower wait only for a freshness proof (2.5 s, cache/freshness-keeper.ts)
 * or its own writes to show (3 s, cache/delegator.ts); never for a cold cache.
 */
export const LEADER_HEADERS_TIMEOUT_MS = 8_000;
/** The longest a follower reads from a leader it cannot use (the acceptance bound). */
export const FAILOVER_BOUND_MS = 10_000;

/** True when a request's Cache-Control (as Node gives the header) has the only-if-cached directive. */
export function isOnlyIfCached(cacheControl: string | readonly string[] | undefined): boolean {
  if (cacheControl === undefined) return false;
  const values = typeof cacheControl === 'string' ? [cacheControl] : cacheControl;
  // Directives are case-insensitive tokens, comma separated (RFC 9111 §5.2).
  return values.some((value) => value.split(',').some((directive) => directive.trim().toLowerCase() === ONLY_IF_CACHED));
}

/**
 * Why the Lease's holderIdentity is no leader a follower may contact, or undefined when it is:
 * an https URL of a host (its certificate is then checked against the pool's CA, for
 * --pool-tls-server-name or else that host), with no credentials, query or fragment. Anything
 * else (http, a malformed URL) would send the follower's credentials in the clear or to a place
 * no pool certificate names.
 */
export function leaderIdentityProblem(identity: string): string | undefined {
  let url: URL;
  try {
    url = new URL(identity);
  } catch {
    return 'not a URL';
  }
  if (url.protocol !== 'https:') return `not https (${url.protocol.replace(/:$/, '')})`;
  if (url.hostname === '') return 'no host';
  if (url.username !== '' || url.password !== '') return 'credentials in the URL';
  if (url.search !== '' || url.hash !== '') return 'a query or fragment in the URL';
  return undefined;
}
