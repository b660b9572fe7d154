import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import type { TurnMember } from '../../../src/cache/write-turn.ts';
import { WriteTurn } from '../../../src/cache/write-turn.ts';

/** A connection that records each write call it gets (a vectored write of a corked turn is one call of several chunks). */
function member(name: string, log: string[]): TurnMember & { writes: number[] } {
  const writes: number[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      writes.push(1);
      log.push(`${name}:${chunk.toString()}`);
      callback();
    },
    writev(chunks, callback) {
      writes.push(chunks.length);
      log.push(`${name}:${chunks.map((c) => (c.chunk as Buffer).toString()).join('')}`);
      callback();
    },
  });
  return {
    sink,
    joinedTurn: -1,
    writes,
    afterTurn() {
      log.push(`${name}:after`);
    },
  };
}

const tick = (): Promise<void> =>
  new Promise((resolve) => {
    process.nextTick(resolve);
  });

test('write turn: each connection written in a turn is written once at its end, in the order first written', async () => {
  const log: string[] = [];
  const turn = new WriteTurn();
  const a = member('a', log);
  const b = member('b', log);
  turn.join(b);
  b.sink.write('1');
  turn.join(a);
  a.sink.write('2');
  turn.join(b);
  b.sink.write('3');
  assert.deepEqual(log, [], 'nothing is written before the turn ends');
  await tick();
  assert.deepEqual(log, ['b:13', 'b:after', 'a:2', 'a:after']);
  assert.deepEqual(b.writes, [2], "b's two frames went out in one vectored write");
  // The next turn is a new one: the same connection joins it again.
  turn.join(a);
  a.sink.write('4');
  await tick();
  assert.deepEqual(log.slice(4), ['a:4', 'a:after']);
});

test('write turn: a member that leaves is uncorked at once and not flushed again', async () => {
  const log: string[] = [];
  const turn = new WriteTurn();
  const a = member('a', log);
  turn.join(a);
  a.sink.write('x');
  turn.leave(a);
  assert.deepEqual(log, ['a:x'], 'leaving writes what the turn held');
  await tick();
  assert.deepEqual(log, ['a:x'], 'no afterTurn for a member that left');
  assert.equal(a.sink.writableCorked, 0);
});

test('write turn: a turn older than its budget is flushed before it ends; younger, it waits', async () => {
  const log: string[] = [];
  let now = 100;
  const turn = new WriteTurn(() => now);
  const a = member('a', log);
  turn.join(a);
  a.sink.write('1');
  now += 0.5;
  turn.flushIfOlderThan(1);
  assert.deepEqual(log, [], 'a young turn is held');
  now += 0.5;
  turn.flushIfOlderThan(1);
  assert.deepEqual(log, ['a:1', 'a:after']);
  turn.join(a);
  a.sink.write('2');
  await tick();
  await tick();
  assert.deepEqual(log, ['a:1', 'a:after', 'a:2', 'a:after'], 'later writes of the same turn go in the next flush, once');
  assert.equal(a.sink.writableCorked, 0);
});
