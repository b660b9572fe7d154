/**
 * SharedIndexInformer<T> (client-go tools/cache/shared_informer.go) as the library hands it out:
 * the port's informer (reflector → DeltaFIFO → Indexer → handlers, src/informer/), its objects
 * decoded into the caller's type at each notification and read, stopped by an AbortSignal where
 * client-go takes a stop channel, its notifications also an async iterator.
 *
 * A thin adapter on purpose: the informer it wraps is the one the proxy's tests hold to
 * client-go's semantics (delivery order, DeletedFinalStateUnknown, resync, relist on 410,
 * bookmarks, WatchList); this file adds types and nothing to that behaviour.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { DeletedFinalStateUnknown as CachedDeletedFinalStateUnknown, KubeObject } from '../informer/object.ts';
import { isDeletedFinalStateUnknown as isCachedDeletedFinalStateUnknown } from '../informer/object.ts';
import type { ResourceEventHandler as CachedHandler } from '../informer/processor-listener.ts';
import type { HandlerRegistration, SharedIndexInformer as CachedInformer } from '../informer/shared-informer.ts';
import type { InformerEvent } from './informer-events.ts';
import { newEventStream } from './informer-events.ts';
import type { DeletedFinalStateUnknown } from './keys.ts';
import type { ObjectReader } from './object-reader.ts';
import type { TransformFunc } from './transform.ts';
import { cachedTransform } from './transform.ts';
import type { Indexer, Indexers } from './typed-indexer.ts';
import { cachedIndexers, newTypedIndexer } from './typed-indexer.ts';

/**
 * client-go ResourceEventHandler: what an informer tells a handler, each call with decoded copies
 * of the objects. Calls come in order, one at a time: a handler that returns a promise gets its
 * next call once the promise settles (its own buffer holds the rest meanwhile; other handlers
 * are not held up). A handler that throws or rejects is logged and goes on getting calls.
 */
export interface ResourceEventHandler<T> {
  /** The object appeared: listed at start (`isInInitialList`), created, or moved into the informer's selection. */
  onAdd?(obj: T, isInInitialList: boolean): void | Promise<void>;
  /** The object changed, or a resync re-delivered it (then both have the same resourceVersion). */
  onUpdate?(oldObj: T, newObj: T): void | Promise<void>;
  /** The object is gone: its last state, or DeletedFinalStateUnknown when the informer missed the final one. */
  onDelete?(obj: T | DeletedFinalStateUnknown<T>): void | Promise<void>;
  /**
   * The Indexer now holds every change up to `resourceVersion` and none after it, reached by a
   * bookmark: a watch's BOOKMARK, or the end of the initial list or a relist (client-go 1.37's
   * Store.Bookmark, KEP-5647; client-go tells the store, this library the handlers too). Called
   * in order, after the calls for every change before it: a controller that wrote an object at
   * RV w may act once `compareResourceVersion(resourceVersion, w) >= 0`. Events move
   * `getIndexer().lastStoreSyncResourceVersion()` as well; this call comes on bookmarks only.
   */
  onBookmark?(resourceVersion: string): void | Promise<void>;
}

/** Options of addEventHandler. */
export interface EventHandlerOptions {
  /**
   * How often this handler gets every object again as an update with no change (client-go
   * AddEventHandlerWithResyncPeriod), in ms; 0 never. Default: the factory's resyncPeriodMs.
   */
  readonly resyncPeriodMs?: number;
}

/**
 * client-go SharedIndexInformer. Eventually consistent (client-go's contract): the Indexer holds,
 * eventually, the apiserver's state of the objects in scope; each handler sees each object's
 * changes in order, a subsequence of its states ending with the latest, after the Indexer was
 * updated; a handler added late first gets an add for every object held.
 */
export interface SharedIndexInformer<T> {
  /** For logs: the resource and namespace, e.g. `pods in default`. */
  readonly name: string;
  /** Adds a handler, at any time: once running, it first gets an add for every object held. */
  addEventHandler(handler: ResourceEventHandler<T>, options?: EventHandlerOptions): HandlerRegistration;
  /** Removes a handler: it gets no call after this returns. */
  removeEventHandler(registration: HandlerRegistration): void;
  /**
   * The informer's notifications as an async iterator (a handler of its own: an add for every
   * object held first, once running), until `signal` aborts, the informer stops, or the loop is
   * left. The informer waits for no consumer: a slow one only lets its own buffer grow.
   */
  events(signal?: AbortSignal): AsyncIterableIterator<InformerEvent<T>, undefined, undefined>;
  /**
   * Adds indices (client-go AddIndexers), before the informer holds any object; throws after.
   * Each index function gets the decoded object, at each change of it.
   */
  addIndexers(indexers: Indexers<T>): void;
  /** The informer's Indexer, read-only: what a controller reads instead of asking the apiserver. */
  getIndexer(): Indexer<T>;
  /**
   * client-go SetTransform: `transform` is applied to each object the apiserver sends, before the
   * informer queues, stores, indexes or hands it out (src/library/transform.ts), e.g.
   * transformStripManagedFields. Before the informer starts: throws once it has. A transform may
   * blank resourceVersion without losing updates (unlike client-go since 0.33): the informer tells
   * changes from resyncs by the resourceVersion the apiserver sent.
   */
  setTransform(transform: TransformFunc): void;
  /**
   * Lists and watches until `signal` aborts, then stops; resolves once stopped (client-go
   * Run(stopCh)). An informer from a factory is run by the factory's start() instead.
   */
  run(signal: AbortSignal): Promise<void>;
  /** True once the first list is in the Indexer (client-go HasSynced). */
  hasSynced(): boolean;
  /**
   * Resolves once synced (client-go WaitForCacheSync for this informer); rejects if the informer
   * stops first or `signal` aborts.
   */
  waitForSync(signal?: AbortSignal): Promise<void>;
  /** The resourceVersion of the last list, event or bookmark the informer applied ('' before the first list). */
  lastSyncResourceVersion(): string;
  /**
   * Calls `listener` with each error that ended a list or watch (client-go SetWatchErrorHandler,
   * any number of listeners): the informer backs off and retries on its own; a caller that knows
   * retrying is futile (403 Forbidden: the RBAC is missing) may stop it. Returns the remover.
   */
  onListAndWatchError(listener: (error: unknown) => void): () => void;
}

/** The typed informer over `informer`, and how its owner stops it. */
export interface TypedInformer<T> extends SharedIndexInformer<T> {
  /** Stops the informer (once) and ends its event iterators; resolves once stopped. */
  stop(): Promise<void>;
}

/** Wraps one of the port's informers; `decode` makes the caller's objects from the cached bytes. */
export function newTypedInformer<T extends KubernetesObject>(
  informer: CachedInformer,
  read: ObjectReader<T>,
  log: (level: 'warn', message: string) => void = () => undefined,
): TypedInformer<T> {
  return new TypedInformerImpl(informer, read, log);
}

class TypedInformerImpl<T extends KubernetesObject> implements TypedInformer<T> {
  readonly name: string;
  readonly #informer: CachedInformer;
  readonly #read: ObjectReader<T>;
  readonly #log: (level: 'warn', message: string) => void;
  /** Aborted once the informer stops: ends every event iterator and every run(). */
  readonly #stopped = new AbortController();
  #stopping: Promise<void> | undefined;

  constructor(informer: CachedInformer, read: ObjectReader<T>, log: (level: 'warn', message: string) => void) {
    this.name = informer.name;
    this.#informer = informer;
    this.#read = read;
    this.#log = log;
  }

  addEventHandler(handler: ResourceEventHandler<T>, options: EventHandlerOptions = {}): HandlerRegistration {
    return this.#informer.addEventHandler(this.#cachedHandler(handler), options);
  }

  removeEventHandler(registration: HandlerRegistration): void {
    this.#informer.removeEventHandler(registration);
  }

  events(signal?: AbortSignal): AsyncIterableIterator<InformerEvent<T>, undefined, undefined> {
    const signals = signal === undefined ? [this.#stopped.signal] : [signal, this.#stopped.signal];
    return newEventStream<T>((sink) => {
      const registration = this.addEventHandler({
        onAdd: (object, isInInitialList) => sink.push({ type: 'add', object, isInInitialList }),
        onUpdate: (oldObject, object) => sink.push({ type: 'update', oldObject, object }),
        onDelete: (object) => sink.push({ type: 'delete', object }),
      });
      return () => {
        this.removeEventHandler(registration);
      };
    }, signals);
  }

  addIndexers(indexers: Indexers<T>): void {
    this.#informer.getIndexer().addIndexers(cachedIndexers(indexers, this.#read));
  }

  getIndexer(): Indexer<T> {
    return newTypedIndexer(this.#informer.getIndexer(), this.#read);
  }

  setTransform(transform: TransformFunc): void {
    this.#informer.setTransform(
      cachedTransform(transform, (message) => {
        this.#log('warn', `${this.name}: ${message}`);
      }),
    );
  }

  async run(signal: AbortSignal): Promise<void> {
    this.#informer.run();
    const stopped = this.#stopped.signal;
    if (!signal.aborted && !stopped.aborted) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          signal.removeEventListener('abort', done);
          stopped.removeEventListener('abort', done);
          resolve();
        };
        signal.addEventListener('abort', done, { once: true });
        stopped.addEventListener('abort', done, { once: true });
      });
    }
    await this.stop();
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#stopped.abort();
      await this.#informer.stop();
    })();
    return this.#stopping;
  }

  hasSynced(): boolean {
    return this.#informer.hasSynced();
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    return this.#informer.waitForSync(signal);
  }

  lastSyncResourceVersion(): string {
    return this.#informer.lastSyncResourceVersion();
  }

  onListAndWatchError(listener: (error: unknown) => void): () => void {
    return this.#informer.onListAndWatchError(listener);
  }

  /** The port's handler for `handler`: each call decodes only what the handler asked for. */
  #cachedHandler(handler: ResourceEventHandler<T>): CachedHandler {
    const decode = this.#read;
    const cached: CachedHandler = {};
    if (handler.onAdd !== undefined) {
      const onAdd = handler.onAdd.bind(handler);
      cached.onAdd = (obj, isInInitialList) => onAdd(decode(obj), isInInitialList);
    }
    if (handler.onUpdate !== undefined) {
      const onUpdate = handler.onUpdate.bind(handler);
      cached.onUpdate = (oldObj, newObj) => onUpdate(decode(oldObj), decode(newObj));
    }
    if (handler.onDelete !== undefined) {
      const onDelete = handler.onDelete.bind(handler);
      cached.onDelete = (obj) => onDelete(this.#deleted(obj));
    }
    if (handler.onBookmark !== undefined) cached.onBookmark = handler.onBookmark.bind(handler);
    return cached;
  }

  #deleted(obj: KubeObject | CachedDeletedFinalStateUnknown): T | DeletedFinalStateUnknown<T> {
    if (!isCachedDeletedFinalStateUnknown(obj)) return this.#read(obj);
    return { kind: 'DeletedFinalStateUnknown', key: obj.key, obj: obj.obj === undefined ? undefined : this.#read(obj.obj) };
  }
}
