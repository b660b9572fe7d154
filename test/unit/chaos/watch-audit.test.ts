/**
 * The chaos run's checks must be able to fail: the audit (test/helpers/watch-audit.ts) on records
 * made by hand, and the reflector-style client (test/helpers/reflector-watcher.ts) against a
 * scripted server that repeats an event, sends one out of order and expires a watch.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { Agent } from 'undici';
import type { ObservedEvent, ObservedList, ReflectorWatcher, WatchRecord, WatchSegment } from '../../helpers/reflector-watcher.ts';
import { startReflectorWatcher } from '../../helpers/reflector-watcher.ts';
import type { AcknowledgedWrite } from '../../helpers/watch-audit.ts';
import { auditWatch } from '../../helpers/watch-audit.ts';
import { eventually } from '../../helpers/eventually.ts';

const write = (name: string, rv: number, ackedAt: number, type: AcknowledgedWrite['type'] = 'MODIFIED'): AcknowledgedWrite => ({
  key: `ns/${name}`,
  type,
  rv,
  ackedAt,
});
const event = (name: string, rv: number, at: number, type: ObservedEvent['type'] = 'MODIFIED'): ObservedEvent => ({
  key: `ns/${name}`,
  type,
  rv,
  at,
});
const segment = (from: number, to: number): WatchSegment => ({ from, to, startedAt: 0, endedAt: undefined, end: undefined });

function record(parts: {
  events?: ObservedEvent[];
  lists?: ObservedList[];
  segments?: WatchSegment[];
  store?: [string, number][];
}): WatchRecord {
  return {
    events: parts.events ?? [],
    lists: parts.lists ?? [{ rv: 10, at: 0, items: 0 }],
    segments: parts.segments ?? [],
    store: new Map(parts.store ?? []),
    counts: { duplicated: 0, reordered: 0, expired: 0, relists: 0, rewatches: 0, failures: 0, bookmarks: 0 },
    problems: [],
  };
}

test('watch audit: every write delivered in its watch is delivered, nothing lost', () => {
  const audit = auditWatch(
    record({ events: [event('a', 11, 105, 'ADDED'), event('a', 12, 230)], segments: [segment(10, 12)], store: [['ns/a', 12]] }),
    { writes: [write('a', 11, 100, 'ADDED'), write('a', 12, 200)], final: new Map([['ns/a', 12]]) },
  );
  assert.equal(audit.delivered, 2);
  assert.equal(audit.lost, 0);
  assert.equal(audit.longestSilenceMs, 30);
  assert.deepEqual(audit.problems, []);
});

test('watch audit: a write missing inside a watch that went past it is lost, even if a later LIST covers it', () => {
  const audit = auditWatch(
    record({
      events: [event('a', 11, 105, 'ADDED'), event('a', 13, 305)],
      lists: [
        { rv: 10, at: 0, items: 0 },
        { rv: 20, at: 400, items: 1 },
      ],
      segments: [segment(10, 13)],
      store: [['ns/a', 13]],
    }),
    { writes: [write('a', 11, 100, 'ADDED'), write('a', 12, 200), write('a', 13, 300)], final: new Map([['ns/a', 13]]) },
  );
  assert.equal(audit.lost, 1);
  assert.match(audit.problems[0] ?? '', /ns\/a@12 missing from the watch from RV 10/);
});

test('watch audit: a write no watch covered, seen through a later LIST, is relisted; its silence runs from the return', () => {
  const audit = auditWatch(
    record({
      events: [event('a', 11, 105, 'ADDED')],
      lists: [
        { rv: 10, at: 0, items: 0 },
        { rv: 14, at: 5_000, items: 1 },
      ],
      segments: [segment(10, 11), segment(14, 14)],
      store: [['ns/a', 12]],
    }),
    { writes: [write('a', 11, 100, 'ADDED'), write('a', 12, 200)], final: new Map([['ns/a', 12]]), recoveredAt: 3_000 },
  );
  assert.equal(audit.relisted, 1);
  assert.equal(audit.lost, 0);
  assert.equal(audit.longestSilenceMs, 2_000);
  assert.equal(audit.firstAfterReturnMs, 2_000);
});

test('watch audit: a write never seen is lost and waited for until the audit; a wrong type and a final-state difference are lost', () => {
  const audit = auditWatch(record({ events: [event('a', 11, 105, 'MODIFIED')], segments: [segment(10, 11)], store: [['ns/a', 11]] }), {
    writes: [write('a', 11, 100, 'ADDED'), write('b', 12, 200, 'ADDED')],
    final: new Map([
      ['ns/a', 11],
      ['ns/b', 12],
    ]),
    auditedAt: 10_200,
  });
  // a@11 delivered as MODIFIED, b@12 never seen, b missing from the final state.
  assert.equal(audit.lost, 3);
  assert.equal(audit.longestSilenceMs, 10_000);
});

test('reflector watcher: counts a repeated event and one out of order, and relists after a 410', async (t) => {
  const pod = (name: string, rv: number): string => JSON.stringify({ metadata: { namespace: 'ns', name, resourceVersion: String(rv) } });
  const requests: string[] = [];
  let watches = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push(url.search);
    if (url.searchParams.get('watch') !== 'true') {
      const rv = requests.length === 1 ? '10' : '30';
      res.end(JSON.stringify({ metadata: { resourceVersion: rv }, items: [] }));
      return;
    }
    watches++;
    res.writeHead(200, { 'content-type': 'application/json' });
    if (watches === 1) {
      res.write(`{"type":"ADDED","object":${pod('a', 11)}}\n`);
      res.write(`{"type":"ADDED","object":${pod('a', 11)}}\n`);
      res.write(`{"type":"ADDED","object":${pod('b', 9)}}\n`);
      res.end(`{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}\n`);
      return;
    }
    // Later watches stay open until the client goes.
    req.on('close', () => res.end());
  });
  const watcher = await watcherOf(t, server);
  await watcher.synced;
  await eventually('the relist after the 410, and the watch from its RV', () => watches === 2, 10_000);
  await watcher.stop();
  assert.equal(watcher.counts.duplicated, 1);
  assert.equal(watcher.counts.reordered, 1);
  assert.equal(watcher.counts.expired, 1);
  assert.equal(watcher.counts.relists, 1);
  // client-go's relist: from the last synced RV (the last event's, in order or not), unpaged; then the watch from the list's RV.
  assert.match(requests[2] ?? '', /resourceVersion=9(&|$)/);
  assert.doesNotMatch(requests[2] ?? '', /limit=/);
  assert.match(requests[3] ?? '', /watch=true&resourceVersion=30&allowWatchBookmarks=true/);
});

test('reflector watcher: wake() ends a backoff wait at once and starts the backoff over', async (t) => {
  /** Arrival of each LIST, on this process's clock; every one is refused with a 500. */
  const arrivals: number[] = [];
  const server = createServer((req, res) => {
    arrivals.push(performance.now());
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}');
  });
  const watcher = await watcherOf(t, server);
  // Backoffs of 0.8 s and 1.6 s: after the third failure the wait is 3.2 s.
  await eventually('three refused LISTs', () => arrivals.length === 3 && watcher.counts.failures === 3, 10_000);
  const woken = performance.now();
  watcher.wake();
  await eventually('a LIST after the wake', () => arrivals.length === 4, 10_000);
  // A sleep never ends early: a fourth LIST before 3.2 s is the wake's.
  assert.ok(
    (arrivals[3] ?? Infinity) - woken < 3_200,
    `the LIST after the wake came ${((arrivals[3] ?? NaN) - woken).toFixed(0)} ms later`,
  );
  // Started over: the wait after the fourth failure is 0.8 s again, not 6.4 s.
  await eventually('a LIST after the first backoff again', () => arrivals.length === 5, 10_000);
  assert.ok((arrivals[4] ?? Infinity) - (arrivals[3] ?? 0) < 6_400);
  await watcher.stop();
});

/** A reflector watcher of ns's pods against `server` (listening from here on), stopped and closed with the test. */
async function watcherOf(t: TestContext, server: Server): Promise<ReflectorWatcher> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  );
  const dispatcher = new Agent();
  t.after(() => dispatcher.close());
  const watcher = startReflectorWatcher({
    name: 'w',
    url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    path: '/api/v1/namespaces/ns/pods',
    dispatcher,
    random: () => 0,
  });
  t.after(() => watcher.stop());
  return watcher;
}
