import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PieceWriter, freePieces, newPiecePool } from '../../../src/cache/piece-writer.ts';

const PIECE = 64 * 1024;

function fill(out: PieceWriter, bytes: number, value: number): void {
  out.bytes(Buffer.alloc(bytes, value));
}

test('PieceWriter: ranges are copied in order into 64 KiB pieces, the last cut to its content; a range larger than a piece gets its own', () => {
  const out = new PieceWriter();
  fill(out, 40_000, 1);
  fill(out, 40_000, 2);
  out.byte(3);
  fill(out, 100_000, 4);
  const pieces = [...out.take(), ...out.end()];
  assert.deepEqual(
    pieces.map((p) => p.length),
    [40_000, 40_001, 100_000],
  );
  const all = Buffer.concat(pieces);
  assert.equal(all.length, 180_001);
  assert.deepEqual([all[0], all[39_999], all[40_000], all[80_000], all[80_001], all[180_000]], [1, 1, 2, 3, 4, 4]);
});

test('PieceWriter: a pooled body given back is the next pooled body’s memory; an unpooled writer and oversized pieces never share it', () => {
  const pool = newPiecePool();
  const releasePieces = (pieces: readonly Buffer[]): void => {
    pool.release(pieces);
  };
  const first = new PieceWriter({ pool });
  fill(first, PIECE, 7);
  fill(first, 10, 8);
  const written = [...first.take(), ...first.end()];
  assert.equal(written.length, 2);
  const used = new Set(written.map((p) => p.buffer));
  releasePieces(written);
  // The next pooled writer writes into the memory given back, not into new memory.
  const second = new PieceWriter({ pool });
  fill(second, PIECE, 9);
  fill(second, PIECE, 9);
  const reused = [...second.take(), ...second.end()];
  assert.ok(
    reused.every((p) => used.has(p.buffer)),
    'pieces come from the pool',
  );
  assert.equal(written[0]?.[0], 9, 'the released body was overwritten: it must not be kept');
  // An unpooled writer (a body that may be kept, e.g. cached) never takes pooled memory.
  releasePieces(reused);
  const unpooled = new PieceWriter();
  fill(unpooled, 100, 1);
  assert.ok(!unpooled.end().some((p) => used.has(p.buffer)));
  // A range larger than a piece gets memory of its own, which is not pooled when released.
  const big = new PieceWriter({ pool });
  fill(big, 3 * PIECE, 5);
  const bigPieces = big.end();
  const oversized = bigPieces.find((p) => p.length === 3 * PIECE);
  assert.ok(oversized !== undefined && !used.has(oversized.buffer));
  releasePieces(bigPieces);
  const after = new PieceWriter({ pool });
  fill(after, 10, 1);
  assert.notEqual(after.end()[0]?.buffer, oversized.buffer);
  // A piece of the pool's size that the pool did not hand out (an unpooled body, perhaps shared) is never taken in.
  const foreign = Buffer.allocUnsafeSlow(PIECE);
  releasePieces([foreign]);
  const next = new PieceWriter({ pool });
  fill(next, 10, 1);
  assert.notEqual(next.end()[0]?.buffer, foreign.buffer);
});

test('PieceWriter: memory given back past the pool’s room, and a finished unpooled body’s, is freed at once (no bytes left to a collection)', (t) => {
  const pool = newPiecePool();
  const releasePieces = (pieces: readonly Buffer[]): void => {
    pool.release(pieces);
  };
  const limitPiecePool = (maxBytes: number): void => {
    pool.limit(maxBytes);
  };
  const piecePoolBytes = (): number => pool.bytes();
  t.after(() => {
    limitPiecePool(0);
  });
  // Room for one piece, none kept from earlier bodies.
  limitPiecePool(0);
  limitPiecePool(PIECE);
  const body = new PieceWriter({ pool });
  fill(body, 3 * PIECE, 1);
  fill(body, PIECE, 2);
  fill(body, 10, 3);
  const pieces = [...body.take(), ...body.end()];
  assert.deepEqual(
    pieces.map((p) => p.length),
    [3 * PIECE, PIECE, 10],
  );
  releasePieces(pieces);
  assert.equal(piecePoolBytes(), PIECE, 'the pool keeps what it has room for');
  assert.deepEqual(
    pieces.map((p) => p.buffer.byteLength),
    [0, PIECE, 0],
    'the oversized piece and the piece past the pool’s room are freed; the pooled one is kept',
  );
  limitPiecePool(0);
  assert.equal(piecePoolBytes(), 0);
  assert.equal(pieces[1]?.buffer.byteLength, 0, 'a smaller pool frees what it no longer keeps');

  const table = new PieceWriter();
  fill(table, PIECE + 5, 4);
  const tablePieces = table.end();
  const foreign = Buffer.alloc(PIECE, 6);
  freePieces([...tablePieces, foreign]);
  assert.ok(
    tablePieces.every((p) => p.buffer.byteLength === 0),
    'an unpooled writer’s pieces are freed',
  );
  assert.equal(foreign.length, PIECE, 'a buffer no writer made is left alone');
  assert.equal(foreign[0], 6);
});

test('PieceWriter: each proxy owns its pool: pieces given back to one are never another’s', () => {
  const one = newPiecePool();
  const other = newPiecePool();
  const body = new PieceWriter({ pool: one });
  fill(body, 10, 1);
  const pieces = body.end();
  const memory = pieces[0]?.buffer;
  other.release(pieces);
  assert.equal(other.bytes(), 0, 'another pool does not keep it');
  const next = new PieceWriter({ pool: one });
  fill(next, 10, 2);
  assert.notEqual(next.end()[0]?.buffer, memory, 'and it was freed, not kept for the pool it came from');
});
