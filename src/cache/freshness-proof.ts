/**
 * The freshness proof of one watch cache: shows, on demand, that the cache holds the apiserver's
 * current state of its scope, without waiting for the upstream watch to say so.
 *
 * Why it is needed: the apiserver sends a watcher a bookmark only when its own cacher has moved
 * past the watcher (cache_watcher.go process: "only send events newer than resourceVersion"), and
 * the cacher of a quiet type moves only when someone makes a consistent read. A quiet type's
 * watch can stay silent for good, and a cache that counts silence as staleness would send every
 * read upstream once its bound passed.
 *
 * The proof, two short requests (the caller runs one proof per cache at a time):
 * 1. The consistency probe (consistency-probe.ts: a consistent read of the scope that returns no
 *    object) gives the apiserver's current RV R; the apiserver's own cacher has reached R before
 *    answering. If the cache is at R already, it is proven current as of the moment the proof
 *    asked.
 * 2. Otherwise R is usually the cluster's RV, moved by other types' writes, and the cache at C < R
 *    cannot tell "nothing of my scope changed in (C, R]" from "those changes are still on their
 *    way down my watch". A watch of the scope from C with timeoutSeconds=3 answers it: the
 *    apiserver replays the scope's changes after C, then, 2 s before its deadline, a bookmark at
 *    its cacher's RV B >= R (cache_watcher.go nextBookmarkTime), ordered after every change up to
 *    B on that stream. No change before the bookmark: the cache's state is the state at B.
 *    Changes: they are also on their way down the cache's own watch; the proof holds once the
 *    cache has applied them up to B, and fails if it does not within PROOF_CATCH_UP_MS (a watch
 *    that delivers nothing while its scope changes is not fresh, whatever the proof saw).
 *
 * The race with the cache's own watch is closed by the second step: the proof never moves the
 * cache past a change it has not applied, because it moves it only over an interval the apiserver
 * showed to be empty, or only once the cache itself reached B.
 *
 * Through an upstream proxy (a chain: protocol/proof-age.ts), the probe's answer and the probe
 * watch's bookmark may come from that proxy's cache, current only as of its own proof: the proof
 * holds as of the older of (asked - the probe's age) and (the bookmark's arrival - its age), never
 * as of the asking alone.
 */
import type { Clock } from '../clock/clock.ts';
import type { ListerWatcher, Watch, WatchEvent } from '../informer/lister-watcher.ts';
import { newListerWatcher } from '../informer/lister-watcher.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { ConsistencyProbe } from './consistency-probe.ts';
import { requireRv } from './consistency-probe.ts';
import type { WatchCache } from './watch-cache.ts';

/**
 * The probe watch's timeoutSeconds: the apiserver's pre-timeout bookmark comes 2 s before the
 * deadline, so 1 s after the watch opens (its bookmark timer ticks every 1 s ± 25 %). With 2 the
 * pre-timeout point is the watch's start, and no bookmark is sent at all.
 */
export const PROBE_WATCH_TIMEOUT_SECONDS = 3;
/** How long a proof may take in all before it counts as failed (a silent link, an apiserver that does not answer). */
export const PROOF_TIMEOUT_MS = 10_000;
/** How long the cache's own watch gets to deliver the changes the probe watch showed. */
export const PROOF_CATCH_UP_MS = 3_000;

export type ProofResult =
  /**
   * The cache holds the apiserver's state at `resourceVersion` (>= the consistent read's), as of
   * `askedAt`: when the proof asked, or an upstream proxy's proof of what it answered, if older.
   */
  | { readonly kind: 'proven'; readonly resourceVersion: bigint; readonly consistentResourceVersion: bigint; readonly askedAt: number }
  /** Not proven: why (a metric label), and the consistent read's RV when it was had. */
  | { readonly kind: 'failed'; readonly reason: ProofFailure; readonly consistentResourceVersion?: bigint };

export type ProofFailure = 'not-watching' | 'read-failed' | 'probe-failed' | 'timeout' | 'behind';

/** A consistent read's answer already had (a strong read's probe): step 1 of a proof, done. */
export interface ConsistentRead {
  readonly resourceVersion: bigint;
  /** When the read was asked (the answer is at least as fresh as that moment); from an upstream proxy, minus its proof age. */
  readonly askedAt: number;
  /** Read-your-writes' sequence when it was asked: the doubts that arose before it, its RV settles. */
  readonly sequence: number;
}

export interface FreshnessProof {
  /**
   * Runs one proof, from `known` when a consistent read was just had (no probe of its own then).
   * The cache's RV and progress time move when it succeeds (WatchCache.proven).
   */
  run(known?: ConsistentRead): Promise<ProofResult>;
}

export interface FreshnessProofOptions {
  readonly client: UpstreamClient;
  readonly cache: WatchCache;
  /** The cache's consistency probe (step 1), shared with the reads that probe. */
  readonly probe: ConsistencyProbe;
  readonly clock: Clock;
}

export function newFreshnessProof(options: FreshnessProofOptions): FreshnessProof {
  return new Proof(options);
}

class Proof implements FreshnessProof {
  readonly #cache: WatchCache;
  readonly #clock: Clock;
  readonly #probe: ConsistencyProbe;
  /** The scope itself (step 2). */
  readonly #scope: ListerWatcher;

  constructor(options: FreshnessProofOptions) {
    const { cache } = options;
    this.#cache = cache;
    this.#clock = options.clock;
    this.#probe = options.probe;
    const { group, version, resource } = cache.spec;
    // The cache's whole scope, selectors included: a change outside it is none of the cache's.
    this.#scope = newListerWatcher(options.client, {
      group,
      version,
      resource,
      namespace: cache.namespace,
      fieldSelector: cache.selectors?.fieldSelector,
      labelSelector: cache.selectors?.labelSelector,
    });
  }

  async run(known?: ConsistentRead): Promise<ProofResult> {
    const abort = new AbortController();
    const timer = this.#clock.setTimeout(() => {
      abort.abort();
    }, PROOF_TIMEOUT_MS);
    try {
      return await this.#run(abort.signal, known);
    } finally {
      timer.cancel();
      abort.abort();
    }
  }

  async #run(signal: AbortSignal, known: ConsistentRead | undefined): Promise<ProofResult> {
    const cache = this.#cache;
    if (!cache.watching()) return { kind: 'failed', reason: 'not-watching' };
    let askedAt = known?.askedAt ?? this.#clock.now();
    const answer =
      known === undefined
        ? await Promise.race([
            this.#probe.current(),
            new Promise<undefined>((resolve) => {
              signal.addEventListener(
                'abort',
                () => {
                  resolve(undefined);
                },
                { once: true },
              );
            }),
          ])
        : undefined;
    // An upstream proxy's answer is current only as of its proof (a known read's askedAt already says so).
    if (answer !== undefined) askedAt -= answer.proofAgeMs;
    const consistent = known?.resourceVersion ?? answer?.resourceVersion;
    if (consistent === undefined) return { kind: 'failed', reason: signal.aborted ? 'timeout' : 'read-failed' };
    const at = cache.resourceVersion();
    if (at === undefined || !cache.watching()) return { kind: 'failed', reason: 'not-watching', consistentResourceVersion: consistent };
    // Behind the upstream: what the cache's watch brings below `consistent` is late (freshness
    // as of its arrival would count a stalled link's backlog as current).
    if (at < consistent) cache.upstreamAt(consistent, askedAt);
    if (at >= consistent) {
      cache.proven(at, askedAt);
      return { kind: 'proven', resourceVersion: at, consistentResourceVersion: consistent, askedAt };
    }
    let probe: ProbeWatch | undefined;
    try {
      probe = await this.#probeFrom(at, signal);
    } catch {
      probe = undefined;
    }
    if (probe === undefined || probe.bookmark < consistent) {
      return { kind: 'failed', reason: signal.aborted ? 'timeout' : 'probe-failed', consistentResourceVersion: consistent };
    }
    // The bookmark's RV is current only as of its own proof, if an upstream proxy's.
    if (probe.provenAt !== undefined) askedAt = Math.min(askedAt, probe.provenAt);
    if (!probe.changed) {
      cache.proven(probe.bookmark, askedAt);
      return { kind: 'proven', resourceVersion: probe.bookmark, consistentResourceVersion: consistent, askedAt };
    }
    // The changes the probe saw are on their way down the cache's own watch.
    const reached = await cache.waitUntilFresh(probe.bookmark, PROOF_CATCH_UP_MS, signal);
    if (reached === undefined)
      return { kind: 'failed', reason: signal.aborted ? 'timeout' : 'behind', consistentResourceVersion: consistent };
    cache.proven(reached, askedAt);
    return { kind: 'proven', resourceVersion: reached, consistentResourceVersion: consistent, askedAt };
  }

  /** Step 2: the scope's changes after `from`, up to the apiserver's pre-timeout bookmark. */
  async #probeFrom(from: bigint, signal: AbortSignal): Promise<ProbeWatch | undefined> {
    const watch = await this.#scope.watch(
      { resourceVersion: String(from), allowWatchBookmarks: true, timeoutSeconds: PROBE_WATCH_TIMEOUT_SECONDS },
      signal,
    );
    let changed = false;
    const stop = stopOnAbort(watch, signal);
    try {
      for (;;) {
        const event: WatchEvent | undefined = await watch.next();
        if (event === undefined) return undefined; // ended without a bookmark: the apiserver's cacher did not move past `from`
        if (event.type === 'BOOKMARK') {
          const bookmark = requireRv('a probe watch', event.resourceVersion);
          const provenAt = event.proofAgeMs === undefined ? undefined : this.#clock.now() - event.proofAgeMs;
          return { bookmark, changed, provenAt };
        }
        if (event.type === 'ERROR') return undefined; // 410: `from` is older than the apiserver's window
        changed = true;
      }
    } finally {
      stop();
    }
  }
}

/** What the probe watch showed: its bookmark's RV, whether the scope changed before it, and when an upstream proxy proved that RV (undefined: the apiserver's). */
interface ProbeWatch {
  readonly bookmark: bigint;
  readonly changed: boolean;
  readonly provenAt: number | undefined;
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
