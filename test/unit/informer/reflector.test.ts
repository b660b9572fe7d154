import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ListerWatcher } from '../../../src/informer/lister-watcher.ts';
import type { Reflector, ReflectorOptions } from '../../../src/informer/reflector.ts';
import { newReflector, noopReflectorMetrics } from '../../../src/informer/reflector.ts';
import type { Timer } from '../../../src/clock/clock.ts';
import type { KubeObject } from '../../../src/informer/object.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import {
  RecordingStore,
  ScriptedListerWatcher,
  flushUntil,
  added,
  apiError,
  bookmark,
  connectionError,
  deleted,
  errorEvent,
  flush,
  modified,
  obj,
  page,
  settles,
} from '../../helpers/scripted-lister-watcher.ts';

/** A FakeClock that remembers the delay of every timer set (the reflector sets timers only to back off). */
class RecordingClock extends FakeClock {
  readonly delays: number[] = [];
  override setTimeout(fn: () => void, ms: number): Timer {
    this.delays.push(ms);
    return super.setTimeout(fn, ms);
  }
}

interface Harness {
  readonly clock: RecordingClock;
  readonly lw: ScriptedListerWatcher;
  readonly store: RecordingStore;
  readonly reflector: Reflector;
  readonly abort: AbortController;
  readonly done: Promise<void>;
  /** Aborts and waits for run() to end (failing if it does not end promptly). */
  stop(): Promise<void>;
}

/** A running reflector over a scripted ListerWatcher: LIST + WATCH, page size 2, random() = 0, unless overridden. */
function start(overrides: Partial<ReflectorOptions> = {}, lw = new ScriptedListerWatcher()): Harness {
  const clock = new RecordingClock();
  const store = new RecordingStore();
  const abort = new AbortController();
  const reflector = newReflector({
    name: 'pods',
    listerWatcher: lw,
    store,
    clock,
    random: () => 0,
    useWatchList: false,
    pageSize: 2,
    ...overrides,
  });
  const done = reflector.run(abort.signal);
  return {
    clock,
    lw,
    store,
    reflector,
    abort,
    done,
    async stop() {
      abort.abort();
      await settles(done, 'run() to end after abort');
    },
  };
}

const a1 = obj('ns', 'a', '1');
const b2 = obj('ns', 'b', '2');
const c3 = obj('ns', 'c', '3');

const LIST_WATCH_OPTIONS = { allowWatchBookmarks: true, timeoutSeconds: 300 } as const;

test('Reflector: the initial LIST is paginated and consistent; the store is replaced at the list RV, then a WATCH from it', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1, b2], 'c1'), page('10', [c3]));
  const h = start({}, lw);

  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '', limit: 2 });
  assert.deepEqual((await lw.nextList()).options, { limit: 2, continue: 'c1' });
  const watch = await lw.nextWatch();
  assert.deepEqual(watch.options, { resourceVersion: '10', ...LIST_WATCH_OPTIONS });
  assert.deepEqual(h.store.calls, [
    { op: 'replace', keys: ['ns/a', 'ns/b', 'ns/c'], rv: '10' },
    { op: 'rv', rv: '10' },
  ]);
  assert.equal(h.reflector.lastSyncResourceVersion(), '10');
  assert.equal(h.clock.delays.length, 0, 'no backoff');
  await h.stop();
});

test('Reflector: pages hold 500 items by default', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', []));
  const h = start({ pageSize: undefined }, lw);
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '', limit: 500 });
  await lw.nextWatch();
  await h.stop();
});

test('Reflector: the watch timeout is floor(300 * (1 + random())) seconds', async () => {
  for (const [random, expected] of [
    [0, 300],
    [0.5, 450],
    [0.9999, 599],
  ] as const) {
    const lw = new ScriptedListerWatcher().scriptList(page('10', []));
    const h = start({ random: () => random }, lw);
    assert.equal((await lw.nextWatch()).options.timeoutSeconds, expected);
    await h.stop();
  }
});

test('Reflector: watch events go to the store; events and bookmarks advance lastSyncResourceVersion', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]));
  const h = start({}, lw);
  const { watch } = await lw.nextWatch();
  watch.emit(added(obj('ns', 'b', '11')), modified(obj('ns', 'a', '12')), deleted(obj('ns', 'b', '13')));
  await flush();
  assert.equal(h.reflector.lastSyncResourceVersion(), '13');
  watch.emit(bookmark('20'));
  await flush();
  assert.equal(h.reflector.lastSyncResourceVersion(), '20');
  assert.deepEqual(h.store.calls, [
    { op: 'replace', keys: ['ns/a'], rv: '10' },
    { op: 'rv', rv: '10' },
    { op: 'add', key: 'ns/b', rv: '11' },
    { op: 'rv', rv: '11' },
    { op: 'update', key: 'ns/a', rv: '12' },
    { op: 'rv', rv: '12' },
    { op: 'delete', key: 'ns/b', rv: '13' },
    { op: 'rv', rv: '13' },
    { op: 'rv', rv: '20' },
  ]);
  await h.stop();
});

test('Reflector: a watch that closes normally is reopened at once from the last RV, without a LIST', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]));
  const h = start({}, lw);
  const first = await lw.nextWatch();
  first.watch.emit(modified(obj('ns', 'a', '11')));
  first.watch.close();
  const second = await lw.nextWatch();
  assert.deepEqual(second.options, { resourceVersion: '11', ...LIST_WATCH_OPTIONS });
  assert.equal(first.watch.isStopped(), true);

  // A watch that delivered nothing but lasted a second is a normal close too.
  h.clock.step(1000);
  second.watch.close();
  const third = await lw.nextWatch();
  assert.equal(third.options.resourceVersion, '11');
  assert.equal(lw.listCalls.length, 1, 'no relist');
  assert.equal(h.clock.delays.length, 0, 'no backoff');
  await h.stop();
});

test('Reflector: relist() ends the open watch and lists again at once, consistently, counted for its reason, each time it is asked', async () => {
  const relists: string[] = [];
  const metrics = { ...noopReflectorMetrics, relist: (reason: string) => relists.push(reason) };
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]), page('20', [a1, b2]));
  const h = start({ metrics }, lw);
  const first = await lw.nextWatch();
  first.watch.emit(modified(obj('ns', 'a', '11')));
  h.reflector.relist('inconsistent');
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '', limit: 2 }, 'consistent: RV unset, paged');
  const second = await lw.nextWatch();
  assert.equal(first.watch.isStopped(), true, 'the old watch is stopped');
  assert.equal(second.options.resourceVersion, '20');
  assert.deepEqual(h.store.calls.at(-2), { op: 'replace', keys: ['ns/a', 'ns/b'], rv: '20' });
  assert.deepEqual(relists, ['inconsistent']);
  assert.equal(h.clock.delays.length, 0, 'no backoff');

  // Asked again: the same.
  second.watch.emit(modified(obj('ns', 'a', '21')));
  lw.scriptList(page('30', [c3]));
  h.reflector.relist('inconsistent');
  const pending = await lw.nextList();
  assert.equal(pending.options.resourceVersion, '');
  await lw.nextWatch();
  assert.deepEqual(h.store.calls.at(-2), { op: 'replace', keys: ['ns/c'], rv: '30' });
  await h.stop();
});

test('Reflector: the store is told when a watch is open and when it ended (a 410, a broken connection), not at a clean reopen', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]), page('15', [a1]));
  const h = start({}, lw);
  await lw.nextList();
  const first = await lw.nextWatch();
  assert.deepEqual(h.store.connections(), [true], 'open once the list is in the store and the watch answered');
  h.clock.step(1000);
  first.watch.close();
  const second = await lw.nextWatch();
  assert.deepEqual(h.store.connections(), [true], 'the apiserver ended it (its timeout) and it was reopened at once: no gap');
  second.watch.emit(errorEvent(410, 'Expired'));
  await flush();
  assert.deepEqual(h.store.connections(), [true, false], 'down while relisting');
  h.clock.step(1000);
  await lw.nextList();
  const third = await lw.nextWatch();
  assert.deepEqual(h.store.connections(), [true, false, true]);
  h.clock.step(1000); // not a "very short watch"
  third.watch.fail(connectionError());
  await lw.nextWatch();
  assert.deepEqual(h.store.connections(), [true, false, true, false, true], 'a broken connection: down until a watch opens again');
  await h.stop();
  assert.deepEqual(h.store.connections().at(-1), false, 'stopped');
});

test("Reflector: an ERROR 410 event relists at the last RV, unpaged, a second later (as the apiserver's cacher)", async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1, b2]), page('15', [a1]));
  const h = start({}, lw);
  await lw.nextList();
  const { watch } = await lw.nextWatch();
  watch.emit(modified(obj('ns', 'a', '11')), errorEvent(410, 'Expired'));
  await flush();
  assert.equal(watch.isStopped(), true);
  assert.equal(lw.listCalls.length, 1);
  assert.deepEqual(h.clock.delays, [1000]);
  h.clock.step(999);
  await flush();
  assert.equal(lw.listCalls.length, 1, 'still waiting');
  h.clock.step(1);
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '11', limit: 0 });
  assert.deepEqual((await lw.nextWatch()).options, { resourceVersion: '15', ...LIST_WATCH_OPTIONS });
  assert.deepEqual(h.store.changes().at(-1), { op: 'replace', keys: ['ns/a'], rv: '15' });
  await h.stop();
});

test('Reflector: HTTP 410 on opening the watch relists at the last RV a second later', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]), page('12', [a1])).scriptWatchErrors(apiError(410, 'Expired'));
  const h = start({}, lw);
  await lw.nextList();
  assert.equal((await lw.nextWatch()).error?.message.startsWith('410'), true);
  await flush();
  assert.deepEqual(h.clock.delays, [1000]);
  h.clock.step(1000);
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '10', limit: 0 });
  assert.equal((await lw.nextWatch()).options.resourceVersion, '12');
  await h.stop();
});

test('Reflector: a 410 after an outage relists a second later, whatever backoff the outage grew (chaos: 30-58 s of silence before)', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]), page('20', [a1]));
  const h = start({}, lw);
  await lw.nextList();
  await failWatches(h, 6); // 800 … 25,600 ms: the backoff an outage leaves
  const back = await lw.nextWatch();
  back.watch.emit(errorEvent(410, 'Expired'));
  await flush();
  assert.equal(h.clock.delays.at(-1), 1000, 'a second, not the next backoff (30 s)');
  h.clock.step(1000);
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '10', limit: 0 });
  await h.stop();
});

test('Reflector: an expired continue token relists at once with RV "" (consistent), keeping none of the old pages', async () => {
  const lw = new ScriptedListerWatcher().scriptList(
    page('10', [a1, b2], 'c1'),
    apiError(410, 'Expired'),
    page('20', [obj('ns', 'x', '18'), obj('ns', 'y', '19')], 'c2'),
    page('20', [obj('ns', 'z', '20')]),
  );
  const h = start({}, lw);
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '', limit: 2 });
  assert.deepEqual((await lw.nextList()).options, { limit: 2, continue: 'c1' });
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '', limit: 2 });
  assert.deepEqual((await lw.nextList()).options, { limit: 2, continue: 'c2' });
  assert.equal((await lw.nextWatch()).options.resourceVersion, '20');
  assert.deepEqual(h.store.changes(), [{ op: 'replace', keys: ['ns/x', 'ns/y', 'ns/z'], rv: '20' }]);
  assert.deepEqual(h.clock.delays, [], 'no backoff');
  await h.stop();
});

test('Reflector: a relist whose RV has expired lists again at once, consistently (RV "", paged)', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]), apiError(410, 'Expired'), page('30', [b2]));
  const h = start({}, lw);
  await lw.nextList();
  const { watch } = await lw.nextWatch();
  watch.emit(errorEvent(410, 'Expired'));
  await flush();
  h.clock.step(1000);
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '10', limit: 0 });
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '', limit: 2 });
  assert.equal((await lw.nextWatch()).options.resourceVersion, '30');
  assert.deepEqual(h.clock.delays, [1000]);
  await h.stop();
});

test('Reflector: a list older than the state held (an upstream behind the one before) is refused: the store keeps its state and lists again, not older than it', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]), apiError(410, 'Expired'), page('8', [b2]), page('12', [c3]));
  const h = start({}, lw);
  await lw.nextList();
  const { watch } = await lw.nextWatch();
  // The watch from 10 ends (410), and the LIST at 10 cannot be had either: the next is consistent.
  watch.emit(errorEvent(410, 'Expired'));
  await flush();
  h.clock.step(1000);
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '10', limit: 0 });
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '', limit: 2 }, 'consistent: whatever the upstream has now');
  await flushUntil('a backoff', () => h.clock.delays.length === 2);
  assert.ok(
    h.store.calls.every((c) => c.op !== 'replace' || c.rv !== '8'),
    'the state at 8 is never stored: the cache served 10',
  );
  assert.equal(h.reflector.lastSyncResourceVersion(), '10');
  h.clock.step(h.clock.delays.at(-1) ?? 0);
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '10', limit: 0 }, 'not older than what it served');
  assert.equal((await lw.nextWatch()).options.resourceVersion, '12');
  assert.deepEqual(
    h.store.calls.filter((c) => c.op === 'replace').map((c) => c.rv),
    ['10', '12'],
  );
  await h.stop();
});

test('Reflector: a watch that fails to open with a connection error backs off and re-watches, without relisting', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1])).scriptWatchErrors(connectionError(), connectionError('ECONNRESET'));
  const h = start({}, lw);
  await lw.nextWatch();
  await flush();
  assert.deepEqual(h.clock.delays, [800]);
  h.clock.step(799);
  await flush();
  assert.equal(lw.watchCalls.length, 1);
  h.clock.step(1);
  assert.equal((await lw.nextWatch()).options.resourceVersion, '10');
  await flush();
  assert.deepEqual(h.clock.delays, [800, 1600]);
  h.clock.step(1600);
  const third = await lw.nextWatch();
  assert.deepEqual(third.options, { resourceVersion: '10', ...LIST_WATCH_OPTIONS });
  assert.equal(third.error, undefined);
  assert.equal(lw.listCalls.length, 1, 'no relist');
  await h.stop();
});

test('Reflector: a backoff after a connection error ends as soon as the apiserver answers again; after other errors it does not', async () => {
  let recovered: () => void = () => undefined;
  const asked: AbortSignal[] = [];
  const reachable = (signal: AbortSignal): Promise<void> => {
    asked.push(signal);
    return new Promise((resolve) => {
      recovered = resolve;
    });
  };
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1])).scriptWatchErrors(connectionError(), apiError(403, 'Forbidden'));
  // A backoff grown long (30 s), as after a minute of outage.
  const h = start({ reachable, backoff: { next: () => 30_000 } }, lw);
  await lw.nextWatch();
  await flush();
  assert.equal(asked.length, 1, 'waiting for the apiserver too');
  h.clock.step(400);
  recovered();
  await flush();
  assert.equal(lw.watchCalls.length, 1, 'never sooner than a second after the failure');
  h.clock.step(600);
  const second = await lw.nextWatch();
  assert.equal(second.options.resourceVersion, '10', 'watched again a second after the failure, not 30 s');
  assert.equal(asked[0]?.aborted, true, 'the wait is given up once over');
  // A 403 is an answer: the apiserver is there, so its backoff is waited out in full.
  await flush();
  assert.equal(asked.length, 1, 'not asked after a refusal');
  await h.stop();
});

test('Reflector: a 429 on opening the watch backs off and re-watches, without relisting', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1])).scriptWatchErrors(apiError(429, 'TooManyRequests'));
  const h = start({}, lw);
  await lw.nextWatch();
  await flush();
  assert.deepEqual(h.clock.delays, [800]);
  h.clock.step(800);
  assert.equal((await lw.nextWatch()).options.resourceVersion, '10');
  assert.equal(lw.listCalls.length, 1);
  await h.stop();
});

test('Reflector: a 429 with Retry-After: 5 waits at least 5 s', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1])).scriptWatchErrors(apiError(429, 'TooManyRequests', 5));
  const h = start({}, lw);
  await lw.nextWatch();
  await flush();
  h.clock.step(4999);
  await flush();
  assert.equal(lw.watchCalls.length, 1, 'Retry-After is honoured over the 800 ms backoff');
  h.clock.step(1);
  await lw.nextWatch();

  // An ERROR event with 429 (and its retryAfterSeconds) backs off the same way and reopens the watch.
  const { watch } = lw.watchCalls[1] ?? assert.fail('second watch');
  watch.emit({ type: 'ERROR', status: { kind: 'Status', code: 429, reason: 'TooManyRequests', details: { retryAfterSeconds: 3 } } });
  await flush();
  h.clock.step(2999);
  await flush();
  assert.equal(lw.watchCalls.length, 2);
  h.clock.step(1);
  assert.equal((await lw.nextWatch()).options.resourceVersion, '10');
  assert.equal(lw.listCalls.length, 1, 'no relist');
  await h.stop();
});

/** Fails the watch open `n` times with a connection error, stepping the clock through each backoff. */
async function failWatches(h: Harness, n: number): Promise<void> {
  h.lw.scriptWatchErrors(...Array.from({ length: n }, () => connectionError()));
  for (let i = 0; i < n; i++) {
    await h.lw.nextWatch();
    await flush();
    h.clock.step(h.clock.delays.at(-1) ?? assert.fail('no backoff timer'));
  }
}

test('Reflector: an outage is logged once when it starts (warn) and once when the watch is back (info); the retries between at debug', async () => {
  const logs: { level: string; message: string }[] = [];
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]));
  const h = start({ log: (level, message) => logs.push({ level, message }) }, lw);
  const first = await lw.nextWatch();
  await flush();
  assert.equal(logs.length, 0, 'a watch opening for the first time is no news');
  lw.scriptWatchErrors(...Array.from({ length: 5 }, () => connectionError()));
  first.watch.emit(modified(obj('ns', 'a', '11')));
  first.watch.fail(connectionError('ECONNRESET'));
  for (let i = 0; i < 5; i++) {
    await lw.nextWatch();
    await flush();
    h.clock.step(h.clock.delays.at(-1) ?? assert.fail('no backoff timer'));
  }
  const reopened = await lw.nextWatch();
  await flush();
  const above = logs.filter((l) => l.level !== 'debug');
  assert.equal(above.length, 2, `two lines above debug, got:\n${logs.map((l) => `${l.level} ${l.message}`).join('\n')}`);
  const [down, up] = above.map((l) => `${l.level} ${l.message}`);
  assert.match(down ?? '', /^warn pods: watch connection broke: .*ECONNRESET.*retrying, reads/);
  assert.match(up ?? '', /^info pods: watching again after [\d.]+ s \(6 failed attempts, first: watch connection broke/);
  assert.equal(logs.filter((l) => l.level === 'debug').length, 5, 'each failed re-open while down');
  // A clean end (the apiserver's timeout) reopened at once: no transition, no line.
  logs.length = 0;
  h.clock.step(2_000);
  reopened.watch.close();
  await lw.nextWatch();
  await flush();
  await h.stop();
  assert.equal(logs.length, 0, 'a clean end reopened at once is no transition');
});

test('Reflector: backoff delays are 800, 1600, 3200 … ms, capped at 30 s', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', []));
  const h = start({}, lw);
  await failWatches(h, 9);
  assert.deepEqual(h.clock.delays, [800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000, 30_000]);
  assert.equal(lw.listCalls.length, 1);
  await h.stop();
});

test('Reflector: jitter stretches each backoff by random() (up to 2x)', async () => {
  for (const random of [0.5, 0.999]) {
    const lw = new ScriptedListerWatcher().scriptList(page('10', []));
    const h = start({ random: () => random }, lw);
    await failWatches(h, 7);
    assert.deepEqual(
      h.clock.delays,
      [800, 1600, 3200, 6400, 12_800, 25_600, 30_000].map((d) => d * (1 + random)),
    );
    await h.stop();
  }
});

test('Reflector: the backoff starts again from 800 ms after 2 minutes without backoff', async () => {
  for (const [healthyMs, expected] of [
    [120_000, 6400], // exactly 2 minutes after the last backoff started: no reset yet
    [120_001, 800],
  ] as const) {
    const lw = new ScriptedListerWatcher().scriptList(page('10', []));
    const h = start({}, lw);
    await failWatches(h, 3); // 800, 1600, 3200: the last started 3200 ms before the watch opened
    const { watch } = await lw.nextWatch();
    h.clock.step(healthyMs - 3200);
    lw.scriptWatchErrors(connectionError());
    watch.emit(modified(obj('ns', 'a', '11')));
    watch.close();
    await lw.nextWatch();
    await flush();
    assert.deepEqual(h.clock.delays, [800, 1600, 3200, expected], `after ${String(healthyMs)} ms`);
    await h.stop();
  }
});

test('Reflector: a watch closed in under a second with no events is a very short watch: backoff, then relist', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]), page('10', [a1]));
  const h = start({}, lw);
  await lw.nextList();
  const { watch } = await lw.nextWatch();
  h.clock.step(999);
  watch.close();
  await flush();
  assert.deepEqual(h.clock.delays, [800]);
  assert.equal(lw.listCalls.length, 1);
  h.clock.step(800);
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '10', limit: 0 });
  await lw.nextWatch();
  await h.stop();
});

test('Reflector: a watch ended in under a second because its route moved is reopened at once from its RV, without a relist', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]));
  const h = start({}, lw);
  await lw.nextList();
  const { watch } = await lw.nextWatch();
  h.clock.step(10);
  watch.reroute();
  const second = await lw.nextWatch();
  assert.equal(second.options.resourceVersion, '10');
  assert.equal(lw.listCalls.length, 1, 'no relist');
  assert.deepEqual(h.clock.delays, [], 'no backoff');
  await h.stop();
});

test('Reflector: a connection error thrown mid-stream is a close: the watch reopens from the last RV without relisting', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]));
  const h = start({}, lw);
  const { watch } = await lw.nextWatch();
  watch.emit(modified(obj('ns', 'a', '11')));
  watch.fail(connectionError('ECONNRESET'));
  const second = await lw.nextWatch();
  assert.equal(second.options.resourceVersion, '11');
  assert.equal(lw.listCalls.length, 1);
  assert.deepEqual(h.clock.delays, []);
  await h.stop();
});

test('Reflector: any other error mid-stream (an undecodable line) relists after a backoff', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]), page('12', [a1]));
  const h = start({}, lw);
  await lw.nextList();
  const { watch } = await lw.nextWatch();
  watch.emit(modified(obj('ns', 'a', '11')));
  watch.fail(new SyntaxError('Unexpected token'));
  await flush();
  assert.deepEqual(h.clock.delays, [800]);
  h.clock.step(800);
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '11', limit: 0 });
  await h.stop();
});

const WATCH_LIST_OPTIONS = {
  resourceVersionMatch: 'NotOlderThan',
  sendInitialEvents: true,
  allowWatchBookmarks: true,
  timeoutSeconds: 300,
} as const;

test('Reflector (WatchList): the initial events are applied by one replace at the initial-events-end RV; the same watch goes on', async () => {
  const lw = new ScriptedListerWatcher();
  const h = start({ useWatchList: undefined }, lw);
  const { options, watch } = await lw.nextWatch();
  assert.deepEqual(options, { resourceVersion: '', ...WATCH_LIST_OPTIONS });

  watch.emit(added(obj('ns', 'a', '5')), added(obj('ns', 'b', '7')), added(obj('ns', 'c', '8')), deleted(obj('ns', 'c', '8')));
  watch.emit(bookmark('9'));
  await flush();
  assert.deepEqual(h.store.calls, [], 'nothing reaches the store before the initial-events-end bookmark');
  assert.equal(h.reflector.lastSyncResourceVersion(), '');

  watch.emit(bookmark('10', true));
  await flush();
  assert.deepEqual(h.store.calls, [
    { op: 'replace', keys: ['ns/a', 'ns/b'], rv: '10' },
    { op: 'rv', rv: '10' },
  ]);
  assert.equal(h.reflector.lastSyncResourceVersion(), '10');

  watch.emit(modified(obj('ns', 'a', '11')), deleted(obj('ns', 'b', '12')));
  await flush();
  assert.deepEqual(h.store.changes().slice(1), [
    { op: 'update', key: 'ns/a', rv: '11' },
    { op: 'delete', key: 'ns/b', rv: '12' },
  ]);
  assert.equal(lw.listCalls.length, 0, 'no LIST');
  assert.equal(lw.watchCalls.length, 1, 'one watch');
  assert.equal(watch.isStopped(), false);
  await h.stop();
  assert.equal(watch.isStopped(), true);
});

test('Reflector (WatchList): a refused watch-list request falls back to LIST + WATCH for that attempt', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]), page('20', [a1])).scriptWatchErrors(apiError(403, 'Forbidden'));
  const h = start({ useWatchList: true }, lw);
  assert.equal((await lw.nextWatch()).options.sendInitialEvents, true);
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '', limit: 2 });
  const { options, watch } = await lw.nextWatch();
  assert.deepEqual(options, { resourceVersion: '10', ...LIST_WATCH_OPTIONS });
  assert.deepEqual(h.clock.delays, [], 'the fallback is at once');

  // The next attempt (after a 410) tries WatchList again, from the last RV.
  watch.emit(errorEvent(410, 'Expired'));
  await flush();
  h.clock.step(1000);
  assert.deepEqual((await lw.nextWatch()).options, { resourceVersion: '10', ...WATCH_LIST_OPTIONS });
  await h.stop();
});

test('Reflector (WatchList): a stream that closes before initial-events-end starts over with a clean state', async () => {
  const lw = new ScriptedListerWatcher();
  const h = start({ useWatchList: true }, lw);
  const first = await lw.nextWatch();
  first.watch.emit(added(obj('ns', 'a', '5')));
  first.watch.close();
  const second = await lw.nextWatch();
  assert.deepEqual(second.options, { resourceVersion: '', ...WATCH_LIST_OPTIONS });
  assert.equal(first.watch.isStopped(), true);
  second.watch.emit(added(obj('ns', 'b', '6')), bookmark('6', true));
  await flush();
  assert.deepEqual(h.store.changes(), [{ op: 'replace', keys: ['ns/b'], rv: '6' }]);
  await h.stop();
});

test('Reflector (WatchList): a stream that closes at once with nothing (very short watch) falls back to LIST + WATCH', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [a1]));
  const h = start({ useWatchList: true }, lw);
  const first = await lw.nextWatch();
  first.watch.close();
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '', limit: 2 });
  assert.equal((await lw.nextWatch()).options.sendInitialEvents, undefined);
  assert.equal(lw.watchCalls.length, 2, 'no loop of watch-list requests');
  await h.stop();
});

test('Reflector (WatchList): a connection error backs off and retries the watch-list; 410 retries at once with RV ""', async () => {
  const lw = new ScriptedListerWatcher().scriptWatchErrors(connectionError());
  const h = start({ useWatchList: true }, lw);
  await lw.nextWatch();
  await flush();
  assert.deepEqual(h.clock.delays, [800]);
  h.clock.step(800);
  const { watch } = await lw.nextWatch();
  watch.emit(added(obj('ns', 'a', '5')), bookmark('10', true), modified(obj('ns', 'a', '11')), errorEvent(410, 'Expired'));
  await flush();
  h.clock.step(1600);
  lw.scriptWatchErrors(apiError(410, 'Expired'));
  assert.deepEqual((await lw.nextWatch()).options, { resourceVersion: '11', ...WATCH_LIST_OPTIONS });
  assert.deepEqual((await lw.nextWatch()).options, { resourceVersion: '', ...WATCH_LIST_OPTIONS });
  assert.equal(lw.listCalls.length, 0);
  await h.stop();
});

test('Reflector: stopping ends run() promptly while backing off', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', [])).scriptWatchErrors(connectionError());
  const h = start({}, lw);
  await lw.nextWatch();
  await flush();
  assert.equal(h.clock.waiters(), 1);
  await h.stop();
  assert.equal(h.clock.waiters(), 0, 'the backoff timer is cancelled');
  assert.equal(lw.watchCalls.length, 1);
});

test('Reflector: stopping ends run() promptly while a watch is open, and stops the watch', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', []));
  const h = start({}, lw);
  const { watch } = await lw.nextWatch();
  await h.stop();
  assert.equal(watch.isStopped(), true);
  assert.equal(lw.watchCalls.length, 1);
  assert.equal(h.clock.waiters(), 0);

  // Also during the initial events of a watch-list: nothing reaches the store.
  const lw2 = new ScriptedListerWatcher();
  const h2 = start({ useWatchList: true }, lw2);
  const initial = await lw2.nextWatch();
  initial.watch.emit(added(obj('ns', 'a', '5')));
  await flush();
  await h2.stop();
  assert.equal(initial.watch.isStopped(), true);
  assert.deepEqual(h2.store.calls, []);
  assert.equal(lw2.listCalls.length, 0);
});

test('Reflector: stopped while a watch is opening, the watch that opens after the stop is stopped at once', async () => {
  const scripted = new ScriptedListerWatcher().scriptList(page('10', []));
  let release: (() => void) | undefined;
  const signals: (AbortSignal | undefined)[] = [];
  const slow: ListerWatcher = {
    list: (options, signal) => {
      signals.push(signal);
      return scripted.list(options);
    },
    // The apiserver has not answered the watch yet when the stop comes.
    watch: async (options, signal) => {
      signals.push(signal);
      await new Promise<void>((resolve) => (release = resolve));
      return scripted.watch(options);
    },
  };
  const h = start({ listerWatcher: slow });
  await flushUntil('the watch to be requested', () => release !== undefined);
  h.abort.abort();
  release?.();
  await settles(h.done, 'run() to end although the watch opened after the stop');
  const { watch } = await scripted.nextWatch();
  assert.equal(watch.isStopped(), true);
  assert.ok(signals.length === 2 && signals.every((s) => s?.aborted === true), 'list and watch carry a signal the stop aborted');
});

/** A store whose every add takes `costMs` of CPU, as a large object's decoding and indexing would. */
class SlowStore extends RecordingStore {
  readonly costMs: number;
  constructor(costMs: number) {
    super();
    this.costMs = costMs;
  }
  override add(o: KubeObject): void {
    const until = performance.now() + this.costMs;
    while (performance.now() < until) {
      // the work of applying one event
    }
    super.add(o);
  }
}

test('Reflector: a backlog of buffered watch events is applied in turns: the event loop runs between them', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('10', []));
  const store = new SlowStore(0.1);
  const h = start({ store }, lw);
  const { watch } = await lw.nextWatch();
  // 300 events at 0.1 ms each: 30 ms of work, all already read from the connection.
  const backlog = Array.from({ length: 300 }, (_, i) => added(obj('ns', `p${String(i)}`, String(11 + i))));
  watch.emit(...backlog);
  let appliedWhenTheLoopRan: number | undefined;
  setImmediate(() => {
    appliedWhenTheLoopRan = store.calls.filter((c) => c.op === 'add').length;
  });
  await flushUntil('every event applied', () => store.calls.filter((c) => c.op === 'add').length === backlog.length);
  assert.ok(
    appliedWhenTheLoopRan !== undefined && appliedWhenTheLoopRan < backlog.length,
    `the loop ran after ${String(appliedWhenTheLoopRan)} of ${String(backlog.length)} events`,
  );
  assert.equal(h.reflector.lastSyncResourceVersion(), String(10 + backlog.length));
  await h.stop();
});

test('Reflector: a restored store (resumeFrom) watches from its RV without a LIST; a 410 then lists at once, not older than it', async () => {
  const lw = new ScriptedListerWatcher().scriptList(page('30', [a1, b2]));
  const h = start({ resumeFrom: '20' }, lw);
  const first = await lw.nextWatch();
  assert.deepEqual(first.options, { resourceVersion: '20', ...LIST_WATCH_OPTIONS }, 'the watch resumes where the saved state stopped');
  assert.equal(lw.listCalls.length, 0, 'no LIST');
  first.watch.emit(modified(obj('ns', 'a', '21')));
  first.watch.close();
  h.clock.step(1000);
  const second = await lw.nextWatch();
  assert.equal(second.options.resourceVersion, '21', 'a watch that ends is reopened as usual');
  assert.equal(lw.listCalls.length, 0);
  second.watch.emit(errorEvent(410, 'Expired'));
  assert.deepEqual((await lw.nextList()).options, { resourceVersion: '21', limit: 0 }, 'expired: a LIST not older than the state held');
  assert.equal(h.clock.delays.length, 0, 'at once: waiting adds nothing');
  assert.equal((await lw.nextWatch()).options.resourceVersion, '30');
  await h.stop();
});
