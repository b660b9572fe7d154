/**
 * Indexer (client-go tools/cache/index.go, thread_safe_store.go, store.go): the informer's
 * objects keyed by `namespace/name`, with indices kept up to date on every change, so that
 * "all pods in namespace A" or "all pods on node N" is a lookup, not a scan.
 *
 * Invariant: for every index, value v lists key k iff the index function of the object stored
 * at k returns v. Empty value sets are removed, so churn never grows the indices.
 * Synchronous on purpose: no await between reading and writing.
 */
import type { KubeObject } from './object.ts';
import { fieldValue } from './object.ts';
import type { KeyListerGetter, ReflectorStore } from './store.ts';

/** Returns the index values of an object (client-go IndexFunc). */
export type IndexFunc = (obj: KubeObject) => readonly string[];
export type Indexers = Readonly<Record<string, IndexFunc>>;

/** client-go NamespaceIndex: the name of the index by metadata.namespace ('' for cluster-scoped objects). */
export const NAMESPACE_INDEX = 'namespace';
/** Values are `key=value` for every label. */
export const LABEL_INDEX = 'label';

/** client-go MetaNamespaceIndexFunc. */
export const namespaceIndexFunc: IndexFunc = (obj) => [obj.namespace];

export const labelIndexFunc: IndexFunc = (obj) => Object.entries(obj.labels).map(([k, v]) => `${k}=${v}`);

/** An index over a selectable field such as pods' `spec.nodeName`; index name `field:<name>`. */
export function fieldIndex(field: string): [string, IndexFunc] {
  return [
    `field:${field}`,
    (obj) => {
      const value = fieldValue(obj, field);
      return value === undefined ? [] : [value];
    },
  ];
}

export const defaultIndexers: Indexers = { [NAMESPACE_INDEX]: namespaceIndexFunc, [LABEL_INDEX]: labelIndexFunc };

export interface Indexer extends ReflectorStore, KeyListerGetter {
  /** Removes the object stored under `obj.key` (a KubeObject or a DeletedFinalStateUnknown). */
  delete(obj: { readonly key: string }): void;
  get(obj: KubeObject): KubeObject | undefined;
  list(): KubeObject[];
  /** Number of objects held. */
  size(): number;
  /** Objects whose `indexName` index has `value`. Throws for an unknown index. */
  byIndex(indexName: string, value: string): KubeObject[];
  /** Keys whose `indexName` index has `value`. */
  indexKeys(indexName: string, value: string): string[];
  /** The values the index currently has. */
  listIndexFuncValues(indexName: string): string[];
  hasIndex(indexName: string): boolean;
  /** Adds indices; allowed while empty only (client-go: "cannot add indexers to running index"). */
  addIndexers(indexers: Indexers): void;
  /** The resourceVersion of the last replace / bookmark / event applied. */
  resourceVersion(): string;
}

export function newIndexer(indexers: Indexers = defaultIndexers): Indexer {
  return new IndexerImpl(indexers);
}

class IndexerImpl implements Indexer {
  readonly #items = new Map<string, KubeObject>();
  readonly #indexers = new Map<string, IndexFunc>();
  /** index name -> value -> keys */
  readonly #indices = new Map<string, Map<string, Set<string>>>();
  #resourceVersion = '';

  constructor(indexers: Indexers) {
    this.addIndexers(indexers);
  }

  add(obj: KubeObject): void {
    this.#put(obj);
  }

  update(obj: KubeObject): void {
    this.#put(obj);
  }

  delete(obj: { readonly key: string }): void {
    const old = this.#items.get(obj.key);
    if (old === undefined) return;
    this.#items.delete(obj.key);
    this.#updateIndices(old, undefined, obj.key);
  }

  replace(list: readonly KubeObject[], resourceVersion: string): void {
    this.#items.clear();
    for (const index of this.#indices.values()) index.clear();
    for (const obj of list) this.#put(obj);
    this.#resourceVersion = resourceVersion;
  }

  updateResourceVersion(resourceVersion: string): void {
    this.#resourceVersion = resourceVersion;
  }

  resourceVersion(): string {
    return this.#resourceVersion;
  }

  get(obj: KubeObject): KubeObject | undefined {
    return this.#items.get(obj.key);
  }

  getByKey(key: string): KubeObject | undefined {
    return this.#items.get(key);
  }

  list(): KubeObject[] {
    return [...this.#items.values()];
  }

  listKeys(): string[] {
    return [...this.#items.keys()];
  }

  size(): number {
    return this.#items.size;
  }

  byIndex(indexName: string, value: string): KubeObject[] {
    return this.indexKeys(indexName, value).map((key) => this.#items.get(key) as KubeObject);
  }

  indexKeys(indexName: string, value: string): string[] {
    const index = this.#indices.get(indexName);
    if (index === undefined) throw new Error(`Index with name ${indexName} does not exist`);
    const keys = index.get(value);
    return keys === undefined ? [] : [...keys];
  }

  listIndexFuncValues(indexName: string): string[] {
    return [...(this.#indices.get(indexName)?.keys() ?? [])];
  }

  hasIndex(indexName: string): boolean {
    return this.#indexers.has(indexName);
  }

  addIndexers(indexers: Indexers): void {
    if (this.#items.size > 0) throw new Error('cannot add indexers to running index');
    for (const [name, fn] of Object.entries(indexers)) {
      if (this.#indexers.has(name)) throw new Error(`indexer conflict: ${name}`);
      this.#indexers.set(name, fn);
      this.#indices.set(name, new Map());
    }
  }

  #put(obj: KubeObject): void {
    const old = this.#items.get(obj.key);
    this.#items.set(obj.key, obj);
    this.#updateIndices(old, obj, obj.key);
  }

  /** Moves `key` from the values of `old` to those of `current` in every index (client-go updateIndices). */
  #updateIndices(old: KubeObject | undefined, current: KubeObject | undefined, key: string): void {
    for (const [name, fn] of this.#indexers) {
      const index = this.#indices.get(name) as Map<string, Set<string>>;
      const oldValues = old === undefined ? [] : fn(old);
      const newValues = current === undefined ? [] : fn(current);
      // Most updates leave index values alone (same namespace, same labels): skip the work.
      if (oldValues.length === 1 && newValues.length === 1 && oldValues[0] === newValues[0]) continue;
      for (const value of oldValues) {
        if (newValues.includes(value)) continue;
        const set = index.get(value);
        if (set === undefined) continue;
        set.delete(key);
        if (set.size === 0) index.delete(value);
      }
      for (const value of newValues) {
        if (oldValues.includes(value)) continue;
        let set = index.get(value);
        if (set === undefined) index.set(value, (set = new Set()));
        set.add(key);
      }
    }
  }
}
