/**
 * LeaseLock and LeaderElector against the real apiserver: the Lease's fields as written and read
 * back, optimistic concurrency (two candidates that read the same version: one write wins, the
 * other gets 409), and two in-process electors on one Lease.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newLeaderElector } from '../../../src/leaderelection/leader-elector.ts';
import { newLeaseLock } from '../../../src/leaderelection/lease-lock.ts';
import type { LeaderElectionRecord } from '../../../src/leaderelection/resource-lock.ts';
import { formatMicroTime } from '../../../src/leaderelection/resource-lock.ts';
import { ApiStatusError, isNotFound } from '../../../src/upstream/api-error.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

function record(holder: string, atMs: number, transitions: number): LeaderElectionRecord {
  return {
    holderIdentity: holder,
    leaseDurationSeconds: 15,
    acquireTime: formatMicroTime(atMs),
    renewTime: formatMicroTime(atMs + 0.123),
    leaderTransitions: transitions,
  };
}

test('LeaseLock: creates a coordination.k8s.io/v1 Lease whose spec holds the record, MicroTime to the microsecond', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const lock = newLeaseLock({ client: shared.admin, namespace: ns, name: 'lock', identity: 'a' });
  await assert.rejects(lock.get(), (error) => isNotFound(error));
  const written = record('a', Date.UTC(2026, 10, 22, 20, 0, 0, 123), 0);
  await lock.create(written);

  const lease = await kube<{ spec: Record<string, unknown> }>(
    shared.admin,
    'GET',
    `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/lock`,
  );
  assert.deepEqual(lease.spec, {
    holderIdentity: 'a',
    leaseDurationSeconds: 15,
    acquireTime: '2026-11-22T20:00:00.123000Z',
    renewTime: '2026-11-22T20:00:00.123123Z',
    leaseTransitions: 0,
  });
  assert.deepEqual((await lock.get()).record, written, 'read back as written');
  await assert.rejects(
    lock.create(written),
    (error) => error instanceof ApiStatusError && error.code === 409,
    'a second create is refused',
  );
});

test('LeaseLock: of two candidates that read the same resourceVersion, one update wins and the other gets 409 Conflict', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const a = newLeaseLock({ client: shared.admin, namespace: ns, name: 'lock', identity: 'a' });
  const b = newLeaseLock({ client: shared.admin, namespace: ns, name: 'lock', identity: 'b' });
  const now = Date.now();
  await a.create(record('gone', now, 3));
  await a.get();
  await b.get();
  await a.update(record('a', now, 4));
  await assert.rejects(
    b.update(record('b', now, 4)),
    (error) => error instanceof ApiStatusError && error.code === 409 && error.status.reason === 'Conflict',
  );
  assert.equal((await b.get()).record.holderIdentity, 'a');
  // Having read the new version, b's update goes through.
  await b.update(record('b', now, 5));
  await assert.rejects(a.update(record('a', now, 5)), (error) => error instanceof ApiStatusError && error.code === 409);
});

test('LeaderElector: two in-process electors on one Lease: one leads, the other follows; releasing hands over', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const events: string[] = [];
  const start = (identity: string): { stop: AbortController; done: Promise<void>; leading: () => boolean } => {
    let term: AbortSignal | undefined;
    const stop = new AbortController();
    const elector = newLeaderElector({
      lock: newLeaseLock({ client: shared.admin, namespace: ns, name: 'lock', identity, requestTimeoutMs: 1_000 }),
      leaseDurationMs: 4_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 500,
      releaseOnCancel: true,
      callbacks: {
        onStartedLeading(signal) {
          term = signal;
          events.push(`${identity} started`);
        },
        onStoppedLeading() {
          events.push(`${identity} ended`);
        },
        onNewLeader(leader) {
          events.push(`${identity} sees ${leader}`);
        },
      },
    });
    const done = elector.run(stop.signal);
    t.after(async () => {
      stop.abort();
      await done;
    });
    return { stop, done, leading: () => term !== undefined && !term.aborted };
  };
  const a = start('a');
  await eventually('a to lead', () => a.leading());
  const b = start('b');
  await eventually('b to see a', () => events.includes('b sees a'));
  assert.ok(!b.leading());

  a.stop.abort();
  await a.done;
  await eventually('b to take over', () => b.leading());
  const lease = await kube<{ spec: { holderIdentity: string; leaseTransitions: number } }>(
    shared.admin,
    'GET',
    `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/lock`,
  );
  assert.equal(lease.spec.holderIdentity, 'b');
  assert.equal(lease.spec.leaseTransitions, 1);
  assert.deepEqual(
    events.filter((e) => e.startsWith('a ')),
    ['a sees a', 'a started', 'a ended'],
  );
});
