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
 * Pieces whose bytes have been written out, kept for the next bodies: a fresh 64 KiB
 * ArrayBuffer is memory the kernel has to map and fault in page by page, and external memory
 * that drives garbage collections; allocating them cost a fifth of the CPU of a 10,000-pod
 * LIST, and its GCs a tenth more. At most poolMaxPieces are kept, and none once the pool has
 * been idle for POOL_IDLE_MS (memory comes back when the LISTs stop).
 */
const pool: ArrayBuffer[] = [];
/** The memory the pool hands out: only it goes back (a piece of any other body, even of the same size, never does). */
const poolMemory = new WeakSet<ArrayBufferLike>();
/**
 * Every piece's memory a PieceWriter allocated (pooled or not): each piece owns its ArrayBuffer
 * (64 KiB and more: never Node's shared slab), so it may be freed at once when its body is done.
 */
const writerMemory = new WeakSet<ArrayBufferLike>();
/**
 * With no memory limit known, as many pieces as the shared LIST bodies may hold (shared-lists.ts):
 * a 100,000-pod body is ~2,000. Under a limit, the memory budget's share (limitPiecePool).
 */
const DEFAULT_POOL_MAX_PIECES = 4096;
let poolMaxPieces = DEFAULT_POOL_MAX_PIECES;
const POOL_IDLE_MS = 5_000;

/** Keeps at most `maxBytes` of pieces in the pool (memory-budget.ts sizes it); the process has one pool. */
export function limitPiecePool(maxBytes: number): void {
  poolMaxPieces = Math.max(0, Math.floor(maxBytes / LIST_PIECE_BYTES));
  for (const buffer of pool.splice(poolMaxPieces)) free(buffer);
}

/** Bytes the pool keeps now (a metric). */
export function piecePoolBytes(): number {
  return pool.length * LIST_PIECE_BYTES;
}
let poolTrim: NodeJS.Timeout | undefined;

function pooledPiece(): Buffer {
  const buffer = pool.pop();
  if (buffer !== undefined) return Buffer.from(buffer);
  const piece = Buffer.allocUnsafeSlow(LIST_PIECE_BYTES);
  poolMemory.add(piece.buffer);
  writerMemory.add(piece.buffer);
  return piece;
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
 * Returns the pieces of a pooled PieceWriter's body once the connection is done with them
 * ('finish': every byte handed to the kernel): kept in the pool for the next bodies while it has
 * room, freed otherwise. Only for bodies nothing else holds: a piece given back is overwritten by
 * the next body, or has no bytes any more.
 */
export function releasePieces(pieces: readonly Buffer[]): void {
  for (const piece of pieces) {
    // Only the pool's own memory: a piece cut for a range larger than LIST_PIECE_BYTES, or of another body, is freed or left to the GC.
    if (piece.byteOffset === 0 && poolMemory.has(piece.buffer) && piece.buffer instanceof ArrayBuffer && pool.length < poolMaxPieces) {
      pool.push(piece.buffer);
    } else if (piece.byteOffset === 0 && writerMemory.has(piece.buffer)) {
      free(piece.buffer);
    }
  }
  poolTrim ??= setTimeout(() => {
    poolTrim = undefined;
    for (const buffer of pool.splice(0)) free(buffer);
  }, POOL_IDLE_MS).unref();
  poolTrim.refresh();
}

/**
 * Frees the pieces a (not pooled) PieceWriter made for a body, once the connection is done with
 * them: the same contract as releasePieces, for bodies that are not given back to the pool
 * (Tables, metadata lists). Other buffers among them are left to the GC.
 */
export function freePieces(pieces: readonly Buffer[]): void {
  for (const piece of pieces) if (piece.byteOffset === 0 && writerMemory.has(piece.buffer)) free(piece.buffer);
}

/**
 * Builds a body from byte ranges copied into pieces of LIST_PIECE_BYTES; a range larger than a
 * piece gets one of its own. HOT PATH: per item, one copy of its bytes, no allocation.
 *
 * A pooled writer takes its pieces from the pool: its body must be given back with
 * releasePieces once written, or dropped, never kept (a cached answer must not be pooled).
 */
export class PieceWriter {
  /** Full pieces not taken yet. */
  readonly #ready: Buffer[] = [];
  readonly #pooled: boolean;
  #piece: Buffer;
  #at = 0;

  constructor(options: { readonly pooled?: boolean } = {}) {
    this.#pooled = options.pooled === true;
    this.#piece = this.#pooled ? pooledPiece() : ownPiece(LIST_PIECE_BYTES);
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
    this.#piece = need <= LIST_PIECE_BYTES && this.#pooled ? pooledPiece() : ownPiece(Math.max(LIST_PIECE_BYTES, need));
    this.#at = 0;
  }
}
