/**
 * Whole-LIST bodies shared by the requests that ask for the same one. A LIST of every object of
 * a cache, or of one namespace, with no selector and no paging, is the same bytes for every
 * request at the same RV: a burst of them (informers relisting after an outage, pollers, the
 * bench's 8 clients) shares one body instead of each copying every object. A body is made
 * lazily, piece by piece, by whichever of its readers gets furthest first (so a 100,000-pod body
 * never holds the event loop longer than one writer's turn), and kept for the readers after.
 *
 * A LIST at resourceVersion=0 ("any": the apiserver's own cache answers it at whatever RV it
 * holds) may be given a body made within SHARED_LIST_ANY_RV_AGE_MS at an older RV, labelled
 * with that RV: a true state of the cluster, as the apiserver's lagging watch cache would give.
 * Every other LIST is given a body at the cache's current RV only.
 *
 * Bounded: at most maxBytes of bodies kept (SHARED_LISTS_MAX_BYTES, or the memory budget's
 * share), each dropped SHARED_LIST_IDLE_MS after its last use (asked for, or read by a response
 * being written): memory held only while requests come. Each body also takes its length from the
 * proxy's budget of response bodies (memory-budget.ts) when it is kept, and gives it back once
 * dropped and written by all its readers: a body dropped while slow readers still write it
 * counts until they are done. A body the budget has no room for is not kept.
 *
 * A body's pieces are pooled (piece-writer.ts): once it is dropped and the last response writing
 * it has handed every byte to the kernel, they go back to the pool for the next body. Without
 * that, a busy type at 100k objects made a fresh 130 MB body every second, and the external
 * memory it allocated drove a full garbage collection every few hundred milliseconds, each one
 * holding up watch events for 10-25 ms (#15's apply latency).
 */
import { LRUCache } from 'lru-cache';
import type { ByteBudget } from '../../memory/memory-budget.ts';
import { newPiecePool } from '../../cache/piece-writer.ts';
import type { PiecePool } from '../../cache/piece-writer.ts';
import { realClock } from '../../clock/clock.ts';
import type { Clock } from '../../clock/clock.ts';
import type { WatchCache } from '../../cache/watch-cache.ts';

/** All shared bodies together, at most: about a 100,000-pod LIST and a few smaller ones. */
const SHARED_LISTS_MAX_BYTES = 256 * 1024 * 1024;
const SHARED_LIST_IDLE_MS = 1_000;
/** How old a body a resourceVersion=0 LIST may be given (see above). */
export const SHARED_LIST_ANY_RV_AGE_MS = 1_000;

/** Pieces a reader takes between two signs of use (512 KiB: a reader slower than that a second is a stalled one). */
const TOUCH_EVERY_PIECES = 8;

/** A body gzipped (gzipped-response.ts): its compressed pieces and their length. */
export interface GzippedBody {
  readonly pieces: readonly Buffer[];
  readonly length: number;
}

/** Makes a body's gzip from its `pieces`, each compressed piece told to `counted` as it is made. */
export type Compress = (pieces: Iterable<Buffer>, counted: (bytes: number) => void) => Promise<GzippedBody>;

/** A body made lazily once, read in full by each of its readers. */
export class SharedBody implements Iterable<Buffer> {
  readonly resourceVersion: bigint;
  readonly length: number;
  /** When it was first asked for (the clock's ms). */
  readonly madeAt: number;
  readonly #made: Buffer[] = [];
  #source: Iterator<Buffer> | undefined;
  /** Called as readers go on and when they end: a body is in use while read, not only when asked for. */
  readonly #touch: () => void;
  /** Responses writing the body now (acquired, not yet written). */
  #writers = 0;
  #dropped = false;
  /** A response was cut short: its socket may still hold pieces, so none goes back to the pool. */
  #cutShort = false;
  /** Where the body's pieces go back once nobody writes them. */
  readonly #pool: PiecePool;
  /** Called once, when dropped and written by all: the body's memory is the GC's or the pool's again. */
  #freed: (() => void) | undefined;
  /** The body gzipped, made once for every reader that asks for gzip. */
  #gzipped: Promise<GzippedBody> | undefined;
  /** Its compressed bytes made so far, counted in #bodies until the body is freed. */
  #gzippedBytes = 0;
  #released = false;
  /** The proxy's budget of response bodies, which the compressed bytes count in; none: counted nowhere. */
  readonly #bodies: ByteBudget | undefined;

  constructor(
    resourceVersion: bigint,
    length: number,
    pieces: Iterable<Buffer>,
    madeAt: number,
    pool: PiecePool,
    touch: () => void = () => undefined,
    freed?: () => void,
    bodies?: ByteBudget,
  ) {
    this.#pool = pool;
    this.#bodies = bodies;
    this.resourceVersion = resourceVersion;
    this.length = length;
    this.madeAt = madeAt;
    this.#source = pieces[Symbol.iterator]();
    this.#touch = touch;
    this.#freed = freed;
  }

  /** The pieces made so far, then the ones this reader makes for everyone. */
  *[Symbol.iterator](): Generator<Buffer> {
    try {
      yield* this.#read();
    } finally {
      this.#touch();
    }
  }

  /**
   * A response begins to write the body; it calls what is returned once, when it is done
   * (`complete`: every byte handed to the kernel). Until then the pieces stay the body's.
   */
  acquire(): (complete: boolean) => void {
    this.#writers++;
    let done = false;
    return (complete) => {
      if (done) return;
      done = true;
      this.#writers--;
      if (!complete) this.#cutShort = true;
      this.#release();
    };
  }

  /**
   * The body gzipped by `compress`, once: the first reader that asks makes it, the others wait
   * for the same bytes. Its compressed bytes count in the bodies' budget as they are made, and
   * are given back when the body is freed (dropped and written by all). Only a reader that has
   * acquired the body may ask.
   */
  gzipped(compress: Compress): Promise<GzippedBody> {
    this.#gzipped ??= compress(this, (bytes) => {
      // Freed while compressing (its last reader gone): the bytes are no one's to hold.
      if (this.#released) return;
      this.#bodies?.force(bytes);
      this.#gzippedBytes += bytes;
    });
    return this.#gzipped;
  }

  /** No longer kept: no new reader will find it. */
  drop(): void {
    this.#dropped = true;
    this.#release();
  }

  #release(): void {
    if (!this.#dropped || this.#writers > 0 || this.#released) return;
    this.#released = true;
    this.#source = undefined;
    this.#bodies?.give(this.#gzippedBytes);
    this.#gzippedBytes = 0;
    const freed = this.#freed;
    this.#freed = undefined;
    freed?.();
    if (this.#cutShort) return;
    this.#pool.release(this.#made.splice(0));
  }

  *#read(): Generator<Buffer> {
    for (let i = 0; ; i++) {
      if (i % TOUCH_EVERY_PIECES === TOUCH_EVERY_PIECES - 1) this.#touch();
      const made = this.#made[i];
      if (made !== undefined) {
        yield made;
        continue;
      }
      const next = this.#source?.next();
      if (next === undefined || next.done === true) {
        this.#source = undefined;
        return;
      }
      this.#made.push(next.value);
      yield next.value;
    }
  }
}

export interface SharedLists {
  /** The body kept for `scope` of `cache` that a request at `rv` (or, for RV=0, `anyRv`) may be given. */
  find(cache: WatchCache, scope: string, rv: bigint, anyRv: boolean): SharedBody | undefined;
  /**
   * Keeps a body made now at `rv`, of pooled pieces (piece-writer.ts), and returns it; undefined
   * when it is larger than all may hold (make it per request) or `take` (default: the bodies'
   * budget's tryTake) finds no room for its length.
   */
  keep(
    cache: WatchCache,
    scope: string,
    rv: bigint,
    length: number,
    pieces: Iterable<Buffer>,
    take?: (bytes: number) => boolean,
  ): SharedBody | undefined;
}

export interface SharedListsOptions {
  readonly clock?: Clock;
  /** Bodies kept for later readers, at most; default SHARED_LISTS_MAX_BYTES. */
  readonly maxBytes?: number;
  /** Where the bodies' pooled pieces go back (the reads' pool); default: a pool of their own. */
  readonly pool?: PiecePool;
  /** The proxy's budget of response bodies, each kept body's length taken from it; default: none. */
  readonly bodies?: ByteBudget;
}

export function newSharedLists(options: SharedListsOptions = {}): SharedLists {
  const clock = options.clock ?? realClock;
  const maxBytes = options.maxBytes ?? SHARED_LISTS_MAX_BYTES;
  const pool = options.pool ?? newPiecePool();
  const budget = options.bodies;
  const bodies = new LRUCache<string, SharedBody>({
    maxSize: maxBytes,
    maxEntrySize: maxBytes,
    sizeCalculation: (body) => Math.max(1, body.length),
    ttl: SHARED_LIST_IDLE_MS,
    updateAgeOnGet: true,
    ttlAutopurge: true,
    perf: { now: () => clock.now() },
    // Read the clock at each check (the default caches it for 1 ms of real time, past a fake clock's steps).
    ttlResolution: 0,
    // Replaced, expired or evicted: its pieces go back to the pool once its writers are done.
    dispose: (body) => {
      body.drop();
    },
  });
  const ids = new WeakMap<WatchCache, number>();
  let nextId = 0;
  const keyOf = (cache: WatchCache, scope: string): string => {
    let id = ids.get(cache);
    if (id === undefined) {
      id = nextId++;
      ids.set(cache, id);
    }
    return `${String(id)}\u0000${scope}`;
  };
  return {
    find(cache, scope, rv, anyRv) {
      const body = bodies.get(keyOf(cache, scope));
      if (body === undefined) return undefined;
      if (body.resourceVersion === rv) return body;
      return anyRv && body.resourceVersion < rv && clock.now() - body.madeAt <= SHARED_LIST_ANY_RV_AGE_MS ? body : undefined;
    },
    keep(cache, scope, rv, length, pieces, take) {
      if (length > maxBytes) return undefined;
      if (budget !== undefined && !(take ?? ((bytes: number) => budget.tryTake(bytes)))(length)) return undefined;
      const key = keyOf(cache, scope);
      // A body read for longer than the idle time (a 100k-pod LIST to slow clients) stays while it is read.
      const body = new SharedBody(
        rv,
        length,
        pieces,
        clock.now(),
        pool,
        () => {
          if (bodies.peek(key) === body) bodies.get(key);
        },
        budget === undefined
          ? undefined
          : () => {
              budget.give(length);
            },
        budget,
      );
      bodies.set(key, body);
      return body;
    },
  };
}
