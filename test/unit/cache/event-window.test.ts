import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENT_FRESH_MS, LOWER_BOUND_CAPACITY, newEventWindow } from '../../../src/cache/event-window.ts';
import { WindowEvent } from '../../../src/cache/window-event.ts';
import type { WatchEncoding } from '../../../src/cache/window-event.ts';
import { decodeObject } from '../../../src/informer/object.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

function event(rv: number): WindowEvent {
  const raw = Buffer.from(
    JSON.stringify({
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name: `cm-${String(rv)}`, namespace: 'ns', resourceVersion: String(rv) },
    }),
  );
  const object = decodeObject(raw);
  return new WindowEvent({ type: 'ADDED', key: object.key, object, prevObject: undefined, resourceVersion: BigInt(rv) });
}

const rvs = (interval: ReturnType<ReturnType<typeof newEventWindow>['since']>): number[] =>
  interval.kind === 'events' ? interval.events.map((e) => Number(e.resourceVersion)) : [];

test('event window: replays the events after an RV; the list RV is the oldest start', () => {
  const window = newEventWindow(new FakeClock());
  window.reset(10n);
  for (const rv of [11, 13, 17]) window.append(event(rv));
  assert.deepEqual(rvs(window.since(10n)), [11, 13, 17]);
  assert.deepEqual(rvs(window.since(12n)), [13, 17]);
  assert.deepEqual(rvs(window.since(17n)), []);
  assert.deepEqual(rvs(window.since(99n)), [], 'a future RV: nothing yet, the watcher waits');
  assert.deepEqual(window.since(9n), { kind: 'too-old', requested: 9n, oldest: 10n });
});

test('event window: once an event fell out, the oldest held event bounds the replay (410 below it)', () => {
  const clock = new FakeClock();
  const window = newEventWindow(clock);
  window.reset(1n);
  // Stale events: the window stays at its lower bound and drops the oldest.
  for (let rv = 2; rv < 2 + LOWER_BOUND_CAPACITY + 5; rv++) {
    window.append(event(rv));
    clock.step(EVENT_FRESH_MS + 1);
  }
  assert.equal(window.capacity(), LOWER_BOUND_CAPACITY);
  assert.equal(window.oldestResourceVersion(), 7n);
  assert.deepEqual(window.since(5n), { kind: 'too-old', requested: 5n, oldest: 6n });
  assert.equal(rvs(window.since(6n)).length, LOWER_BOUND_CAPACITY);
});

test('event window: a burst of fresh events doubles the capacity instead of dropping them', () => {
  const window = newEventWindow(new FakeClock());
  window.reset(0n);
  for (let rv = 1; rv <= 1000; rv++) window.append(event(rv));
  assert.ok(window.capacity() >= 1000, `capacity ${String(window.capacity())}`);
  assert.equal(rvs(window.since(0n)).length, 1000, 'nothing lost');
});

test('event window: a relist empties the history; replays start at the new list RV', () => {
  const window = newEventWindow(new FakeClock());
  window.reset(1n);
  window.append(event(2));
  window.reset(50n);
  assert.deepEqual(window.since(2n), { kind: 'too-old', requested: 2n, oldest: 50n });
  assert.deepEqual(rvs(window.since(50n)), []);
});

test('an event keeps each frame in memory of its own, never a slice of a slab shared with short-lived buffers', () => {
  const e = event(7);
  const wrapped: WatchEncoding = { wrap: (pieces) => [Buffer.from('1f\r\n'), ...pieces, Buffer.from('\r\n')], end: undefined };
  // Short-lived buffers from Node's pool around each frame, as a flood of reads makes them.
  const frames = ['ADDED', 'MODIFIED', 'DELETED'].flatMap((type) => {
    Buffer.from('a short-lived buffer');
    return [e.frame(type as 'ADDED'), e.frame(type as 'ADDED', wrapped)];
  });
  frames.push(e.objectBytes('DELETED'));
  for (const frame of frames) {
    assert.equal(frame.byteOffset, 0);
    assert.equal(frame.buffer.byteLength, frame.length, 'the frame owns exactly its bytes');
  }
  // Kept: the same Buffer each time.
  assert.equal(e.frame('ADDED'), frames[0]);
});
