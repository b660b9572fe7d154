/**
 * The consistency probe of one cached type: what the apiserver's resourceVersion was when a read
 * arrived, so that a "most recent" (RV-unset) read can be served from the cache once the cache
 * is at least that fresh (the proxy's version of ConsistentListFromCache, KEP-2340: the apiserver
 * asks etcd for its current revision; the proxy asks the apiserver).
 *
 * The probe is a consistent read of the type that returns no object: an RV-unset LIST of one name
 * (fieldSelector metadata.name, in the cache's namespace, or PROBE_NAMESPACE for a namespaced
 * type cached across namespaces) whose label selector matches nothing. The apiserver serves it
 * from its cache (ConsistentListFromCache, storage/cacher/delegator.go): it reads etcd's current
 * revision (one key: etcd3/store.go GetCurrentResourceVersion), waits until its own cacher has
 * reached it (which also moves that cacher on, so the watches of a quiet type get bookmarks
 * again) and answers with that RV as the list's. The name makes the read one key's
 * (registry/generic/registry/store.go ListPredicate: a MatchesSingle predicate lists the
 * object's key, not the collection), and the apiserver's flow control counts it as one seat
 * (flowcontrol/request/list_work_estimator.go matchesSingle): a probe costs the apiserver the
 * same whatever the type holds, about what a GET does. A LIST rather than a zero-object
 * WatchList, which gives the same answer: a watch is ended by closing its connection, so every
 * WatchList probe paid a new TLS connection, and took two to three times a GET's time where the
 * LIST reuses a kept-alive one.
 *
 * Requests are batched: every request that arrives while no probe is being sent joins the next
 * probe, which is sent after all of them arrived, so its answer is at least as fresh as each of
 * them needs. At most one probe is in flight per type: a burst of any size costs two probes.
 *
 * An upstream proxy (a chain: protocol/proof-age.ts) answers the probe from its own cache, whose
 * RV is only as current as that cache's proof: the answer's proof age says how old, and whoever
 * counts the RV as current counts it as of (asked - age).
 */
import type { ResourceScope } from '../informer/lister-watcher.ts';
import { collectionPath, decodeList } from '../informer/lister-watcher.ts';
import { parseResourceVersionNumber } from '../informer/object.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { ApiStatusError } from '../upstream/api-error.ts';
import { PROOF_AGE_HEADER, parseProofAge } from '../protocol/proof-age.ts';
import type { Clock } from '../clock/clock.ts';
import { realClock } from '../clock/clock.ts';

/** A label selector no object matches (a label both present and absent): the WatchList's state is empty. */
export const MATCH_NOTHING = 'kube-cache-proxy.io/probe,!kube-cache-proxy.io/probe';
/** The one name a probe reads (an object of that name, should one exist, still fails MATCH_NOTHING). */
export const PROBE_NAME = 'kube-cache-proxy-probe';
/** Where a namespaced type cached across namespaces is probed: a namespace every cluster has. */
export const PROBE_NAMESPACE = 'default';
/** A probe the apiserver has not answered in this long has failed (a silent link, an overloaded apiserver). */
export const PROBE_TIMEOUT_MS = 10_000;

/** A probe's answer: the upstream's RV, and how old its proof was (0 for the apiserver's own answer). */
export interface ProbeAnswer {
  readonly resourceVersion: bigint;
  /** An upstream proxy's proof age (protocol/proof-age.ts): the RV was current that long before the answer; 0 from the apiserver. */
  readonly proofAgeMs: number;
}

export interface ConsistencyProbe {
  /** The apiserver's current RV, read after this call; undefined when the probe failed (pass through). */
  currentResourceVersion(): Promise<bigint | undefined>;
  /** As currentResourceVersion, with the answer's proof age (the same probes, batched together). */
  current(): Promise<ProbeAnswer | undefined>;
  /** Probes sent so far (each one upstream request). */
  sent(): number;
}

interface Batch {
  readonly promise: Promise<ProbeAnswer | undefined>;
  resolve(answer: ProbeAnswer | undefined): void;
}

function newBatch(): Batch {
  let resolve: (answer: ProbeAnswer | undefined) => void = () => undefined;
  const promise = new Promise<ProbeAnswer | undefined>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export interface ConsistencyProbeOptions {
  /** Told of each probe sent (metrics). */
  readonly onSend?: () => void;
  /** The clock of PROBE_TIMEOUT_MS (tests). */
  readonly clock?: Clock;
}

/**
 * `scope` is the cache's namespace (none for all) and whether its type is namespaced. A selector scope's selectors are not needed:
 * the probe's label selector matches nothing either way, and the RV it answers is the type's
 * (the apiserver's cacher is one per type, whatever its watchers select), which is also what
 * moves that cacher on and so brings the scoped cache's own watch its bookmarks.
 */
export function newConsistencyProbe(client: UpstreamClient, scope: ProbeScope, options: ConsistencyProbeOptions = {}): ConsistencyProbe {
  const read = newConsistentRead(client, scope);
  const clock = options.clock ?? realClock;
  const onSend = options.onSend ?? (() => undefined);
  let inFlight = false;
  let waiting: Batch | undefined;
  let sent = 0;

  const send = (batch: Batch): void => {
    inFlight = true;
    sent++;
    onSend();
    const abort = new AbortController();
    const timer = clock.setTimeout(() => {
      abort.abort();
    }, PROBE_TIMEOUT_MS);
    timer.unref?.();
    read(abort.signal).then(
      (answer) => {
        timer.cancel();
        batch.resolve(answer);
      },
      () => {
        timer.cancel();
        batch.resolve(undefined);
      },
    );
    void batch.promise.finally(() => {
      inFlight = false;
      const next = waiting;
      waiting = undefined;
      if (next !== undefined) send(next);
    });
  };

  const current = (): Promise<ProbeAnswer | undefined> => {
    if (waiting === undefined) {
      waiting = newBatch();
      if (!inFlight) {
        const batch = waiting;
        waiting = undefined;
        send(batch);
        return batch.promise;
      }
    }
    return waiting.promise;
  };
  return {
    current,
    async currentResourceVersion() {
      return (await current())?.resourceVersion;
    },
    sent() {
      return sent;
    },
  };
}

/** What a probe reads: the cache's type and namespace (undefined for all), and whether the type is namespaced. */
export type ProbeScope = Pick<ResourceScope, 'group' | 'version' | 'resource' | 'namespace'> & { readonly namespaced: boolean };

/** One consistent read of the scope's current RV (see the top of this file); throws when it fails. */
function newConsistentRead(client: UpstreamClient, scope: ProbeScope): (signal: AbortSignal) => Promise<ProbeAnswer> {
  const { group, version, resource, namespaced } = scope;
  const namespace = scope.namespace ?? (namespaced ? PROBE_NAMESPACE : undefined);
  const path = collectionPath({ group, version, resource, namespace });
  const query = new URLSearchParams({ labelSelector: MATCH_NOTHING, fieldSelector: `metadata.name=${PROBE_NAME}` });
  const request = `${path}?${query.toString()}`;
  return async (signal) => {
    const res = await client.request({ method: 'GET', path: request, headers: { accept: 'application/json' }, signal });
    if (res.statusCode !== 200) throw ApiStatusError.fromResponse(res.statusCode, res.body, res.headers['retry-after']);
    const resourceVersion = requireRv(path, decodeList(res.body).resourceVersion);
    return { resourceVersion, proofAgeMs: parseProofAge(res.headers[PROOF_AGE_HEADER]) ?? 0 };
  };
}

export function requireRv(what: string, text: string): bigint {
  const rv = parseResourceVersionNumber(text);
  if (rv === undefined) throw new Error(`${what}: not a resourceVersion: ${JSON.stringify(text)}`);
  return rv;
}
