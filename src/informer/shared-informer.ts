/**
 * SharedIndexInformer (client-go tools/cache/shared_informer.go + controller.go): one reflector
 * feeding a DeltaFIFO, whose Deltas update one Indexer and are distributed to any number of
 * event handlers. Each resource scope costs the apiserver one LIST and one WATCH however many
 * handlers and readers it has.
 *
 * Direct mode (options.store): the reflector writes into the given store itself, in the
 * apiserver's order, and each change is distributed to the handlers as it is applied; no
 * DeltaFIFO, no Indexer, one copy of each object. The watch cache is such a store, as
 * kube-apiserver's watch cache is its reflector's only store.
 *
 * Contract (as client-go's): the indexer holds, eventually, the apiserver's state; a handler sees
 * each object's changes in order (a subsequence of its states, ending with the latest), after the
 * indexer was updated; a handler added late first receives an add for every object held.
 */
import type { Clock } from '../clock/clock.ts';
import { realClock } from '../clock/clock.ts';
import type { DeltaFIFO, Deltas } from './delta-fifo.ts';
import { FifoClosedError, newDeltaFIFO } from './delta-fifo.ts';
import type { Indexer, Indexers } from './indexer.ts';
import { defaultIndexers, newIndexer } from './indexer.ts';
import type { ListerWatcher } from './lister-watcher.ts';
import type { InformerMetrics } from './metrics.ts';
import { noopInformerMetrics } from './metrics.ts';
import { isDeletedFinalStateUnknown, objectByteLength } from './object.ts';
import type { KubeObject } from './object.ts';
import type { ResourceEventHandler } from './processor-listener.ts';
import type { Reflector, ReflectorLog } from './reflector.ts';
import type { InformerStore, KeyListerGetter, ReflectorStore } from './store.ts';
import { newReflector } from './reflector.ts';
import type { HandlerRegistration } from './shared-processor.ts';
import { SharedProcessor } from './shared-processor.ts';

export type { HandlerRegistration } from './shared-processor.ts';

export interface SharedIndexInformer {
  readonly name: string;
  /** Adds a handler, at any time; once running, it first gets an add for every object held. */
  addEventHandler(handler: ResourceEventHandler, options?: { resyncPeriodMs?: number }): HandlerRegistration;
  removeEventHandler(registration: HandlerRegistration): void;
  /** The Indexer; throws in direct mode (read the store given instead). */
  getIndexer(): Indexer;
  /** What the informer holds: its Indexer, or in direct mode its store. */
  getStore(): KeyListerGetter & { size(): number };
  /**
   * client-go SetTransform: `transform` is applied to each object the reflector hands over,
   * before anything stores, queues or observes it (controller.go newQueueFIFO: the FIFO's
   * Transformer). Before run() only: throws once started. Must not throw.
   */
  setTransform(transform: ObjectTransform): void;
  /** Starts the reflector and the processing loop (once; later calls do nothing). */
  run(): void;
  /** Stops listing and watching; resolves when both loops have ended. */
  stop(): Promise<void>;
  isRunning(): boolean;
  /** True once the initial list has been applied to the indexer. */
  hasSynced(): boolean;
  /** Resolves once synced; rejects if the informer stops first or `signal` aborts. */
  waitForSync(signal?: AbortSignal): Promise<void>;
  lastSyncResourceVersion(): string;
  /** Lists again at once, consistently, replacing the store's state (Reflector.relist). */
  relist(reason: string): void;
  /**
   * The resourceVersion the indexer's contents are exactly the state of, or undefined while
   * changes are still queued between the reflector and the indexer (or before the first sync).
   * Read synchronously with the indexer: no await in between.
   */
  snapshotResourceVersion(): string | undefined;
  /**
   * Adds a second store the reflector writes to, synchronously and in the order the apiserver
   * sent the changes, before they are queued for the indexer (the DeltaFIFO batches each
   * object's changes, so the indexer sees them in another order across objects). The watch cache
   * is one: kube-apiserver's watch cache is its reflector's store. Add it before run() to see
   * the first list. Returns the function that removes it.
   */
  addStoreObserver(observer: ReflectorStore): () => void;
  /**
   * Calls `listener` with each error that ended a list-and-watch attempt (client-go's
   * SetWatchErrorHandler, but any number of listeners, at any time): the reflector still backs
   * off and retries; an owner that knows retrying is futile (403 Forbidden, 404 Not Found) stops
   * the informer. Returns the function that removes it.
   */
  onListAndWatchError(listener: (error: unknown) => void): () => void;
}

/**
 * client-go TransformFunc over the cached form: the object to store in place of `obj`. Must keep
 * its key (namespace and name) and should keep its resourceVersion: an update whose
 * resourceVersion equals the stored one is taken for a resync (client-go's rule, #handleDeltas).
 */
export type ObjectTransform = (obj: KubeObject) => KubeObject;

export interface SharedIndexInformerOptions {
  readonly name: string;
  readonly listerWatcher: ListerWatcher;
  readonly indexers?: Indexers;
  /** Default resync period for handlers that give none; 0 = never. */
  readonly resyncPeriodMs?: number;
  readonly pageSize?: number;
  readonly useWatchList?: boolean;
  readonly minWatchTimeoutSeconds?: number;
  readonly clock?: Clock;
  readonly metrics?: InformerMetrics;
  readonly log?: ReflectorLog;
  /** Direct mode: the reflector's only store, read by the handlers too (no DeltaFIFO, no Indexer; `indexers` unused). */
  readonly store?: InformerStore;
  /** The reflector's wake-up when the apiserver answers again (ReflectorOptions.reachable). */
  readonly reachable?: (signal: AbortSignal) => Promise<void>;
  /** Direct mode: the store holds a restored state at this RV; the reflector resumes from it (ReflectorOptions.resumeFrom). */
  readonly resumeFrom?: string;
}

export function newSharedIndexInformer(options: SharedIndexInformerOptions): SharedIndexInformer {
  return new SharedIndexInformerImpl(options);
}

/** Where the reflector's changes go after the store observers: the DeltaFIFO, or the direct store. */
interface ChangeSink {
  add(obj: KubeObject): void;
  update(obj: KubeObject): void;
  delete(obj: KubeObject): void;
  replace(list: readonly KubeObject[], rv: string): void;
}

class SharedIndexInformerImpl implements SharedIndexInformer {
  readonly name: string;
  /** FIFO mode: the Indexer and the DeltaFIFO in front of it; undefined in direct mode. */
  readonly #indexer: Indexer | undefined;
  readonly #fifo: DeltaFIFO | undefined;
  /** Direct mode: the reflector's only store. */
  readonly #store: InformerStore | undefined;
  readonly #reflector: Reflector;
  readonly #processor: SharedProcessor;
  readonly #metrics: InformerMetrics;
  readonly #log: ReflectorLog;
  #abort = new AbortController();
  #started = false;
  #stopped = false;
  #loops: Promise<unknown> | undefined;
  #syncWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  #bytes = 0;
  readonly #storeObservers = new Set<ReflectorStore>();
  #transform: ObjectTransform | undefined;
  /** FIFO mode: a bookmark or a list came since the handlers were last told one (onBookmark). */
  #bookmarked = false;
  /** The RV the handlers were last told by onBookmark. */
  #toldBookmark = '';
  readonly #errorListeners = new Set<(error: unknown) => void>();

  constructor(options: SharedIndexInformerOptions) {
    this.name = options.name;
    const clock = options.clock ?? realClock;
    this.#metrics = options.metrics ?? noopInformerMetrics;
    this.#log = options.log ?? (() => undefined);
    this.#store = options.store;
    let sink: ChangeSink;
    if (options.store === undefined) {
      const indexer = newIndexer(options.indexers ?? defaultIndexers);
      const fifo = newDeltaFIFO({ knownObjects: indexer, emitDeltaTypeReplaced: true, metrics: this.#metrics.fifo, clock });
      this.#indexer = indexer;
      this.#fifo = fifo;
      sink = {
        add: (obj) => {
          fifo.add(obj);
        },
        update: (obj) => {
          fifo.update(obj);
        },
        delete: (obj) => {
          fifo.delete(obj);
        },
        replace: (list, rv) => {
          fifo.replace(list, rv);
          // An empty first list syncs the FIFO with nothing to pop: tell the waiters now.
          this.#notifyIfSynced();
        },
      };
    } else {
      sink = this.#directSink(options.store);
    }
    const store = this.#store;
    this.#processor = new SharedProcessor({
      name: options.name,
      clock,
      metrics: this.#metrics,
      log: this.#log,
      defaultResyncMs: options.resyncPeriodMs ?? 0,
      hasSynced: () => this.hasSynced(),
      list: () => this.#list(),
      resync: () => {
        // client-go: Sync deltas for every object held, delivered as updates to the listeners due.
        if (this.#fifo !== undefined) this.#fifo.resync();
        else if (store !== undefined)
          for (const obj of store.list()) this.#processor.distribute({ type: 'update', oldObj: obj, newObj: obj }, true);
      },
    });
    this.#reflector = newReflector({
      name: options.name,
      listerWatcher: options.listerWatcher,
      // Store observers see each change first, in the watch's order (see addStoreObserver).
      store: {
        add: (given) => {
          const obj = this.#transformed(given);
          this.#observe((observer) => {
            observer.add(obj);
          });
          sink.add(obj);
        },
        update: (given) => {
          const obj = this.#transformed(given);
          this.#observe((observer) => {
            observer.update(obj);
          });
          sink.update(obj);
        },
        delete: (given) => {
          const obj = this.#transformed(given);
          this.#observe((observer) => {
            observer.delete(obj);
          });
          sink.delete(obj);
        },
        replace: (given, rv) => {
          // delta_fifo.go Replace emits a Bookmark delta too (EmitDeltaTypeBookmark).
          this.#bookmarked = true;
          const transform = this.#transform;
          const list = transform === undefined ? given : given.map(transform);
          this.#observe((observer) => {
            observer.replace(list, rv);
          });
          sink.replace(list, rv);
        },
        observeBookmark: (object) => {
          this.#bookmarked = true;
          this.#observe((observer) => observer.observeBookmark?.(object));
          store?.observeBookmark?.(object);
        },
        updateResourceVersion: (rv) => {
          this.#observe((observer) => observer.updateResourceVersion?.(rv));
          store?.updateResourceVersion?.(rv);
          this.#advanceStoreResourceVersion();
        },
        watchConnected: (connected) => {
          this.#observe((observer) => observer.watchConnected?.(connected));
          store?.watchConnected?.(connected);
        },
        provenAt: (at) => {
          this.#observe((observer) => observer.provenAt?.(at));
          store?.provenAt?.(at);
        },
      },
      clock,
      metrics: this.#metrics.reflector,
      log: this.#log,
      onListAndWatchError: (error) => {
        for (const listener of this.#errorListeners) {
          try {
            listener(error);
          } catch (thrown) {
            this.#log('warn', `${this.name}: list-and-watch error listener failed: ${String(thrown)}`);
          }
        }
      },
      ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
      ...(options.useWatchList === undefined ? {} : { useWatchList: options.useWatchList }),
      ...(options.minWatchTimeoutSeconds === undefined ? {} : { minWatchTimeoutSeconds: options.minWatchTimeoutSeconds }),
      ...(options.reachable === undefined ? {} : { reachable: options.reachable }),
      ...(options.resumeFrom === undefined ? {} : { resumeFrom: options.resumeFrom }),
    });
  }

  /**
   * Direct mode: each change is applied to the store and handed to the handlers at once, in the
   * apiserver's order, with the state it replaced (read from the store just before). A relist's
   * replace is told as adds, updates and deletes against what the store held. Synchronous.
   */
  #directSink(store: InformerStore): ChangeSink {
    const upsert = (obj: KubeObject, apply: (obj: KubeObject) => void): void => {
      const old = store.getByKey(obj.key);
      apply(obj);
      this.#bytes += objectByteLength(obj) - (old === undefined ? 0 : objectByteLength(old));
      if (old === undefined) this.#processor.distribute({ type: 'add', obj, isInInitialList: false }, false);
      else this.#processor.distribute({ type: 'update', oldObj: old, newObj: obj }, false);
      this.#metrics.objects(store.size(), this.#bytes);
    };
    return {
      add: (obj) => {
        upsert(obj, (o) => {
          store.add(o);
        });
      },
      update: (obj) => {
        upsert(obj, (o) => {
          store.update(o);
        });
      },
      delete: (obj) => {
        const old = store.getByKey(obj.key);
        store.delete(obj);
        if (old !== undefined) this.#bytes -= objectByteLength(old);
        this.#processor.distribute({ type: 'delete', obj }, false);
        this.#metrics.objects(store.size(), this.#bytes);
      },
      replace: (list, rv) => {
        const initial = !store.hasSynced();
        // What the store held, for the handlers' updates and deletes: only if someone listens.
        const before = this.#processor.hasHandlers() ? new Map([...store.list()].map((o) => [o.key, o])) : undefined;
        store.replace(list, rv);
        this.#bytes = 0;
        for (const obj of list) this.#bytes += objectByteLength(obj);
        if (before !== undefined) {
          for (const obj of list) {
            const old = before.get(obj.key);
            before.delete(obj.key);
            if (old === undefined) this.#processor.distribute({ type: 'add', obj, isInInitialList: initial }, false);
            // An unchanged resourceVersion after a relist is a resync (as a Replaced delta of it is).
            else this.#processor.distribute({ type: 'update', oldObj: old, newObj: obj }, old.resourceVersion === obj.resourceVersion);
          }
          for (const old of before.values()) this.#processor.distribute({ type: 'delete', obj: old }, false);
        }
        this.#metrics.objects(store.size(), this.#bytes);
        this.#notifyIfSynced();
      },
    };
  }

  #list(): Iterable<KubeObject> {
    if (this.#store !== undefined) return this.#store.list();
    return this.#indexer?.list() ?? [];
  }

  addEventHandler(handler: ResourceEventHandler, options: { resyncPeriodMs?: number } = {}): HandlerRegistration {
    return this.#processor.addEventHandler(handler, options);
  }

  removeEventHandler(registration: HandlerRegistration): void {
    this.#processor.removeEventHandler(registration);
  }

  getIndexer(): Indexer {
    if (this.#indexer === undefined) throw new Error(`informer ${this.name} has no Indexer: its store is the one it was given`);
    return this.#indexer;
  }

  getStore(): KeyListerGetter & { size(): number } {
    return this.#store ?? this.getIndexer();
  }

  setTransform(transform: ObjectTransform): void {
    // shared_informer.go SetTransform: "informer has already started".
    if (this.#started) throw new Error(`informer ${this.name} has already started: set its transform before run()`);
    this.#transform = transform;
  }

  #transformed(obj: KubeObject): KubeObject {
    return this.#transform === undefined ? obj : this.#transform(obj);
  }

  run(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    const direct = this.#store;
    if (direct?.hasSynced() === true) {
      // A restored store (resumeFrom): what it holds is counted as a list's would be.
      this.#bytes = 0;
      for (const obj of direct.list()) this.#bytes += objectByteLength(obj);
      this.#metrics.objects(direct.size(), this.#bytes);
    }
    this.#processor.start();
    const signal = this.#abort.signal;
    const fifo = this.#fifo;
    const reflector = this.#reflector.run(signal).finally(() => {
      fifo?.close();
    });
    this.#loops = Promise.all([reflector, fifo === undefined ? undefined : this.#processLoop(fifo)]);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort();
    this.#fifo?.close();
    await this.#loops;
    this.#processor.stop();
    const waiters = this.#syncWaiters;
    this.#syncWaiters = [];
    for (const waiter of waiters) waiter.reject(new Error(`informer ${this.name} stopped before it synced`));
  }

  isRunning(): boolean {
    return this.#started && !this.#stopped;
  }

  hasSynced(): boolean {
    return this.#store?.hasSynced() ?? this.#fifo?.hasSynced() ?? false;
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.hasSynced()) return Promise.resolve();
    if (this.#stopped) return Promise.reject(new Error(`informer ${this.name} is stopped`));
    return new Promise((resolve, reject) => {
      const waiter = { resolve, reject };
      this.#syncWaiters.push(waiter);
      signal?.addEventListener(
        'abort',
        () => {
          this.#syncWaiters = this.#syncWaiters.filter((w) => w !== waiter);
          reject(new Error(`waiting for informer ${this.name} to sync was cancelled`));
        },
        { once: true },
      );
    });
  }

  lastSyncResourceVersion(): string {
    return this.#reflector.lastSyncResourceVersion();
  }

  relist(reason: string): void {
    this.#reflector.relist(reason);
  }

  snapshotResourceVersion(): string | undefined {
    // The reflector records an RV only after handing its change to the FIFO (or the direct store),
    // synchronously; so with the FIFO empty, every change up to that RV is in the store and none after it.
    if (!this.hasSynced() || (this.#fifo?.len() ?? 0) > 0) return undefined;
    const rv = this.#reflector.lastSyncResourceVersion();
    return rv === '' ? undefined : rv;
  }

  async #processLoop(fifo: DeltaFIFO): Promise<void> {
    for (;;) {
      try {
        await fifo.pop((deltas, isInInitialList) => {
          this.#handleDeltas(deltas, isInInitialList);
        });
        this.#advanceStoreResourceVersion();
      } catch (error) {
        if (error instanceof FifoClosedError) return;
        this.#log('warn', `${this.name}: processing deltas failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      this.#notifyIfSynced();
    }
  }

  /**
   * FIFO mode: the Indexer's resourceVersion (client-go Store.LastStoreSyncResourceVersion, fed by
   * Bookmark deltas through the FIFO, store.go and controller.go processDeltas) moves to the
   * reflector's last one whenever nothing is queued between them: every change up to it is then
   * in the Indexer and none after it (the reflector records an RV only after queueing its
   * change). The DeltaFIFO orders by key, not by RV, so an applied object's RV alone would claim
   * too much. Synchronous.
   */
  #advanceStoreResourceVersion(): void {
    const fifo = this.#fifo;
    if (fifo === undefined || this.#indexer === undefined || !fifo.hasSynced() || fifo.len() > 0) return;
    const rv = this.#reflector.lastSyncResourceVersion();
    if (rv === '') return;
    this.#indexer.updateResourceVersion?.(rv);
    // A bookmark (or a list) since the last one told: the handlers hear the RV the Indexer reached,
    // after every notification of the changes before it.
    if (this.#bookmarked && rv !== this.#toldBookmark) {
      this.#bookmarked = false;
      this.#toldBookmark = rv;
      this.#processor.distribute({ type: 'bookmark', resourceVersion: rv }, false);
    }
  }

  /** Calls each store observer, guarded: an observer's failure must not end the reflector's watch. */
  #observe(call: (observer: ReflectorStore) => void): void {
    for (const observer of this.#storeObservers) {
      try {
        call(observer);
      } catch (error) {
        this.#log('warn', `${this.name}: store observer failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  addStoreObserver(observer: ReflectorStore): () => void {
    this.#storeObservers.add(observer);
    return () => this.#storeObservers.delete(observer);
  }

  onListAndWatchError(listener: (error: unknown) => void): () => void {
    this.#errorListeners.add(listener);
    return () => this.#errorListeners.delete(listener);
  }

  #notifyIfSynced(): void {
    if (this.#syncWaiters.length === 0 || !this.hasSynced()) return;
    const waiters = this.#syncWaiters;
    this.#syncWaiters = [];
    for (const waiter of waiters) waiter.resolve();
  }

  /** client-go processDeltas: oldest first; the indexer first, then the handlers. Synchronous. */
  #handleDeltas(deltas: Deltas, isInInitialList: boolean): void {
    const indexer = this.getIndexer();
    for (const delta of deltas) {
      const obj = delta.object;
      switch (delta.type) {
        case 'Sync':
        case 'Replaced':
        case 'Added':
        case 'Updated': {
          if (isDeletedFinalStateUnknown(obj)) break; // only ever queued as Deleted
          const old = indexer.getByKey(obj.key);
          if (old !== undefined) {
            indexer.update(obj);
            this.#bytes += objectByteLength(obj) - objectByteLength(old);
            // An update that did not change the resourceVersion (a Sync, or a Replaced after a relist) is a resync.
            const isSync = old.resourceVersion === obj.resourceVersion;
            this.#processor.distribute({ type: 'update', oldObj: old, newObj: obj }, isSync);
          } else {
            indexer.add(obj);
            this.#bytes += objectByteLength(obj);
            this.#processor.distribute({ type: 'add', obj, isInInitialList }, false);
          }
          break;
        }
        case 'Deleted': {
          const old = indexer.getByKey(obj.key);
          indexer.delete(obj);
          if (old !== undefined) this.#bytes -= objectByteLength(old);
          this.#processor.distribute({ type: 'delete', obj }, false);
          break;
        }
      }
    }
    this.#metrics.objects(indexer.size(), this.#bytes);
  }
}
