/**
 * An answer from the cache gzipped, as the apiserver's `deferredResponseWriter` gzips it
 * (response-compression.ts decides when): at GZIP_LEVEL, `Content-Encoding: gzip` and
 * `Vary: Accept-Encoding` added, sent chunked (no Content-Length).
 *
 * The compression runs on libuv's threadpool (Node's async zlib), fed a piece (64 KiB) at a
 * time: the event loop only hands pieces over and takes the output, so a 100 MB body never
 * holds it for more than one piece's making. A whole LIST shared by its readers
 * (shared-lists.ts) is compressed once, by its first gzip reader, for all of them; its
 * compressed bytes are the shared body's, counted in the bodies' budget until it is freed. Any
 * other body is compressed for its own response, its compressed bytes counted until written.
 */
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import type { ByteBudget } from '../../memory/memory-budget.ts';
import type { CachedResponse } from './cached-response.ts';
import { GZIP_HEADERS, GZIP_LEVEL } from './response-compression.ts';
import { SharedBody } from './shared-lists.ts';
import type { GzippedBody } from './shared-lists.ts';

/** Output pieces of the size the cache's own pieces have (piece-writer.ts). */
const GZIP_CHUNK_BYTES = 64 * 1024;

/** What the proxy's compressions cost and saved, since it started. */
export interface Compressions {
  /** Bodies compressed (a shared body once, however many read it gzipped). */
  bodies: number;
  /** Of which whole LISTs shared by their readers. */
  sharedBodies: number;
  /** Answers sent gzipped (a shared body's every gzip reader). */
  answers: number;
  /** Bytes compressed, and what they became. */
  inputBytes: number;
  outputBytes: number;
  /** Wall time from the first piece in to the last piece out, summed (the work itself runs on the threadpool). */
  seconds: number;
}

export function newCompressions(): Compressions {
  return { bodies: 0, sharedBodies: 0, answers: 0, inputBytes: 0, outputBytes: 0, seconds: 0 };
}

/**
 * `pieces` gzipped at GZIP_LEVEL, each compressed piece told to `counted` as it is made.
 * Asynchronous: the compression runs on the threadpool, a piece in flight at a time.
 */
export async function gzipPieces(pieces: Iterable<Buffer>, counted: (bytes: number) => void): Promise<GzippedBody> {
  const gzip = createGzip({ level: GZIP_LEVEL, chunkSize: GZIP_CHUNK_BYTES });
  const out: Buffer[] = [];
  let length = 0;
  gzip.on('data', (chunk: Buffer) => {
    out.push(chunk);
    length += chunk.length;
    counted(chunk.length);
  });
  const ended = once(gzip, 'end');
  // Awaited below; an error while a write waits rejects that wait first.
  ended.catch(() => undefined);
  try {
    for (const piece of pieces) {
      if (!gzip.write(piece)) await once(gzip, 'drain');
    }
    gzip.end();
    await ended;
  } catch (error) {
    gzip.destroy();
    throw error;
  }
  return { pieces: out, length };
}

/**
 * `response` gzipped (response-compression.ts decided it is): a shared body's compressed once
 * for all its readers, any other body's for this response. `response`'s own body is done with
 * once compressed (a shared one once this response is written).
 */
export async function gzipped(response: CachedResponse, bodies: ByteBudget, compressions: Compressions): Promise<CachedResponse> {
  const started = performance.now();
  const { body } = response;
  const made = (compressed: GzippedBody): void => {
    compressions.bodies++;
    compressions.inputBytes += response.length;
    compressions.outputBytes += compressed.length;
    compressions.seconds += (performance.now() - started) / 1000;
  };
  let compressed: GzippedBody;
  let written: ((complete: boolean) => void) | undefined;
  if (body instanceof SharedBody) {
    try {
      compressed = await body.gzipped((pieces, counted) =>
        gzipPieces(pieces, counted).then((result) => {
          made(result);
          compressions.sharedBodies++;
          return result;
        }),
      );
    } catch (error) {
      response.written?.(true);
      throw error;
    }
    // The compressed pieces are the shared body's: this response holds it until written.
    written = response.written;
  } else {
    let held = 0;
    try {
      compressed = await gzipPieces(body, (bytes) => {
        bodies.force(bytes);
        held += bytes;
      });
    } catch (error) {
      bodies.give(held);
      // Never handed to a socket: the pieces may go back.
      response.written?.(true);
      throw error;
    }
    made(compressed);
    response.written?.(true);
    let given = false;
    written = () => {
      if (given) return;
      given = true;
      bodies.give(held);
    };
  }
  compressions.answers++;
  return {
    statusCode: response.statusCode,
    headers: { ...response.headers, ...GZIP_HEADERS },
    length: compressed.length,
    body: compressed.pieces,
    chunked: true,
    ...(written === undefined ? {} : { written }),
  };
}
