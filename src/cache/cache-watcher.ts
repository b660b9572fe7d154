/**
 * One client's watch on a watch cache (kube-apiserver's cacher/cache_watcher.go): it first sends
 * its initial events (the state as ADDED events, or the replay of the window after its RV),
 * then every later change that its selectors see, converted as the apiserver converts them
 * (an object entering the selection is ADDED, leaving it DELETED with its previous state), then
 * bookmarks when asked for, until its deadline.
 *
 * Bounded: the connection's own write buffer is the watcher's buffer. Initial events are
 * written with backpressure (read lazily from an immutable snapshot); live events are written at
 * once, and a watcher whose unsent bytes pass MAX_PENDING_BYTES is closed: its client re-watches
 * from its last RV and replays from the window, and one slow client never holds the others or
 * grows the proxy's memory past the cap. Many slow clients are bounded together by the proxy's
 * unsent budget (unsent-budget.ts), which the watcher reports to.
 */
import type { Writable } from 'node:stream';
import type { FieldSelector } from '../selector/field-selector.ts';
import type { LabelSelector } from '../selector/label-selector.ts';
import type { KubeObject } from '../informer/object.ts';
import { objectBytes } from '../informer/object.ts';
import { PieceWriter } from './piece-writer.ts';
import type { Clock, Timer } from '../clock/clock.ts';
import type { OrderedView } from './ordered-map.ts';
import type { WatchEncoding, WatchEventType, WindowEvent } from './window-event.ts';
import { IDENTITY_ENCODING, frameObject, representedWatchFrame, watchFramePieces, writeWatchFrame } from './window-event.ts';
import type { WatchRepresentation } from './window-event.ts';
import type { UnsentBudget, UnsentHolder } from '../memory/unsent-budget.ts';
import type { TurnMember, WriteTurn } from './write-turn.ts';
import { objectMatchesFields } from './selectable-fields.ts';

/**
 * Unsent bytes a watcher may hold before it is closed for slowness: a few seconds of a busy
 * type's events. The apiserver bounds a watcher by events (10 to 1,000) plus a shared time
 * budget; bytes bound the memory a slow client can pin whatever the object size.
 */
export const MAX_PENDING_BYTES = 16 * 1024 * 1024;
/** A watch that ends with more than this unsent is cut (its client stopped reading), not ended. */
const END_GRACEFULLY_BYTES = 1024 * 1024;
/** Initial events are written until this many bytes wait in the connection, then it drains. */
const INITIAL_HIGH_WATER_BYTES = 1024 * 1024;
/** defaultBookmarkFrequency (cacher.go). */
export const BOOKMARK_FREQUENCY_MS = 60_000;
/** Bookmarks are also sent this long before the deadline (cache_watcher.go nextBookmarkTime). */
const PRE_TIMEOUT_BOOKMARK_MS = 2_000;
/**
 * The apiserver files its watchers' bookmark times in buckets a second wide (cacher.go
 * watcherBookmarkTimeBuckets: "you can get the bookmark within (X-1,X+1)"), so its pre-timeout
 * bookmark often goes early and, re-filed, once more at its time: two bookmarks before the
 * deadline whenever its RV moved in between. The watcher sends a first one this much earlier.
 */
const EARLY_PRE_TIMEOUT_MS = 1_500;

/** What a watcher selects: namespace ('' for all), label and field selectors. */
export interface WatcherFilter {
  readonly namespace: string;
  readonly labels: LabelSelector;
  readonly fields: FieldSelector;
}

export function matches(filter: WatcherFilter, obj: KubeObject): boolean {
  if (filter.namespace !== '' && obj.namespace !== filter.namespace) return false;
  return filter.labels.matches(obj.labels) && objectMatchesFields(filter.fields, obj);
}

/** The initial events: the state at an RV (as ADDED), or the window's replay after an RV. */
export type InitialEvents =
  | { readonly kind: 'state'; readonly objects: OrderedView<KubeObject>; readonly resourceVersion: bigint; readonly endBookmark: boolean }
  | { readonly kind: 'replay'; readonly events: readonly WindowEvent[]; readonly resourceVersion: bigint };

export type CloseReason = 'done' | 'timeout' | 'slow' | 'client' | 'terminated';

export interface CacheWatcherOptions {
  readonly sink: Writable;
  readonly filter: WatcherFilter;
  readonly initial: InitialEvents;
  readonly allowWatchBookmarks: boolean;
  /** When the watch ends (timeoutSeconds), on `clock`. */
  readonly deadline: number;
  /** The cache's current RV, for bookmarks. */
  readonly currentResourceVersion: () => bigint;
  /**
   * A BOOKMARK frame at `rv`; `initialEventsEnd` annotates it k8s.io/initial-events-end. For a
   * watch that asked (a proxy in front, protocol/proof-age.ts) it also carries the proof age of
   * `rv` as of the call: each bookmark is this watcher's own frame, so the events pay nothing for it.
   */
  readonly bookmark: (rv: bigint, initialEventsEnd: boolean) => Buffer;
  readonly clock: Clock;
  /** Called once when the watcher ends, whatever the reason. */
  readonly onClose: (watcher: CacheWatcher, reason: CloseReason) => void;
  /** Called with each frame's size as it is written (metrics). */
  readonly onSent?: (bytes: number) => void;
  /**
   * The connection's framing of each frame, written by the watcher (e.g. HTTP/1.1 chunks, the
   * server's own framing turned off): each event's encoded bytes are built once, like its frame,
   * and each watcher costs one write per event. The watcher ends the stream with `encoding.end`.
   */
  readonly encoding?: WatchEncoding;
  /** The proxy-wide bound on unsent bytes, and each connection's; none: each watcher's own cap only. */
  readonly budget?: UnsentBudget;
  /** The connection `sink` writes to, when other watchers may share it (HTTP/2 streams); none: its own. */
  readonly connection?: object;
  /** Objects rendered otherwise than as stored (Tables); none: the stored JSON, framed once per event. */
  readonly representation?: WatchRepresentation;
  /** The turn this watcher's live events are written in: its cacher's, shared by its watchers. */
  readonly turn: WriteTurn;
  /**
   * With bookmarks allowed, a heartbeat: once the initial events are written, a BOOKMARK at the
   * RV the watch has already reached whenever a period of this length passed without a frame
   * (so frames are at most twice this apart). It claims nothing new (every event up to that RV
   * was sent); a client that asked for it (a pool follower, protocol/pool-protocol.ts) knows
   * from it that the watch lives. None: bookmarks only as the apiserver sends them.
   */
  readonly heartbeatMs?: number;
}

export class CacheWatcher implements UnsentHolder, TurnMember {
  readonly filter: WatcherFilter;
  readonly sink: Writable;
  joinedTurn = -1;
  readonly #options: CacheWatcherOptions;
  /** Highest RV sent (or covered by the initial state): later events only. */
  #resourceVersion: bigint;
  /** Live events that arrived while initial events are still being written. */
  #pending: Buffer[] | undefined = [];
  #pendingBytes = 0;
  #closed = false;
  readonly #encoding: WatchEncoding;
  #bookmarkTimer: Timer | undefined;
  #deadlineTimer: Timer | undefined;
  #heartbeatTimer: Timer | undefined;
  /** A frame was written since the last heartbeat period began. */
  #sentSinceHeartbeat = false;
  /** What the budget was last told this watcher holds. */
  #reported = 0;
  readonly connection: object | undefined;

  constructor(options: CacheWatcherOptions) {
    this.filter = options.filter;
    this.sink = options.sink;
    this.#options = options;
    this.connection = options.connection;
    this.#resourceVersion = options.initial.resourceVersion;
    this.#encoding = options.encoding ?? IDENTITY_ENCODING;
    this.sink.on('close', () => {
      this.#close('client');
    });
    this.sink.on('error', () => {
      this.#close('client');
    });
    if (options.budget !== undefined) {
      this.sink.on('drain', () => {
        this.#reportUnsent();
      });
    }
    const now = options.clock.now();
    this.#deadlineTimer = options.clock.setTimeout(() => {
      this.#close('timeout');
    }, options.deadline - now);
    this.#scheduleBookmark();
    this.#scheduleHeartbeat();
    // A failure while writing (a representation that throws on an odd object) ends this watch
    // alone; the client re-watches. Never an unhandled rejection.
    this.#writeInitial().catch(() => {
      this.#close('terminated');
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * A change from the cache, in RV order, already converted for this watcher's filter (its cacher
   * converts once per filter, with convert below). Synchronous.
   */
  deliverAs(event: WindowEvent, type: WatchEventType): void {
    if (this.#closed || event.resourceVersion <= this.#resourceVersion) return;
    this.#resourceVersion = event.resourceVersion;
    this.#send(this.#eventFrame(event, type));
  }

  /** The event's frame: built once per event for every watcher, or by this watcher's representation. */
  #eventFrame(event: WindowEvent, type: WatchEventType): Buffer {
    const representation = this.#options.representation;
    if (representation === undefined) return event.frame(type, this.#encoding);
    const { key } = representation;
    if (key !== undefined) return event.representedFrame(type, this.#encoding, key, representation);
    return Buffer.concat(
      this.#encoding.wrap([representedWatchFrame(representation, type, representation.object(event.objectBytes(type)))]),
    );
  }

  /** A bookmark's frame (`bookmark` gives the stored form), rendered by the representation if any. */
  #bookmarkFrame(rv: bigint, initialEventsEnd: boolean): Buffer {
    const frame = this.#options.bookmark(rv, initialEventsEnd);
    const representation = this.#options.representation;
    return representation === undefined
      ? frame
      : representedWatchFrame(representation, 'BOOKMARK', representation.bookmark(frameObject(frame), initialEventsEnd));
  }

  /** Ends the stream without an error (the cache relisted, or the proxy stops). */
  terminate(): void {
    this.#close('terminated');
  }

  unsentBytes(): number {
    return this.#closed ? 0 : this.#pendingBytes + this.sink.writableLength;
  }

  closeForSlowness(): void {
    this.#close('slow');
  }

  /** Tells the budget what this watcher holds now; nothing to do while it holds nothing. */
  #reportUnsent(): void {
    const budget = this.#options.budget;
    if (budget === undefined) return;
    const bytes = this.unsentBytes();
    if (bytes === 0 && this.#reported === 0) return;
    this.#reported = bytes;
    budget.report(this, bytes);
  }

  #send(frame: Buffer): void {
    this.#sentSinceHeartbeat = true;
    if (this.#pending !== undefined) {
      this.#pending.push(frame);
      this.#pendingBytes += frame.length;
      if (this.#pendingBytes + this.sink.writableLength > MAX_PENDING_BYTES) this.#close('slow');
      else this.#reportUnsent();
      return;
    }
    // The events of one turn go out in one write: corked now, uncorked once the turn is over
    // (afterTurn), when what the connection could not take is measured against the bound.
    this.#options.turn.join(this);
    this.sink.write(frame);
    this.#options.onSent?.(frame.length);
  }

  /** The turn's writes were handed to the connection: what it could not take counts against the bounds. */
  afterTurn(): void {
    if (this.#closed) return;
    if (this.sink.writableLength > MAX_PENDING_BYTES) this.#close('slow');
    else this.#reportUnsent();
  }

  async #writeInitial(): Promise<void> {
    const initial = this.#options.initial;
    // Read lazily, item by item, from an immutable view, so that a large state is written as the connection drains.
    const state = initial.kind === 'state' ? initial.objects.values() : undefined;
    const events = initial.kind === 'replay' ? initial.events : [];
    const count = initial.kind === 'state' ? initial.objects.size : events.length;
    const representation = this.#options.representation;
    // The state's frames are copied into large pieces, each written as one chunk (a chunk may
    // carry several frames): one copy of each object per watcher, no allocation per object.
    const frames = state !== undefined && representation === undefined ? new PieceWriter() : undefined;
    for (let i = 0; i < count; i++) {
      if (this.#closed) return;
      let pieces: readonly Buffer[];
      if (state !== undefined) {
        const next = state.next();
        const obj = next.done === true ? undefined : next.value;
        if (obj === undefined || !matches(this.filter, obj)) continue;
        if (frames !== undefined) {
          writeWatchFrame(frames, 'ADDED', obj);
          if (!frames.ready()) continue;
          pieces = frames.take().flatMap((piece) => this.#encoding.wrap([piece]));
        } else {
          if (representation === undefined) pieces = this.#encoding.wrap(watchFramePieces('ADDED', objectBytes(obj)));
          else {
            const object = representation.stored?.(obj) ?? representation.object(objectBytes(obj));
            pieces = this.#encoding.wrap(
              representation.frame === undefined ? watchFramePieces('ADDED', object) : [representation.frame('ADDED', object)],
            );
          }
        }
      } else {
        const event = events[i];
        const type = event === undefined ? undefined : convert(this.filter, event);
        if (event === undefined || type === undefined) continue;
        pieces = [this.#eventFrame(event, type)];
      }
      if (this.#writeInitialPieces(pieces)) await this.#drained();
    }
    if (frames !== undefined && !this.#closed && this.#writeInitialPieces(frames.end().flatMap((piece) => this.#encoding.wrap([piece])))) {
      await this.#drained();
    }
    if (this.#closed) return;
    if (initial.kind === 'replay') {
      const last = initial.events.at(-1);
      if (last !== undefined && last.resourceVersion > this.#resourceVersion) this.#resourceVersion = last.resourceVersion;
    }
    if (initial.kind === 'state' && initial.endBookmark) {
      const bookmark = this.#bookmarkFrame(initial.resourceVersion, true);
      for (const piece of this.#encoding.wrap([bookmark])) this.sink.write(piece);
    }
    const pending = this.#pending ?? [];
    this.#pending = undefined;
    this.#pendingBytes = 0;
    for (const frame of pending) this.#send(frame);
  }

  /**
   * Writes initial events' pieces in one go (synchronously: a watcher the budget closes for it
   * is closed before watch() returns); true when the connection holds more than
   * INITIAL_HIGH_WATER_BYTES and the caller must wait for it to drain.
   */
  #writeInitialPieces(pieces: readonly Buffer[]): boolean {
    if (pieces.length === 0) return false;
    this.#sentSinceHeartbeat = true;
    this.sink.cork();
    for (const piece of pieces) this.sink.write(piece);
    this.sink.uncork();
    this.#options.onSent?.(pieces.reduce((n, p) => n + p.length, 0));
    // Told at every write, not once past the high water: many watches starting at once (a
    // relist storm) would each reach it before the budget heard of any (#28: 20 watches of
    // 10,000 pods held 40 MB for an 8 MB budget).
    this.#reportUnsent();
    return this.sink.writableLength > INITIAL_HIGH_WATER_BYTES;
  }

  #drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.sink.off('drain', done);
        this.sink.off('close', done);
        resolve();
      };
      this.sink.on('drain', done);
      this.sink.on('close', done);
    });
  }

  /**
   * nextBookmarkTime: every BOOKMARK_FREQUENCY_MS, and 2 s before the deadline (and once more
   * EARLY_PRE_TIMEOUT_MS before that, see above). Each bookmark is sent only when it moves the
   * watcher's RV (process(): "only send events newer than resourceVersion"), at the cache's RV as
   * it is: the apiserver's bookmarks carry its cacher's RV, which a quiet type's upstream watch
   * moves only when someone reads it consistently.
   */
  #scheduleBookmark(): void {
    if (!this.#options.allowWatchBookmarks || this.#closed) return;
    const now = this.#options.clock.now();
    const preTimeout = this.#options.deadline - PRE_TIMEOUT_BOOKMARK_MS;
    const early = preTimeout - EARLY_PRE_TIMEOUT_MS;
    let at = now + BOOKMARK_FREQUENCY_MS;
    if (at >= early && early > now) at = early;
    else if (at > preTimeout) at = preTimeout;
    // Past (or at) the pre-timeout point: no more bookmarks; the deadline ends the watch.
    if (at <= now) return;
    this.#bookmarkTimer = this.#options.clock.setTimeout(() => {
      this.#bookmarkTimer = undefined;
      this.#sendBookmark();
    }, at - now);
  }

  /** Each heartbeat period: a bookmark at the watcher's own RV if nothing was written in it (CacheWatcherOptions.heartbeatMs). */
  #scheduleHeartbeat(): void {
    const period = this.#options.heartbeatMs;
    if (period === undefined || !this.#options.allowWatchBookmarks || this.#closed) return;
    this.#heartbeatTimer = this.#options.clock.setTimeout(() => {
      this.#heartbeatTimer = undefined;
      if (this.#closed) return;
      if (!this.#sentSinceHeartbeat && this.#pending === undefined) {
        try {
          this.#send(Buffer.concat(this.#encoding.wrap([this.#bookmarkFrame(this.#resourceVersion, false)])));
        } catch {
          // As in #writeInitial: this watch ends, the process goes on.
          this.#close('terminated');
          return;
        }
      }
      this.#sentSinceHeartbeat = false;
      this.#scheduleHeartbeat();
    }, period);
  }

  /** A bookmark at the cache's RV if that moves the watcher's; then the next one is scheduled. */
  #sendBookmark(): void {
    if (this.#closed) return;
    const rv = this.#options.currentResourceVersion();
    // process(): after the initial events, and only when it moves the watcher's RV.
    if (this.#pending === undefined && rv > this.#resourceVersion) {
      this.#resourceVersion = rv;
      try {
        const bookmark = this.#bookmarkFrame(rv, false);
        this.#send(Buffer.concat(this.#encoding.wrap([bookmark])));
      } catch {
        // As in #writeInitial: this watch ends, the process goes on.
        this.#close('terminated');
        return;
      }
    }
    this.#scheduleBookmark();
  }

  #close(reason: CloseReason): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#options.turn.leave(this);
    this.#bookmarkTimer?.cancel();
    this.#deadlineTimer?.cancel();
    this.#heartbeatTimer?.cancel();
    this.#pending = undefined;
    this.#pendingBytes = 0;
    if (this.#reported !== 0) this.#options.budget?.release(this);
    this.#reported = 0;
    // A client that stopped reading keeps what is queued for it as long as it keeps the
    // connection: past a little, a watch that ends is cut rather than ended, so that its unsent
    // bytes are freed with it (the unsent budget no longer counts them).
    if (reason === 'slow' || (reason !== 'client' && this.sink.writableLength > END_GRACEFULLY_BYTES)) this.sink.destroy();
    else if (reason !== 'client') this.sink.end(this.#encoding.end);
    this.#options.onClose(this, reason);
  }
}

/**
 * convertToWatchEvent (cache_watcher.go): which event, if any, a watcher with this filter sees.
 * A deleted object passes only through its previous state.
 */
export function convert(filter: WatcherFilter, event: WindowEvent): WatchEventType | undefined {
  const current = event.type !== 'DELETED' && matches(filter, event.object);
  const previous = event.prevObject !== undefined && matches(filter, event.prevObject);
  if (current) return previous ? 'MODIFIED' : 'ADDED';
  return previous ? 'DELETED' : undefined;
}
