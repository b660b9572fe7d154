/**
 * A ListerWatcher that follows a pool's route (upstream/pool-route.ts): each LIST and WATCH goes
 * to the target of the moment, the pool's leader or the apiserver. No counterpart in client-go,
 * whose informers have one upstream; this one lets a reflector keep its store across a change of
 * upstream, because resourceVersions are global to the cluster.
 *
 * Contracts:
 * - A leader that does not answer (connection failure, 401, 403, 5xx) is reported to the route,
 *   and the same request is sent to the apiserver at once: a follower never waits for a dead
 *   leader beyond one failed connection.
 * - When the target changes, every open watch of another target is stopped: its next() resolves
 *   undefined, as for a watch the server closed, and the reflector re-watches from its last
 *   resourceVersion on the new target (a 410 there makes it relist, as usual). A watch of the
 *   leader whose connection breaks reports the leader failed before the reflector sees it.
 */
import { ApiStatusError, isConnectionError } from '../upstream/api-error.ts';
import type { PoolRoute, PoolTarget } from '../upstream/pool-route.ts';
import { sameTarget } from '../upstream/pool-route.ts';
import type { ListerWatcher, ListOptions, Watch } from './lister-watcher.ts';

export interface RoutedListerWatcherOptions {
  readonly route: PoolRoute;
  /** The type's ListerWatcher over the apiserver. */
  readonly apiserver: ListerWatcher;
  /** The type's ListerWatcher over the leader at `url`. */
  readonly leader: (url: string) => ListerWatcher;
  /** A watch opened on `target` (metrics); `closed` is called once it ends. */
  readonly opened?: (target: PoolTarget) => () => void;
}

/** The leader answered in a way that says it cannot serve us now; another upstream may. */
export function isLeaderUnavailable(error: unknown): boolean {
  if (isConnectionError(error)) return true;
  if (!(error instanceof ApiStatusError)) return false;
  return error.code === 401 || error.code === 403 || error.code >= 500;
}

export function newRoutedListerWatcher(options: RoutedListerWatcherOptions): ListerWatcher {
  const { route } = options;
  /** Runs `call` on the target now; a leader that does not answer is reported and the apiserver asked instead. */
  const routed = async <T>(call: (lw: ListerWatcher) => Promise<T>): Promise<{ result: T; target: PoolTarget }> => {
    const target = route.target();
    if (target.kind === 'leader') {
      try {
        const result = await call(options.leader(target.url));
        route.leaderAnswered(target.url);
        return { result, target };
      } catch (error) {
        if (!isLeaderUnavailable(error)) throw error;
        route.leaderFailed(target.url);
      }
      // The route has moved off the leader (it stays there until the retry time).
      const fallback = route.target();
      if (fallback.kind === 'leader') throw new Error('pool route: the leader failed yet is still the target');
      return { result: await call(options.apiserver), target: fallback };
    }
    return { result: await call(options.apiserver), target };
  };
  return {
    async list(listOptions: ListOptions, signal?: AbortSignal) {
      return (await routed((lw) => lw.list(listOptions, signal))).result;
    },
    async watch(listOptions: ListOptions, signal?: AbortSignal): Promise<Watch> {
      const { result: inner, target } = await routed((lw) => lw.watch(listOptions, signal));
      const closed = options.opened?.(target);
      let ended = false;
      const end = (): void => {
        if (ended) return;
        ended = true;
        unsubscribe();
        closed?.();
      };
      // The target moved (while opening, too): end this watch so that the reflector resumes on the new one.
      const unsubscribe = route.onChange((next) => {
        if (!sameTarget(next, target)) inner.stop();
      });
      if (!sameTarget(route.target(), target)) inner.stop();
      return {
        async next() {
          try {
            const event = await inner.next();
            if (event === undefined) end();
            return event;
          } catch (error) {
            end();
            if (target.kind === 'leader' && isConnectionError(error)) route.leaderFailed(target.url);
            throw error;
          }
        },
        stop() {
          inner.stop();
          end();
        },
      };
    },
  };
}
