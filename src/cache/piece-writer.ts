/**
 * Response bodies built by copying byte ranges into large pieces (LIST bodies, Tables,
 * metadata lists): one vectored write of a few hundred pieces instead of tens of thousands of
 * small Buffers.
 */
import type { KubeObject } from '../informer/object.ts';

/**
 * The size of the pieces a LIST body is copied into: large enough that a 10,000-item body is
 * ~200 writes in one vectored write instead of ~20,000 small Buffers, small enough that a
 * one-namespace LIST wastes little (a piece is cut to what it holds).
 */
const LIST_PIECE_BYTES = 64 * 1024;
const OPEN_BRACE = 0x7b;

/**
 * Every piece's memory a PieceWriter allocated (pooled or not): each piece owns its ArrayBuffer
 * (64 KiB and more: never Node's shared slab), so it may be freed at once when its body is done.
 * A mark of where memory came from, not state: nothing reads it but to decide whether to free.
 */
const writerMemory = new WeakSet<ArrayBufferLike>();
/**
 * With no memory limit known, as many pieces as the shared LIST bodies may hold (shared-lists.ts):
 * a 100,000-pod body is ~2,000. Under a limit, the memory budget's share (newPiecePool's maxBytes).
 */
const DEFAULT_POOL_MAX_PIECES = 4096;
export const DEFAULT_PIECE_POOL_BYTES = DEFAULT_POOL_MAX_PIECES * LIST_PIECE_BYTES;
const POOL_IDLE_MS = 5_000;

/**
 * Pieces whose bytes have been written out, kept for the next bodies: a fresh 64 KiB
 * ArrayBuffer is memory the kernel has to map and fault in page by page, and external memory
 * that drives garbage collections; allocating them cost a fifth of the CPU of a 10,000-pod
 * LIST, and its GCs a tenth more. At most maxBytes are kept, and none once the pool has been
 * idle for POOL_IDLE_MS (memory comes back when the LISTs stop). One per proxy (its reads own it).
 */
export interface PiecePool {
  /** Keeps at most `maxBytes` of pieces from now on (memory-budget.ts sizes it). */
  limit(maxBytes: number): void;
  /** Bytes the pool keeps now (a metric). */
  bytes(): number;
  /** A piece for a pooled writer: one kept, or a new one of the pool's own memory. */
  piece(): Buffer;
  /**
   * Takes back the pieces of a pooled PieceWriter's body once the connection is done with them
   * ('finish': every byte handed to the kernel): kept for the next bodies while there is room,
   * freed otherwise. Only for bodies nothing else holds: a piece given back is overwritten by
   * the next body, or has no bytes any more.
   */
  release(pieces: readonly Buffer[]): void;
}

export function newPiecePool(maxBytes: number = DEFAULT_PIECE_POOL_BYTES): PiecePool {
  return new Pool(maxBytes);
}

/** Invariant: #kept holds only buffers of #memory, at most #maxPieces of them, none in use. */
class Pool implements PiecePool {
  readonly #kept: ArrayBuffer[] = [];
  /** The memory this pool hands out: only it comes back (a piece of any other body, even of the same size, never does). */
  readonly #memory = new WeakSet<ArrayBufferLike>();
  #maxPieces: number;
  #trim: NodeJS.Timeout | undefined;

  constructor(maxBytes: number) {
    this.#maxPieces = Math.max(0, Math.floor(maxBytes / LIST_PIECE_BYTES));
  }

  limit(maxBytes: number): void {
    this.#maxPieces = Math.max(0, Math.floor(maxBytes / LIST_PIECE_BYTES));
    for (const buffer of this.#kept.splice(this.#maxPieces)) free(buffer);
  }

  bytes(): number {
    return this.#kept.length * LIST_PIECE_BYTES;
  }

  piece(): Buffer {
    const buffer = this.#kept.pop();
    if (buffer !== undefined) return Buffer.from(buffer);
    const piece = Buffer.allocUnsafeSlow(LIST_PIECE_BYTES);
    this.#memory.add(piece.buffer);
    writerMemory.add(piece.buffer);
    return piece;
  }

  release(pieces: readonly Buffer[]): void {
    for (const piece of pieces) {
      // Only the pool's own memory: a piece cut for a range larger than LIST_PIECE_BYTES, or of another body, is freed or left to the GC.
      const { buffer } = piece;
      if (piece.byteOffset === 0 && this.#memory.has(buffer) && buffer instanceof ArrayBuffer && this.#kept.length < this.#maxPieces) {
        this.#kept.push(buffer);
      } else if (piece.byteOffset === 0 && writerMemory.has(buffer)) {
        free(buffer);
      }
    }
    this.#trim ??= setTimeout(() => {
      this.#trim = undefined;
      for (const buffer of this.#kept.splice(0)) free(buffer);
    }, POOL_IDLE_MS).unref();
    this.#trim.refresh();
  }
}

function ownPiece(bytes: number): Buffer {
  const piece = Buffer.allocUnsafeSlow(bytes);
  writerMemory.add(piece.buffer);
  return piece;
}

/**
 * Frees a piece's memory now: its ArrayBuffer is detached (transferred to one of no bytes), which
 * frees the backing store, instead of staying allocated until the garbage collector finds the
 * piece unreachable. V8 collects for external memory only every 64 MiB or so of it: a burst of
 * LIST bodies would leave that much garbage, a third of a small container's limit (#28).
 */
function free(buffer: ArrayBufferLike): void {
  if (buffer instanceof ArrayBuffer && !buffer.detached) buffer.transfer(0);
}

/**
 * Frees the pieces a (not pooled) PieceWriter made for a body, once the connection is done with
 * them: the same contract as PiecePool.release, for bodies that are not given back to the pool
 * (Tables, metadata lists). Other buffers among them are left to the GC.
 */
export function freePieces(pieces: readonly Buffer[]): void {
  for (const piece of pieces) if (piece.byteOffset === 0 && writerMemory.has(piece.buffer)) free(piece.buffer);
}

/**
 * Builds a body from byte ranges copied into pieces of LIST_PIECE_BYTES; a range larger than a
 * piece gets one of its own. HOT PATH: per item, one copy of its bytes, no allocation.
 *
 * A pooled writer takes its pieces from a pool: its body must be given back with the pool's
 * release once written, or dropped, never kept (a cached answer must not be pooled).
 */
export class PieceWriter {
  /** Full pieces not taken yet. */
  readonly #ready: Buffer[] = [];
  readonly #pool: PiecePool | undefined;
  #piece: Buffer;
  #at = 0;

  constructor(options: { readonly pool?: PiecePool } = {}) {
    this.#pool = options.pool;
    this.#piece = this.#pool === undefined ? ownPiece(LIST_PIECE_BYTES) : this.#pool.piece();
  }

  /** Appends source[start, end). */
  bytes(source: Buffer, start = 0, end = source.length): void {
    const length = end - start;
    if (this.#at + length > this.#piece.length) this.#flush(length);
    source.copy(this.#piece, this.#at, start, end);
    this.#at += length;
  }

  /** Appends a binary string (one byte a character: a stored object's JSON, KubeObject.rest). */
  latin1(text: string): void {
    const length = text.length;
    if (this.#at + length > this.#piece.length) this.#flush(length);
    this.#piece.write(text, this.#at, 'latin1');
    this.#at += length;
  }

  /** Appends the stored object's JSON: `{` + TypeMeta + the rest, or without the TypeMeta (a typed list's item). */
  object(obj: KubeObject, withTypeMeta: boolean): void {
    this.byte(OPEN_BRACE);
    if (withTypeMeta) this.latin1(obj.typeMeta);
    this.latin1(obj.rest);
  }

  byte(value: number): void {
    if (this.#at + 1 > this.#piece.length) this.#flush(1);
    this.#piece[this.#at++] = value;
  }

  /** True when full pieces wait to be taken (checked per item: take() allocates). */
  ready(): boolean {
    return this.#ready.length > 0;
  }

  /** The full pieces made since the last call. */
  take(): Buffer[] {
    return this.#ready.splice(0);
  }

  /** The rest: every piece not taken, the last cut to its content. */
  end(): Buffer[] {
    if (this.#at > 0) this.#ready.push(this.#piece.subarray(0, this.#at));
    this.#at = 0;
    return this.take();
  }

  #flush(need: number): void {
    if (this.#at > 0) this.#ready.push(this.#piece.subarray(0, this.#at));
    this.#piece = need <= LIST_PIECE_BYTES && this.#pool !== undefined ? this.#pool.piece() : ownPiece(Math.max(LIST_PIECE_BYTES, need));
    this.#at = 0;
  }
}
