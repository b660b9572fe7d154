/**
 * Values that many objects share, found by a key, kept once (interning), in bounded memory: two
 * generations of at most `max` keys each. A key found in either is shared (and kept in the
 * young one); when the young generation is full it becomes the old one, and the old one is
 * dropped. So values still in use are shared on and on, while values seen once (a pod's IP, a
 * hash) pass through without pinning memory or crowding out the rest; a value not kept is
 * simply not shared. Objects hold their values themselves: dropping a generation frees only the
 * table's entries.
 */
export class SharingTable<V> {
  readonly #max: number;
  #young = new Map<string, V>();
  #old = new Map<string, V>();

  constructor(max: number) {
    this.#max = max;
  }

  /** The value kept for `key`, else `value`, now kept for it. */
  share(key: string, value: V): V {
    const young = this.#young.get(key);
    if (young !== undefined) return young;
    const kept = this.#old.get(key) ?? value;
    if (this.#young.size >= this.#max) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(key, kept);
    return kept;
  }

  /** Keys held (both generations), for tests. */
  get size(): number {
    return this.#young.size + this.#old.size;
  }
}
