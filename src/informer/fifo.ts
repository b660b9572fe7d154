/**
 * FIFO (client-go tools/cache/fifo.go): a queue of keys holding only the latest value of each
 * object. Adding an object already queued replaces its value and keeps its place. Used where
 * the intermediate states do not matter; the informer uses the DeltaFIFO.
 *
 * Synchronous except `pop`, which awaits only while the queue is empty.
 */
import type { KubeObject } from './object.ts';
import { FifoClosedError, RequeueError } from './delta-fifo.ts';
import type { ReflectorStore } from './store.ts';

export interface FIFO extends ReflectorStore {
  pop(process: (obj: KubeObject) => void): Promise<KubeObject>;
  /** Adds the object only if its key is not queued (used to requeue without losing a newer value). */
  addIfNotPresent(obj: KubeObject): void;
  getByKey(key: string): KubeObject | undefined;
  listKeys(): string[];
  hasSynced(): boolean;
  len(): number;
  close(): void;
}

export function newFIFO(): FIFO {
  return new FIFOImpl();
}

class FIFOImpl implements FIFO {
  /** Invariant: every key of #items is in #queue once; #queue may hold keys deleted since (skipped by pop). */
  readonly #items = new Map<string, KubeObject>();
  #queue: string[] = [];
  #queued = new Set<string>();
  #populated = false;
  #initialPopulationCount = 0;
  #closed = false;
  #waiters: (() => void)[] = [];

  add(obj: KubeObject): void {
    this.#populated = true;
    this.#put(obj);
  }

  update(obj: KubeObject): void {
    this.add(obj);
  }

  delete(obj: KubeObject): void {
    this.#populated = true;
    this.#items.delete(obj.key);
  }

  replace(list: readonly KubeObject[], _resourceVersion: string): void {
    this.#items.clear();
    for (const obj of list) this.#items.set(obj.key, obj);
    this.#queue = [...this.#items.keys()];
    this.#queued = new Set(this.#queue);
    if (!this.#populated) {
      this.#populated = true;
      this.#initialPopulationCount = this.#items.size;
    }
    this.#wake();
  }

  addIfNotPresent(obj: KubeObject): void {
    this.#populated = true;
    if (this.#items.has(obj.key)) return;
    this.#put(obj);
  }

  async pop(process: (obj: KubeObject) => void): Promise<KubeObject> {
    for (;;) {
      while (this.#queue.length === 0) {
        if (this.#closed) throw new FifoClosedError();
        await new Promise<void>((resolve) => this.#waiters.push(resolve));
      }
      const id = this.#queue.shift() as string;
      this.#queued.delete(id);
      if (this.#initialPopulationCount > 0) this.#initialPopulationCount--;
      const obj = this.#items.get(id);
      if (obj === undefined) continue; // deleted after it was queued
      this.#items.delete(id);
      try {
        process(obj);
      } catch (error) {
        if (error instanceof RequeueError) this.addIfNotPresent(obj);
        throw error;
      }
      return obj;
    }
  }

  getByKey(key: string): KubeObject | undefined {
    return this.#items.get(key);
  }

  listKeys(): string[] {
    return [...this.#items.keys()];
  }

  hasSynced(): boolean {
    return this.#populated && this.#initialPopulationCount === 0;
  }

  len(): number {
    return this.#items.size;
  }

  close(): void {
    this.#closed = true;
    this.#wake();
  }

  #put(obj: KubeObject): void {
    if (!this.#queued.has(obj.key)) {
      this.#queue.push(obj.key);
      this.#queued.add(obj.key);
    }
    this.#items.set(obj.key, obj);
    this.#wake();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve();
  }
}
