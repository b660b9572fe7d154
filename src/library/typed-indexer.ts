/**
 * The informer's Indexer as the library hands it out (client-go tools/cache/index.go Indexer,
 * read side): the objects keyed by `namespace/name`, with indices, decoded at each read (or
 * once per stored version: object-reader.ts).
 *
 * Read-only on purpose: the informer alone writes its Indexer (client-go lets callers write and
 * asks them not to). Reads are synchronous and see the state after the last change the informer
 * applied; handlers run after their change was applied, so a handler reading the Indexer sees at
 * least the state it was told of.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Indexer as CachedIndexer, IndexFunc as CachedIndexFunc } from '../informer/indexer.ts';
import { metaNamespaceKeyFunc } from './keys.ts';
import type { ObjectReader } from './object-reader.ts';

/**
 * client-go IndexFunc: the values under which an object is indexed (none, one or many). Must be
 * a pure function of the object: it is called again with the same object to remove it.
 */
export type IndexFunc<T> = (obj: T) => readonly string[];

/** client-go Indexers: index functions by index name. */
export type Indexers<T> = Readonly<Record<string, IndexFunc<T>>>;

/**
 * client-go cache.Indexer, its reads: every method decodes what it returns, a fresh copy at each
 * call; with informerFor's `cacheDecoded`, the one frozen object of each stored version instead
 * (decoded at its first read, shared by every read after: object-reader.ts).
 */
export interface Indexer<T> {
  /** The object stored under `key` (`namespace/name`, or `name`), if any. */
  getByKey(key: string): T | undefined;
  /** The stored state of the object with the key of `obj`, if any. */
  get(obj: T): T | undefined;
  /** Every object held, in no particular order. */
  list(): T[];
  /** The keys of every object held: cheaper than list(), nothing is decoded. */
  listKeys(): string[];
  /** The objects whose `indexName` index has `indexedValue`. Throws for an unknown index. */
  byIndex(indexName: string, indexedValue: string): T[];
  /** The keys of the objects whose `indexName` index has `indexedValue`: nothing decoded. Throws for an unknown index. */
  indexKeys(indexName: string, indexedValue: string): string[];
  /** The values the `indexName` index currently has. */
  listIndexFuncValues(indexName: string): string[];
  /** Number of objects held. */
  len(): number;
  /**
   * client-go Store.LastStoreSyncResourceVersion: a resourceVersion this Indexer holds every
   * change up to (events and bookmarks alike), '' before the first list is in. For
   * read-your-writes: once `compareResourceVersion(indexer.lastStoreSyncResourceVersion(), rv)` is
   * not negative, reads show the write that returned `rv` (or a later state). It moves whenever
   * the informer's queue is drained (the bookmarks of a quiet watch move it too).
   */
  lastStoreSyncResourceVersion(): string;
}

/** The typed, read-only view of an informer's Indexer. */
export function newTypedIndexer<T extends KubernetesObject>(indexer: CachedIndexer, read: ObjectReader<T>): Indexer<T> {
  const one = (key: string): T | undefined => {
    const cached = indexer.getByKey(key);
    return cached === undefined ? undefined : read(cached);
  };
  return {
    getByKey: one,
    get: (obj) => one(metaNamespaceKeyFunc(obj)),
    list: () => indexer.list().map(read),
    listKeys: () => indexer.listKeys(),
    byIndex: (indexName, indexedValue) => indexer.byIndex(indexName, indexedValue).map(read),
    indexKeys: (indexName, indexedValue) => indexer.indexKeys(indexName, indexedValue),
    listIndexFuncValues: (indexName) => indexer.listIndexFuncValues(indexName),
    len: () => indexer.size(),
    lastStoreSyncResourceVersion: () => indexer.resourceVersion(),
  };
}

/**
 * The informer's own index functions for the caller's: each decodes the object it is given (at
 * every change of it, and again to remove it), so that callers index typed objects.
 */
export function cachedIndexers<T>(indexers: Indexers<T>, read: ObjectReader<T>): Record<string, CachedIndexFunc> {
  const out: Record<string, CachedIndexFunc> = {};
  for (const [name, fn] of Object.entries(indexers)) out[name] = (cached) => fn(read(cached));
  return out;
}
