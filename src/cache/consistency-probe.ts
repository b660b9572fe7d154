/**
 * The consistency probe of one cached type: what the apiserver's resourceVersion was when a read
 * arrived, so that a "most recent" (RV-unset) read can be served from the cache once the cache
 * is at least that fresh (the proxy's version of ConsistentListFromCache, KEP-2340: the apiserver
 * asks etcd for its current revision; the proxy asks the apiserver).
 *
 * The probe is a consistent read of the type that returns no object: an RV-unset WatchList of one
 * name (fieldSelector metadata.name, in the cache's namespace, or PROBE_NAMESPACE for a
 * namespaced type cached across namespaces) whose label selector matches nothing. The apiserver
 * reads etcd's current revision (one key: etcd3/store.go GetCurrentResourceVersion), waits until
 * its own cacher has reached it (which also moves that cacher on, so the watches of a quiet type
 * get bookmarks again) and answers at once with the initial-events-end bookmark at that RV. The
 * name makes the watch one key's (registry/generic/registry/store.go WatchPredicate: a
 * MatchesSingle predicate watches the object's key, not the collection), so the cacher looks up
 * that key instead of walking every object of the type through the selector (watch_cache.go
 * getIntervalFromStoreLocked): a probe costs the apiserver the same whatever the type holds. An
 * upstream that refuses WatchLists (4xx) is asked with a consistent LIST, limit=1, of the same
 * name from then on: its list RV is the same answer.
 *
 * Requests are batched: every request that arrives while no probe is being sent joins the next
 * probe, which is sent after all of them arrived, so its answer is at least as fresh as each of
 * them needs. At most one probe is in flight per type: a burst of any size costs two probes.
 */
import type { ListerWatcher, ResourceScope, Watch } from '../informer/lister-watcher.ts';
import { collectionPath, decodeList, newListerWatcher } from '../informer/lister-watcher.ts';
import { parseResourceVersionNumber } from '../informer/object.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { ApiStatusError } from '../upstream/api-error.ts';
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

export interface ConsistencyProbe {
  /** The apiserver's current RV, read after this call; undefined when the probe failed (pass through). */
  currentResourceVersion(): Promise<bigint | undefined>;
  /** Probes sent so far (each one upstream request). */
  sent(): number;
}

interface Batch {
  readonly promise: Promise<bigint | undefined>;
  resolve(rv: bigint | undefined): void;
}

function newBatch(): Batch {
  let resolve: (rv: bigint | undefined) => void = () => undefined;
  const promise = new Promise<bigint | undefined>((r) => {
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
      (rv) => {
        timer.cancel();
        batch.resolve(rv);
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

  return {
    currentResourceVersion() {
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
    },
    sent() {
      return sent;
    },
  };
}

/** What a probe reads: the cache's type and namespace (undefined for all), and whether the type is namespaced. */
export type ProbeScope = Pick<ResourceScope, 'group' | 'version' | 'resource' | 'namespace'> & { readonly namespaced: boolean };

/** One consistent read of the scope's current RV (see the top of this file); throws when it fails. */
function newConsistentRead(client: UpstreamClient, scope: ProbeScope): (signal: AbortSignal) => Promise<bigint> {
  const { group, version, resource, namespaced } = scope;
  const namespace = scope.namespace ?? (namespaced ? PROBE_NAMESPACE : undefined);
  const fieldSelector = `metadata.name=${PROBE_NAME}`;
  const nothing: ListerWatcher = newListerWatcher(client, {
    group,
    version,
    resource,
    namespace,
    labelSelector: MATCH_NOTHING,
    fieldSelector,
  });
  const path = collectionPath({ group, version, resource, namespace });
  let noWatchList = false;
  return async (signal) => {
    if (!noWatchList) {
      let watch: Watch;
      try {
        watch = await nothing.watch(
          {
            resourceVersionMatch: 'NotOlderThan',
            sendInitialEvents: true,
            allowWatchBookmarks: true,
            timeoutSeconds: Math.ceil(PROBE_TIMEOUT_MS / 1000),
          },
          signal,
        );
      } catch (error) {
        // 400/403/422 and the like: this upstream does not take WatchLists (or this one).
        if (!(error instanceof ApiStatusError) || error.code < 400 || error.code >= 500 || error.code === 429) throw error;
        noWatchList = true;
        return consistentListResourceVersion(client, path, fieldSelector, signal);
      }
      const stop = stopOnAbort(watch, signal);
      try {
        for (;;) {
          const event = await watch.next();
          if (event === undefined) throw new Error(`${path}: the WatchList ended before its initial-events-end bookmark`);
          if (event.type === 'BOOKMARK' && event.initialEventsEnd) return requireRv(path, event.resourceVersion);
          if (event.type === 'ERROR') throw new ApiStatusError(event.status.code ?? 500, event.status);
        }
      } finally {
        stop();
      }
    }
    return consistentListResourceVersion(client, path, fieldSelector, signal);
  };
}

/** The list RV of an RV-unset LIST with limit=1 of `collectionPath` (of one name): the apiserver's current RV. */
async function consistentListResourceVersion(
  client: UpstreamClient,
  collectionPath: string,
  fieldSelector: string,
  signal: AbortSignal,
): Promise<bigint> {
  const query = new URLSearchParams({ limit: '1', fieldSelector });
  const res = await client.request({
    method: 'GET',
    path: `${collectionPath}?${query.toString()}`,
    headers: { accept: 'application/json' },
    signal,
  });
  if (res.statusCode !== 200) throw ApiStatusError.fromResponse(res.statusCode, res.body, res.headers['retry-after']);
  return requireRv(collectionPath, decodeList(res.body).resourceVersion);
}

/** Stops `watch` when `signal` aborts (an open watch no longer heeds its request's signal); returns the stop. */
export function stopOnAbort(watch: Watch, signal: AbortSignal): () => void {
  const stop = (): void => {
    signal.removeEventListener('abort', stop);
    watch.stop();
  };
  if (signal.aborted) stop();
  else signal.addEventListener('abort', stop, { once: true });
  return stop;
}

export function requireRv(what: string, text: string): bigint {
  const rv = parseResourceVersionNumber(text);
  if (rv === undefined) throw new Error(`${what}: not a resourceVersion: ${JSON.stringify(text)}`);
  return rv;
}
