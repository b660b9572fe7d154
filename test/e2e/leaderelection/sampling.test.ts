/**
 * Three candidates in separate processes (`kube-cache-proxy leader-election`) on one Lease of the
 * real apiserver, and what each believes sampled every 100 ms for 60 s: never two leaders at
 * once; after the first election exactly one, except for gaps shorter than leaseDuration.
 *
 * So that the 60 s see transitions and not only a steady leader, the leader is stopped gracefully
 * (SIGTERM, --release-on-cancel) after about 20 s and 40 s, each time after a replacement
 * candidate has started, so three candidates always run. A process's belief is read from its
 * stdout as lines arrive ("started leading" ... "stopped leading"); a second check compares the
 * processes' own timestamps of those lines, so a slow pipe cannot hide an overlap.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import type { ElectorProcess } from '../../helpers/elector-process.ts';
import { leadershipTerms, overlappingTerms, startElector } from '../../helpers/elector-process.ts';
import { kube } from '../../helpers/kube.ts';

/** retryPeriod + renewDeadline < leaseDuration by 1 s; renewDeadline leaves room for a busy machine. */
const LEASE_DURATION_S = 5;
const RENEW_DEADLINE_S = 3;
const RETRY_PERIOD_S = 1;
const SAMPLE_EVERY_MS = 100;
const SAMPLING_MS = 60_000;
/** Samples after which the leader is stopped gracefully (about 20 s and 40 s in). */
const HANDOVER_AT_SAMPLES = [200, 400];

const shared = useSharedAdmin();

interface Sample {
  readonly at: number;
  readonly leaders: readonly string[];
}

test(
  'leader election: three processes sampled every 100 ms for 60 s: never two leaders; after the first election exactly one but for gaps shorter than leaseDuration',
  { timeout: 240_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const base = {
      kubeconfig: shared.cp.kubeconfig,
      namespace: ns,
      lease: 'sampled',
      leaseDurationSeconds: LEASE_DURATION_S,
      renewDeadlineSeconds: RENEW_DEADLINE_S,
      retryPeriodSeconds: RETRY_PERIOD_S,
      releaseOnCancel: true,
    };
    const electors: ElectorProcess[] = await Promise.all(['a', 'b', 'c'].map((identity) => startElector(t, { ...base, identity })));
    const replacements = ['d', 'e'];

    /** Starts a replacement candidate, then stops the current leader gracefully; resolves when it has exited. */
    const handover = async (): Promise<string> => {
      const identity = replacements.shift();
      if (identity === undefined) throw new Error('no replacement left');
      electors.push(await startElector(t, { ...base, identity }));
      const leader = electors.find((e) => e.believesLeading());
      if (leader === undefined) throw new Error(`no leader to stop when ${identity} joined`);
      const stoppedAt = Date.now();
      leader.child.kill('SIGTERM');
      const code = await leader.exited;
      if (code !== 0) throw new Error(`${leader.identity} exited with ${String(code)}:\n${leader.output()}`);
      return `${leader.identity} stopped at +${String(stoppedAt - startedAt)} ms`;
    };

    const samples: Sample[] = [];
    const handovers: Promise<string>[] = [];
    const startedAt = Date.now();
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const at = Date.now();
        samples.push({ at, leaders: electors.filter((e) => e.believesLeading()).map((e) => e.identity) });
        if (HANDOVER_AT_SAMPLES.includes(samples.length)) {
          handovers.push(
            handover().catch((error: unknown) => `handover failed: ${error instanceof Error ? error.message : String(error)}`),
          );
        }
        if (at - startedAt >= SAMPLING_MS) {
          clearInterval(timer);
          resolve();
        }
      }, SAMPLE_EVERY_MS);
    });
    const stops = await Promise.all(handovers);

    const first = samples.findIndex((s) => s.leaders.length > 0);
    assert.ok(first >= 0, 'someone was elected');
    const twoOrMore = samples.filter((s) => s.leaders.length > 1).map((s) => `+${String(s.at - startedAt)} ms: ${s.leaders.join(', ')}`);
    let lastExactlyOne = samples[first]?.at ?? startedAt;
    let longestGapMs = 0;
    for (const s of samples.slice(first)) {
      if (s.leaders.length === 1) lastExactlyOne = s.at;
      else longestGapMs = Math.max(longestGapMs, s.at - lastExactlyOne);
    }
    const terms = leadershipTerms(electors);
    const lease = await kube<{ spec: { holderIdentity: string; leaseTransitions: number } }>(
      shared.admin,
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/sampled`,
    );
    const message = [
      `${String(samples.length)} samples over ${String((samples.at(-1)?.at ?? startedAt) - startedAt)} ms; first leader at +${String((samples[first]?.at ?? 0) - startedAt)} ms`,
      `longest time without exactly one leader after the first election: ${String(longestGapMs)} ms (leaseDuration ${String(LEASE_DURATION_S * 1000)} ms)`,
      `graceful handovers: ${stops.join('; ')}`,
      `terms: ${terms.map((term) => `${term.identity} +${String(term.start - startedAt)}..${Number.isFinite(term.end) ? `+${String(term.end - startedAt)}` : 'end'}`).join(', ')}`,
    ].join('\n');
    t.diagnostic(message);
    process.stderr.write(`[leader election] ${message}\n`);

    assert.ok(samples.length >= SAMPLING_MS / SAMPLE_EVERY_MS - 10, `sampled ${String(samples.length)} times`);
    assert.deepEqual(
      stops.filter((s) => s.startsWith('handover failed')),
      [],
    );
    assert.deepEqual(twoOrMore, [], 'never more than one process believes it leads');
    assert.ok(
      longestGapMs < LEASE_DURATION_S * 1000,
      `after the first election, at most ${String(longestGapMs)} ms without exactly one leader`,
    );
    assert.equal(samples.at(-1)?.leaders.length, 1, 'one leader at the end');
    assert.deepEqual(overlappingTerms(terms), [], "by the processes' own timestamps, no two terms overlap");
    // One term per leader: the initial one and one per handover, none lost to a missed renewal.
    assert.equal(terms.length, 1 + HANDOVER_AT_SAMPLES.length, `terms: ${terms.map((term) => term.identity).join(', ')}`);
    assert.equal(lease.spec.holderIdentity, terms.at(-1)?.identity);
    assert.equal(lease.spec.leaseTransitions, HANDOVER_AT_SAMPLES.length);
  },
);
