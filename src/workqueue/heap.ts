/**
 * A binary min-heap whose entries know their position (Go's container/heap as used by
 * delaying_queue.go's waitForPriorityQueue), so that an entry whose key moved can be fixed in place
 * in O(log n) instead of being searched for.
 *
 * Invariant: for every entry e in the heap, #entries[e.index] === e, and no entry is less than its
 * parent; entries not in the heap have index -1.
 */

export interface HeapEntry {
  /** Position in the heap, kept by the heap; -1 when not in it. */
  index: number;
}

export interface Heap<E extends HeapEntry> {
  readonly length: number;
  /** The least entry, or undefined when empty. */
  peek(): E | undefined;
  push(entry: E): void;
  /** Removes and returns the least entry, or undefined when empty. */
  pop(): E | undefined;
  /** Restores the order after the key of `entry`, which is in the heap, changed. */
  fix(entry: E): void;
  clear(): void;
}

/** `less(a, b)`: a comes out before b. */
export function newHeap<E extends HeapEntry>(less: (a: E, b: E) => boolean): Heap<E> {
  return new BinaryHeap(less);
}

class BinaryHeap<E extends HeapEntry> implements Heap<E> {
  #entries: E[] = [];
  readonly #less: (a: E, b: E) => boolean;

  constructor(less: (a: E, b: E) => boolean) {
    this.#less = less;
  }

  get length(): number {
    return this.#entries.length;
  }

  peek(): E | undefined {
    return this.#entries[0];
  }

  push(entry: E): void {
    entry.index = this.#entries.length;
    this.#entries.push(entry);
    this.#up(entry.index);
  }

  pop(): E | undefined {
    const entries = this.#entries;
    const top = entries[0];
    const last = entries.pop();
    if (top === undefined || last === undefined) return undefined;
    if (last !== top) {
      entries[0] = last;
      last.index = 0;
      this.#down(0);
    }
    top.index = -1;
    return top;
  }

  fix(entry: E): void {
    if (!this.#down(entry.index)) this.#up(entry.index);
  }

  clear(): void {
    for (const entry of this.#entries) entry.index = -1;
    this.#entries = [];
  }

  #up(i: number): void {
    const entries = this.#entries;
    const entry = entries[i] as E;
    while (i > 0) {
      const parentIndex = (i - 1) >> 1;
      const parent = entries[parentIndex] as E;
      if (!this.#less(entry, parent)) break;
      entries[i] = parent;
      parent.index = i;
      i = parentIndex;
    }
    entries[i] = entry;
    entry.index = i;
  }

  /** Moves entry i down to its place; returns whether it moved. */
  #down(start: number): boolean {
    const entries = this.#entries;
    const n = entries.length;
    const entry = entries[start] as E;
    let i = start;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      if (right < n && this.#less(entries[right] as E, entries[left] as E)) child = right;
      const childEntry = entries[child] as E;
      if (!this.#less(childEntry, entry)) break;
      entries[i] = childEntry;
      childEntry.index = i;
      i = child;
    }
    entries[i] = entry;
    entry.index = i;
    return i > start;
  }
}
