/**
 * The order in which the queue hands out items (queue.go `queue[T]`, client-go's DefaultQueue): a
 * FIFO on a growable ring buffer. `Array.prototype.shift` is O(n) on large arrays, and a queue of a
 * million keys after a relist is a case we serve, so pushes and shifts here are O(1) amortized.
 *
 * Invariant: the live items are #buf[(#head + i) & #mask] for i in [0, #length); every other slot
 * holds undefined, so that a shifted item is not kept alive by the buffer (the reason queue.go's Pop
 * zeroes `(*q)[0]`).
 */

/** Smallest capacity; the buffer never shrinks below it (a power of two, items). */
const MIN_CAPACITY = 16;

export interface Fifo<T> {
  readonly length: number;
  push(item: T): void;
  /** Removes and returns the oldest item. Precondition: length > 0. */
  shift(): T;
  /** Drops every item. */
  clear(): void;
}

export function newFifo<T>(): Fifo<T> {
  return new RingFifo<T>();
}

class RingFifo<T> implements Fifo<T> {
  #buf: (T | undefined)[] = new Array<T | undefined>(MIN_CAPACITY).fill(undefined);
  /** Capacity - 1; capacity is a power of two, so `& #mask` is the modulo. */
  #mask = MIN_CAPACITY - 1;
  #head = 0;
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(item: T): void {
    if (this.#length === this.#buf.length) this.#resize(this.#buf.length * 2);
    this.#buf[(this.#head + this.#length) & this.#mask] = item;
    this.#length++;
  }

  shift(): T {
    const item = this.#buf[this.#head] as T;
    this.#buf[this.#head] = undefined;
    this.#head = (this.#head + 1) & this.#mask;
    this.#length--;
    // Shrink at a quarter full (not a half), so that a length moving around a power of two does not
    // copy the buffer on every push and shift.
    if (this.#buf.length > MIN_CAPACITY && this.#length < this.#buf.length / 4) this.#resize(this.#buf.length / 2);
    return item;
  }

  clear(): void {
    this.#buf = new Array<T | undefined>(MIN_CAPACITY).fill(undefined);
    this.#mask = MIN_CAPACITY - 1;
    this.#head = 0;
    this.#length = 0;
  }

  #resize(capacity: number): void {
    const next = new Array<T | undefined>(capacity).fill(undefined);
    for (let i = 0; i < this.#length; i++) next[i] = this.#buf[(this.#head + i) & this.#mask];
    this.#buf = next;
    this.#mask = capacity - 1;
    this.#head = 0;
  }
}
