import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LEADER_RETRY_INITIAL_MS, LEADER_RETRY_MAX_MS, newPoolRoute } from '../../../src/upstream/pool-route.ts';
import type { PoolTarget } from '../../../src/upstream/pool-route.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

const SELF = 'https://10.0.0.1:8443';
const LEADER = 'https://10.0.0.2:8443';
const NEXT = 'https://10.0.0.3:8443';

function route(): { clock: FakeClock; r: ReturnType<typeof newPoolRoute>; changes: PoolTarget[] } {
  const clock = new FakeClock();
  const r = newPoolRoute({ self: SELF, clock });
  const changes: PoolTarget[] = [];
  r.onChange((t) => changes.push(t));
  return { clock, r, changes };
}

test('pool route: no leader known, the apiserver', () => {
  const { r } = route();
  assert.deepEqual(r.target(), { kind: 'apiserver', reason: 'no-leader' });
});

test('pool route: a leader known, the leader; released, the apiserver again', () => {
  const { r, changes } = route();
  r.setLeader(LEADER);
  assert.deepEqual(r.target(), { kind: 'leader', url: LEADER });
  r.setLeader('');
  assert.deepEqual(r.target(), { kind: 'apiserver', reason: 'no-leader' });
  assert.deepEqual(changes, [
    { kind: 'leader', url: LEADER },
    { kind: 'apiserver', reason: 'no-leader' },
  ]);
});

test('pool route: its own leadership, the apiserver (never chained to itself), by the Lease or by the elector', () => {
  const { r } = route();
  r.setLeader(SELF);
  assert.deepEqual(r.target(), { kind: 'apiserver', reason: 'leading' });
  r.setLeader(LEADER);
  r.setLeading(true);
  assert.deepEqual(r.target(), { kind: 'apiserver', reason: 'leading' });
  r.setLeading(false);
  assert.deepEqual(r.target(), { kind: 'leader', url: LEADER });
});

test('pool route: a leader that does not answer, the apiserver until its retry time, the wait doubling up to the cap', () => {
  const { clock, r, changes } = route();
  r.setLeader(LEADER);
  r.leaderFailed(LEADER);
  assert.deepEqual(r.target(), { kind: 'apiserver', reason: 'leader-unreachable' });
  clock.step(LEADER_RETRY_INITIAL_MS - 1);
  assert.equal(r.target().kind, 'apiserver');
  clock.step(1);
  assert.deepEqual(r.target(), { kind: 'leader', url: LEADER });
  // Failing again: twice the wait.
  r.leaderFailed(LEADER);
  clock.step(LEADER_RETRY_INITIAL_MS);
  assert.equal(r.target().kind, 'apiserver');
  clock.step(LEADER_RETRY_INITIAL_MS);
  assert.equal(r.target().kind, 'leader');
  for (let i = 0; i < 10; i++) {
    r.leaderFailed(LEADER);
    clock.step(LEADER_RETRY_MAX_MS);
  }
  assert.equal(r.target().kind, 'leader', 'the wait never exceeds the cap');
  assert.deepEqual(changes.slice(0, 3), [
    { kind: 'leader', url: LEADER },
    { kind: 'apiserver', reason: 'leader-unreachable' },
    { kind: 'leader', url: LEADER },
  ]);
});

test('pool route: an answer resets the wait; a new leader is tried at once, whatever the old one did', () => {
  const { clock, r } = route();
  r.setLeader(LEADER);
  r.leaderFailed(LEADER);
  clock.step(LEADER_RETRY_INITIAL_MS);
  r.leaderFailed(LEADER);
  clock.step(2 * LEADER_RETRY_INITIAL_MS);
  r.leaderAnswered(LEADER);
  r.leaderFailed(LEADER);
  clock.step(LEADER_RETRY_INITIAL_MS);
  assert.equal(r.target().kind, 'leader', 'back to the first wait after an answer');
  r.leaderFailed(LEADER);
  r.setLeader(NEXT);
  assert.deepEqual(r.target(), { kind: 'leader', url: NEXT });
  // A failure reported for the old leader, late, changes nothing.
  r.leaderFailed(LEADER);
  assert.deepEqual(r.target(), { kind: 'leader', url: NEXT });
});

test('pool route: listeners hear only changes of upstream (the apiserver for another reason is no change)', () => {
  const { r, changes } = route();
  r.setLeading(false);
  r.setLeader('');
  r.setLeading(true);
  r.setLeader(LEADER);
  assert.deepEqual(changes, []);
  assert.deepEqual(r.target(), { kind: 'apiserver', reason: 'leading' });
  r.setLeading(false);
  assert.deepEqual(changes, [{ kind: 'leader', url: LEADER }]);
});
