/**
 * What the reflector writes into (client-go tools/cache/store.go: the reflector's Store). The
 * DeltaFIFO implements it; so does a plain Indexer. Synchronous on purpose: no await between
 * reading and writing the store's state.
 */
import type { KubeObject } from './object.ts';

export interface ReflectorStore {
  add(obj: KubeObject): void;
  update(obj: KubeObject): void;
  delete(obj: KubeObject): void;
  /** Replaces the whole contents with `list`, as of `resourceVersion`. */
  replace(list: readonly KubeObject[], resourceVersion: string): void;
  /** Called when a bookmark or event moves the resourceVersion (client-go ResourceVersionUpdater). */
  updateResourceVersion?(resourceVersion: string): void;
  /** Called with the object of each BOOKMARK the watch received, before its RV is applied. */
  observeBookmark?(object: Buffer): void;
  /**
   * Called with true once a watch is open and the store holds the state it continues from (after
   * the LIST, or after a WatchList's initial events), and with false when that watch ends. While
   * false the store hears nothing from the apiserver: a caller that serves "recent" reads from it
   * must not trust it (the reflector may be backing off, relisting, or the apiserver down).
   */
  watchConnected?(connected: boolean): void;
  /**
   * Called before the reflector applies what an upstream proxy served from its own cache (a
   * list, a watch's replayed events, a bookmark: protocol/proof-age.ts), with when the upstream
   * last proved that state current (on the clock the reflector and the store share, before the
   * arrival); and with undefined before what is fresh as of its arrival (the apiserver's answers,
   * a proxy's live events). In force until the next call. A store that serves "recent" reads
   * counts what it applies as progress as of that time, never later (the watch cache).
   */
  provenAt?(at: number | undefined): void;
}

/** What the DeltaFIFO asks of the informer's indexer to detect deletions and resync (client-go KeyListerGetter). */
export interface KeyListerGetter {
  listKeys(): string[];
  getByKey(key: string): KubeObject | undefined;
}

/**
 * A store that is at once what the reflector writes and what an informer's handlers and readers
 * read (the informer's "direct" mode, shared-informer.ts): kube-apiserver's watch cache is its
 * reflector's only store. The reflector's changes reach it in the apiserver's order, with no
 * DeltaFIFO between (which batches each object's changes and so reorders them across objects).
 */
export interface InformerStore extends ReflectorStore, KeyListerGetter {
  /** Objects held. */
  size(): number;
  /** Every object held, in any order. */
  list(): Iterable<KubeObject>;
  /** True once the first list (replace) is held: the informer's hasSynced. */
  hasSynced(): boolean;
}
