/**
 * The handlers of one informer (client-go shared_informer.go sharedProcessor): registrations,
 * the distribution of each notification to every listener, and the resync schedule. The
 * informer decides what happened (from its DeltaFIFO, or from its direct store); this decides
 * who hears of it.
 *
 * Invariant: every registration's listener is in #registrations until removed or stopped; a
 * listener added while running first gets an add for every object held, synchronously with the
 * changes that follow (no change between the two is missed or seen twice).
 */
import type { Clock, Timer } from '../clock/clock.ts';
import type { InformerMetrics } from './metrics.ts';
import type { KubeObject } from './object.ts';
import type { Notification, ResourceEventHandler } from './processor-listener.ts';
import { ProcessorListener } from './processor-listener.ts';
import type { ReflectorLog } from './reflector.ts';

/** What addEventHandler returns (client-go ResourceEventHandlerRegistration): to remove the handler, and to ask whether it has handled the initial list. */
export interface HandlerRegistration {
  /** True once the informer has synced and this handler has handled the initial list. */
  hasSynced(): boolean;
  /** Notifications waiting for this handler. */
  pending(): number;
  /** The most that ever waited. */
  maxPending(): number;
}

class Registration implements HandlerRegistration {
  readonly listener: ProcessorListener;
  readonly #informerSynced: () => boolean;
  constructor(listener: ProcessorListener, informerSynced: () => boolean) {
    this.listener = listener;
    this.#informerSynced = informerSynced;
  }
  hasSynced(): boolean {
    return this.#informerSynced() && this.listener.initialListHandled();
  }
  pending(): number {
    return this.listener.pending();
  }
  maxPending(): number {
    return this.listener.maxPending();
  }
}

export interface SharedProcessorOptions {
  readonly name: string;
  readonly clock: Clock;
  readonly metrics: InformerMetrics;
  readonly log: ReflectorLog;
  /** Default resync period for handlers that give none; 0 = never. */
  readonly defaultResyncMs: number;
  /** The informer's hasSynced. */
  readonly hasSynced: () => boolean;
  /** Every object held now (a late handler's initial adds). */
  readonly list: () => Iterable<KubeObject>;
  /** A resync is due for the listeners in syncing(): the informer sends them an update of every object. */
  readonly resync: () => void;
}

export class SharedProcessor {
  readonly #options: SharedProcessorOptions;
  readonly #registrations = new Set<Registration>();
  /** Listeners due for a resync at the current resync tick (client-go syncingListeners). */
  #syncing = new Set<ProcessorListener>();
  #started = false;
  #stopped = false;
  #resyncTimer: Timer | undefined;

  constructor(options: SharedProcessorOptions) {
    this.#options = options;
  }

  addEventHandler(handler: ResourceEventHandler, options: { resyncPeriodMs?: number } = {}): HandlerRegistration {
    const { clock, name, log } = this.#options;
    const listener = new ProcessorListener(handler, options.resyncPeriodMs ?? this.#options.defaultResyncMs, (error) => {
      log('warn', `${name}: event handler failed: ${error instanceof Error ? error.message : String(error)}`);
    });
    listener.nextResync = clock.now() + listener.resyncPeriodMs;
    const registration = new Registration(listener, this.#options.hasSynced);
    this.#registrations.add(registration);
    // Synchronous with the changes: the late handler sees exactly the objects held now, then every later change.
    if (this.#started) {
      for (const obj of this.#options.list()) listener.add({ type: 'add', obj, isInInitialList: true });
    }
    this.#scheduleResync();
    return registration;
  }

  removeEventHandler(registration: HandlerRegistration): void {
    if (!(registration instanceof Registration) || !this.#registrations.delete(registration)) return;
    registration.listener.stop();
    this.#syncing.delete(registration.listener);
  }

  /** True while some handler is registered: a change need not be described to no one. */
  hasHandlers(): boolean {
    return this.#registrations.size > 0;
  }

  /** Hands a notification to every listener (a resync's only to those due for it). */
  distribute(notification: Notification, isSync: boolean): void {
    let pending = 0;
    for (const registration of this.#registrations) {
      const listener = registration.listener;
      if (!isSync || this.#syncing.has(listener)) listener.add(notification);
      pending += listener.pending();
    }
    this.#options.metrics.pendingNotifications(pending);
  }

  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    this.#scheduleResync();
  }

  stop(): void {
    this.#stopped = true;
    this.#resyncTimer?.cancel();
    for (const registration of this.#registrations) registration.listener.stop();
  }

  /** One timer for the earliest handler resync due (client-go shouldResync / resyncCheckPeriod). */
  #scheduleResync(): void {
    if (!this.#started || this.#stopped) return;
    this.#resyncTimer?.cancel();
    this.#resyncTimer = undefined;
    let next = Number.POSITIVE_INFINITY;
    for (const registration of this.#registrations) {
      if (registration.listener.resyncPeriodMs > 0) next = Math.min(next, registration.listener.nextResync);
    }
    if (next === Number.POSITIVE_INFINITY) return;
    const { clock } = this.#options;
    this.#resyncTimer = clock.setTimeout(() => {
      this.#resync();
    }, next - clock.now());
  }

  #resync(): void {
    const now = this.#options.clock.now();
    this.#syncing = new Set();
    for (const registration of this.#registrations) {
      const listener = registration.listener;
      if (listener.resyncPeriodMs > 0 && now >= listener.nextResync) {
        this.#syncing.add(listener);
        listener.nextResync = now + listener.resyncPeriodMs;
      }
    }
    if (this.#syncing.size > 0) this.#options.resync();
    this.#scheduleResync();
  }
}
