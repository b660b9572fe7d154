/**
 * The caches the registry runs (cache-registry.ts decides which; this makes, runs and stops
 * them): each a watch cache that is its informer's only store, as kube-apiserver's cacher gives
 * its reflector the watch cache (`cache.NewNamedReflector(..., watchCache, 0)`), with the
 * delegator that decides its reads.
 *
 * Invariant: a running cache was started for one Want and keeps it; the registry compares it
 * with the Want it holds now for the key, and stops the cache when they differ.
 */
import type { SharedInformerFactory } from '../informer/factory.ts';
import type { SharedIndexInformer } from '../informer/shared-informer.ts';
import { describeScope } from './cache-checks.ts';
import { scopeOf } from './cache-scopes.ts';
import type { CachedResourceSpec } from './cached-resources.ts';
import type { CacheDelegator, DelegatorFactory } from './delegator.ts';
import type { Faults } from './faults.ts';
import type { HeldObjects } from '../memory/memory-budget.ts';
import { derivedEncodingBytes } from './derived-encodings.ts';
import { selectableFieldsFor } from './selectable-fields.ts';
import { newWatchCache } from './watch-cache.ts';
import type { CacheState } from './watch-cache.ts';
import type { SelectorScope } from './selector-scope.ts';
import type { ConsistencyChecks } from './consistency-checker.ts';
import { ConsistencyChecker } from './consistency-checker.ts';
import type { StateDir } from './state-dir.ts';
import { MAX_STATE_AGE_MS } from './state-dir.ts';

/** A cache the registry wants running. */
export interface Want {
  /** The factory's scope key. */
  readonly key: string;
  readonly spec: CachedResourceSpec;
  /** The namespace the cache holds; undefined: all (or a cluster-scoped type). */
  readonly namespace: string | undefined;
  /** The selectors the cache's LIST and WATCH carry (selector-scope.ts); undefined: the whole type. */
  readonly selectors: SelectorScope | undefined;
  /** Named (or the registry's own APIService cache): never stopped for idleness or room. */
  readonly pinned: boolean;
  /** When it was last read (clock ms): the LRU order and the idle timeout. */
  lastRead: number;
  /** Resolves with the delegator once its cache has synced, or undefined once the want is dropped. */
  readonly ready: Promise<CacheDelegator | undefined>;
  readonly settle: (delegator: CacheDelegator | undefined) => void;
}

export interface Running {
  readonly want: Want;
  readonly delegator: CacheDelegator;
  /** Its consistency checker (none when checks are off). */
  readonly checker: ConsistencyChecker | undefined;
  /** Removes what was registered on the informer. */
  readonly detach: () => void;
}

export interface RunningCachesOptions {
  readonly factory: SharedInformerFactory;
  readonly delegate: DelegatorFactory;
  readonly maxSnapshots: number | undefined;
  readonly faults: Faults | undefined;
  /** A list-and-watch attempt of the cache started for `want` failed. */
  readonly listAndWatchFailed: (want: Want, error: unknown) => void;
  /** More to register on a cache's informer (the APIService cache's event handlers); returns its removal. */
  readonly attach: (want: Want, informer: SharedIndexInformer) => () => void;
  /** The caches' consistency checks; undefined: none. */
  readonly consistencyChecks: ConsistencyChecks | undefined;
  /** Where caches' states are restored from and saved to (--state-dir); undefined: nowhere. */
  readonly stateDir: StateDir | undefined;
  /** Caches never restored nor saved (the APIService cache: its handlers must see each change). */
  readonly unsaved?: (want: Want) => boolean;
}

export class RunningCaches {
  readonly #options: RunningCachesOptions;
  readonly #running = new Map<string, Running>();
  /**
   * The RV each cache's state was last saved (or restored) at, and when (wall clock): an unchanged
   * cache is written again only before its file would be too old to restore.
   */
  readonly #saved = new Map<string, { readonly rv: bigint; readonly at: number }>();

  constructor(options: RunningCachesOptions) {
    this.#options = options;
  }

  get(key: string): Running | undefined {
    return this.#running.get(key);
  }

  has(key: string): boolean {
    return this.#running.has(key);
  }

  values(): IterableIterator<Running> {
    return this.#running.values();
  }

  /** The cache of `want` in use (open watches read it, whatever its last read). */
  inUse(want: Want): boolean {
    return this.#running.get(want.key)?.delegator.cache.inUse() === true;
  }

  /** The want's delegator, if its cache runs for this want and has synced. */
  servable(want: Want): CacheDelegator | undefined {
    const running = this.#running.get(want.key);
    return running?.want === want && running.delegator.cache.hasSynced() ? running.delegator : undefined;
  }

  /** What the running caches hold, for the memory budget's estimate. */
  held(): HeldObjects {
    let objects = 0;
    let bytes = 0;
    let windowEvents = 0;
    for (const { delegator } of this.#running.values()) {
      const held = delegator.cache.held();
      objects += held.objects;
      bytes += held.bytes;
      windowEvents += delegator.cache.windowStats().size;
    }
    return { objects, bytes, windowEvents, derivedBytes: derivedEncodingBytes() };
  }

  /** Creates, runs and registers the cache of a want. Synchronous: no await between the check and the set. */
  start(want: Want): void {
    const { spec } = want;
    const { factory, maxSnapshots, faults } = this.#options;
    const fields = selectableFieldsFor(spec.group, spec.resource, spec.namespaced);
    // The watch cache is the informer's only store: created first, given to the informer.
    const cache = newWatchCache({
      spec,
      fields,
      namespace: want.namespace,
      selectors: want.selectors,
      ...(maxSnapshots === undefined ? {} : { maxSnapshots }),
      ...(faults === undefined ? {} : { faults }),
    });
    const restored = this.#restore(want);
    if (restored !== undefined) cache.restore(restored);
    const informer = factory.informerFor({
      ...scopeOf(spec, want.namespace, want.selectors),
      extract: fields.extract,
      store: cache.store,
      ...(restored === undefined ? {} : { resumeFrom: String(restored.resourceVersion) }),
    });
    const detachError = informer.onListAndWatchError((error) => {
      this.#options.listAndWatchFailed(want, error);
    });
    const detachMore = this.#options.attach(want, informer);
    const delegator = this.#options.delegate(cache);
    // The readers waiting for this cache (cacheWhenSynced) go on once it has its first list.
    cache.addListener({
      event: () => undefined,
      replaced: () => {
        want.settle(delegator);
      },
      closed: () => {
        want.settle(undefined);
      },
    });
    informer.run();
    // A restored cache serves at once: its readers need not wait for its first list.
    if (restored !== undefined) want.settle(delegator);
    const checks = this.#options.consistencyChecks;
    const checker =
      checks === undefined || checks.periodMs <= 0
        ? undefined
        : new ConsistencyChecker({
            ...checks,
            cache,
            prove: () => delegator.proveCurrent(),
            relist: (reason) => {
              informer.relist(reason);
            },
          });
    checker?.start();
    this.#running.set(want.key, {
      want,
      delegator,
      checker,
      detach: () => {
        checker?.stop();
        detachError();
        detachMore();
      },
    });
  }

  /** The saved state of the want's cache, if one may be restored. */
  #restore(want: Want): CacheState | undefined {
    const { stateDir, unsaved } = this.#options;
    if (stateDir === undefined || unsaved?.(want) === true) return undefined;
    const loaded = stateDir.load(want.key);
    if (loaded === undefined) return undefined;
    this.#saved.set(want.key, { rv: loaded.state.resourceVersion, at: loaded.savedAt });
    return loaded.state;
  }

  /**
   * Saves the state of every running cache whose RV moved since its last save (all of them when
   * `all`), one after another; a failed write is logged by the caller and the others go on.
   */
  async save(all: boolean, failed: (want: Want, error: unknown) => void): Promise<number> {
    const { stateDir, unsaved } = this.#options;
    if (stateDir === undefined) return 0;
    let saved = 0;
    for (const { want, delegator } of [...this.#running.values()]) {
      if (unsaved?.(want) === true) continue;
      const state = delegator.cache.savedState();
      if (state === undefined) continue;
      const last = this.#saved.get(want.key);
      if (!all && last !== undefined && last.rv === state.resourceVersion && Date.now() - last.at < MAX_STATE_AGE_MS / 2) continue;
      try {
        const at = Date.now();
        await stateDir.save(want.key, state);
        this.#saved.set(want.key, { rv: state.resourceVersion, at });
        saved++;
      } catch (error) {
        failed(want, error);
      }
    }
    return saved;
  }

  /** Stops the key's cache unless it runs for `wanted`. */
  async stopUnless(key: string, wanted: Want | undefined): Promise<void> {
    const running = this.#running.get(key);
    if (running === undefined || running.want === wanted) return;
    this.#running.delete(key);
    running.detach();
    running.delegator.cache.close();
    await this.#options.factory.stop(scopeOf(running.want.spec, running.want.namespace, running.want.selectors));
  }

  /** Closes every cache (the registry's stop; the factory is shut down after). */
  closeAll(): void {
    for (const running of this.#running.values()) {
      running.detach();
      running.delegator.cache.close();
    }
    this.#running.clear();
  }
}

export function describe(want: Want): string {
  return describeScope(want.spec, want.namespace, want.selectors);
}
