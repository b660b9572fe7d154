/**
 * SharedIndexInformer (client-go tools/cache/shared_informer.go + controller.go): one reflector
 * feeding a DeltaFIFO, whose Deltas update one Indexer and are distributed to any number of
 * event handlers. Each resource scope costs the apiserver one LIST and one WATCH however many
 * handlers and readers it has.
 *
 * Contract (as client-go's): the indexer holds, eventually, the apiserver's state; a handler sees
 * each object's changes in order (a subsequence of its states, ending with the latest), after the
 * indexer was updated; a handler added late first receives an add for every object held.
 */
import type { Clock, Timer } from '../workqueue/clock.ts';
import { realClock } from '../workqueue/clock.ts';
import type { DeltaFIFO, Deltas } from './delta-fifo.ts';
import { FifoClosedError, newDeltaFIFO } from './delta-fifo.ts';
import type { Indexer, Indexers } from './indexer.ts';
import { defaultIndexers, newIndexer } from './indexer.ts';
import type { ListerWatcher } from './lister-watcher.ts';
import type { InformerMetrics } from './metrics.ts';
import { noopInformerMetrics } from './metrics.ts';
import { isDeletedFinalStateUnknown } from './object.ts';
import type { Notification, ResourceEventHandler } from './processor-listener.ts';
import { ProcessorListener } from './processor-listener.ts';
import type { Reflector, ReflectorLog } from './reflector.ts';
import type { ReflectorStore } from './store.ts';
import { newReflector } from './reflector.ts';

export interface HandlerRegistration {
  /** True once the informer has synced and this handler has handled the initial list. */
  hasSynced(): boolean;
  /** Notifications waiting for this handler. */
  pending(): number;
  /** The most that ever waited. */
  maxPending(): number;
}

export interface SharedIndexInformer {
  readonly name: string;
  /** Adds a handler, at any time; once running, it first gets an add for every object held. */
  addEventHandler(handler: ResourceEventHandler, options?: { resyncPeriodMs?: number }): HandlerRegistration;
  removeEventHandler(registration: HandlerRegistration): void;
  getIndexer(): Indexer;
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
}

export function newSharedIndexInformer(options: SharedIndexInformerOptions): SharedIndexInformer {
  return new SharedIndexInformerImpl(options);
}

class Registration implements HandlerRegistration {
  readonly listener: ProcessorListener;
  readonly #informerSynced: () => boolean;
  constructor(listener: ProcessorListener, informerSynced: () => boolean) {
    this.listener = listener;
    this.#informerSynced = informerSynced;
  }
  hasSynced(): boolean {
    return this.#informerSynced() && this.listener.initialListHandled();
  }
  pending(): number {
    return this.listener.pending();
  }
  maxPending(): number {
    return this.listener.maxPending();
  }
}

class SharedIndexInformerImpl implements SharedIndexInformer {
  readonly name: string;
  readonly #indexer: Indexer;
  readonly #fifo: DeltaFIFO;
  readonly #reflector: Reflector;
  readonly #clock: Clock;
  readonly #metrics: InformerMetrics;
  readonly #log: ReflectorLog;
  readonly #defaultResyncMs: number;
  readonly #registrations = new Set<Registration>();
  /** Listeners due for a resync at the current resync tick (client-go syncingListeners). */
  #syncing = new Set<ProcessorListener>();
  #abort = new AbortController();
  #started = false;
  #stopped = false;
  #loops: Promise<unknown> | undefined;
  #resyncTimer: Timer | undefined;
  #syncWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  #bytes = 0;
  readonly #storeObservers = new Set<ReflectorStore>();
  readonly #errorListeners = new Set<(error: unknown) => void>();

  constructor(options: SharedIndexInformerOptions) {
    this.name = options.name;
    this.#clock = options.clock ?? realClock;
    this.#metrics = options.metrics ?? noopInformerMetrics;
    this.#log = options.log ?? (() => undefined);
    this.#defaultResyncMs = options.resyncPeriodMs ?? 0;
    this.#indexer = newIndexer(options.indexers ?? defaultIndexers);
    this.#fifo = newDeltaFIFO({ knownObjects: this.#indexer, emitDeltaTypeReplaced: true });
    this.#reflector = newReflector({
      name: options.name,
      listerWatcher: options.listerWatcher,
      // Store observers see each change first, in the watch's order (see addStoreObserver).
      store: {
        add: (obj) => {
          this.#observe((observer) => {
            observer.add(obj);
          });
          this.#fifo.add(obj);
        },
        update: (obj) => {
          this.#observe((observer) => {
            observer.update(obj);
          });
          this.#fifo.update(obj);
        },
        delete: (obj) => {
          this.#observe((observer) => {
            observer.delete(obj);
          });
          this.#fifo.delete(obj);
        },
        replace: (list, rv) => {
          this.#observe((observer) => {
            observer.replace(list, rv);
          });
          this.#fifo.replace(list, rv);
          // An empty first list syncs the FIFO with nothing to pop: tell the waiters now.
          this.#notifyIfSynced();
        },
        observeBookmark: (object) => {
          this.#observe((observer) => observer.observeBookmark?.(object));
        },
        updateResourceVersion: (rv) => {
          this.#observe((observer) => observer.updateResourceVersion?.(rv));
        },
        watchConnected: (connected) => {
          this.#observe((observer) => observer.watchConnected?.(connected));
        },
      },
      clock: this.#clock,
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
    });
  }

  addEventHandler(handler: ResourceEventHandler, options: { resyncPeriodMs?: number } = {}): HandlerRegistration {
    const listener = new ProcessorListener(handler, options.resyncPeriodMs ?? this.#defaultResyncMs, (error) => {
      this.#log('warn', `${this.name}: event handler failed: ${error instanceof Error ? error.message : String(error)}`);
    });
    listener.nextResync = this.#clock.now() + listener.resyncPeriodMs;
    const registration = new Registration(listener, () => this.hasSynced());
    this.#registrations.add(registration);
    // Synchronous with handleDeltas: the late handler sees exactly the objects held now, then every later change.
    if (this.#started) {
      for (const obj of this.#indexer.list()) listener.add({ type: 'add', obj, isInInitialList: true });
    }
    this.#scheduleResync();
    return registration;
  }

  removeEventHandler(registration: HandlerRegistration): void {
    if (!(registration instanceof Registration) || !this.#registrations.delete(registration)) return;
    registration.listener.stop();
    this.#syncing.delete(registration.listener);
  }

  getIndexer(): Indexer {
    return this.#indexer;
  }

  run(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    const signal = this.#abort.signal;
    const reflector = this.#reflector.run(signal).finally(() => {
      this.#fifo.close();
    });
    this.#loops = Promise.all([reflector, this.#processLoop()]);
    this.#scheduleResync();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort();
    this.#resyncTimer?.cancel();
    this.#fifo.close();
    await this.#loops;
    for (const registration of this.#registrations) registration.listener.stop();
    const waiters = this.#syncWaiters;
    this.#syncWaiters = [];
    for (const waiter of waiters) waiter.reject(new Error(`informer ${this.name} stopped before it synced`));
  }

  isRunning(): boolean {
    return this.#started && !this.#stopped;
  }

  hasSynced(): boolean {
    return this.#fifo.hasSynced();
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

  snapshotResourceVersion(): string | undefined {
    // The reflector records an RV only after handing its change to the FIFO, synchronously; so
    // with the FIFO empty, every change up to that RV is in the indexer and none after it.
    if (!this.hasSynced() || this.#fifo.len() > 0) return undefined;
    const rv = this.#reflector.lastSyncResourceVersion();
    return rv === '' ? undefined : rv;
  }

  async #processLoop(): Promise<void> {
    for (;;) {
      try {
        await this.#fifo.pop((deltas, isInInitialList) => {
          this.#handleDeltas(deltas, isInInitialList);
        });
      } catch (error) {
        if (error instanceof FifoClosedError) return;
        this.#log('warn', `${this.name}: processing deltas failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      this.#notifyIfSynced();
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
    for (const delta of deltas) {
      const obj = delta.object;
      switch (delta.type) {
        case 'Sync':
        case 'Replaced':
        case 'Added':
        case 'Updated': {
          if (isDeletedFinalStateUnknown(obj)) break; // only ever queued as Deleted
          const old = this.#indexer.getByKey(obj.key);
          if (old !== undefined) {
            this.#indexer.update(obj);
            this.#bytes += obj.raw.length - old.raw.length;
            // An update that did not change the resourceVersion (a Sync, or a Replaced after a relist) is a resync.
            const isSync = old.resourceVersion === obj.resourceVersion;
            this.#distribute({ type: 'update', oldObj: old, newObj: obj }, isSync);
          } else {
            this.#indexer.add(obj);
            this.#bytes += obj.raw.length;
            this.#distribute({ type: 'add', obj, isInInitialList }, false);
          }
          break;
        }
        case 'Deleted': {
          const old = this.#indexer.getByKey(obj.key);
          this.#indexer.delete(obj);
          if (old !== undefined) this.#bytes -= old.raw.length;
          this.#distribute({ type: 'delete', obj }, false);
          break;
        }
      }
    }
    this.#metrics.objects(this.#indexer.size(), this.#bytes);
  }

  #distribute(notification: Notification, isSync: boolean): void {
    let pending = 0;
    for (const registration of this.#registrations) {
      const listener = registration.listener;
      if (!isSync || this.#syncing.has(listener)) listener.add(notification);
      pending += listener.pending();
    }
    this.#metrics.pendingNotifications(pending);
  }

  /** One timer for the earliest handler resync due (client-go shouldResync / resyncCheckPeriod). */
  #scheduleResync(): void {
    if (!this.#started || this.#stopped) return;
    this.#resyncTimer?.cancel();
    this.#resyncTimer = undefined;
    let next = Number.POSITIVE_INFINITY;
    for (const registration of this.#registrations) {
      if (registration.listener.resyncPeriodMs > 0) next = Math.min(next, registration.listener.nextResync);
    }
    if (next === Number.POSITIVE_INFINITY) return;
    this.#resyncTimer = this.#clock.setTimeout(() => {
      this.#resync();
    }, next - this.#clock.now());
  }

  #resync(): void {
    const now = this.#clock.now();
    this.#syncing = new Set();
    for (const registration of this.#registrations) {
      const listener = registration.listener;
      if (listener.resyncPeriodMs > 0 && now >= listener.nextResync) {
        this.#syncing.add(listener);
        listener.nextResync = now + listener.resyncPeriodMs;
      }
    }
    if (this.#syncing.size > 0) this.#fifo.resync();
    this.#scheduleResync();
  }
}
