/**
 * A node pool with an elected leader, against the real apiserver: three shared proxies (processes
 * of their own) of one pool cost the apiserver one watch of the pool-wide type (a CRD of the
 * test's own, so that the apiserver's apiserver_longrunning_requests counts the pool's watches
 * only, and each member's kube_cache_proxy_pool_watches agrees); with the leader
 * killed (SIGKILL) in the middle of writes, a new member holds the Lease within the lease duration
 * (plus the candidates' retry period), the follower watches through it again within seconds, and
 * a client's watch on each survivor carries exactly the events the apiserver's own watch carries:
 * nothing lost, duplicated or reordered.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube, testCrd } from '../../helpers/kube.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import { collect, freePort } from '../../helpers/pool-harness.ts';
import type { Client, SharedProxy } from '../../helpers/shared-proxy.ts';
import { clientFor, startSharedProxy } from '../../helpers/shared-proxy.ts';

const shared = useSharedAdmin();

const MEMBERS = 3;
/** Short, so that the test waits seconds; the renew deadline and retry period follow it (4 s, 0.8 s). */
const LEASE_SECONDS = 6;
const RETRY_MS = (LEASE_SECONDS * 1000 * 2) / 15;

test(
  'pool: one apiserver watch per pool-wide type; the leader killed mid-churn, a new one within the lease, watches lose nothing',
  { timeout: 240_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    const pool = `p-${ns}`;
    // A type of this test's own: the apiserver's count of its watches is the pool's alone.
    const crd = await testCrd(t, admin);
    const resource = `${crd.plural}.${crd.group}`;
    const collection = `/apis/${crd.group}/${crd.version}/namespaces/${ns}/${crd.plural}`;
    /** The watches of the type the apiserver serves now across all namespaces (the proxies' informers'). */
    const apiserverWatches = async (): Promise<number> => {
      const res = await admin.request({ method: 'GET', path: '/metrics', headers: { accept: 'text/plain' } });
      let total = 0;
      for (const line of res.body.toString().split('\n')) {
        if (!line.startsWith('apiserver_longrunning_requests{') || !line.includes('verb="WATCH"')) continue;
        if (!line.includes(`resource="${crd.plural}"`) || !line.includes('scope="cluster"')) continue;
        total += Number(line.slice(line.lastIndexOf(' ') + 1));
      }
      return total;
    };
    const ports = await Promise.all(Array.from({ length: MEMBERS }, () => freePort()));
    const began = Date.now();
    const phase = (what: string): void => {
      t.diagnostic(`${what} at ${String(Date.now() - began)} ms`);
    };
    const members: SharedProxy[] = await Promise.all(
      ports.map((port) =>
        startSharedProxy(t, cp, [
          ...['--port', String(port), '--resources', resource, '--log-level', 'info'],
          ...['--pool', pool, '--pool-namespace', ns, '--pool-advertise', `https://127.0.0.1:${String(port)}`],
          ...['--pool-lease-duration', `${String(LEASE_SECONDS)}s`],
        ]),
      ),
    );
    const adminClient: Client = clientFor(t, members[0]?.ca ?? '', { kind: 'token', token: cp.users.admin.token });
    const scrape = async (member: SharedProxy): Promise<string> => {
      const res = await request(`${member.url}/metrics`, { dispatcher: adminClient.dispatcher, headers: adminClient.headers });
      const text = await res.body.text();
      assert.equal(res.statusCode, 200, text.slice(0, 300));
      return text;
    };
    const watchesOn = async (member: SharedProxy, upstream: 'leader' | 'apiserver'): Promise<number> =>
      metricSum(await scrape(member), 'kube_cache_proxy_pool_watches', { pool, resource, upstream });
    const holder = async (): Promise<string> => {
      const lease = await kube<{ spec?: { holderIdentity?: string } }>(
        admin,
        'GET',
        `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/kube-cache-proxy-pool-${pool}`,
        undefined,
        [200, 404],
      );
      return lease.spec?.holderIdentity ?? '';
    };
    /** The pool settled on `leader`: it watches the apiserver, every other member watches it. */
    const settledOn = async (leader: SharedProxy, others: readonly SharedProxy[]): Promise<boolean> =>
      (await watchesOn(leader, 'apiserver')) === 1 &&
      (await watchesOn(leader, 'leader')) === 0 &&
      (await Promise.all(others.map(async (m) => (await watchesOn(m, 'leader')) === 1 && (await watchesOn(m, 'apiserver')) === 0))).every(
        Boolean,
      );

    let leader: SharedProxy | undefined;
    phase('members serving');
    await eventually(
      'one leader, the others watching through it',
      async () => {
        const url = await holder();
        leader = members.find((m) => m.url === url);
        return (
          leader !== undefined &&
          settledOn(
            leader,
            members.filter((m) => m !== leader),
          )
        );
      },
      60_000,
    );
    const first = leader as SharedProxy;
    const survivors = members.filter((m) => m !== first);
    // What the pool costs the apiserver: one watch of the type, the leader's, as the apiserver counts them.
    await eventually('the apiserver to serve one watch of the type', async () => (await apiserverWatches()) === 1, 10_000);

    // Clients watch through each survivor, and the apiserver itself, from the same RV.
    const start = await kube<{ metadata: { resourceVersion: string } }>(admin, 'GET', collection);
    const path = `${collection}?watch=1&allowWatchBookmarks=true&resourceVersion=${start.metadata.resourceVersion}`;
    const direct = await admin.stream({ method: 'GET', path });
    assert.equal(direct.statusCode, 200);
    const truth = collect(direct.body);
    // Closed at the end (and on failure), so that the members stop without waiting out their grace for these watches.
    const streams: { destroy(): void }[] = [direct.body];
    t.after(() => {
      for (const stream of streams) stream.destroy();
    });
    const clients = await Promise.all(
      survivors.map(async (m) => {
        const res = await request(`${m.url}${path}`, { dispatcher: adminClient.dispatcher, headers: adminClient.headers });
        assert.equal(res.statusCode, 200);
        streams.push(res.body);
        return collect(res.body);
      }),
    );

    // Churn: each step creates one object and updates the one before, until stopped.
    const churning = { writing: true };
    let lastWrittenRv = 0;
    let writes = 0;
    const churn = (async () => {
      for (let i = 0; churning.writing; i++) {
        const created = await kube(admin, 'POST', collection, {
          apiVersion: `${crd.group}/${crd.version}`,
          kind: crd.kind,
          metadata: { name: `w-${String(i)}` },
          spec: { v: 0 },
        });
        lastWrittenRv = Math.max(lastWrittenRv, Number(created.metadata.resourceVersion));
        if (i > 0) {
          const updated = await kube(admin, 'PATCH', `${collection}/w-${String(i - 1)}`, { spec: { v: 1 } });
          lastWrittenRv = Math.max(lastWrittenRv, Number(updated.metadata.resourceVersion));
        }
        writes += i > 0 ? 2 : 1;
        await new Promise((resolve) => setTimeout(resolve, 50)); // pacing of the writes, not synchronisation
      }
    })();

    phase('pool settled, clients watching');
    await eventually('writes before the kill', () => writes >= 20);
    first.cli.child.kill('SIGKILL');
    const killedAt = Date.now();
    let next: SharedProxy | undefined;
    await eventually(
      'a new leader',
      async () => {
        const url = await holder();
        next = survivors.find((m) => m.url === url);
        return next !== undefined;
      },
      LEASE_SECONDS * 1000 * 4,
    );
    const takeoverMs = Date.now() - killedAt;
    // A candidate takes over leaseDuration after it last saw a renewal, on its next attempt (retry period × up to 2.2).
    assert.ok(takeoverMs <= LEASE_SECONDS * 1000 + 2.2 * RETRY_MS + 1_000, `new leader after ${String(takeoverMs)} ms`);
    const second = next as SharedProxy;
    const follower = survivors.filter((m) => m !== second);
    const electedAt = Date.now();
    await eventually('the follower to watch through the new leader', () => settledOn(second, follower), 10_000);
    const resumedMs = Date.now() - electedAt;
    assert.ok(resumedMs <= 5_000, `follower back on a leader ${String(resumedMs)} ms after the election`);
    t.diagnostic(`takeover ${String(takeoverMs)} ms after SIGKILL; follower through the new leader ${String(resumedMs)} ms after`);

    await eventually('writes after the switch', () => writes >= 60, 60_000);
    churning.writing = false;
    await churn;
    phase('writes done');
    const finalRv = lastWrittenRv;
    await eventually(
      'every watch to reach the last write',
      () => truth.lastRv >= finalRv && clients.every((c) => c.lastRv >= finalRv),
      30_000,
    );
    assert.ok(truth.events.length >= writes, `the apiserver's watch saw ${String(truth.events.length)} of ${String(writes)} writes`);
    phase(`every watch at the last write (${String(truth.events.length)} events)`);
    for (const [i, seen] of clients.entries()) {
      assert.equal(seen.ended, false, `client ${String(i)}'s watch was not closed`);
      assert.deepEqual(seen.events, truth.events, `client ${String(i)}: the apiserver's events, in its order`);
    }
    let fromMembers = 0;
    for (const m of survivors) fromMembers += await watchesOn(m, 'apiserver');
    assert.equal(fromMembers, 1, "the members' own count of their apiserver watches, after the failover");
    await eventually(
      'the apiserver to serve one watch of the type after the failover',
      async () => (await apiserverWatches()) === 1,
      10_000,
    );
    for (const stream of streams) stream.destroy();
    // A follower stops within its grace period, its informers' watches on the leader included.
    const [last] = follower;
    last?.cli.child.kill('SIGTERM');
    await eventually('the follower to exit on SIGTERM', () => last?.cli.child.exitCode !== null, 30_000);
    assert.equal(last?.cli.child.exitCode, 0, last?.cli.output().slice(-2000));
  },
);
