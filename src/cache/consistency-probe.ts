/**
 * The consistency probe of one cached type: what the apiserver's resourceVersion was when a read
 * arrived, so that a "most recent" (RV-unset) read can be served from the cache once the cache
 * is at least that fresh (the proxy's version of ConsistentListFromCache, KEP-2340: the apiserver
 * asks etcd for its current revision; the proxy asks the apiserver).
 *
 * The probe is a consistent LIST with limit=1 of the cache's own scope: its list RV is the
 * apiserver's current RV, and its cost is one object. Requests are batched: every request that
 * arrives while no probe is being sent joins the next probe, which is sent after all of them
 * arrived, so its answer is at least as fresh as each of them needs. At most one probe is in
 * flight per type: a burst of any size costs two probes.
 */
import { decodeList } from '../informer/lister-watcher.ts';
import { parseResourceVersionNumber } from '../informer/object.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { ApiStatusError } from '../upstream/api-error.ts';

export interface ConsistencyProbe {
  /** The apiserver's current RV, read after this call; undefined when the probe failed (pass through). */
  currentResourceVersion(): Promise<bigint | undefined>;
  /** Probes sent so far (each one upstream LIST). */
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

/**
 * `collectionPath` is the list path of the cache's scope, e.g. /api/v1/configmaps; `onSend` is
 * told of each probe sent (metrics).
 */
export function newConsistencyProbe(
  client: UpstreamClient,
  collectionPath: string,
  onSend: () => void = () => undefined,
): ConsistencyProbe {
  let inFlight = false;
  let waiting: Batch | undefined;
  let sent = 0;

  const send = (batch: Batch): void => {
    inFlight = true;
    sent++;
    onSend();
    consistentListResourceVersion(client, collectionPath).then(
      (rv) => {
        batch.resolve(rv);
      },
      () => {
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

/**
 * The apiserver's current RV, read consistently: the list RV of an RV-unset LIST with limit=1 of
 * `collectionPath` (one object's cost). Throws ApiStatusError on a refusal, undefined never.
 */
export async function consistentListResourceVersion(client: UpstreamClient, collectionPath: string, signal?: AbortSignal): Promise<bigint> {
  const res = await client.request({
    method: 'GET',
    path: `${collectionPath}?limit=1`,
    headers: { accept: 'application/json' },
    ...(signal === undefined ? {} : { signal }),
  });
  if (res.statusCode !== 200) throw ApiStatusError.fromResponse(res.statusCode, res.body, res.headers['retry-after']);
  const rv = parseResourceVersionNumber(decodeList(res.body).resourceVersion);
  if (rv === undefined) throw new Error(`${collectionPath}: a LIST without a resourceVersion`);
  return rv;
}
