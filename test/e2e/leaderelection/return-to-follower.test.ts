/**
 * Leader election that returns to follower when a term ends, without a restart (KEP-5366,
 * graceful leader transition: the Lease released when the run's context ends, ReleaseOnCancel,
 * rather than an exit; and client-go's LeaderElector may Run again), against the real apiserver,
 * in one process: a leader whose
 * term's signal aborts stops its guarded work, releases the Lease (another candidate takes over
 * at its next attempt, well within the lease duration), runs again in the same elector as a
 * follower of the new leader, and is elected again once that leader's own term ends.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { LeaderElector } from '../../../src/library/leaderelection.ts';
import { newLeaderElector, newLeaseLock } from '../../../src/library/leaderelection.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';

/** A long lease and quick retries: a takeover well within the lease duration can only follow a release. */
const LEASE_DURATION_MS = 8_000;
const RENEW_DEADLINE_MS = 3_000;
const RETRY_PERIOD_MS = 1_000;

const shared = useSharedAdmin();

/** One candidate: its elector, what it has been told, and its terms (each run() a term's signal of its own). */
interface Candidate {
  readonly identity: string;
  readonly elector: LeaderElector;
  /** How many times onStartedLeading was called. */
  started: number;
  /** The signal of the current leadership (onStartedLeading's), while leading. */
  leading: AbortSignal | undefined;
  readonly newLeaders: string[];
  /** Runs a term: run(signal) until `end()`; resolves when run() has. */
  term(): { end(): void; done: Promise<void> };
}

function candidate(t: TestContext, kubeConfig: KubeConfig, namespace: string, identity: string): Candidate {
  const lock = newLeaseLock({ kubeConfig, namespace, name: 'return-to-follower', identity, requestTimeoutMs: 1_500 });
  t.after(() => lock.close());
  const c: Candidate = {
    identity,
    started: 0,
    leading: undefined,
    newLeaders: [],
    elector: newLeaderElector({
      lock,
      leaseDurationMs: LEASE_DURATION_MS,
      renewDeadlineMs: RENEW_DEADLINE_MS,
      retryPeriodMs: RETRY_PERIOD_MS,
      releaseOnCancel: true,
      callbacks: {
        onStartedLeading: (signal) => {
          c.started++;
          c.leading = signal;
        },
        onStoppedLeading: () => {
          c.leading = undefined;
        },
        onNewLeader: (leader) => {
          c.newLeaders.push(leader);
        },
      },
    }),
    term() {
      const controller = new AbortController();
      const done = c.elector.run(controller.signal);
      t.after(async () => {
        controller.abort();
        await done;
      });
      return {
        end: () => {
          controller.abort();
        },
        done,
      };
    },
  };
  return c;
}

test('leader election: a term that ends releases the Lease and returns to follower; the same elector is elected again', async (t) => {
  const namespace = await testNamespace(t, shared.admin);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(shared.cp.kubeconfig);
  const holder = async (): Promise<string> =>
    (
      await kube<{ spec: { holderIdentity?: string } }>(
        shared.admin,
        'GET',
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/return-to-follower`,
      )
    ).spec.holderIdentity ?? '';

  const a = candidate(t, kubeConfig, namespace, 'a');
  const b = candidate(t, kubeConfig, namespace, 'b');
  const aFirst = a.term();
  await eventually('a to lead', () => a.leading !== undefined);
  const bTerm = b.term();
  await eventually('b to see a lead', () => b.newLeaders.includes('a'));
  assert.equal(b.started, 0);

  // a's term ends: its guarded work is told, it releases, and run() resolves.
  const guarded = a.leading;
  assert.ok(guarded !== undefined);
  const ended = Date.now();
  aFirst.end();
  await aFirst.done;
  assert.equal(guarded.aborted, true, 'the work guarded by the lease was told to stop');
  assert.equal(a.elector.isLeader(), false);
  assert.equal(a.elector.getLeader(), '', 'released: the record a last wrote names no holder');

  // b takes over at its next attempt (a release, not an expiry: well within the lease duration).
  await eventually('b to lead', () => b.leading !== undefined);
  const takeoverMs = Date.now() - ended;
  t.diagnostic(`takeover after the release: ${String(takeoverMs)} ms (lease duration ${String(LEASE_DURATION_MS)} ms)`);
  assert.ok(takeoverMs < LEASE_DURATION_MS - RETRY_PERIOD_MS - 1_000, `taken over in ${String(takeoverMs)} ms: the Lease was released`);
  assert.equal(await holder(), 'b');

  // a competes again, in the same elector: a follower of b.
  const aAgain = a.term();
  await eventually('a to see b lead', () => a.newLeaders.at(-1) === 'b');
  assert.equal(a.elector.isLeader(), false);
  assert.equal(a.leading, undefined);
  assert.equal(a.started, 1);

  // b's term ends in turn: a, still in its second run, is elected again.
  bTerm.end();
  await bTerm.done;
  await eventually('a to lead again', () => a.leading !== undefined);
  assert.equal(a.started, 2, 'onStartedLeading once per term, in the same elector');
  assert.equal(await holder(), 'a');
  assert.deepEqual(a.newLeaders, ['a', 'b', 'a']);
  aAgain.end();
  await aAgain.done;
  assert.equal(await holder(), '', 'released at the end of its second term too');
});
