/**
 * A ListerWatcher that follows a pool's route (upstream/pool-route.ts): each LIST and WATCH goes
 * to the target of the moment, the pool's leader or the apiserver. No counterpart in client-go,
 * whose informers have one upstream; this one lets a reflector keep its store across a change of
 * upstream, because resourceVersions are global to the cluster.
 *
 * Contracts:
 * - The leader is used only for the answers the apiserver itself would give: a result, 410
 *   Expired, or 504 ResourceVersionTooLarge (the reflector's to handle, as from the apiserver).
 *   Any other failure to use it (a connection refused, reset or timed out; a TLS verification
 *   error of any kind; a URL or a client that cannot be made; an undecodable answer; a 401) fails
 *   the leader, and any other answer of its (403, 404, 429, 5xx: the 503 of a leader whose own
 *   upstream watch for the type is not open) refuses this scope; either way the same request is
 *   sent to the apiserver at once, so a follower never waits on a leader beyond one attempt.
 * - A watch of the leader is watched for silence: with a next() waiting and nothing received for
 *   silentWatchMs (pool-protocol.ts SILENT_LEADER_WATCH_MS), the leader is failed. The leader's
 *   heartbeats (bookmarks that do not move the watch's resourceVersion) reset that clock and go
 *   no further: they say the leader lives, not that anything is fresh.
 * - When the target changes, every open watch of another target is stopped: its next() resolves
 *   undefined, as for a watch the server closed, and the reflector re-watches from its last
 *   resourceVersion on the new target (a 410 there makes it relist, as usual). A watch of the
 *   leader that fails (broken, silent, undecodable) reports the failure and ends the same way,
 *   so the reflector moves without a relist.
 */
import type { Clock, Timer } from '../clock/clock.ts';
import { realClock } from '../clock/clock.ts';
import { ApiStatusError, isExpired, isTooLargeResourceVersion } from '../upstream/api-error.ts';
import { SILENT_LEADER_WATCH_MS } from '../protocol/pool-protocol.ts';
import type { PoolRoute, PoolTarget, ScopeRoute } from '../upstream/pool-route.ts';
import { sameTarget } from '../upstream/pool-route.ts';
import type { ListerWatcher, ListOptions, Watch, WatchEvent } from './lister-watcher.ts';

export interface RoutedListerWatcherOptions {
  /** The pool's route, and the name of this scope in it. */
  readonly route: PoolRoute;
  readonly scope: string;
  /** The type's ListerWatcher over the apiserver. */
  readonly apiserver: ListerWatcher;
  /** The type's ListerWatcher over the leader at `url` (a throw fails the leader). */
  readonly leader: (url: string) => ListerWatcher;
  /** A watch opened on `target` (metrics); `closed` is called once it ends. */
  readonly opened?: (target: PoolTarget) => () => void;
  readonly clock?: Clock;
  /** SILENT_LEADER_WATCH_MS; tests shorten it. */
  readonly silentWatchMs?: number;
}

/**
 * How a failure of the leader counts: 'leader' (it cannot be used now, for any type), 'scope'
 * (it answered, refusing this type), or undefined (an answer the reflector handles as the
 * apiserver's own).
 */
export function leaderFailure(error: unknown): 'leader' | 'scope' | undefined {
  if (!(error instanceof ApiStatusError)) return 'leader';
  if (isExpired(error) || isTooLargeResourceVersion(error)) return undefined;
  return error.code === 401 ? 'leader' : 'scope';
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** An RV as a number, undefined for '', '0' or anything else. */
function rvNumber(rv: string | undefined): bigint | undefined {
  return rv !== undefined && /^[1-9][0-9]{0,19}$/.test(rv) ? BigInt(rv) : undefined;
}

export function newRoutedListerWatcher(options: RoutedListerWatcherOptions): ListerWatcher {
  const { route } = options;
  const scope: ScopeRoute = route.scope(options.scope);
  const clock = options.clock ?? realClock;
  const silentWatchMs = options.silentWatchMs ?? SILENT_LEADER_WATCH_MS;
  /** Tells the route how the leader at `url` failed; false when the failure is the caller's to handle. */
  const report = (url: string, error: unknown): boolean => {
    const failure = leaderFailure(error);
    if (failure === 'leader') route.leaderFailed(url, describe(error));
    else if (failure === 'scope') scope.refused(url, describe(error));
    return failure !== undefined;
  };
  /** Runs `call` on the target now; a leader that cannot be used is reported and the apiserver asked instead. */
  const routed = async <T>(
    call: (lw: ListerWatcher) => Promise<T>,
    signal: AbortSignal | undefined,
  ): Promise<{ result: T; target: PoolTarget }> => {
    const target = scope.target();
    if (target.kind === 'leader') {
      try {
        const result = await call(options.leader(target.url));
        scope.answered(target.url);
        return { result, target };
      } catch (error) {
        // Stopping (the informer's signal) is no failure of the leader's.
        if (signal?.aborted === true || !report(target.url, error)) throw error;
      }
      // The scope has moved off the leader (it stays there until the retry time).
      const fallback = scope.target();
      if (fallback.kind === 'leader') throw new Error('pool route: the leader failed yet is still the target');
      return { result: await call(options.apiserver), target: fallback };
    }
    return { result: await call(options.apiserver), target };
  };
  return {
    async list(listOptions: ListOptions, signal?: AbortSignal) {
      return (await routed((lw) => lw.list(listOptions, signal), signal)).result;
    },
    async watch(listOptions: ListOptions, signal?: AbortSignal): Promise<Watch> {
      const { result: inner, target } = await routed((lw) => lw.watch(listOptions, signal), signal);
      const leader = target.kind === 'leader' ? target.url : undefined;
      const closed = options.opened?.(target);
      let ended = false;
      let stopped = false;
      const end = (): void => {
        if (ended) return;
        ended = true;
        unsubscribe();
        closed?.();
      };
      // The target moved (while opening, too): end this watch so that the reflector resumes on the new one.
      const unsubscribe = scope.onChange((next) => {
        if (!sameTarget(next, target)) inner.stop();
      });
      if (!sameTarget(scope.target(), target)) inner.stop();
      /** The highest RV this watch has delivered (or started from): a bookmark not past it is a heartbeat. */
      let reached = rvNumber(listOptions.resourceVersion);
      /** A leader's event to hand on, or undefined for a heartbeat (swallowed). */
      const fromLeader = (url: string, event: WatchEvent): WatchEvent | undefined => {
        if (event.type === 'ERROR') {
          // An error other than 410 Expired is the leader's failure to serve this type (the reflector relists, elsewhere).
          const error = new ApiStatusError(event.status.code ?? 500, event.status);
          if (!isExpired(error)) scope.refused(url, `watch error: ${error.message}`);
          return event;
        }
        const rv = rvNumber(event.type === 'BOOKMARK' ? event.resourceVersion : event.object.resourceVersion);
        if (event.type === 'BOOKMARK' && !event.initialEventsEnd && rv !== undefined && reached !== undefined && rv <= reached)
          return undefined;
        if (rv !== undefined && (reached === undefined || rv > reached)) reached = rv;
        return event;
      };
      return {
        async next() {
          for (;;) {
            let silence: Timer | undefined;
            if (leader !== undefined) {
              silence = clock.setTimeout(() => {
                route.leaderFailed(leader, `its watch was silent for ${String(silentWatchMs / 1000)} s`);
                inner.stop();
              }, silentWatchMs);
              silence.unref?.();
            }
            let event: WatchEvent | undefined;
            try {
              event = await inner.next();
            } catch (error) {
              end();
              // A leader's watch that breaks ends as a closed one once reported: the reflector resumes elsewhere from its RV.
              if (leader !== undefined && !stopped && report(leader, error)) return undefined;
              throw error;
            } finally {
              silence?.cancel();
            }
            if (event === undefined) {
              end();
              return undefined;
            }
            const handed = leader === undefined ? event : fromLeader(leader, event);
            if (handed !== undefined) return handed;
          }
        },
        stop() {
          stopped = true;
          inner.stop();
          end();
        },
        rerouted: () => !sameTarget(scope.target(), target),
        // A leader is an upstream proxy: how old the state it opened on was (protocol/proof-age.ts).
        ...(inner.proof === undefined ? {} : { proof: inner.proof }),
      };
    },
  };
}
