/**
 * A response made from the cache, and its body's lifetime: its share of the memory budget's
 * response bodies (taken before the body is made, given back once it is written or dropped), and
 * the pooled pieces it is made of (back to the pool after a complete write).
 */
import { freePieces } from '../../cache/piece-writer.ts';
import type { PiecePool } from '../../cache/piece-writer.ts';
import type { ByteBudget } from '../../memory/memory-budget.ts';
import type { KubeObject } from '../../informer/object.ts';
import { indentJson } from '../../kube/json-indent.ts';
import type { SharedBody } from './shared-lists.ts';

export interface CachedResponse {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The body's length in bytes (Content-Length, unless chunked). */
  readonly length: number;
  /**
   * Sent without Content-Length (chunked over HTTP/1.1), as the apiserver sends a gzipped answer
   * (gzipped-response.ts).
   */
  readonly chunked?: boolean;
  /**
   * The body's pieces in order, made as they are taken: a large LIST is copied piece by piece
   * from an immutable snapshot, so its writer may yield between pieces.
   */
  readonly body: Iterable<Buffer>;
  /**
   * Told once, when the response is done with the body: `complete` when no write holds its
   * pieces any more (every byte handed to the kernel, or none written), false when the write was
   * cut short. A body of pooled pieces goes back to the pool only after a complete write (a write
   * cut short may still hold its pieces).
   */
  readonly written?: (complete: boolean) => void;
}

/** A response whose whole body is at hand. */
export function whole(statusCode: number, body: readonly Buffer[]): CachedResponse {
  return { statusCode, headers: JSON_HEADERS, length: body.reduce((n, b) => n + b.length, 0), body };
}

export const JSON_HEADERS = { 'content-type': 'application/json' } as const;

export const NEWLINE = Buffer.from('\n');

/**
 * The answer indented as the apiserver indents JSON for curl and `?pretty=true` (no trailing
 * newline, as Go's MarshalIndent): a new body, in the budget from now until it is written.
 */
export function indented(response: CachedResponse, bodies: ByteBudget): CachedResponse {
  const body = indentJson(response.body, response.length);
  // A new body: the pieces it was copied from are done with.
  response.written?.(true);
  bodies.force(body.length);
  return {
    statusCode: response.statusCode,
    headers: response.headers,
    length: body.length,
    body: [body],
    written: givesBack(bodies, body.length),
  };
}

/** A `written` that gives a body's share back once (done with, written or cut short). */
function givesBack(bodies: ByteBudget, bytes: number): (complete: boolean) => void {
  let given = false;
  return () => {
    if (given) return;
    given = true;
    bodies.give(bytes);
  };
}

/** No room in the budget for a body of `bytes`: the read waits for it, or is passed through. */
export interface NoRoom {
  readonly kind: 'no-room';
  readonly bytes: number;
}

export function noRoom(bytes: number): NoRoom {
  return { kind: 'no-room', bytes };
}

export function isNoRoom(outcome: CachedResponse | NoRoom | string): outcome is NoRoom {
  return typeof outcome !== 'string' && 'kind' in outcome;
}

/**
 * One response's room in the bodies' budget: `reserved` bytes taken ahead (what it waited for),
 * then whatever else its body needs, if that fits now.
 */
export class BodyRoom {
  readonly budget: ByteBudget;
  /** Where the response's pooled pieces come from and go back to. */
  readonly pool: PiecePool;
  #reserved: number;

  constructor(budget: ByteBudget, pool: PiecePool, reserved = 0) {
    this.budget = budget;
    this.pool = pool;
    this.#reserved = reserved;
  }

  /** Makes this response's share exactly `bytes` (true), or gives back all it had (false). */
  fit(bytes: number): boolean {
    if (bytes <= this.#reserved) {
      this.budget.give(this.#reserved - bytes);
      this.#reserved = 0;
      return true;
    }
    if (this.budget.tryTake(bytes - this.#reserved)) {
      this.#reserved = 0;
      return true;
    }
    this.release();
    return false;
  }

  /** Gives back what was taken ahead and not used. */
  release(): void {
    if (this.#reserved > 0) this.budget.give(this.#reserved);
    this.#reserved = 0;
  }
}

/**
 * A body of pooled pieces made for one response: they go back to the pool once it is written,
 * and its share of the budget (taken by the caller) once it is done with.
 */
export function pooledResponse(length: number, pieces: Iterable<Buffer>, room: BodyRoom): CachedResponse {
  const { budget: bodies, pool } = room;
  const taken: Buffer[] = [];
  function* body(): Generator<Buffer> {
    for (const piece of pieces) {
      taken.push(piece);
      yield piece;
    }
  }
  const giveBack = givesBack(bodies, length);
  return {
    statusCode: 200,
    headers: JSON_HEADERS,
    length,
    body: body(),
    written: (complete) => {
      if (complete) pool.release(taken.splice(0));
      giveBack(complete);
    },
  };
}

/**
 * A body made whole in one turn (Tables, metadata lists) for `items`: room is made for an
 * estimate first (`itemBytes` each, and the list's framing), NoRoom when there is none; once
 * made, the share is corrected to its length and given back once written.
 *
 * With `keep`, a whole LIST is offered to the shared lists (shared-lists.ts): once kept, the
 * shared body holds that share until it is dropped and written by all, and this response is its
 * first reader; a body they do not keep (larger than they may hold) is this response's alone.
 */
export function madeWhole(
  items: readonly KubeObject[],
  itemBytes: (obj: KubeObject) => number,
  room: BodyRoom,
  make: () => Buffer[],
  keep?: (length: number, body: readonly Buffer[], take: (bytes: number) => boolean) => SharedBody | undefined,
): CachedResponse | NoRoom {
  let estimate = 1024;
  for (const obj of items) estimate += itemBytes(obj);
  if (!room.fit(estimate)) return noRoom(estimate);
  const body = make();
  const length = body.reduce((n, b) => n + b.length, 0);
  if (length > estimate) room.budget.force(length - estimate);
  else room.budget.give(estimate - length);
  if (keep !== undefined) {
    const share = { claimed: false };
    // The share is taken already: the kept body claims it (and gives it back once freed).
    const kept = keep(length, body, () => (share.claimed = true));
    if (kept !== undefined) {
      if (!share.claimed) room.budget.give(length);
      return { statusCode: 200, headers: JSON_HEADERS, length, body: kept, written: kept.acquire() };
    }
  }
  const giveBack = givesBack(room.budget, length);
  const written = (complete: boolean): void => {
    // Written whole: its pieces are freed now, not at a later collection (piece-writer.ts).
    if (complete) freePieces(body);
    giveBack(complete);
  };
  return { statusCode: 200, headers: JSON_HEADERS, length, body, written };
}
