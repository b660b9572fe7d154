/**
 * DeltaFIFO (client-go tools/cache/delta_fifo.go): a queue of keys, each with the list of
 * changes (Deltas) that happened to its object since it was last popped. A consumer pops a key
 * with all its Deltas at once, so it sees every change of an object in order and no object twice
 * concurrently; deletions missed while the watch was down come back from `replace` as
 * DeletedFinalStateUnknown.
 *
 * Node has no locks: every method that changes the queue is synchronous, so nothing interleaves
 * between reading and writing `#items`/`#queue`. Only `pop` awaits, and only while empty.
 */
import type { Clock } from '../clock/clock.ts';
import { realClock } from '../clock/clock.ts';
import type { DeletedFinalStateUnknown, KubeObject } from './object.ts';
import { isDeletedFinalStateUnknown } from './object.ts';
import type { KeyListerGetter, ReflectorStore } from './store.ts';

export type DeltaType = 'Added' | 'Updated' | 'Deleted' | 'Replaced' | 'Sync';

export interface Delta {
  readonly type: DeltaType;
  readonly object: KubeObject | DeletedFinalStateUnknown;
}

/** Oldest first. Never empty while in the queue. */
export type Deltas = readonly Delta[];

/** Thrown by a pop's process function to have the item put back (client-go ErrRequeue). */
export class RequeueError extends Error {
  constructor(cause?: unknown) {
    super('requeue', { cause });
    this.name = 'RequeueError';
  }
}

export class FifoClosedError extends Error {
  constructor() {
    super('DeltaFIFO: manipulating with closed queue');
    this.name = 'FifoClosedError';
  }
}

export type PopProcess = (deltas: Deltas, isInInitialList: boolean) => void;

export interface DeltaFIFO extends ReflectorStore {
  /** Waits for a key, removes it with its Deltas and hands them to `process` synchronously. */
  pop(process: PopProcess): Promise<Deltas>;
  /** Queues a Sync for every known object that has nothing queued (client-go Resync). */
  resync(): void;
  /** True once the first replace/add/delete happened and everything it queued has been popped. */
  hasSynced(): boolean;
  /** Keys currently queued, in order (for tests and metrics). */
  listKeys(): string[];
  /** The queued Deltas of a key, if any. */
  get(key: string): Deltas | undefined;
  len(): number;
  close(): void;
  isClosed(): boolean;
}

/**
 * What a DeltaFIFO reports (client-go informer_metrics.go fifoMetrics, the_real_fifo.go): the
 * keys queued, after each change of their number, and how long each pop's processing took.
 */
export interface FifoMetrics {
  /** Keys with Deltas queued (client-go NewQueuedItemMetric: "the number of unique keys with pending deltas"). */
  queuedItems(count: number): void;
  /** Seconds a pop's process function took (client-go NewProcessingLatencyMetric: the handlers' time). */
  processingLatency(seconds: number): void;
}

export const noopFifoMetrics: FifoMetrics = {
  queuedItems: () => undefined,
  processingLatency: () => undefined,
};

export interface DeltaFIFOOptions {
  /** The informer's indexer: lets replace() detect deletions of objects no longer queued. */
  readonly knownObjects?: KeyListerGetter;
  /** Emit Replaced (not Sync) for items of a replace; shared informers set it (client-go EmitDeltaTypeReplaced). */
  readonly emitDeltaTypeReplaced?: boolean;
  /** Default: nothing reported. */
  readonly metrics?: FifoMetrics;
  /** Times the processing latency. Default: the real clock. */
  readonly clock?: Clock;
}

export function newDeltaFIFO(options: DeltaFIFOOptions = {}): DeltaFIFO {
  return new DeltaFIFOImpl(options);
}

/**
 * Two consecutive deletions of one object collapse into one; the one that knows the final state
 * wins over a DeletedFinalStateUnknown (client-go dedupDeltas / isDeletionDup).
 */
function dedupDeltas(deltas: Delta[]): Delta[] {
  const n = deltas.length;
  if (n < 2) return deltas;
  const a = deltas[n - 1];
  const b = deltas[n - 2];
  if (a === undefined || b === undefined || a.type !== 'Deleted' || b.type !== 'Deleted') return deltas;
  const kept = isDeletedFinalStateUnknown(b.object) ? a : b;
  deltas.splice(n - 2, 2, kept);
  return deltas;
}

class DeltaFIFOImpl implements DeltaFIFO {
  /** Invariant: a key is in #items iff it is in #queue (once), and its Deltas are never empty. */
  readonly #items = new Map<string, Delta[]>();
  #queue: string[] = [];
  /** Index of the head of #queue: popping shifts this instead of the array (O(1)). */
  #head = 0;
  /** True once replace/add/update/delete was first called. */
  #populated = false;
  /** Items of the first replace not yet popped; hasSynced once it reaches 0. */
  #initialPopulationCount = 0;
  #closed = false;
  #waiters: (() => void)[] = [];
  readonly #knownObjects: KeyListerGetter | undefined;
  readonly #emitDeltaTypeReplaced: boolean;
  readonly #metrics: FifoMetrics;
  readonly #clock: Clock;

  constructor(options: DeltaFIFOOptions) {
    this.#knownObjects = options.knownObjects;
    this.#emitDeltaTypeReplaced = options.emitDeltaTypeReplaced ?? false;
    this.#metrics = options.metrics ?? noopFifoMetrics;
    this.#clock = options.clock ?? realClock;
  }

  add(obj: KubeObject): void {
    this.#populated = true;
    this.#queueAction('Added', obj);
  }

  update(obj: KubeObject): void {
    this.#populated = true;
    this.#queueAction('Updated', obj);
  }

  delete(obj: KubeObject): void {
    this.#populated = true;
    const id = obj.key;
    const queued = this.#items.has(id);
    const known = this.#knownObjects === undefined ? false : this.#knownObjects.getByKey(id) !== undefined;
    // Presumably deleted when a relist happened: don't report the same deletion twice.
    if (!queued && !known) return;
    this.#queueAction('Deleted', obj);
  }

  replace(list: readonly KubeObject[], _resourceVersion: string): void {
    const action: DeltaType = this.#emitDeltaTypeReplaced ? 'Replaced' : 'Sync';
    const keys = new Set<string>();
    for (const item of list) {
      keys.add(item.key);
      this.#queueAction(action, item);
    }

    // Deletion detection against the queue: this could happen if a watch deletion event was
    // missed while disconnected from the apiserver.
    let queuedDeletions = 0;
    for (const [key, deltas] of [...this.#items]) {
      if (keys.has(key)) continue;
      const newest = deltas.at(-1)?.object;
      const last = newest === undefined ? undefined : isDeletedFinalStateUnknown(newest) ? newest.obj : newest;
      queuedDeletions++;
      this.#queueAction('Deleted', { kind: 'DeletedFinalStateUnknown', key, obj: last });
    }
    // ... and against the objects the informer holds but nothing queued mentions.
    if (this.#knownObjects !== undefined) {
      for (const key of this.#knownObjects.listKeys()) {
        if (keys.has(key) || this.#items.has(key)) continue;
        queuedDeletions++;
        this.#queueAction('Deleted', { kind: 'DeletedFinalStateUnknown', key, obj: this.#knownObjects.getByKey(key) });
      }
    }

    if (!this.#populated) {
      this.#populated = true;
      this.#initialPopulationCount = keys.size + queuedDeletions;
    }
  }

  resync(): void {
    if (this.#knownObjects === undefined) return;
    for (const key of this.#knownObjects.listKeys()) {
      const obj = this.#knownObjects.getByKey(key);
      if (obj === undefined) continue;
      // An event already queued would be overtaken by a Sync carrying the older stored state.
      if (this.#items.has(obj.key)) continue;
      this.#queueAction('Sync', obj);
    }
  }

  async pop(process: PopProcess): Promise<Deltas> {
    for (;;) {
      while (this.#head >= this.#queue.length) {
        if (this.#closed) throw new FifoClosedError();
        await new Promise<void>((resolve) => this.#waiters.push(resolve));
      }
      const isInInitialList = !this.hasSynced();
      const id = this.#queue[this.#head] as string;
      this.#head++;
      this.#compactQueue();
      if (this.#initialPopulationCount > 0) this.#initialPopulationCount--;
      const deltas = this.#items.get(id);
      if (deltas === undefined) continue; // impossible by the invariant; skip rather than hand out nothing
      this.#items.delete(id);
      this.#metrics.queuedItems(this.len());
      const started = this.#clock.now();
      try {
        process(deltas, isInInitialList);
      } catch (error) {
        if (error instanceof RequeueError) this.#addIfNotPresent(id, deltas);
        throw error;
      } finally {
        this.#metrics.processingLatency((this.#clock.now() - started) / 1000);
      }
      return deltas;
    }
  }

  hasSynced(): boolean {
    return this.#populated && this.#initialPopulationCount === 0;
  }

  listKeys(): string[] {
    return this.#queue.slice(this.#head);
  }

  get(key: string): Deltas | undefined {
    const deltas = this.#items.get(key);
    return deltas === undefined ? undefined : [...deltas];
  }

  len(): number {
    return this.#queue.length - this.#head;
  }

  close(): void {
    this.#closed = true;
    this.#wake();
  }

  isClosed(): boolean {
    return this.#closed;
  }

  #queueAction(type: DeltaType, object: KubeObject | DeletedFinalStateUnknown): void {
    const id = object.key;
    const existing = this.#items.get(id);
    // In place: the array leaves #items before anyone else sees it (pop), get() hands out copies.
    const deltas = existing ?? [];
    deltas.push({ type, object });
    dedupDeltas(deltas);
    if (existing === undefined) {
      this.#queue.push(id);
      this.#items.set(id, deltas);
      this.#metrics.queuedItems(this.len());
    }
    this.#wake();
  }

  /** Puts back the Deltas of a failed pop, unless the key was queued again meanwhile. */
  #addIfNotPresent(id: string, deltas: Deltas): void {
    this.#populated = true;
    if (this.#items.has(id)) return;
    this.#queue.push(id);
    this.#items.set(id, [...deltas]);
    this.#metrics.queuedItems(this.len());
    this.#wake();
  }

  #compactQueue(): void {
    // Drop the consumed head once it is most of the array, so memory follows the live length.
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve();
  }
}
