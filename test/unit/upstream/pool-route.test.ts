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
  r.leaderFailed(LEADER, 'connect ECONNREFUSED');
  assert.deepEqual(r.target(), { kind: 'apiserver', reason: 'leader-unreachable', detail: 'connect ECONNREFUSED' });
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
    { kind: 'apiserver', reason: 'leader-unreachable', detail: 'connect ECONNREFUSED' },
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

test('pool route: a holderIdentity that is no https URL of a host is no usable leader, never the target', () => {
  const { r, changes } = route();
  for (const [identity, detail] of [
    ['http://10.0.0.2:8443', 'not https (http)'],
    ['10.0.0.2:8443', 'not a URL'],
    ['ftp://10.0.0.2', 'not https (ftp)'],
    ['not a url', 'not a URL'],
    ['https://user:secret@10.0.0.2:8443', 'credentials in the URL'],
    ['https://10.0.0.2:8443/?x=1', 'a query or fragment in the URL'],
  ] as const) {
    r.setLeader(identity);
    assert.deepEqual(r.target(), { kind: 'apiserver', reason: 'unusable-leader', detail }, identity);
    // Reports about it change nothing: it is never contacted.
    r.leaderFailed(identity);
    r.scope('services').refused(identity, 'no');
    assert.deepEqual(r.scope('services').target(), { kind: 'apiserver', reason: 'unusable-leader', detail }, identity);
  }
  assert.deepEqual(changes, [], 'never on a leader');
  r.setLeader(LEADER);
  assert.deepEqual(r.target(), { kind: 'leader', url: LEADER });
  assert.deepEqual(r.scope('services').target(), { kind: 'leader', url: LEADER });
});

test('pool route: a scope the leader refuses reads from the apiserver alone, until its own retry time', () => {
  const { clock, r, changes } = route();
  r.setLeader(LEADER);
  const services = r.scope('services');
  const nodes = r.scope('nodes');
  const moves: PoolTarget[] = [];
  services.onChange((t) => moves.push(t));
  services.refused(LEADER, '503 ServiceUnavailable: not-watching');
  assert.deepEqual(services.target(), { kind: 'apiserver', reason: 'leader-refused', detail: '503 ServiceUnavailable: not-watching' });
  assert.deepEqual(nodes.target(), { kind: 'leader', url: LEADER }, 'the other scopes stay on the leader');
  assert.deepEqual(r.target(), { kind: 'leader', url: LEADER });
  assert.equal(r.scope('services'), services, 'one route per scope name');
  clock.step(LEADER_RETRY_INITIAL_MS);
  assert.deepEqual(services.target(), { kind: 'leader', url: LEADER });
  // Refused again: twice the wait; answered, the first wait again.
  services.refused(LEADER, 'again');
  clock.step(LEADER_RETRY_INITIAL_MS);
  assert.equal(services.target().kind, 'apiserver');
  clock.step(LEADER_RETRY_INITIAL_MS);
  assert.equal(services.target().kind, 'leader');
  services.answered(LEADER);
  services.refused(LEADER, 'once more');
  clock.step(LEADER_RETRY_INITIAL_MS);
  assert.equal(services.target().kind, 'leader');
  assert.deepEqual(
    moves.map((t) => t.kind),
    ['apiserver', 'leader', 'apiserver', 'leader', 'apiserver', 'leader'],
  );
  assert.deepEqual(changes, [{ kind: 'leader', url: LEADER }], "the pool's target never moved");
});

test('pool route: the leader failed moves every scope; a new leader clears every scope’s refusals', () => {
  const { clock, r } = route();
  r.setLeader(LEADER);
  const services = r.scope('services');
  const nodes = r.scope('nodes');
  const moves: string[] = [];
  nodes.onChange((t) => moves.push(t.kind));
  services.refused(LEADER, 'refused');
  r.leaderFailed(LEADER, 'silent');
  assert.deepEqual(nodes.target(), { kind: 'apiserver', reason: 'leader-unreachable', detail: 'silent' });
  assert.equal(services.target().kind, 'apiserver');
  clock.step(LEADER_RETRY_INITIAL_MS);
  assert.deepEqual(nodes.target(), { kind: 'leader', url: LEADER });
  services.refused(LEADER, 'refused');
  r.setLeader(NEXT);
  assert.deepEqual(services.target(), { kind: 'leader', url: NEXT }, 'tried at once on a new leader');
  assert.deepEqual(moves, ['apiserver', 'leader', 'leader']);
  // Late reports about the old leader change nothing.
  services.refused(LEADER, 'late');
  assert.deepEqual(services.target(), { kind: 'leader', url: NEXT });
});
