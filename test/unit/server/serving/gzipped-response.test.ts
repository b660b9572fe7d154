import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import type { CachedResponse } from '../../../../src/server/serving/cached-response.ts';
import { gzipped, newCompressions } from '../../../../src/server/serving/gzipped-response.ts';
import { newSharedLists } from '../../../../src/server/serving/shared-lists.ts';
import { newByteBudget } from '../../../../src/memory/memory-budget.ts';
import { newPiecePool } from '../../../../src/cache/piece-writer.ts';
import type { WatchCache } from '../../../../src/cache/watch-cache.ts';

/** A body of JSON-like pieces (compressible, with some noise), 64 KiB each. */
function pieces(count: number): Buffer[] {
  return Array.from({ length: count }, (_, i) =>
    Buffer.from(
      `{"kind":"Pod","metadata":{"name":"pod-${String(i)}","uid":"${randomBytes(16).toString('hex')}"}}`.repeat(700).slice(0, 65_536),
    ),
  );
}

test('gzipped: a per-request body compressed, its bytes counted until written, headers as the apiserver sends them', async () => {
  const body = pieces(4);
  const length = body.reduce((n, b) => n + b.length, 0);
  const bodies = newByteBudget(Number.POSITIVE_INFINITY);
  let writtenOriginal: boolean | undefined;
  const response: CachedResponse = {
    statusCode: 200,
    headers: { 'content-type': 'application/json' },
    length,
    body,
    written: (complete) => (writtenOriginal = complete),
  };
  const compressions = newCompressions();
  const answer = await gzipped(response, bodies, compressions);
  assert.equal(writtenOriginal, true, 'the uncompressed body is done with once compressed');
  assert.deepEqual(answer.headers, { 'content-type': 'application/json', 'content-encoding': 'gzip', vary: 'Accept-Encoding' });
  assert.equal(answer.chunked, true);
  const compressed = Buffer.concat([...answer.body]);
  assert.equal(compressed.length, answer.length);
  assert.ok(answer.length < length / 2, `compressed ${String(answer.length)} of ${String(length)}`);
  assert.deepEqual(gunzipSync(compressed), Buffer.concat(body));
  assert.equal(bodies.used(), answer.length, 'the compressed bytes count until written');
  answer.written?.(true);
  answer.written?.(true);
  assert.equal(bodies.used(), 0);
  assert.deepEqual(
    { bodies: compressions.bodies, shared: compressions.sharedBodies, answers: compressions.answers, in: compressions.inputBytes },
    { bodies: 1, shared: 0, answers: 1, in: length },
  );
});

test('gzipped: a shared body is compressed once for all its gzip readers, its bytes held until it is freed', async () => {
  const bodies = newByteBudget(Number.POSITIVE_INFINITY);
  const pool = newPiecePool();
  const shared = newSharedLists({ bodies, pool });
  const cache = {} as WatchCache;
  const body = pieces(8);
  const length = body.reduce((n, b) => n + b.length, 0);
  const kept = shared.keep(cache, 'all', 5n, length, body);
  assert.ok(kept !== undefined);
  assert.equal(bodies.used(), length);
  const answerOf = (): CachedResponse => ({ statusCode: 200, headers: {}, length, body: kept, written: kept.acquire() });
  const compressions = newCompressions();
  // Two readers at once: one compression, the same bytes.
  const [first, second] = await Promise.all([gzipped(answerOf(), bodies, compressions), gzipped(answerOf(), bodies, compressions)]);
  const third = await gzipped(answerOf(), bodies, compressions);
  assert.equal(compressions.bodies, 1);
  assert.equal(compressions.sharedBodies, 1);
  assert.equal(compressions.answers, 3);
  assert.deepEqual(Buffer.concat([...second.body]), Buffer.concat([...first.body]));
  assert.deepEqual(Buffer.concat([...third.body]), Buffer.concat([...first.body]));
  assert.deepEqual(gunzipSync(Buffer.concat([...first.body])), Buffer.concat(body));
  assert.equal(bodies.used(), length + first.length, 'the body and its compressed bytes');
  // Dropped (no new reader finds it) while readers still write: held until the last is done.
  kept.drop();
  first.written?.(true);
  second.written?.(true);
  assert.equal(bodies.used(), length + first.length);
  third.written?.(true);
  assert.equal(bodies.used(), 0);
});
