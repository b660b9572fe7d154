/**
 * LeaderElector's rules (client-go leaderelection.go), driven by a fake clock over an in-memory
 * lock: no sleeping, every time asserted to the step.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { newLeaderHealthzAdaptor } from '../../../src/leaderelection/healthz.ts';
import type { LeaderElectionConfig, LeaderElector } from '../../../src/leaderelection/leader-elector.ts';
import { newLeaderElector } from '../../../src/leaderelection/leader-elector.ts';
import { newPrometheusLeaderMetricsProvider } from '../../../src/leaderelection/prometheus-metrics.ts';
import type { LeaderElectionRecord } from '../../../src/leaderelection/resource-lock.ts';
import { formatMicroTime } from '../../../src/leaderelection/resource-lock.ts';
import { ApiStatusError } from '../../../src/upstream/api-error.ts';
import type { Clock } from '../../../src/clock/clock.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { MemoryLeaseStore, MemoryLock } from '../../helpers/memory-lock.ts';
import { newMemoryLeaseStore, newMemoryLock } from '../../helpers/memory-lock.ts';

/** client-go's defaults. */
const LEASE_DURATION_MS = 15_000;
const RENEW_DEADLINE_MS = 10_000;
const RETRY_PERIOD_MS = 2_000;
const HOUR_MS = 3_600_000;

/** Lets every pending promise continuation run (the lock's requests, the election loop). */
async function settle(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Moves the clock `ms` forward in 10 ms steps, letting the election loops run after each step. */
async function advance(clock: FakeClock, ms: number, each?: () => void): Promise<void> {
  const end = clock.now() + ms;
  await settle();
  while (clock.now() < end) {
    clock.step(Math.min(10, end - clock.now()));
    await settle();
    each?.();
  }
}

/** A clock `offsetMs` away from `base`, running at the same rate (another node's clock). */
function skewed(base: FakeClock, offsetMs: number): Clock {
  return { now: () => base.now() + offsetMs, wallNow: () => base.wallNow() + offsetMs, setTimeout: (fn, ms) => base.setTimeout(fn, ms) };
}

function held(holder: string, at: number, extra: Partial<LeaderElectionRecord> = {}): LeaderElectionRecord {
  return {
    holderIdentity: holder,
    leaseDurationSeconds: LEASE_DURATION_MS / 1000,
    acquireTime: formatMicroTime(at),
    renewTime: formatMicroTime(at),
    leaderTransitions: 0,
    ...extra,
  };
}

interface Candidate {
  readonly elector: LeaderElector;
  readonly lock: MemoryLock;
  /** What the callbacks saw, in order. */
  readonly events: string[];
  /** The signal of the current term was given and has not fired. */
  leading(): boolean;
  /** The run's promise. */
  readonly done: Promise<void>;
  /** Aborts the run's signal. */
  stop(): void;
}

interface CandidateOptions extends Partial<Omit<LeaderElectionConfig, 'lock' | 'callbacks' | 'clock'>> {
  readonly onStartedLeading?: (signal: AbortSignal) => void;
}

function startCandidate(store: MemoryLeaseStore, identity: string, clock: Clock, options: CandidateOptions = {}): Candidate {
  const lock = newMemoryLock(store, identity, clock);
  const events: string[] = [];
  let term: AbortSignal | undefined;
  const elector = newLeaderElector({
    leaseDurationMs: LEASE_DURATION_MS,
    renewDeadlineMs: RENEW_DEADLINE_MS,
    retryPeriodMs: RETRY_PERIOD_MS,
    random: () => 0,
    ...options,
    lock,
    clock,
    callbacks: {
      onStartedLeading(signal) {
        term = signal;
        events.push('started leading');
        signal.addEventListener('abort', () => {
          events.push(`stopped leading: ${signal.reason instanceof Error ? signal.reason.message : String(signal.reason)}`);
        });
        options.onStartedLeading?.(signal);
      },
      onStoppedLeading() {
        events.push('election ended');
      },
      onNewLeader(leader) {
        events.push(`new leader: ${leader}`);
      },
    },
  });
  const stop = new AbortController();
  return {
    elector,
    lock,
    events,
    leading: () => term !== undefined && !term.aborted,
    done: elector.run(stop.signal),
    stop: () => {
      stop.abort();
    },
  };
}

/** The clock's time when the record was written (renewTime, on the writer's clock). */
function writtenAt(record: LeaderElectionRecord | undefined): number {
  assert.ok(record?.renewTime);
  return Date.parse(record.renewTime);
}

test('LeaderElector: creates the Lease when absent, reports itself as the new leader, then starts leading', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  const store = newMemoryLeaseStore();
  const a = startCandidate(store, 'a', clock);
  await settle();

  assert.deepEqual(a.events, ['new leader: a', 'started leading']);
  assert.deepEqual(
    a.lock.calls.slice(0, 2).map((c) => c.verb),
    ['get', 'create'],
  );
  assert.deepEqual(store.writes[0], { by: 'a', record: held('a', start) });
  assert.ok(a.elector.isLeader());
  assert.equal(a.elector.getLeader(), 'a');
  a.stop();
  await a.done;
});

test('LeaderElector: respects an unexpired lease held by another, judged by local observed time', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  // The holder's timestamps say it expired an hour ago: they are another node's clock, not ours.
  const store = newMemoryLeaseStore(held('other', start - HOUR_MS, { leaderTransitions: 3 }));
  const a = startCandidate(store, 'a', clock);
  await settle();
  assert.ok(!a.elector.isLeader());
  assert.equal(a.elector.getLeader(), 'other');
  assert.deepEqual(a.events, ['new leader: other']);

  // Attempts every 2 s (no jitter here); first seen at 0, so the claim lasts until 15 s on our clock.
  await advance(clock, 15_990);
  assert.ok(!a.elector.isLeader(), 'still held at 14 s (the last attempt before expiry)');
  assert.equal(store.writes.length, 0);
  await advance(clock, 10);
  assert.ok(a.elector.isLeader(), 'taken over at the first attempt after 15 s');
  assert.deepEqual(store.record, held('a', start + 16_000, { leaderTransitions: 4 }));
  assert.deepEqual(a.events, ['new leader: other', 'new leader: a', 'started leading']);
  a.stop();
  await a.done;
});

test('LeaderElector: any change of the record restarts the wait, whatever its timestamps say', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  const store = newMemoryLeaseStore(held('other', start));
  const a = startCandidate(store, 'a', clock);
  await advance(clock, 9_000);
  // The holder renews, with a renewTime *older* than before (its clock is behind): still a change.
  store.put(held('other', start - HOUR_MS), 'other');
  await advance(clock, 1_000); // seen at 10 s
  await advance(clock, 15_990);
  assert.ok(!a.elector.isLeader(), 'still held at 24 s: 10 s + 15 s not reached');
  await advance(clock, 10);
  assert.ok(a.elector.isLeader(), 'taken over at 26 s');
  assert.equal(writtenAt(store.record), start + 26_000);
  a.stop();
  await a.done;
});

test('LeaderElector: followersReadFromCache: a stale cached record costs a takeover a 409, never a second leader; the leader reads etcd', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  const store = newMemoryLeaseStore(held('other', start));
  // The watch cache lags: it serves the first record while the holder renews in etcd.
  store.cached = { record: held('other', start), version: store.version };
  const a = startCandidate(store, 'a', clock, { followersReadFromCache: true });
  await advance(clock, 20_000, () => {
    if ((clock.now() - start) % 2_000 === 0) store.put(held('other', clock.now()), 'other');
  });
  assert.ok(!a.elector.isLeader(), 'a stale read never wins: the write carries the version read');
  assert.ok(store.writes.every((w) => w.by === 'other'));
  const updates = a.lock.calls.filter((c) => c.verb === 'update');
  assert.ok(updates.length >= 1, 'the stale record looked expired: a tried, and got 409');
  assert.ok(
    a.lock.calls.filter((c) => c.verb === 'get').every((c) => c.fromCache === true),
    'a follower reads the cache',
  );

  // The cache catches up and the holder stops renewing: a takes over a lease duration after the last change it saw.
  store.cached = undefined;
  await advance(clock, 20_000);
  assert.ok(a.elector.isLeader());
  // A failed renewal sends the leader to the slow path: its read is a quorum read.
  a.lock.failNext('update', new Error('connect ECONNRESET'));
  const before = a.lock.calls.length;
  await advance(clock, 2_000);
  const leaderGets = a.lock.calls.slice(before).filter((c) => c.verb === 'get');
  assert.ok(leaderGets.length >= 1);
  assert.ok(
    leaderGets.every((c) => c.fromCache === undefined),
    'the leader reads etcd',
  );
  a.stop();
  await a.done;
});

test('LeaderElector: acquires at once a lease released by its holder (holderIdentity empty), counting a transition', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  const store = newMemoryLeaseStore(held('', start, { leaseDurationSeconds: 1, leaderTransitions: 5 }));
  const a = startCandidate(store, 'a', clock);
  await settle();
  assert.ok(a.elector.isLeader());
  assert.equal(store.record?.leaderTransitions, 6);
  assert.deepEqual(a.events, ['new leader: a', 'started leading']);
  a.stop();
  await a.done;
});

test('LeaderElector: renewing keeps acquireTime and leaderTransitions, moves renewTime, and takes the fast path (update only)', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  const store = newMemoryLeaseStore(held('', start, { leaderTransitions: 2 }));
  const a = startCandidate(store, 'a', clock);
  await advance(clock, 10_000);

  const acquired = store.writes[0]?.record;
  assert.deepEqual(acquired, held('a', start, { leaderTransitions: 3 }));
  // wait.Until: the first renewal at once, then one every retryPeriod after the previous.
  assert.deepEqual(
    store.writes.map((w) => writtenAt(w.record) - start),
    [0, 0, 2_000, 4_000, 6_000, 8_000, 10_000],
  );
  for (const { by, record } of store.writes) {
    assert.equal(by, 'a');
    assert.equal(record.acquireTime, acquired.acquireTime);
    assert.equal(record.leaderTransitions, 3);
  }
  assert.deepEqual(
    a.lock.calls.map((c) => c.verb),
    ['get', 'update', 'update', 'update', 'update', 'update', 'update', 'update'],
    'after acquiring, renewals do not read first',
  );
  a.stop();
  await a.done;
});

test('LeaderElector: the acquire loop retries every retryPeriod × (1 + random × 1.2)', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  const store = newMemoryLeaseStore(held('other', start));
  const most = startCandidate(store, 'most', clock, { random: () => 1 });
  const half = startCandidate(store, 'half', clock, { random: () => 0.5 });
  await advance(clock, 10_000);
  assert.deepEqual(
    most.lock.calls.map((c) => c.at - start),
    [0, 4_400, 8_800],
  );
  assert.deepEqual(
    half.lock.calls.map((c) => c.at - start),
    [0, 3_200, 6_400, 9_600],
  );
  most.stop();
  half.stop();
  await Promise.all([most.done, half.done]);
});

test('LeaderElector: a renewal failing for renewDeadline ends leading: the signal fires, then onStoppedLeading, and run resolves', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  const store = newMemoryLeaseStore();
  const a = startCandidate(store, 'a', clock);
  let resolved = false;
  void a.done.then(() => (resolved = true));
  await advance(clock, 3_000);
  a.lock.unreachable = true;
  // The round that starts at 4 s tries at 4, 6, 8, 10 and 12 s and gives up at 4 + 10 = 14 s.
  await advance(clock, 10_990);
  assert.ok(a.leading());
  assert.deepEqual([...new Set(a.lock.calls.map((c) => c.at - start).filter((at) => at > 3_000))], [4_000, 6_000, 8_000, 10_000, 12_000]);
  await advance(clock, 10);
  assert.ok(!a.leading());
  assert.deepEqual(a.events.slice(-2), [
    'stopped leading: failed to renew lease ns/lease within renewDeadline (10000 ms)',
    'election ended',
  ]);
  assert.ok(resolved);
  assert.ok(a.elector.isLeader(), 'isLeader reports the last observed record, which still names us');
});

test('LeaderElector: the renew deadline aborts a request that hangs', async () => {
  const clock = new FakeClock();
  const store = newMemoryLeaseStore();
  const a = startCandidate(store, 'a', clock);
  await advance(clock, 3_000);
  a.lock.hung = true;
  const calls = a.lock.calls.length;
  await advance(clock, 10_990);
  assert.ok(a.leading(), 'still leading while the round that began at 4 s lasts');
  assert.equal(a.lock.calls.length, calls + 1, 'one attempt, hanging');
  await advance(clock, 10);
  assert.ok(!a.leading(), 'stopped at 14 s: the hung attempt was abandoned');
  await a.done;
});

test('LeaderElector: renewal failures shorter than renewDeadline keep leading', async () => {
  const clock = new FakeClock();
  const store = newMemoryLeaseStore();
  const a = startCandidate(store, 'a', clock);
  await advance(clock, 3_000);
  a.lock.unreachable = true;
  await advance(clock, 6_000); // attempts at 4, 6 and 8 s fail
  a.lock.unreachable = false;
  await advance(clock, 20_000);
  assert.ok(a.leading());
  assert.deepEqual(a.events, ['new leader: a', 'started leading']);
  assert.equal(writtenAt(store.record) - writtenAt(store.writes[0]?.record), 28_000);
  a.stop();
  await a.done;
});

test('LeaderElector: a leader whose lease another took stops writing, reports the new leader and stops leading at the deadline', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  const store = newMemoryLeaseStore();
  const a = startCandidate(store, 'a', clock);
  await advance(clock, 3_000);
  store.put(held('b', start + 3_000, { leaderTransitions: 1 }), 'b');
  const writes = store.writes.length;
  await advance(clock, 11_000);
  assert.ok(!a.leading());
  assert.equal(store.writes.length, writes, 'a wrote nothing over b');
  assert.deepEqual(a.events, [
    'new leader: a',
    'started leading',
    'new leader: b',
    'stopped leading: failed to renew lease ns/lease within renewDeadline (10000 ms)',
    'election ended',
  ]);
  assert.ok(!a.elector.isLeader());
  assert.equal(a.elector.getLeader(), 'b');
});

test('LeaderElector: two candidates creating the Lease at once: exactly one wins', async () => {
  const clock = new FakeClock();
  const store = newMemoryLeaseStore();
  const a = startCandidate(store, 'a', clock);
  const b = startCandidate(store, 'b', clock);
  await settle();
  for (const c of [a, b]) {
    assert.deepEqual(
      c.lock.calls.slice(0, 2).map((call) => call.verb),
      ['get', 'create'],
      'both found no Lease and tried to create it',
    );
  }
  const winners = [a, b].filter((c) => c.leading());
  assert.equal(winners.length, 1);
  assert.ok(store.writes.every((w) => w.by === winners[0]?.lock.identity()));
  let most = 0;
  await advance(clock, 60_000, () => {
    most = Math.max(most, [a, b].filter((c) => c.leading()).length);
  });
  assert.equal(most, 1);
  a.stop();
  b.stop();
  await Promise.all([a.done, b.done]);
});

test('LeaderElector: two candidates taking over an expired lease in the same instant: the version read lets one win', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  const store = newMemoryLeaseStore(held('gone', start, { leaderTransitions: 7 }));
  const a = startCandidate(store, 'a', clock);
  const b = startCandidate(store, 'b', clock);
  await advance(clock, 16_000);
  const winners = [a, b].filter((c) => c.leading());
  assert.equal(winners.length, 1);
  const takeovers = store.writes.filter((w) => w.record.leaderTransitions === 8);
  assert.equal(takeovers.length >= 1, true);
  assert.ok(
    store.writes.every((w) => w.by === winners[0]?.lock.identity()),
    'every write is the winner',
  );
  const loser = a.leading() ? b : a;
  assert.equal(loser.lock.calls.filter((c) => c.verb === 'update').length, 1, 'the loser tried once, and got 409');
  a.stop();
  b.stop();
  await Promise.all([a.done, b.done]);
});

test('LeaderElector: releaseOnCancel fires the signal, then clears holderIdentity with leaseDurationSeconds 1 and the same leaderTransitions', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  const store = newMemoryLeaseStore(held('', start, { leaderTransitions: 2 }));
  let holderWhenSignalled: string | undefined;
  const a = startCandidate(store, 'a', clock, {
    releaseOnCancel: true,
    onStartedLeading: (signal) => {
      signal.addEventListener('abort', () => (holderWhenSignalled = store.record?.holderIdentity));
    },
  });
  await settle();
  const b = startCandidate(store, 'b', clock);
  await advance(clock, 5_000);
  a.stop();
  await a.done;

  assert.equal(holderWhenSignalled, 'a', 'the signal fired before the lease was given away');
  assert.deepEqual(store.record, {
    holderIdentity: '',
    leaseDurationSeconds: 1,
    acquireTime: formatMicroTime(start + 5_000),
    renewTime: formatMicroTime(start + 5_000),
    leaderTransitions: 3,
  });
  assert.deepEqual(
    a.lock.calls.slice(-2).map((c) => c.verb),
    ['get', 'update'],
    'release reads the record first',
  );
  assert.deepEqual(a.events.slice(-2), ['stopped leading: leader election stopped', 'election ended']);
  assert.ok(!a.elector.isLeader());
  assert.equal(a.elector.getLeader(), '');

  // b attempts at 6 s (every 2 s): it takes the released lease then, not a leaseDuration later.
  await advance(clock, 990);
  assert.ok(!b.leading());
  await advance(clock, 10);
  assert.ok(b.leading());
  assert.equal(store.record.leaderTransitions, 4);
  b.stop();
  await b.done;
});

test('LeaderElector: without releaseOnCancel the lease stays with the stopped leader until it expires', async () => {
  const clock = new FakeClock();
  const store = newMemoryLeaseStore();
  const a = startCandidate(store, 'a', clock);
  await settle();
  const b = startCandidate(store, 'b', clock);
  await advance(clock, 5_000);
  a.stop();
  await a.done;
  const last = writtenAt(store.record);
  assert.equal(store.record?.holderIdentity, 'a');
  // b saw a's last renewal (at 4 s) at its attempt at 4 or 6 s; it takes over at its first
  // attempt 15 s after that, on its clock.
  let takeover: number | undefined;
  await advance(clock, 30_000, () => {
    if (takeover === undefined && b.leading()) takeover = clock.now();
  });
  assert.ok(takeover !== undefined);
  const after = takeover - last;
  assert.ok(
    after >= LEASE_DURATION_MS && after <= LEASE_DURATION_MS + 2 * RETRY_PERIOD_MS,
    `took over ${String(after)} ms after the last renewal`,
  );
  b.stop();
  await b.done;
});

test('LeaderElector: the release retries when a version conflict gets in its way', async () => {
  const clock = new FakeClock();
  const store = newMemoryLeaseStore();
  const a = startCandidate(store, 'a', clock, { releaseOnCancel: true });
  await advance(clock, 3_000);
  a.lock.failNext('update', new ApiStatusError(409, { kind: 'Status', reason: 'Conflict', code: 409 }));
  a.stop();
  await a.done;
  assert.deepEqual(
    a.lock.calls.slice(-4).map((c) => c.verb),
    ['get', 'update', 'get', 'update'],
  );
  assert.equal(store.record?.holderIdentity, '');
});

test('LeaderElector: onNewLeader reports each new leader once, including the first one observed', async () => {
  const clock = new FakeClock();
  const start = clock.now();
  const store = newMemoryLeaseStore(held('x', start));
  const a = startCandidate(store, 'a', clock);
  for (let i = 1; i <= 5; i++) {
    await advance(clock, 2_000);
    store.put(held('x', start + i * 2_000), 'x');
  }
  await advance(clock, 30_000);
  assert.deepEqual(
    a.events.filter((e) => e.startsWith('new leader')),
    ['new leader: x', 'new leader: a'],
  );
  a.stop();
  await a.done;
});

for (const [skew, offsetMs] of [
  ['ahead', HOUR_MS],
  ['behind', -HOUR_MS],
] as const) {
  test(`LeaderElector: clock skew, candidate clock ${skew} by an hour: no takeover while the leader renews, takeover a leaseDuration after its last renewal`, async () => {
    const base = new FakeClock();
    const store = newMemoryLeaseStore();
    const leader = startCandidate(store, 'leader', base);
    await settle();
    const candidate = startCandidate(store, 'candidate', skewed(base, offsetMs));
    let overlap = false;
    const check = (): void => {
      if (leader.leading() && candidate.leading()) overlap = true;
    };
    await advance(base, 60_000, check);
    assert.ok(leader.leading() && !candidate.leading(), 'the candidate left the renewing leader alone');

    // The leader's writes stop reaching the store; it stops leading at its renew deadline, and the
    // candidate takes over 15 s (on its own clock) after it saw the last renewal.
    leader.lock.unreachable = true;
    let takeover: number | undefined;
    await advance(base, 30_000, () => {
      check();
      if (takeover === undefined && candidate.leading()) takeover = base.now();
    });
    assert.ok(!overlap, 'never two leaders');
    assert.ok(takeover !== undefined, 'the candidate took over');
    const leaderLast = writtenAt(store.writes.filter((w) => w.by === 'leader').at(-1)?.record);
    const after = takeover - leaderLast;
    assert.ok(after >= LEASE_DURATION_MS, `took over ${String(after)} ms after the last renewal, not before 15 s`);
    assert.ok(
      after <= LEASE_DURATION_MS + 2 * RETRY_PERIOD_MS,
      `took over ${String(after)} ms after the last renewal, within 15 s + 2 attempts`,
    );
    assert.equal(store.record?.leaderTransitions, 1);
    leader.stop();
    candidate.stop();
    await Promise.all([leader.done, candidate.done]);
  });
}

test('LeaderElector: stopped while still a candidate: run resolves and onStoppedLeading is called all the same, without a term', async () => {
  const clock = new FakeClock();
  const store = newMemoryLeaseStore(held('other', clock.now()));
  const a = startCandidate(store, 'a', clock, { releaseOnCancel: true });
  await advance(clock, 5_000);
  a.stop();
  await a.done;
  assert.deepEqual(a.events, ['new leader: other', 'election ended']);
  assert.equal(store.record?.holderIdentity, 'other', 'nothing released: it was not ours');
  assert.equal(clock.waiters(), 0, 'no timer left behind');
});

test('LeaderElector: run() cannot run twice at once, and competes again once it returned', async () => {
  const clock = new FakeClock();
  const store = newMemoryLeaseStore();
  const a = startCandidate(store, 'a', clock);
  await settle();
  await assert.rejects(a.elector.run(), /already running/);
  a.stop();
  await a.done;
  const again = new AbortController();
  const done = a.elector.run(again.signal);
  await settle();
  assert.equal(a.events.filter((e) => e === 'started leading').length, 2);
  again.abort();
  await done;
});

test('LeaderElector: a callback that throws ends the run: the signal fires, the lease is released, onStoppedLeading runs, run rejects', async () => {
  const clock = new FakeClock();
  const store = newMemoryLeaseStore();
  let term: AbortSignal | undefined;
  const a = startCandidate(store, 'a', clock, {
    releaseOnCancel: true,
    onStartedLeading: (signal) => {
      term = signal;
      throw new Error('boom');
    },
  });
  await assert.rejects(a.done, /boom/);
  assert.equal(term?.aborted, true);
  assert.equal(store.record?.holderIdentity, '');
  assert.equal(a.events.at(-1), 'election ended');
});

test('LeaderElector: the configuration is validated as client-go does, with the values in the message', () => {
  const clock = new FakeClock();
  const lock = newMemoryLock(newMemoryLeaseStore(), 'a', clock);
  const callbacks = { onStartedLeading: () => undefined, onStoppedLeading: () => undefined };
  const make = (config: Partial<LeaderElectionConfig>): LeaderElector => newLeaderElector({ lock, callbacks, clock, ...config });
  assert.throws(
    () => make({ leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }),
    /leaseDuration \(10000 ms\) must be greater than renewDeadline \(10000 ms\)/,
  );
  assert.throws(
    () => make({ leaseDurationMs: 4_000, renewDeadlineMs: 1_200, retryPeriodMs: 1_000 }),
    /renewDeadline \(1200 ms\) must be greater than retryPeriod × 1.2 \(1200 ms\)/,
  );
  assert.throws(() => make({ retryPeriodMs: 0 }), /retryPeriod must be greater than zero \(got 0 ms\)/);
  assert.throws(() => make({ renewDeadlineMs: -1 }), /renewDeadline must be greater than zero/);
  assert.throws(() => make({ leaseDurationMs: Number.NaN }), /leaseDuration must be greater than zero/);
  assert.throws(() => make({ leaseDurationMs: 15_500 }), /leaseDuration \(15500 ms\) must be a whole number of seconds/);
  assert.throws(
    () => newLeaderElector({ lock: newMemoryLock(newMemoryLeaseStore(), '', clock), callbacks, clock }),
    /the lock identity is empty/,
  );
  assert.throws(
    () => make({ callbacks: { onStoppedLeading: () => undefined } as unknown as LeaderElectionConfig['callbacks'] }),
    /onStartedLeading callback must be set/,
  );
  // client-go's defaults (15/10/2 s) and the tightest valid triple pass.
  make({});
  make({ leaseDurationMs: 2_000, renewDeadlineMs: 1_201, retryPeriodMs: 1_000 });
});

test('healthz: fails when this process believes it leads but has not renewed for leaseDuration + tolerance', async () => {
  const clock = new FakeClock();
  const store = newMemoryLeaseStore();
  const adaptor = newLeaderHealthzAdaptor(5_000);
  assert.equal(adaptor.name(), 'leaderElection');
  assert.equal(adaptor.check(), undefined, 'passes before an elector is set');
  const a = startCandidate(store, 'a', clock);
  adaptor.setLeaderElection(a.elector);
  await advance(clock, 30_000);
  assert.equal(adaptor.check(), undefined, 'a leader that renews is healthy');

  a.lock.hung = true; // a stuck apiserver connection; here the loop still gives up at the deadline
  await advance(clock, 20_000);
  assert.ok(!a.leading());
  assert.ok(a.elector.isLeader(), 'it still believes the last record it saw');
  const last = writtenAt(store.record);
  clock.setTime(last + 20_000);
  assert.equal(adaptor.check(), undefined, 'at leaseDuration + tolerance exactly: still healthy');
  clock.setTime(last + 20_001);
  assert.match(adaptor.check()?.message ?? '', /failed election to renew leadership on lease ns\/lease/);
});

test('healthz: a candidate that does not lead is healthy however long it waits', async () => {
  const clock = new FakeClock();
  const store = newMemoryLeaseStore(held('other', clock.now(), { leaseDurationSeconds: 1_000 }));
  const a = startCandidate(store, 'a', clock);
  const adaptor = newLeaderHealthzAdaptor(0);
  adaptor.setLeaderElection(a.elector);
  await advance(clock, 100_000);
  assert.ok(!a.elector.isLeader());
  assert.equal(adaptor.check(), undefined);
  a.stop();
  await a.done;
});

test('metrics: leader_election_master_status is 1 while leading and 0 otherwise; the slow path is counted', async () => {
  const clock = new FakeClock();
  const registry = new Registry();
  const metrics = newPrometheusLeaderMetricsProvider(registry);
  const value = async (name: string): Promise<number | undefined> =>
    (await registry.getSingleMetric(name)?.get())?.values.find((v) => v.labels.name === 'my-lease')?.value;

  const store = newMemoryLeaseStore();
  const lock = newMemoryLock(store, 'a', clock);
  const stop = new AbortController();
  const elector = newLeaderElector({
    lock,
    clock,
    random: () => 0,
    name: 'my-lease',
    metrics,
    callbacks: { onStartedLeading: () => undefined, onStoppedLeading: () => undefined },
  });
  assert.equal(await value('leader_election_master_status'), 0, 'off from the start');
  const done = elector.run(stop.signal);
  await settle();
  assert.equal(await value('leader_election_master_status'), 1);

  // The optimistic renewal fails once: the leader reads the record and writes again (slow path).
  lock.failNext('update', new Error('connection reset'));
  await advance(clock, 2_000);
  assert.equal(await value('leader_election_slowpath_total'), 1);
  stop.abort();
  await done;
  assert.equal(await value('leader_election_master_status'), 0);
  // A second provider on the same registry reuses the metrics.
  newPrometheusLeaderMetricsProvider(registry).newLeaderMetric().on('other');
  assert.equal((await registry.getSingleMetric('leader_election_master_status')?.get())?.values.length, 2);
});
