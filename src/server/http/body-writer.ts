/**
 * A cached body written to its client: in pieces, in turns of the event loop that the writers of
 * large bodies share (write-turns.ts), and never more of it unsent at once than its connection
 * makes worth keeping. The apiserver's counterpart is Go's http.ResponseWriter under
 * responsewriters.WriteObjectNegotiated, whose writes block their goroutine until the kernel takes
 * the bytes.
 */
import type { ServerResponse } from 'node:http';
import type { CachedResponse } from '../serving/cached-reads.ts';
import type { WriteTurns } from './write-turns.ts';

/**
 * Pieces (64 KiB) one writer writes between yields to the event loop, at most: 16 MiB, so that
 * a 10,000-pod LIST (13 MB) can leave in one turn while a 100,000-pod one never holds the loop
 * for its whole length. Within that, the writers' share of each loop turn (write-turns.ts),
 * checked every TURN_CHECK_PIECES pieces, bounds how long upstream watch events wait.
 */
const PIECES_PER_TURN = 256;
const TURN_CHECK_PIECES = 16;
/** A cached body past this many unsent bytes waits for the connection to drain before its next turn. */
const BODY_HIGH_WATER_BYTES = 16 * 1024 * 1024;
/**
 * The same over TLS: one piece. Over plain HTTP the unsent bytes are references to the body's
 * shared pieces; over TLS they are the connection's own encrypted copy (TLSWrap encrypts whatever
 * is written at once, into buffers of its own), so a client that does not read would otherwise
 * hold up to BODY_HIGH_WATER_BYTES of the proxy's memory per request in flight. One piece ahead
 * of what the connection has sent, a flow's copies are at most its requests in flight times two
 * pieces, whatever the bodies' size; the kernel's send buffer still keeps a reader that reads busy.
 */
const ENCRYPTED_BODY_HIGH_WATER_BYTES = 64 * 1024;

/**
 * Writes a cached body and ends the response. HOT PATH: a body of up to TURN_CHECK_PIECES pieces
 * leaves in one vectored write at once; a larger one in turns, within the writers' share of the
 * loop (write-turns.ts), waiting for the connection to drain past BODY_HIGH_WATER_BYTES. Over TLS,
 * a piece at a time, each once the last has drained (ENCRYPTED_BODY_HIGH_WATER_BYTES).
 */
export async function writeBody(res: ServerResponse, cached: CachedResponse, turns: WriteTurns): Promise<void> {
  // Done once the kernel has every byte ('finish'), or cut short ('close' first).
  const { written: done } = cached;
  if (done !== undefined) {
    res.once('finish', () => {
      done(true);
    });
    res.once('close', () => {
      done(false);
    });
  }
  const encrypted = res.socket !== null && 'encrypted' in res.socket;
  const highWater = encrypted ? ENCRYPTED_BODY_HIGH_WATER_BYTES : BODY_HIGH_WATER_BYTES;
  let written = 0;
  res.cork();
  for (const piece of cached.body) {
    res.write(piece);
    ++written;
    if (encrypted ? res.writableLength < highWater : written % TURN_CHECK_PIECES !== 0) continue;
    if (written % PIECES_PER_TURN !== 0 && turns.mayWrite() && res.writableLength < highWater) continue;
    res.uncork();
    // Only a write that was refused ends in a 'drain': else the next turn.
    if (res.writableLength >= highWater && res.writableNeedDrain) await drained(res);
    else await turns.nextTurn();
    while (!res.destroyed && !turns.mayWrite()) await turns.nextTurn();
    if (res.destroyed) return;
    res.cork();
  }
  // Uncorked before end(): a chunked body's corked writes are held by the response itself
  // (kChunkedBuffer), and Node 24's end() writes the last chunk before it flushes them.
  res.uncork();
  res.end();
}

/** Resolves once `res` drains or closes. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
