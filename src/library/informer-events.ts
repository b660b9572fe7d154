/**
 * An informer's notifications as an async iterator: where client-go hands a handler's
 * notifications over a channel (processorListener's addCh/nextCh), a TypeScript caller writes
 * `for await (const event of informer.events(signal))`.
 *
 * Backpressure, not dropping: the iterator is an event handler whose calls resolve once the
 * consumer has taken the event, so at most one event waits here and the rest wait, in order, in
 * that handler's own buffer of the informer (measured by its registration's pending(), as any
 * slow handler's are). Nothing is dropped: a dropped notification would break the consumer's
 * view of the objects.
 *
 * The iteration ends (done) when the signal aborts, when the informer stops, or when the consumer
 * leaves the loop (break, return, throw: the iterator's return()); the handler is removed then.
 */
import type { DeletedFinalStateUnknown } from './keys.ts';

/** One notification of an informer, as `events()` yields it (client-go's three handler calls as a union). */
export type InformerEvent<T> = InformerAddEvent<T> | InformerUpdateEvent<T> | InformerDeleteEvent<T>;

/** The object appeared: listed at start (`isInInitialList`), created, or moved into the informer's selection (onAdd). */
export interface InformerAddEvent<T> {
  /** The discriminant. */
  readonly type: 'add';
  /** The object. */
  readonly object: T;
  /** True for the objects of the initial list (and a late consumer's first adds). */
  readonly isInInitialList: boolean;
}

/** The object changed, or a resync re-delivered it unchanged: then both have the same resourceVersion (onUpdate). */
export interface InformerUpdateEvent<T> {
  /** The discriminant. */
  readonly type: 'update';
  /** The state before. */
  readonly oldObject: T;
  /** The state now. */
  readonly object: T;
}

/** The object is gone: its last state, or a DeletedFinalStateUnknown when the informer missed its final state (onDelete). */
export interface InformerDeleteEvent<T> {
  /** The discriminant. */
  readonly type: 'delete';
  /** The last state. */
  readonly object: T | DeletedFinalStateUnknown<T>;
}

/** The iterator's end of the handler: each call resolves once the consumer has taken the event. */
export interface EventSink<T> {
  push(event: InformerEvent<T>): Promise<void>;
}

/**
 * An iterator fed through the sink given to `register`, which returns how to unregister; it ends
 * when any of `signals` aborts.
 */
export function newEventStream<T>(
  register: (sink: EventSink<T>) => () => void,
  signals: readonly AbortSignal[],
): AsyncIterableIterator<InformerEvent<T>, undefined, undefined> {
  return new EventStream(register, signals);
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

class EventStream<T> implements AsyncIterableIterator<InformerEvent<T>, undefined, undefined> {
  /** The event handed over and not yet taken. Invariant: set only while no consumer waits (#waiter unset) and not #done. */
  #slot: { readonly event: InformerEvent<T>; readonly release: () => void } | undefined;
  /** A consumer's next() waiting for an event. Invariant: set only while #slot is unset and not #done. */
  #waiter: ((result: IteratorResult<InformerEvent<T>, undefined>) => void) | undefined;
  #done = false;
  readonly #unregister: () => void;
  readonly #signals: readonly AbortSignal[];
  readonly #onAbort = (): void => {
    this.#end();
  };

  constructor(register: (sink: EventSink<T>) => () => void, signals: readonly AbortSignal[]) {
    this.#signals = signals;
    this.#unregister = register({ push: (event) => this.#push(event) });
    for (const signal of signals) signal.addEventListener('abort', this.#onAbort, { once: true });
    if (signals.some((signal) => signal.aborted)) this.#end();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<InformerEvent<T>, undefined>> {
    const slot = this.#slot;
    if (slot !== undefined) {
      this.#slot = undefined;
      slot.release();
      return Promise.resolve({ done: false, value: slot.event });
    }
    if (this.#done) return Promise.resolve(DONE);
    return new Promise((resolve) => {
      this.#waiter = resolve;
    });
  }

  return(): Promise<IteratorResult<InformerEvent<T>, undefined>> {
    this.#end();
    return Promise.resolve(DONE);
  }

  /** Synchronous: the slot and the waiter are read and set with no await between. */
  #push(event: InformerEvent<T>): Promise<void> {
    if (this.#done) return Promise.resolve();
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter({ done: false, value: event });
      return Promise.resolve();
    }
    return new Promise((release) => {
      this.#slot = { event, release };
    });
  }

  #end(): void {
    if (this.#done) return;
    this.#done = true;
    for (const signal of this.#signals) signal.removeEventListener('abort', this.#onAbort);
    this.#unregister();
    this.#slot?.release();
    this.#slot = undefined;
    this.#waiter?.(DONE);
    this.#waiter = undefined;
  }
}
