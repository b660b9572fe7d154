/**
 * Leader election between separate processes (`kube-cache-proxy leader-election`) on one Lease
 * of the real apiserver, when the leader goes away: killed with SIGKILL, stopped gracefully with
 * --release-on-cancel, or cut off from the apiserver while the others still reach it.
 *
 * Takeover times are measured from the fault to the new leader's "started leading" line (the
 * child's timestamp, same machine) and reported as test diagnostics. The bounds asserted follow
 * from client-go's rules, not from wishes: a candidate takes over at its first attempt at least
 * leaseDuration after it last saw the record change, and its attempts are retryPeriod ×
 * (1 + random × 1.2) apart, so after a crash the new leader comes between leaseDuration −
 * retryPeriod (the last renewal may precede the crash by up to one retryPeriod) and leaseDuration
 * + 2 × 2.2 × retryPeriod (one jittered attempt to see the last renewal, one to act on expiry).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import type { ElectorOptions, ElectorProcess } from '../../helpers/elector-process.ts';
import { leadershipTerms, overlappingTerms, startElector, writeKubeconfig } from '../../helpers/elector-process.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';

/** Short durations (client-go's rule leaseDuration > renewDeadline > 1.2 × retryPeriod holds, with retryPeriod + renewDeadline < leaseDuration). */
const LEASE_DURATION_S = 4;
const RENEW_DEADLINE_S = 2;
const RETRY_PERIOD_S = 1;
/** Process start-up, apiserver round trips and line delivery on a busy 2-core machine. */
const SLACK_MS = 1_000;
/** The latest a crashed leader's successor can come (see the file's comment). */
const CRASH_TAKEOVER_MAX_MS = (LEASE_DURATION_S + 2 * 2.2 * RETRY_PERIOD_S) * 1000 + SLACK_MS;
const CRASH_TAKEOVER_MIN_MS = (LEASE_DURATION_S - RETRY_PERIOD_S) * 1000 - 250;

const shared = useSharedAdmin();

interface LeaseSpec {
  readonly holderIdentity?: string;
  readonly leaseTransitions?: number;
}

async function leaseSpec(ns: string, name: string): Promise<LeaseSpec> {
  return (await kube<{ spec: LeaseSpec }>(shared.admin, 'GET', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${name}`)).spec;
}

async function startAll(t: TestContext, base: Omit<ElectorOptions, 'identity'>, identities: readonly string[]): Promise<ElectorProcess[]> {
  return Promise.all(identities.map((identity) => startElector(t, { ...base, identity })));
}

async function leaderOf(electors: readonly ElectorProcess[]): Promise<ElectorProcess> {
  let leader: ElectorProcess | undefined;
  await eventually('one of the electors to lead', () => {
    leader = electors.find((e) => e.believesLeading());
    return leader !== undefined;
  });
  if (leader === undefined) throw new Error('unreachable');
  return leader;
}

/** The first "started leading" among `electors` after index `from` of each, waiting for it. */
async function nextLeader(electors: readonly ElectorProcess[], timeoutMs = 30_000): Promise<{ elector: ElectorProcess; at: number }> {
  const from = new Map(electors.map((e) => [e, e.lines.length]));
  let found: { elector: ElectorProcess; at: number } | undefined;
  await eventually(
    'another elector to start leading',
    () => {
      for (const e of electors) {
        const line = e.lines.slice(from.get(e)).find((l) => l.text === 'started leading');
        if (line !== undefined && (found === undefined || line.at < found.at)) found = { elector: e, at: line.at };
      }
      return found !== undefined;
    },
    timeoutMs,
  );
  if (found === undefined) throw new Error('unreachable');
  return found;
}

function report(t: TestContext, message: string): void {
  t.diagnostic(message);
  process.stderr.write(`[leader election] ${message}\n`);
}

test(
  'leader election: after kill -9 of the leader another process leads within leaseDuration + jittered attempts, and leaseTransitions counts it',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const base = {
      kubeconfig: shared.cp.kubeconfig,
      namespace: ns,
      lease: 'kill',
      leaseDurationSeconds: LEASE_DURATION_S,
      renewDeadlineSeconds: RENEW_DEADLINE_S,
      retryPeriodSeconds: RETRY_PERIOD_S,
    };
    const electors = await startAll(t, base, ['a', 'b', 'c']);
    const leader = await leaderOf(electors);
    const others = electors.filter((e) => e !== leader);
    await Promise.all(others.map((e) => e.waitFor(new RegExp(`^new leader: ${leader.identity}$`))));
    const before = await leaseSpec(ns, 'kill');
    assert.equal(before.holderIdentity, leader.identity);

    const killedAt = Date.now();
    leader.child.kill('SIGKILL');
    assert.equal(await leader.exited, null, 'killed by the signal');
    const next = await nextLeader(others);
    const takeoverMs = next.at - killedAt;
    report(
      t,
      `kill -9: ${next.elector.identity} leads ${String(takeoverMs)} ms after the kill (leaseDuration ${String(LEASE_DURATION_S * 1000)} ms, retryPeriod ${String(RETRY_PERIOD_S * 1000)} ms; leaseDuration + retryPeriod = ${String((LEASE_DURATION_S + RETRY_PERIOD_S) * 1000)} ms)`,
    );
    assert.ok(takeoverMs >= CRASH_TAKEOVER_MIN_MS, `${String(takeoverMs)} ms: the lease was respected until it expired`);
    assert.ok(takeoverMs <= CRASH_TAKEOVER_MAX_MS, `${String(takeoverMs)} ms <= ${String(CRASH_TAKEOVER_MAX_MS)} ms`);

    const afterKill = await leaseSpec(ns, 'kill');
    assert.equal(afterKill.holderIdentity, next.elector.identity);
    assert.equal(afterKill.leaseTransitions, (before.leaseTransitions ?? 0) + 1);
    assert.deepEqual(overlappingTerms(leadershipTerms(electors)), []);
    const follower = others.find((e) => e !== next.elector);
    await follower?.waitFor(new RegExp(`^new leader: ${next.elector.identity}$`));
  },
);

test(
  'leader election: a graceful stop with --release-on-cancel hands over within about retryPeriod, far before leaseDuration',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    // A long lease: without the release the others would wait 15 s.
    const base = {
      kubeconfig: shared.cp.kubeconfig,
      namespace: ns,
      lease: 'release',
      leaseDurationSeconds: 15,
      renewDeadlineSeconds: 10,
      retryPeriodSeconds: RETRY_PERIOD_S,
      releaseOnCancel: true,
    };
    const electors = await startAll(t, base, ['a', 'b', 'c']);
    const leader = await leaderOf(electors);
    const others = electors.filter((e) => e !== leader);
    await Promise.all(others.map((e) => e.waitFor(new RegExp(`^new leader: ${leader.identity}$`))));
    const before = await leaseSpec(ns, 'release');

    const stoppedAt = Date.now();
    leader.child.kill('SIGTERM');
    assert.equal(await leader.exited, 0, `exits cleanly:\n${leader.output()}`);
    const stopped = await leader.waitFor(/^stopped leading: /);
    const ended = await leader.waitFor(/^election ended$/);
    assert.ok(stopped.at <= ended.at);
    assert.match(leader.output(), /released lease/);
    const next = await nextLeader(others);
    const takeoverMs = next.at - stoppedAt;
    const boundMs = 2.2 * RETRY_PERIOD_S * 1000 + SLACK_MS;
    report(
      t,
      `release on SIGTERM: ${next.elector.identity} leads ${String(takeoverMs)} ms after the signal (retryPeriod ${String(RETRY_PERIOD_S * 1000)} ms, leaseDuration 15000 ms)`,
    );
    assert.ok(takeoverMs <= boundMs, `${String(takeoverMs)} ms <= ${String(boundMs)} ms`);
    assert.ok(next.at >= stopped.at, 'the old leader stopped before the new one started');

    const afterRelease = await leaseSpec(ns, 'release');
    assert.equal(afterRelease.holderIdentity, next.elector.identity);
    assert.equal(afterRelease.leaseTransitions, (before.leaseTransitions ?? 0) + 1, 'the release kept the count; the takeover added one');
    assert.deepEqual(overlappingTerms(leadershipTerms(electors)), []);
  },
);

test(
  'leader election: a leader cut off from the apiserver stops leading within retryPeriod + renewDeadline, and another takes over once the lease expires',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const dir = mkdtempSync(join(tmpdir(), 'kcp-le-'));
    t.after(() => {
      rmSync(dir, { recursive: true, force: true });
    });
    const upstream = new URL(shared.cp.server);
    const proxy = await startTcpProxy(upstream.hostname, Number(upstream.port));
    t.after(() => proxy.close());
    const base = {
      namespace: ns,
      lease: 'cut',
      leaseDurationSeconds: LEASE_DURATION_S,
      renewDeadlineSeconds: RENEW_DEADLINE_S,
      retryPeriodSeconds: RETRY_PERIOD_S,
    };
    // a reaches the apiserver only through the proxy; it starts first, so it leads.
    const a = await startElector(t, {
      ...base,
      identity: 'a',
      kubeconfig: writeKubeconfig(dir, shared.cp, `https://127.0.0.1:${String(proxy.port)}`),
    });
    await a.waitFor(/^started leading$/);
    const others = await startAll(t, { ...base, kubeconfig: shared.cp.kubeconfig }, ['b', 'c']);
    await Promise.all(others.map((e) => e.waitFor(/^new leader: a$/)));

    const cutAt = Date.now();
    proxy.setBlocked(true);
    proxy.cut();
    const stopped = await a.waitFor(/^stopped leading: /);
    await a.waitFor(/^election ended$/);
    assert.match(stopped.text, /failed to renew lease .* within renewDeadline \(2000 ms\)/);
    const stopMs = stopped.at - cutAt;
    const next = await nextLeader(others);
    const takeoverMs = next.at - cutAt;
    report(
      t,
      `cut: a stops leading ${String(stopMs)} ms after the cut (retryPeriod + renewDeadline = ${String((RETRY_PERIOD_S + RENEW_DEADLINE_S) * 1000)} ms); ${next.elector.identity} leads ${String(takeoverMs)} ms after the cut, ${String(next.at - stopped.at)} ms after a stopped`,
    );
    assert.ok(stopMs <= (RETRY_PERIOD_S + RENEW_DEADLINE_S) * 1000 + SLACK_MS, `a stopped ${String(stopMs)} ms after the cut`);
    assert.ok(next.at > stopped.at, 'never two leaders: the new one started after a stopped');
    assert.ok(takeoverMs >= CRASH_TAKEOVER_MIN_MS, `${String(takeoverMs)} ms: the lease was respected until it expired`);
    assert.ok(takeoverMs <= CRASH_TAKEOVER_MAX_MS, `${String(takeoverMs)} ms <= ${String(CRASH_TAKEOVER_MAX_MS)} ms`);
    assert.equal((await leaseSpec(ns, 'cut')).holderIdentity, next.elector.identity);

    // Reconnected, a competes again and follows the new leader.
    const seen = a.lines.length;
    proxy.setBlocked(false);
    await a.waitFor(new RegExp(`^new leader: ${next.elector.identity}$`), seen);
    assert.ok(!a.believesLeading());
    assert.deepEqual(overlappingTerms(leadershipTerms([a, ...others])), []);
  },
);
