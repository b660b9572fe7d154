/**
 * processorListener (client-go tools/cache/shared_informer.go): delivers an informer's
 * notifications to one event handler, in order, from a buffer of its own. The informer never
 * waits for a handler: a slow (async) handler only lets its own buffer grow, which is measured
 * (`pending`, `maxPending`) rather than bounded, as in client-go, because dropping a
 * notification would break the handler's view of the objects.
 */
import type { DeletedFinalStateUnknown, KubeObject } from './object.ts';

export type Notification =
  | { readonly type: 'add'; readonly obj: KubeObject; readonly isInInitialList: boolean }
  | { readonly type: 'update'; readonly oldObj: KubeObject; readonly newObj: KubeObject }
  | { readonly type: 'delete'; readonly obj: KubeObject | DeletedFinalStateUnknown }
  | { readonly type: 'bookmark'; readonly resourceVersion: string };

/** client-go ResourceEventHandler. A handler may return a promise: the next notification waits for it. */
export interface ResourceEventHandler {
  onAdd?(obj: KubeObject, isInInitialList: boolean): void | Promise<void>;
  onUpdate?(oldObj: KubeObject, newObj: KubeObject): void | Promise<void>;
  onDelete?(obj: KubeObject | DeletedFinalStateUnknown): void | Promise<void>;
  /**
   * The informer's Indexer holds every change up to `resourceVersion` and none after it, reached
   * by a bookmark (a watch's BOOKMARK, or the end of a list): client-go's Store.Bookmark
   * (controller.go processDeltas, a Bookmark delta), told to the handler after every notification
   * before it. Not a client-go handler function: client-go tells the store only.
   */
  onBookmark?(resourceVersion: string): void | Promise<void>;
}

export type HandlerErrorLog = (error: unknown) => void;

export class ProcessorListener {
  readonly handler: ResourceEventHandler;
  /** 0: no resync for this handler. */
  readonly resyncPeriodMs: number;
  /** When this handler is due for its next resync (clock ms). */
  nextResync = 0;
  #pending: Notification[] = [];
  #head = 0;
  #draining = false;
  #maxPending = 0;
  /** Notifications of the initial list added but not yet handled (client-go synctrack). */
  #initialPending = 0;
  #stopped = false;
  readonly #onError: HandlerErrorLog;

  constructor(handler: ResourceEventHandler, resyncPeriodMs: number, onError: HandlerErrorLog) {
    this.handler = handler;
    this.resyncPeriodMs = resyncPeriodMs;
    this.#onError = onError;
  }

  add(notification: Notification): void {
    if (this.#stopped) return;
    if (notification.type === 'add' && notification.isInInitialList) this.#initialPending++;
    this.#pending.push(notification);
    this.#maxPending = Math.max(this.#maxPending, this.pending());
    if (!this.#draining) {
      this.#draining = true;
      void this.#drain();
    }
  }

  pending(): number {
    return this.#pending.length - this.#head;
  }

  maxPending(): number {
    return this.#maxPending;
  }

  /** True once every notification of the initial list given to this handler was handled. */
  initialListHandled(): boolean {
    return this.#initialPending === 0;
  }

  stop(): void {
    this.#stopped = true;
    this.#pending = [];
    this.#head = 0;
  }

  async #drain(): Promise<void> {
    // Start on a later turn: handlers run after the informer has finished updating its indexer.
    await Promise.resolve();
    while (this.#head < this.#pending.length) {
      const notification = this.#pending[this.#head] as Notification;
      this.#head++;
      if (this.#head > 1024 && this.#head * 2 > this.#pending.length) {
        this.#pending = this.#pending.slice(this.#head);
        this.#head = 0;
      }
      try {
        const result = this.#deliver(notification);
        if (result !== undefined) await result;
      } catch (error) {
        this.#onError(error);
      } finally {
        if (notification.type === 'add' && notification.isInInitialList) this.#initialPending--;
      }
    }
    this.#draining = false;
  }

  #deliver(n: Notification): void | Promise<void> {
    switch (n.type) {
      case 'add':
        return this.handler.onAdd?.(n.obj, n.isInInitialList);
      case 'update':
        return this.handler.onUpdate?.(n.oldObj, n.newObj);
      case 'delete':
        return this.handler.onDelete?.(n.obj);
      case 'bookmark':
        return this.handler.onBookmark?.(n.resourceVersion);
    }
  }
}
