/**
 * Response bodies built by copying byte ranges into large pieces (LIST bodies, Tables,
 * metadata lists): one vectored write of a few hundred pieces instead of tens of thousands of
 * small Buffers.
 */

/**
 * The size of the pieces a LIST body is copied into: large enough that a 10,000-item body is
 * ~200 writes in one vectored write instead of ~20,000 small Buffers, small enough that a
 * one-namespace LIST wastes little (a piece is cut to what it holds).
 */
const LIST_PIECE_BYTES = 64 * 1024;

/**
 * Builds a body from byte ranges copied into pieces of LIST_PIECE_BYTES; a range larger than a
 * piece gets one of its own. HOT PATH: per item, one copy of its bytes, no allocation.
 */
export class PieceWriter {
  /** Full pieces not taken yet. */
  readonly #ready: Buffer[] = [];
  #piece: Buffer = Buffer.allocUnsafe(LIST_PIECE_BYTES);
  #at = 0;

  /** Appends source[start, end). */
  bytes(source: Buffer, start = 0, end = source.length): void {
    const length = end - start;
    if (this.#at + length > this.#piece.length) this.#flush(length);
    source.copy(this.#piece, this.#at, start, end);
    this.#at += length;
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
    this.#piece = Buffer.allocUnsafe(Math.max(LIST_PIECE_BYTES, need));
    this.#at = 0;
  }
}
