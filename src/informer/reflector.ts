/**
 * Reflector (client-go tools/cache/reflector.go): keeps a store in step with the apiserver by
 * one LIST (or one WatchList stream) and then one long WATCH from the list's resourceVersion.
 *
 * Rules, as client-go's:
 * - the initial LIST is paginated (limit/continue) and consistent (RV unset); a relist after an
 *   ordinary failure lists at the last synced RV (served from the apiserver's cache, unpaged);
 *   a relist after 410 Expired or "RV too large" lists consistently again;
 * - the WATCH asks for bookmarks and a jittered timeout; every event and bookmark moves the RV;
 * - a watch that closes (timeout, server restart, broken connection) is reopened from the last
 *   RV without relisting; a watch that fails to open with a connection error or 429 is retried
 *   after a backoff, also without relisting;
 * - 410 Expired (an ERROR event, an HTTP 410, an expired continue token) relists;
 * - a watch that closes within a second having delivered nothing is an error ("very short watch");
 * - every return from list-and-watch is followed by a backoff (exponential, jittered, reset after
 *   a healthy period; Retry-After honoured), except after a 410 on the watch: the apiserver
 *   answered, and the relist follows a second later, as the apiserver's cacher does;
 * - WatchList mode (sendInitialEvents=true&resourceVersionMatch=NotOlderThan) streams the initial
 *   state as ADDED events up to a bookmark annotated k8s.io/initial-events-end, then keeps the
 *   same watch; if the apiserver refuses it, that attempt falls back to LIST + WATCH.
 *
 * From an upstream proxy (protocol/proof-age.ts), the store is told when each list, replayed
 * event and bookmark was proven current upstream (ReflectorStore.provenAt) before it is applied.
 */
import type { Clock } from '../clock/clock.ts';
import { realClock, sleep } from '../clock/clock.ts';
import { ApiStatusError, isConnectionError, isExpired, isTooLargeResourceVersion, isTooManyRequests } from '../upstream/api-error.ts';
import type { Backoff } from './backoff.ts';
import { newExponentialBackoff } from './backoff.ts';
import type { ListerWatcher, Watch } from './lister-watcher.ts';
import type { LinkLog } from './link-log.ts';
import { newLinkLog } from './link-log.ts';
import type { KubeObject } from './object.ts';
import { parseResourceVersionNumber } from './object.ts';
import type { ReflectorStore } from './store.ts';

/** client-go minWatchTimeout: watches time out between 5 and 10 minutes, spread so they do not all reconnect at once. */
export const MIN_WATCH_TIMEOUT_SECONDS = 300;
/** client-go's pager default page size. */
export const DEFAULT_PAGE_SIZE = 500;
/** The shortest backoff after a connection error, however soon the apiserver answers again. */
const RECOVERED_MIN_WAIT_MS = 1_000;
/**
 * The wait before a relist when the watch ended with 410 Expired: the apiserver answered, so
 * the backoff grown by an outage before it (up to 30 s, jittered to 60 s) would only keep the
 * cache and its clients silent. The apiserver's own cacher relists a second after its watch ends
 * (cacher.go: wait.Until(c.startCaching, time.Second)); so does this one.
 */
const RELIST_AFTER_EXPIRED_MS = 1_000;
/** A watch shorter than this that delivered nothing is suspicious (reflector.go watchHandler). */
const VERY_SHORT_WATCH_MS = 1000;
/**
 * The longest a watch's buffered events are applied without a turn of the event loop. A watch
 * that fell behind holds hundreds of events in its connection, each read as a resolved promise:
 * applied in one chain of microtasks they would hold every other request, timer and probe of
 * the process until the last (seconds, on a busy machine). Go's scheduler preempts its watch
 * goroutines; here the reflector gives the loop a turn.
 */
const WATCH_TURN_BUDGET_MS = 5;

export interface ReflectorMetrics {
  list(pages: number, items: number): void;
  watch(): void;
  relist(reason: string): void;
  event(type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'): void;
  resourceVersion(rv: string): void;
  /** The upstream watch opened (true) or closed without reopening at once (false). */
  watching(open: boolean): void;
}

export const noopReflectorMetrics: ReflectorMetrics = {
  list: () => undefined,
  watch: () => undefined,
  relist: () => undefined,
  event: () => undefined,
  resourceVersion: () => undefined,
  watching: () => undefined,
};

export type ReflectorLog = (level: 'debug' | 'info' | 'warn', message: string) => void;

export interface ReflectorOptions {
  readonly name: string;
  readonly listerWatcher: ListerWatcher;
  readonly store: ReflectorStore;
  /** LIST page size (limit); 0 lists in one request. Default 500. */
  readonly pageSize?: number;
  /** Try WatchList before LIST + WATCH. Default true. */
  readonly useWatchList?: boolean;
  readonly minWatchTimeoutSeconds?: number;
  readonly clock?: Clock;
  readonly random?: () => number;
  readonly backoff?: Backoff;
  readonly metrics?: ReflectorMetrics;
  readonly log?: ReflectorLog;
  /**
   * Called with each error that ended a list-and-watch attempt, before the backoff (client-go's
   * WatchErrorHandler): how an owner learns that, say, the LIST is forbidden (403) or the type
   * is gone (404), which retrying will not fix. Synchronous; a throw is ignored.
   */
  readonly onListAndWatchError?: (error: unknown) => void;
  /**
   * Resolves once the apiserver answers again (upstream/health.ts); a backoff after a connection
   * error ends as soon as it does, so the cache hears from the apiserver within about a second
   * of its return instead of after up to 30 s. Abort to stop waiting.
   */
  readonly reachable?: (signal: AbortSignal) => Promise<void>;
  /**
   * The store already holds the state at this RV (a watch cache restored after a restart): the
   * first attempt watches from it without listing; an expired RV (410) lists at once, not older
   * than it. No client-go counterpart: client-go's stores start empty.
   */
  readonly resumeFrom?: string;
}

export interface Reflector {
  readonly name: string;
  /** Lists and watches until `signal` aborts; resolves once stopped. */
  run(signal: AbortSignal): Promise<void>;
  /** The RV of the last list, event or bookmark applied to the store ('' before the first list). */
  lastSyncResourceVersion(): string;
  /**
   * Ends the list or watch running and lists again at once, consistently (RV unset), so the
   * store's whole state is replaced by the apiserver's now (a consistency check found it wrong);
   * counted as a relist for `reason`. During a backoff, the next attempt lists consistently.
   */
  relist(reason: string): void;
}

export function newReflector(options: ReflectorOptions): Reflector {
  return new ReflectorImpl(options);
}

/** Why a watch ended, for the loop to decide between reopening and relisting. */
type WatchEnd =
  /** `broken`: the connection failed; otherwise the apiserver ended the stream (its timeout). */
  { readonly kind: 'closed'; readonly events: number; readonly broken: boolean } | { readonly kind: 'initial-events-end' };

class ReflectorImpl implements Reflector {
  readonly name: string;
  readonly #lw: ListerWatcher;
  readonly #store: ReflectorStore;
  readonly #pageSize: number;
  readonly #useWatchList: boolean;
  readonly #minWatchTimeout: number;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #backoff: Backoff;
  readonly #metrics: ReflectorMetrics;
  readonly #log: ReflectorLog;
  /** Failures and recoveries of the upstream link, logged once per transition. */
  readonly #link: LinkLog;
  #watchListFallbackLogged = false;
  readonly #onListAndWatchError: ((error: unknown) => void) | undefined;
  readonly #reachable: ((signal: AbortSignal) => Promise<void>) | undefined;
  #lastSyncResourceVersion = '';
  /** The last list or watch with #lastSyncResourceVersion answered 410 or "too large": list consistently next. */
  #lastSyncResourceVersionUnavailable = false;
  /** Retry-After of the last 429, honoured by the next backoff. */
  #retryAfterMs = 0;
  /** The apiserver answered and said 410: relist after RELIST_AFTER_EXPIRED_MS, not the grown backoff. */
  #relistSoon = false;
  /** The list-and-watch attempt running, if any (relist() ends it). */
  #attempt: AbortController | undefined;
  /** The next attempt resumes the store's restored state (ReflectorOptions.resumeFrom) instead of listing. */
  #resume: boolean;
  /** What the store was last told by provenAt (undefined: as of arrival, which it assumes until told). */
  #toldProvenAt: number | undefined;
  /** When the watch being handled opened (its head arrived): an upstream proxy's WatchProof counts from it. */
  #watchOpenedAt = 0;

  constructor(options: ReflectorOptions) {
    this.name = options.name;
    this.#lw = options.listerWatcher;
    this.#store = options.store;
    this.#pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
    this.#useWatchList = options.useWatchList ?? true;
    this.#minWatchTimeout = options.minWatchTimeoutSeconds ?? MIN_WATCH_TIMEOUT_SECONDS;
    this.#clock = options.clock ?? realClock;
    this.#random = options.random ?? Math.random;
    this.#backoff = options.backoff ?? newExponentialBackoff({ clock: this.#clock, random: this.#random });
    this.#metrics = options.metrics ?? noopReflectorMetrics;
    this.#log = options.log ?? (() => undefined);
    this.#link = newLinkLog(this.name, this.#log, this.#clock);
    this.#onListAndWatchError = options.onListAndWatchError;
    this.#reachable = options.reachable;
    this.#resume = options.resumeFrom !== undefined && options.resumeFrom !== '';
    if (this.#resume) this.#lastSyncResourceVersion = options.resumeFrom ?? '';
  }

  lastSyncResourceVersion(): string {
    return this.#lastSyncResourceVersion;
  }

  relist(reason: string): void {
    this.#lastSyncResourceVersionUnavailable = true;
    this.#metrics.relist(reason);
    this.#attempt?.abort();
  }

  async run(signal: AbortSignal): Promise<void> {
    this.#metrics.watching(false);
    while (!isAborted(signal)) {
      let unreachable = false;
      // One list-and-watch attempt, which relist() ends early.
      const attempt = new AbortController();
      const forward = (): void => {
        attempt.abort();
      };
      signal.addEventListener('abort', forward, { once: true });
      this.#attempt = attempt;
      try {
        await this.#listAndWatch(attempt.signal);
      } catch (error) {
        unreachable = isConnectionError(error);
        if (isAborted(signal)) break;
        if (isAborted(attempt.signal)) continue; // relist(): what failed was the attempt it ended
        this.#link.failed('warn', describe(error));
        try {
          this.#onListAndWatchError?.(error);
        } catch {
          // the owner's problem; the loop goes on
        }
      } finally {
        signal.removeEventListener('abort', forward);
        this.#attempt = undefined;
      }
      if (isAborted(signal)) break;
      if (isAborted(attempt.signal)) continue; // relist(): list again at once
      if (this.#relistSoon) {
        this.#relistSoon = false;
        await sleep(this.#clock, RELIST_AFTER_EXPIRED_MS, signal);
        continue;
      }
      await this.#backOff(signal, unreachable);
    }
  }

  /** Waits out the next backoff; after a connection error (`unreachable`), no longer than until the apiserver answers again. */
  async #backOff(signal: AbortSignal, unreachable = false): Promise<void> {
    const delay = Math.max(this.#backoff.next(), this.#retryAfterMs);
    this.#retryAfterMs = 0;
    if (!unreachable || this.#reachable === undefined) {
      await sleep(this.#clock, delay, signal);
      return;
    }
    const wake = new AbortController();
    const onAbort = (): void => {
      wake.abort();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const started = this.#clock.now();
    this.#reachable(wake.signal).then(
      () => {
        // Never sooner than RECOVERED_MIN_WAIT_MS after the failure: if the apiserver answers
        // its probe but this connection keeps failing, retries stay a second apart, not a loop.
        const left = RECOVERED_MIN_WAIT_MS - (this.#clock.now() - started);
        if (left <= 0) wake.abort();
        else
          this.#clock.setTimeout(() => {
            wake.abort();
          }, left);
      },
      () => undefined,
    );
    try {
      await sleep(this.#clock, delay, wake.signal);
    } finally {
      wake.abort();
      signal.removeEventListener('abort', onAbort);
    }
  }

  async #listAndWatch(signal: AbortSignal): Promise<void> {
    if (this.#resume) {
      this.#resume = false;
      await this.#watchLoop(undefined, signal);
      if (!this.#relistSoon || isAborted(signal)) return;
      // Expired: the restored state is older than the apiserver's window; list now, not a second later.
      this.#relistSoon = false;
    }
    let watch: Watch | undefined;
    if (this.#useWatchList) {
      try {
        watch = await this.#watchList(signal);
        if (watch === undefined) return; // stopped
      } catch (error) {
        if (isAborted(signal)) return;
        if (error instanceof OlderStateError) throw error;
        // "Making progress is better than deadlocking" (reflector.go): fall back for this attempt.
        // Logged once: an apiserver without WatchList would otherwise say so at every relist.
        this.#log(
          this.#watchListFallbackLogged ? 'debug' : 'info',
          `${this.name}: the watch-list request ended with an error, falling back to LIST + WATCH: ${describe(error)}`,
        );
        this.#watchListFallbackLogged = true;
      }
    }
    if (watch === undefined) await this.#list(signal);
    if (isAborted(signal)) return;
    await this.#watchLoop(watch, signal);
  }

  /** client-go relistResourceVersion, except that the initial list is consistent (RV unset), to be paginated. */
  #relistResourceVersion(): string {
    if (this.#lastSyncResourceVersionUnavailable) return '';
    return this.#lastSyncResourceVersion;
  }

  /** Tells the store when what it applies next was proven upstream (undefined: as of its arrival), when that changes. */
  #tellProvenAt(at: number | undefined): void {
    if (at === this.#toldProvenAt) return;
    this.#toldProvenAt = at;
    this.#store.provenAt?.(at);
  }

  #setLastSync(rv: string): void {
    if (rv === '') return;
    this.#lastSyncResourceVersion = rv;
    this.#store.updateResourceVersion?.(rv);
    this.#metrics.resourceVersion(rv);
  }

  async #list(signal: AbortSignal): Promise<void> {
    let result: ListedPages;
    try {
      result = await this.#listPages(this.#relistResourceVersion(), signal);
    } catch (error) {
      if (!isExpired(error) && !isTooLargeResourceVersion(error)) throw error;
      // The RV (or the continue token) is gone: list again at the newest RV, at once.
      this.#lastSyncResourceVersionUnavailable = true;
      this.#metrics.relist('list-expired');
      result = await this.#listPages('', signal);
    }
    if (isAborted(signal)) return;
    this.#refuseOlder(result.resourceVersion);
    this.#lastSyncResourceVersionUnavailable = false;
    this.#metrics.list(result.pages, result.items.length);
    this.#tellProvenAt(result.provenAt);
    this.#store.replace(result.items, result.resourceVersion);
    this.#setLastSync(result.resourceVersion);
  }

  async #listPages(resourceVersion: string, signal: AbortSignal): Promise<ListedPages> {
    // As client-go: with RV=N (not '' or '0') list unpaged, so the apiserver serves it from its
    // cache (a limit would make it an exact read, possibly from etcd).
    const limit = resourceVersion === '' || resourceVersion === '0' ? this.#pageSize : 0;
    const items: KubeObject[] = [];
    let continueToken = '';
    let listResourceVersion: string;
    let pages = 0;
    let provenAt: number | undefined;
    do {
      const page = await this.#lw.list(continueToken === '' ? { resourceVersion, limit } : { limit, continue: continueToken }, signal);
      // An upstream proxy's pages: the list is as old as its oldest proof (all are of one state).
      if (page.proofAgeMs !== undefined) provenAt = Math.min(provenAt ?? Number.POSITIVE_INFINITY, this.#clock.now() - page.proofAgeMs);
      pages++;
      for (const item of page.items) items.push(item);
      continueToken = page.continue;
      listResourceVersion = page.resourceVersion;
    } while (continueToken !== '' && !isAborted(signal));
    return { items, resourceVersion: listResourceVersion, pages, provenAt };
  }

  #watchTimeoutSeconds(): number {
    return Math.floor(this.#minWatchTimeout * (this.#random() + 1));
  }

  /**
   * WatchList: the initial state streamed as events up to the initial-events-end bookmark, then
   * the same watch goes on. Returns undefined when stopped; throws to fall back to LIST.
   */
  async #watchList(signal: AbortSignal): Promise<Watch | undefined> {
    for (;;) {
      if (isAborted(signal)) return undefined;
      const resourceVersion = this.#lastSyncResourceVersionUnavailable ? '' : this.#lastSyncResourceVersion;
      const temporary = new Map<string, KubeObject>();
      let bookmarkResourceVersion = '';
      const start = this.#clock.now();
      let watch: Watch;
      try {
        watch = await this.#lw.watch(
          {
            resourceVersion,
            resourceVersionMatch: 'NotOlderThan',
            sendInitialEvents: true,
            allowWatchBookmarks: true,
            timeoutSeconds: this.#watchTimeoutSeconds(),
          },
          signal,
        );
        this.#watchOpenedAt = this.#clock.now();
      } catch (error) {
        if (await this.#retriableWatchListError(error, signal)) continue;
        throw error;
      }
      this.#metrics.watch();
      const temporaryStore: ReflectorStore = {
        add: (obj) => temporary.set(obj.key, obj),
        update: (obj) => temporary.set(obj.key, obj),
        delete: (obj) => temporary.delete(obj.key),
        replace: () => undefined,
      };
      let end: WatchEnd;
      try {
        end = await this.#handleWatch(
          watch,
          temporaryStore,
          (rv) => {
            bookmarkResourceVersion = rv;
          },
          true,
          signal,
        );
      } catch (error) {
        watch.stop();
        if (isAborted(signal)) return undefined;
        if (await this.#retriableWatchListError(error, signal)) continue;
        throw error;
      }
      if (end.kind === 'closed') {
        watch.stop();
        if (isAborted(signal)) return undefined;
        // As client-go's watchHandler: an empty stream closed at once is an error, not retried
        // here, so this attempt falls back to LIST (retrying at once would loop without backoff).
        // Not when its route moved: that close is the proxy's, and the new target is tried at once.
        if (end.events === 0 && this.#clock.now() - start < VERY_SHORT_WATCH_MS && watch.rerouted?.() !== true) {
          throw new Error(
            `very short watch: ${this.name}: unexpected watch-list close - watch lasted less than a second and no items received`,
          );
        }
        // Closed before the initial state was complete: start over with a clean state.
        continue;
      }
      try {
        this.#refuseOlder(bookmarkResourceVersion);
      } catch (error) {
        watch.stop();
        throw error;
      }
      this.#lastSyncResourceVersionUnavailable = false;
      this.#metrics.list(0, temporary.size);
      // The initial state is the upstream's at the watch's opening: as old as its head said.
      this.#tellProvenAt(watch.proof === undefined ? undefined : this.#watchOpenedAt - watch.proof.ageMs);
      this.#store.replace([...temporary.values()], bookmarkResourceVersion);
      this.#setLastSync(bookmarkResourceVersion);
      this.#setWatching(true);
      return watch;
    }
  }

  /**
   * A list (or a WatchList's initial state) at an RV below the one the store holds is refused:
   * the store keeps what it has, and the next attempt (after a backoff) lists not older than it.
   * The apiserver's watch cache takes every relist (watch_cache.go Replace), as its relists are
   * etcd's consistent reads, never older than what it served; the proxy's upstream may be one
   * behind the one it listed before (a pool's leader after the apiserver, a chained proxy's
   * bounded cache), and a cache whose RV went back would serve an older state than it already had.
   */
  #refuseOlder(listed: string): void {
    const held = parseResourceVersionNumber(this.#lastSyncResourceVersion);
    const rv = parseResourceVersionNumber(listed);
    if (held === undefined || rv === undefined || rv >= held) return;
    this.#lastSyncResourceVersionUnavailable = false;
    throw new OlderStateError(
      `the upstream listed resourceVersion ${listed}, older than ${this.#lastSyncResourceVersion}, which the cache holds: kept it, listing again not older than it`,
    );
  }

  /** reflector.go isErrorRetriableWithSideEffectsFn */
  async #retriableWatchListError(error: unknown, signal: AbortSignal): Promise<boolean> {
    if (isConnectionError(error) || isTooManyRequests(error)) {
      this.#link.failed('warn', `watch-list request failed: ${describe(error)}`);
      this.#noteRetryAfter(error);
      await this.#backOff(signal, isConnectionError(error));
      return true;
    }
    if (isExpired(error) || isTooLargeResourceVersion(error)) {
      this.#lastSyncResourceVersionUnavailable = true;
      return true;
    }
    return false;
  }

  /** The store, the metrics and the link log hear of the watch opening or closing. */
  #setWatching(open: boolean): void {
    this.#store.watchConnected?.(open);
    this.#metrics.watching(open);
    if (open) this.#link.watching();
  }

  #noteRetryAfter(error: unknown): void {
    if (error instanceof ApiStatusError && error.retryAfterSeconds !== undefined) this.#retryAfterMs = error.retryAfterSeconds * 1000;
  }

  async #watchLoop(initial: Watch | undefined, signal: AbortSignal): Promise<void> {
    /**
     * The store was told the watch is open and nothing since said otherwise: a watch the
     * apiserver ended cleanly (its timeout) is reopened at once from the last RV, missing nothing,
     * so the store hears `false` only if that reopening fails.
     */
    let connected = initial !== undefined;
    const disconnected = (): void => {
      if (!connected) return;
      connected = false;
      this.#setWatching(false);
    };
    try {
      await this.#watchLoopConnected(initial, signal, {
        opened: () => {
          if (connected) return;
          connected = true;
          this.#setWatching(true);
        },
        disconnected,
      });
    } finally {
      disconnected();
    }
  }

  async #watchLoopConnected(
    initial: Watch | undefined,
    signal: AbortSignal,
    state: { readonly opened: () => void; readonly disconnected: () => void },
  ): Promise<void> {
    let watch = initial;
    for (;;) {
      if (isAborted(signal)) {
        watch?.stop();
        return;
      }
      const start = this.#clock.now();
      if (watch === undefined) {
        try {
          watch = await this.#lw.watch(
            {
              resourceVersion: this.#lastSyncResourceVersion,
              allowWatchBookmarks: true,
              timeoutSeconds: this.#watchTimeoutSeconds(),
            },
            signal,
          );
          this.#watchOpenedAt = this.#clock.now();
          this.#metrics.watch();
          state.opened();
        } catch (error) {
          state.disconnected();
          if (isAborted(signal)) return;
          if (isConnectionError(error) || isTooManyRequests(error)) {
            // The apiserver is likely unresponsive: reopening the watch where it ended beats a relist.
            this.#link.failed('warn', `watch failed to open (${describe(error)})`);
            this.#noteRetryAfter(error);
            await this.#backOff(signal, isConnectionError(error));
            continue;
          }
          if (isExpired(error)) {
            this.#link.failed('info', `watch expired (${describe(error)}), relisting`);
            this.#metrics.relist('watch-expired');
            this.#relistSoon = true;
            return;
          }
          throw error;
        }
      }
      let end: WatchEnd;
      try {
        end = await this.#handleWatch(
          watch,
          this.#store,
          (rv) => {
            this.#setLastSync(rv);
          },
          false,
          signal,
        );
      } catch (error) {
        watch.stop();
        watch = undefined;
        state.disconnected();
        if (isAborted(signal)) return;
        if (isExpired(error)) {
          // Relist at the last RV seen: a LIST at RV N returns data at least that fresh.
          this.#link.failed('info', `watch expired (${describe(error)}), relisting`);
          this.#metrics.relist('watch-expired');
          this.#relistSoon = true;
          return;
        }
        if (isTooManyRequests(error)) {
          this.#noteRetryAfter(error);
          await this.#backOff(signal);
          continue;
        }
        this.#link.failed('warn', `watch ended with: ${describe(error)}`);
        this.#metrics.relist('watch-error');
        return;
      }
      // A watch ended because its route moved resumes on the new target from its RV (a pool's
      // follower moving between its leader and the apiserver): not a very short watch, whose
      // relist would end every client watch of the cache.
      const rerouted = watch.rerouted?.() === true;
      watch.stop();
      watch = undefined;
      // A broken connection may not come back soon: the store stops trusting itself now.
      if (end.kind !== 'closed' || end.broken) state.disconnected();
      if (isAborted(signal)) return;
      if (end.kind === 'closed' && end.events === 0 && this.#clock.now() - start < VERY_SHORT_WATCH_MS && !rerouted) {
        this.#metrics.relist('very-short-watch');
        throw new Error(`very short watch: ${this.name}: unexpected watch close - watch lasted less than a second and no items received`);
      }
    }
  }

  /**
   * Applies a watch's events to `store` until the stream ends. A broken connection counts as the
   * end of the stream (client-go's StreamWatcher closes its channel the same way); an ERROR event
   * throws its Status.
   */
  async #handleWatch(
    watch: Watch,
    store: ReflectorStore,
    setResourceVersion: (rv: string) => void,
    exitOnInitialEventsEnd: boolean,
    signal: AbortSignal,
  ): Promise<WatchEnd> {
    const onAbort = (): void => {
      watch.stop();
    };
    // The signal may have fired while the watch was opening: an abort listener added now never runs.
    if (isAborted(signal)) return { kind: 'closed', events: 0, broken: false };
    signal.addEventListener('abort', onAbort, { once: true });
    let events = 0;
    // From an upstream proxy: the events up to the RV its head named replay a state as old as
    // the head's proof; the ones after it (in RV order) are live. A WatchList's initial events
    // go to their own store, whose replace is told once (#watchList).
    const proof = exitOnInitialEventsEnd ? undefined : watch.proof;
    let replaying = proof !== undefined;
    const replayProvenAt = proof === undefined ? undefined : this.#watchOpenedAt - proof.ageMs;
    /** When the state at `rv` was proven upstream: the head's proof while replaying, undefined (its arrival) after. */
    const provenAtOf = (rv: string): number | undefined => {
      if (!replaying) return undefined;
      const until = proof?.resourceVersion;
      const at = parseResourceVersionNumber(rv);
      if (until !== undefined && at !== undefined && at > until) replaying = false;
      return replaying ? replayProvenAt : undefined;
    };
    /** When this turn's first event was applied (performance.now()); undefined once the loop has had a turn since. */
    let turnStarted: number | undefined;
    try {
      for (;;) {
        if (turnStarted === undefined) {
          turnStarted = performance.now();
          setImmediate(() => {
            turnStarted = undefined;
          });
        } else if (performance.now() - turnStarted > WATCH_TURN_BUDGET_MS) {
          await new Promise<void>((resolve) => {
            setImmediate(resolve);
          });
        }
        let event;
        try {
          event = await watch.next();
        } catch (error) {
          if (isConnectionError(error)) {
            this.#link.failed('warn', `watch connection broke: ${describe(error)}`);
            return { kind: 'closed', events, broken: true };
          }
          throw error;
        }
        if (event === undefined) return { kind: 'closed', events, broken: false };
        this.#metrics.event(event.type);
        switch (event.type) {
          case 'ERROR':
            throw new ApiStatusError(event.status.code ?? 500, event.status);
          case 'ADDED':
            if (!exitOnInitialEventsEnd) this.#tellProvenAt(provenAtOf(event.object.resourceVersion));
            store.add(event.object);
            setResourceVersion(event.object.resourceVersion);
            break;
          case 'MODIFIED':
            if (!exitOnInitialEventsEnd) this.#tellProvenAt(provenAtOf(event.object.resourceVersion));
            store.update(event.object);
            setResourceVersion(event.object.resourceVersion);
            break;
          case 'DELETED':
            if (!exitOnInitialEventsEnd) this.#tellProvenAt(provenAtOf(event.object.resourceVersion));
            store.delete(event.object);
            setResourceVersion(event.object.resourceVersion);
            break;
          case 'BOOKMARK':
            if (event.object !== undefined) this.#store.observeBookmark?.(event.object);
            if (!exitOnInitialEventsEnd)
              this.#tellProvenAt(bookmarkProvenAt(event.proofAgeMs, this.#clock.now(), provenAtOf(event.resourceVersion)));
            setResourceVersion(event.resourceVersion);
            if (exitOnInitialEventsEnd && event.initialEventsEnd) return { kind: 'initial-events-end' };
            break;
        }
        events++;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

/** What #listPages read: the items, the list's RV, and when an upstream proxy proved it (undefined: the apiserver's, as of arrival). */
interface ListedPages {
  readonly items: KubeObject[];
  readonly resourceVersion: string;
  readonly pages: number;
  readonly provenAt: number | undefined;
}

/**
 * When a bookmark's RV was proven upstream: its own proof age (an upstream proxy's annotation)
 * pulled back from `now`, or the replay's proof, whichever is older; undefined (as of its
 * arrival) for the apiserver's.
 */
function bookmarkProvenAt(proofAgeMs: number | undefined, now: number, replayed: number | undefined): number | undefined {
  if (proofAgeMs === undefined) return replayed;
  return Math.min(now - proofAgeMs, replayed ?? Number.POSITIVE_INFINITY);
}

/** A call, not a property read: TypeScript would otherwise keep a narrowing of `signal.aborted` across awaits. */
/** A list older than the state the store holds (#refuseOlder). */
class OlderStateError extends Error {}

function isAborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
