/**
 * The lifecycle of the watch caches: which types are cached, in which scope, when each cache
 * starts and stops. (The apiserver's cacher makes one cache per resource at startup; the proxy
 * makes them as reads arrive, over a SharedInformerFactory.)
 *
 * - Named (`--resources`): only those types. Their caches, at the group's preferred version and
 *   in the --namespace scope, start with start() and are never stopped for idleness; readiness
 *   (synced()) waits for them. Another version of a named type is cached on demand.
 * - Named in a selector scope (`--resources pods:spec.nodeName=n1`, selector-scope.ts): a cache
 *   of the objects the scope selects, started with start() as a named type's, at the group's
 *   preferred version and in the --namespace scope. It answers a LIST or WATCH only when the
 *   read's selectors cover its scope (the narrowest such cache answers, before any cache of the
 *   whole type); every other read of the type goes to a cache of the whole type if the type is
 *   also named whole, else to the apiserver. Scopes are only ever named: the registry never
 *   picks one itself, and a read no scope covers never starts a scoped cache.
 * - Unnamed: every type discovery reports as listable and watchable, cached on its first read,
 *   stopped once not read for idleTimeoutMs, or when a new one would exceed maxLazyCaches (the
 *   least recently read goes first). Secrets only when named: a proxy holding every secret of
 *   the cluster in memory is a choice the operator makes, not a default.
 * - Only types kube-apiserver serves itself (built-in groups and custom resources): an
 *   aggregated API server writes its own list bodies, which the cache cannot reproduce; see
 *   api-services.ts for how they are told apart.
 * - cacheFor() never waits: it serves caches that have synced. cacheWhenSynced() waits for a
 *   cache that is starting (or that this read starts): a cold cache serves its first readers
 *   instead of sending them, watches included, to the apiserver beside its own LIST and WATCH.
 *   A read that comes before start() (the proxy listens first) waits for it the same way.
 *
 * Discovery stays current (discovery.ts refreshes by ETag, so an unchanged refresh costs two
 * 304s): the registry runs discovery's periodic loop as a backstop, and asks for a refresh at
 * once when an APIService comes, goes or changes (the APIService informer: every CRD group
 * version and every aggregated API has one), when a read names a type discovery does not know
 * (a new CRD in a known group makes no APIService event; its first read is passed through
 * anyway), and when a cache's LIST answers 404 (its type went away). No CRD informer: a
 * namespaced sidecar may not list CRDs, and these signals cover what caching needs. A type that
 * discovery drops, or describes differently, has its caches stopped; the next read starts anew.
 *
 * The proxy's own identity: a cache whose LIST is forbidden (403) is stopped and that scope is
 * remembered as forbidden for forbiddenRetryMs, so reads are passed through without a LIST each.
 * For a namespaced type forbidden cluster-wide (a sidecar with a namespaced Role), reads in
 * namespace N get a cache of N alone, which is tried (and remembered) the same way.
 *
 * Invariants: #running holds the caches whose informer runs, each started for the Want that
 * #wanted held for its key at the time; cacheFor() serves a cache only while that Want is still
 * the wanted one. Changes to #wanted are synchronous; the control loop (a rate-limited
 * workqueue of scope keys, stingy: one key is never reconciled twice at once) brings #running
 * to #wanted, so a stop and the start that follows it never interleave.
 */
import type { SharedInformerFactory } from '../informer/factory.ts';
import { scopeKey } from '../informer/factory.ts';
import type { ResourceScope } from '../informer/lister-watcher.ts';
import type { SharedIndexInformer } from '../informer/shared-informer.ts';
import { isForbidden, isNotFound } from '../upstream/api-error.ts';
import type { Discovery } from '../upstream/discovery.ts';
import type { ResourceInfo } from '../upstream/resource-map.ts';
import { isCacheable } from '../upstream/resource-map.ts';
import type { Clock, Timer } from '../clock/clock.ts';
import { realClock, within } from '../clock/clock.ts';
import { defaultControllerRateLimiter } from '../workqueue/default-rate-limiters.ts';
import type { RateLimitingQueue } from '../workqueue/rate-limiting-queue.ts';
import { newRateLimitingQueue } from '../workqueue/rate-limiting-queue.ts';
import { BUILT_IN_GROUPS, qualifiedResource } from '../kube/group-resource.ts';
import { API_SERVICES, apiServiceName, isLocalApiService, onApiServiceChanges } from './api-services.ts';
import { specOf } from './cached-resources.ts';
import type { CachedResourceSpec, ScopedResourceSpec } from './cached-resources.ts';
import type { RequestSelectors, SelectorScope } from './selector-scope.ts';
import { describeSelectors, scopeCovers, scopeNarrowness } from './selector-scope.ts';
import { selectableFieldsFor } from './selectable-fields.ts';
import { CacheScopes, scopeOf } from './cache-scopes.ts';
import { cacheStatus, checkName, namedCheck } from './cache-checks.ts';
import type { CacheStatus, WatchCacheSource } from './cache-source.ts';
import type { CachedKind } from './read-your-writes.ts';
import type { CacheDelegator } from './delegator.ts';
import type { HeldObjects } from '../memory/memory-budget.ts';
import { DEFAULT_FORBIDDEN_RETRY_MS, DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_LAZY_CACHES } from './cache-registry-options.ts';
import type { CacheRegistryLog, CacheRegistryOptions } from './cache-registry-options.ts';
import { RunningCaches, describe } from './running-caches.ts';
import { DEFAULT_STATE_SAVE_PERIOD_MS } from './state-dir.ts';
import type { Want } from './running-caches.ts';

export type { CacheRegistryLog, CacheRegistryOptions } from './cache-registry-options.ts';
export { DEFAULT_FORBIDDEN_RETRY_MS, DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_LAZY_CACHES } from './cache-registry-options.ts';

/** The idle sweep's period: idleness is enforced to within this (and at most a minute). */
const MAX_SWEEP_MS = 60_000;

export function newCacheRegistry(options: CacheRegistryOptions): WatchCacheSource {
  return new CacheRegistry(options);
}

const API_SERVICES_KEY = scopeKey(API_SERVICES);

class CacheRegistry implements WatchCacheSource {
  readonly #factory: SharedInformerFactory;
  readonly #discovery: Discovery;
  readonly #namedSpecs: readonly CachedResourceSpec[];
  readonly #scopedSpecs: readonly ScopedResourceSpec[];
  readonly #namespace: string | undefined;
  readonly #idleMs: number;
  readonly #maxLazy: number;
  readonly #clock: Clock;
  readonly #log: CacheRegistryLog;
  readonly #admitsNewCache: () => boolean;
  readonly #queue: RateLimitingQueue<string>;
  readonly #wanted = new Map<string, Want>();
  readonly #running: RunningCaches;
  /** Which types and scopes may be cached, and which LISTs are known to be forbidden. */
  readonly #scopes: CacheScopes;
  /** Named types readiness still waits for: removed once their cache synced, or once they cannot be cached. */
  readonly #namedPending = new Set<string>();
  readonly #abort = new AbortController();
  #sweepTimer: Timer | undefined;
  #saveTimer: Timer | undefined;
  readonly #savePeriodMs: number;
  #worker: Promise<void> | undefined;
  #discoveryLoop: Promise<void> | undefined;
  #unsubscribeDiscovery: (() => void) | undefined;
  #started = false;
  #stopping: Promise<void> | undefined;
  /** Resolves once discovery has answered (its first change after start(), or at once if it had). */
  #discovered: Promise<void> = Promise.resolve();
  /** Resolves at start() or stop(): the proxy listens before it starts its caches (a pool member first settles). */
  readonly #begun = Promise.withResolvers<undefined>();

  constructor(options: CacheRegistryOptions) {
    this.#factory = options.factory;
    this.#discovery = options.discovery;
    this.#namedSpecs = options.resources ?? [];
    this.#scopedSpecs = options.scoped ?? [];
    const whole = new Set(this.#namedSpecs.map((s) => qualifiedResource(s.group, s.resource)));
    const scopedTypes = new Set(this.#scopedSpecs.map(({ spec }) => qualifiedResource(spec.group, spec.resource)));
    this.#namespace = options.namespace;
    this.#idleMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.#maxLazy = options.maxLazyCaches ?? DEFAULT_MAX_LAZY_CACHES;
    this.#admitsNewCache = options.admitsNewCache ?? (() => true);
    this.#clock = options.clock ?? realClock;
    this.#scopes = new CacheScopes({
      discovery: options.discovery,
      named: options.resources === undefined && options.scoped === undefined ? undefined : new Set([...whole, ...scopedTypes]),
      scopedOnly: new Set([...scopedTypes].filter((name) => !whole.has(name))),
      namespace: options.namespace,
      forbiddenRetryMs: options.forbiddenRetryMs ?? DEFAULT_FORBIDDEN_RETRY_MS,
      clock: this.#clock,
      servedLocally: (group, version) => this.#servedLocally(group, version),
    });
    this.#log = options.log ?? (() => undefined);
    this.#running = new RunningCaches({
      factory: options.factory,
      delegate: options.delegate,
      maxSnapshots: options.maxSnapshots,
      faults: options.faults,
      listAndWatchFailed: (want, error) => {
        this.#listAndWatchFailed(want, error);
      },
      attach: (want, informer) => (want.key === API_SERVICES_KEY ? this.#watchApiServices(informer) : () => undefined),
      consistencyChecks: options.consistencyChecks,
      stateDir: options.stateDir,
      unsaved: (want) => want.key === API_SERVICES_KEY,
    });
    this.#savePeriodMs = options.stateDir === undefined ? 0 : (options.stateSavePeriodMs ?? DEFAULT_STATE_SAVE_PERIOD_MS);
    this.#queue = newRateLimitingQueue<string>(defaultControllerRateLimiter(this.#clock), { clock: this.#clock });
  }

  start(): void {
    if (this.#started || this.#stopping !== undefined) return;
    this.#started = true;
    this.#begun.resolve(undefined);
    for (const spec of this.#namedSpecs) this.#namedPending.add(qualifiedResource(spec.group, spec.resource));
    for (const { spec, scope } of this.#scopedSpecs) this.#namedPending.add(namedName(spec, scope));
    let discovered: () => void = () => undefined;
    this.#discovered = this.#discovery.hasSynced()
      ? Promise.resolve()
      : new Promise((resolve) => {
          discovered = resolve;
        });
    this.#unsubscribeDiscovery = this.#discovery.onChange((_added, removed) => {
      discovered();
      this.#discoveryChanged(removed);
    });
    this.#discoveryLoop = this.#discovery.start(this.#abort.signal);
    this.#worker = this.#runWorker();
    this.#scheduleSweep();
    this.#scheduleSave();
    this.#startNamed();
  }

  synced(): boolean {
    if (!this.#started) return false;
    for (const want of this.#wanted.values()) {
      const name = namedName(want.spec, want.selectors);
      if (want.pinned && this.#namedPending.has(name) && this.#running.get(want.key)?.delegator.cache.hasSynced() === true) {
        this.#namedPending.delete(name);
      }
    }
    return this.#namedPending.size === 0;
  }

  /**
   * Readiness waits only for the named caches' first sync: after it, a cache whose watch is down
   * still passes (its reads pass through to the apiserver, as correct as without the proxy).
   * Failing it then would take a sidecar's pod out of its Services' endpoints, and during an
   * apiserver outage every such pod at once: an app outage made of a control-plane one.
   */
  held(): HeldObjects {
    return this.#running.held();
  }

  cachedKind(group: string, resource: string): CachedKind | undefined {
    for (const { want } of this.#running.values()) {
      if (want.spec.group === group && want.spec.resource === resource) return { kind: want.spec.kind, namespaced: want.spec.namespaced };
    }
    return undefined;
  }

  checks(): CacheStatus[] {
    this.synced();
    const now = this.#clock.now();
    const checks = new Map<string, CacheStatus>();
    for (const spec of this.#namedSpecs) {
      const check = namedCheck(
        spec,
        this.#namespace,
        !this.#started || this.#namedPending.has(qualifiedResource(spec.group, spec.resource)),
      );
      checks.set(check.name, check);
    }
    for (const { spec, scope } of this.#scopedSpecs) {
      const check = namedCheck(spec, this.#namespace, !this.#started || this.#namedPending.has(namedName(spec, scope)), scope);
      checks.set(check.name, check);
    }
    for (const running of this.#running.values()) {
      const { want, delegator, checker } = running;
      const name = this.#checkName(want);
      checks.set(name, cacheStatus(name, delegator.cache, checks.get(name)?.failure, now, checker?.last()));
    }
    return [...checks.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** cache-<type>, with the version and the namespace when they are not the type's own cache's. */
  #checkName(want: Want): string {
    const { group, version } = want.spec;
    return checkName(
      want.spec,
      want.namespace,
      { ownVersion: version === this.#discovery.preferredVersion(group), ownNamespace: this.#namespace },
      want.selectors,
    );
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#begun.resolve(undefined);
      this.#abort.abort();
      this.#sweepTimer?.cancel();
      this.#saveTimer?.cancel();
      this.#unsubscribeDiscovery?.();
      this.#queue.shutDown();
      await this.#worker;
      await this.#discoveryLoop;
      await this.#save(true);
      this.#running.closeAll();
      this.#wanted.clear();
      await this.#factory.shutdown();
    })();
    return this.#stopping;
  }

  cacheFor(group: string, version: string, resource: string, namespace: string, selectors?: RequestSelectors): CacheDelegator | undefined {
    const want = this.#lookup(group, version, resource, namespace, selectors);
    return want === undefined ? undefined : this.#servable(want);
  }

  async cacheWhenSynced(
    group: string,
    version: string,
    resource: string,
    namespace: string,
    waitMs: number,
    signal?: AbortSignal,
    selectors?: RequestSelectors,
  ): Promise<CacheDelegator | undefined> {
    const deadline = this.#clock.now() + waitMs;
    // A read that comes between the proxy's listen and its start() waits for the start: passed
    // through, a watch would stay at the apiserver until its timeout.
    if (!this.#started && this.#stopping === undefined) await within(this.#clock, this.#begun.promise, waitMs, signal);
    // A proxy of lazily cached types reads discovery after it starts: until then no type can be
    // looked up, and its first readers wait for discovery as they wait for their cache.
    if (!this.#discovery.hasSynced() && this.#started) await within(this.#clock, this.#discovered, deadline - this.#clock.now(), signal);
    const want = this.#lookup(group, version, resource, namespace, selectors);
    if (want === undefined) return undefined;
    const left = deadline - this.#clock.now();
    if (this.#servable(want) === undefined && left > 0) await within(this.#clock, want.ready, left, signal);
    return this.#servable(want);
  }

  /**
   * The want that answers reads of this type in `namespace` with these selectors: the narrowest
   * selector-scoped cache that covers them, else the cache of the whole type, made now if none
   * is (the control loop starts its cache); undefined when no cache may answer them.
   */
  #lookup(group: string, version: string, resource: string, namespace: string, selectors?: RequestSelectors): Want | undefined {
    if (!this.#started || this.#stopping !== undefined) return undefined;
    const spec = this.#scopes.specFor(group, version, resource);
    if (spec === undefined) return undefined;
    const now = this.#clock.now();
    const covering = selectors === undefined ? undefined : this.#coveringScope(spec, namespace, selectors);
    if (covering !== undefined) {
      covering.lastRead = now;
      return covering;
    }
    if (!this.#scopes.wholeAllowed(spec)) return undefined;
    const scope = this.#scopes.scopeFor(spec, namespace, now);
    if (scope === false) return undefined;
    const key = scopeKey(scopeOf(spec, scope));
    const want = this.#wanted.get(key);
    if (want === undefined) {
      if (this.#scopes.isForbidden(key, now)) return undefined;
      const pinned = this.#scopes.isNamedScope(spec, scope);
      return pinned || this.#admitsNewCache() ? this.#want(spec, scope, pinned, false, undefined) : undefined;
    }
    want.lastRead = now;
    return want;
  }

  /**
   * The narrowest wanted selector-scoped cache of this type and version whose namespace holds
   * `namespace` ('' : all) and whose scope `selectors` cover (selector-scope.ts); the first
   * named among equals. Synced or not: a named scope's readers wait for it as for any named cache.
   */
  #coveringScope(spec: CachedResourceSpec, namespace: string, selectors: RequestSelectors): Want | undefined {
    let best: Want | undefined;
    let bestNarrowness = -1;
    for (const want of this.#wanted.values()) {
      const scope = want.selectors;
      const other = want.spec;
      if (scope === undefined || other.group !== spec.group || other.version !== spec.version || other.resource !== spec.resource) continue;
      if (want.namespace !== undefined && want.namespace !== namespace) continue;
      const narrowness = scopeNarrowness(scope);
      if (narrowness <= bestNarrowness) continue;
      if (!scopeCovers(scope, selectors, selectableFieldsFor(spec.group, spec.resource, spec.namespaced).conversion)) continue;
      best = want;
      bestNarrowness = narrowness;
    }
    return best;
  }

  /** A call, not a field read: TypeScript would keep a narrowing of the field across awaits. */
  #isStopping(): boolean {
    return this.#stopping !== undefined;
  }

  /** The wanted cache's delegator, if the cache runs for this want and has synced. */
  #servable(want: Want): CacheDelegator | undefined {
    return this.#running.servable(want);
  }

  /**
   * True when kube-apiserver serves this group version itself, false when an aggregated API
   * server does, undefined while not known: the APIService cache (started here on the first
   * need) has not synced, or the proxy may not list APIServices (then custom resources are not
   * cached: telling them from aggregated APIs needs it).
   */
  #servedLocally(group: string, version: string): boolean | undefined {
    const now = this.#clock.now();
    let want = this.#wanted.get(API_SERVICES_KEY);
    if (want === undefined) {
      const info = this.#discovery.resolve(API_SERVICES.group, API_SERVICES.version, API_SERVICES.resource);
      if (info === undefined || this.#scopes.isForbidden(API_SERVICES_KEY, now)) return undefined;
      want = this.#want(specOf(info), undefined, true, true, undefined);
    }
    want.lastRead = now;
    const apiServices = this.#servable(want);
    if (apiServices === undefined) return undefined;
    const apiService = apiServices.cache.get(apiServiceName(group, version));
    return apiService !== undefined && isLocalApiService(apiService);
  }

  /**
   * Wants a cache: started now (named caches, at start()) or by the control loop. A lazily
   * started one may push out the least recently read.
   */
  #want(
    spec: CachedResourceSpec,
    namespace: string | undefined,
    pinned: boolean,
    startNow: boolean,
    selectors: SelectorScope | undefined,
  ): Want {
    let settle: (delegator: CacheDelegator | undefined) => void = () => undefined;
    const ready = new Promise<CacheDelegator | undefined>((resolve) => {
      settle = resolve;
    });
    const want: Want = {
      key: scopeKey(scopeOf(spec, namespace, selectors)),
      spec,
      namespace,
      selectors,
      pinned,
      lastRead: this.#clock.now(),
      ready,
      settle,
    };
    if (!pinned) this.#makeRoom();
    this.#wanted.set(want.key, want);
    if (startNow && !this.#running.has(want.key)) this.#running.start(want);
    else this.#queue.add(want.key);
    this.#log('debug', `caching ${describe(want)}${pinned ? '' : ' (read, not cached yet)'}`);
    return want;
  }

  /** Stops wanting a cache; the control loop stops it. */
  #unwant(key: string, why: string): void {
    const want = this.#wanted.get(key);
    if (want === undefined) return;
    this.#wanted.delete(key);
    want.settle(undefined);
    this.#queue.add(key);
    this.#log('debug', `not caching ${describe(want)} any more: ${why}`);
  }

  /** Unwants the least recently read lazily started caches until there is room for one more. */
  #makeRoom(): void {
    for (;;) {
      let lazy = 0;
      let oldest: Want | undefined;
      for (const want of this.#wanted.values()) {
        if (want.pinned) continue;
        lazy++;
        // A cache with open watches is in use, whatever its last read.
        if (this.#running.inUse(want)) continue;
        if (oldest === undefined || want.lastRead < oldest.lastRead) oldest = want;
      }
      if (oldest === undefined || lazy < this.#maxLazy) return;
      this.#unwant(oldest.key, `more than ${this.#maxLazy} caches, and it is the least recently read`);
    }
  }

  /** Wants each named type's cache that is not wanted yet and can be. Idempotent. */
  #startNamed(): void {
    if (this.#stopping !== undefined) return;
    const now = this.#clock.now();
    const entries = [...this.#namedSpecs.map((spec) => ({ spec, scope: undefined })), ...this.#scopedSpecs];
    for (const { spec: named, scope: selectors } of entries) {
      const name = namedName(named, selectors);
      const version = this.#discovery.preferredVersion(named.group);
      const info = version === undefined ? undefined : this.#discovery.resolve(named.group, version, named.resource);
      if (info === undefined || !isCacheable(info)) continue; // gone since resolved: passed through until it is back
      if (!BUILT_IN_GROUPS.has(named.group)) {
        const local = this.#servedLocally(named.group, info.version);
        if (local === undefined && !this.#scopes.isForbidden(API_SERVICES_KEY, now)) continue; // asked again once APIServices synced
        if (local !== true) {
          if (this.#namedPending.delete(name)) {
            const reason =
              local === false
                ? 'an aggregated API server serves it (its list bodies are its own)'
                : 'the proxy may not list APIServices, to tell a custom resource from an aggregated API';
            this.#log('warn', `not cached: ${reason}; its reads are passed through`, { resource: name });
          }
          continue;
        }
      }
      const spec = this.#scopes.specFor(named.group, info.version, named.resource) ?? specOf(info);
      const namespace = spec.namespaced ? this.#namespace : undefined;
      const key = scopeKey(scopeOf(spec, namespace, selectors));
      if (this.#wanted.has(key) || this.#scopes.isForbidden(key, now)) continue;
      this.#want(spec, namespace, true, true, selectors);
    }
  }

  /** Types gone or changed: their caches stop (and their permission memory goes); the next read starts anew. */
  #discoveryChanged(removed: readonly ResourceInfo[]): void {
    const gone = new Set(removed.map((r) => scopeKey({ group: r.group, version: r.version, resource: r.resource })));
    const typeOf = (key: string): string => scopeKey({ ...parseKey(key), namespace: undefined });
    for (const key of [...this.#wanted.keys()]) if (gone.has(typeOf(key))) this.#unwant(key, 'discovery no longer describes it so');
    this.#scopes.forgetForbidden((key) => gone.has(typeOf(key)));
    // A named type that came back (or changed) is wanted again.
    this.#startNamed();
  }

  /** A list-and-watch attempt of a running cache failed. */
  #listAndWatchFailed(want: Want, error: unknown): void {
    if (this.#running.get(want.key)?.want !== want || this.#wanted.get(want.key) !== want) return;
    if (isForbidden(error)) {
      const retryMs = this.#scopes.forbid(want.key);
      if (want.pinned) this.#namedPending.delete(namedName(want.spec, want.selectors));
      const fallback =
        want.spec.namespaced && want.namespace === undefined && want.selectors === undefined
          ? 'reads in one namespace get a cache of that namespace'
          : 'reads are passed through';
      this.#log('info', `the proxy may not list ${describe(want)}: ${fallback} (tried again in ${retryMs / 1000} s)`);
      this.#unwant(want.key, 'its LIST is forbidden');
    } else if (isNotFound(error)) {
      // The type may be gone (a deleted CRD): discovery's change stops the cache.
      this.#discovery.invalidate();
    }
  }

  /** APIService changes mean groups came, went or moved: refresh discovery, then the named types may be cacheable. */
  #watchApiServices(informer: SharedIndexInformer): () => void {
    return onApiServiceChanges(
      informer,
      () => {
        this.#discovery.invalidate();
        this.#startNamed();
      },
      () => {
        this.#startNamed();
      },
      this.#abort.signal,
    );
  }

  /** The control loop: one worker, so caches start and stop one at a time. */
  async #runWorker(): Promise<void> {
    for (;;) {
      const next = await this.#queue.get();
      if (next.shutdown) return;
      const key = next.item;
      try {
        await this.#reconcile(key);
        this.#queue.forget(key);
      } catch (error) {
        this.#log('warn', `starting or stopping the cache of ${key} failed, retrying: ${String(error)}`);
        this.#queue.addRateLimited(key);
      } finally {
        this.#queue.done(key);
      }
    }
  }

  /** Brings the key's running cache to the wanted one: stops a cache no longer wanted (or wanted anew), starts a wanted one. */
  async #reconcile(key: string): Promise<void> {
    if (this.#stopping !== undefined) return;
    await this.#running.stopUnless(key, this.#wanted.get(key));
    const want = this.#wanted.get(key);
    if (!this.#isStopping() && want !== undefined && !this.#running.has(key)) this.#running.start(want);
  }

  /** Every save period, the caches whose state changed since their last save (state-dir.ts). */
  #scheduleSave(): void {
    if (this.#savePeriodMs <= 0) return;
    this.#saveTimer = this.#clock.setTimeout(() => {
      void this.#save(false).finally(() => {
        if (this.#stopping === undefined) this.#scheduleSave();
      });
    }, this.#savePeriodMs);
    this.#saveTimer.unref?.();
  }

  /** Saves the running caches' states (`all`: every one, at stop); failures are logged, never thrown. */
  async #save(all: boolean): Promise<void> {
    const started = performance.now();
    const saved = await this.#running.save(all, (want, error) => {
      this.#log('warn', `saving the state of ${describe(want)} failed: ${String(error)}`);
    });
    if (saved > 0)
      this.#log(
        all ? 'info' : 'debug',
        `saved the state of ${String(saved)} caches in ${String(Math.round(performance.now() - started))} ms`,
      );
  }

  /** Stops lazily started caches not read for idleTimeoutMs; forgets expired permission denials. */
  #scheduleSweep(): void {
    const period = Math.max(1, Math.min(MAX_SWEEP_MS, this.#idleMs / 2));
    this.#sweepTimer = this.#clock.setTimeout(() => {
      const now = this.#clock.now();
      for (const want of [...this.#wanted.values()]) {
        if (want.pinned) continue;
        // Open watches read it all the time, without asking for it again.
        if (this.#running.inUse(want)) want.lastRead = now;
        else if (now - want.lastRead >= this.#idleMs) this.#unwant(want.key, `not read for ${this.#idleMs / 1000} s`);
      }
      this.#scopes.expireForbidden(now);
      if (this.#stopping === undefined) this.#scheduleSweep();
    }, period);
  }
}

/** The scope key's parts (scopeKey joins group, version, resource, namespace and selectors with '|'). */
function parseKey(key: string): ResourceScope {
  const [group = '', version = '', resource = '', namespace = ''] = key.split('|');
  return { group, version, resource, namespace: namespace === '' ? undefined : namespace };
}

/** A named cache's name for readiness: `pods`, or `pods:spec.nodeName=n1` for a selector scope. */
function namedName(spec: CachedResourceSpec, selectors: SelectorScope | undefined): string {
  const type = qualifiedResource(spec.group, spec.resource);
  return selectors === undefined ? type : `${type}:${describeSelectors(selectors)}`;
}
