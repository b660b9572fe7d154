/**
 * A node pool's followers fail safe, against the real apiserver: each follower leaves a leader it
 * cannot use for the apiserver within the acceptance bound (FAILOVER_BOUND_MS, 10 s), goes back
 * to the leader once it is healthy, and its clients' watches carry exactly the events the
 * apiserver's own watch carries through both moves: nothing lost, duplicated or reordered.
 *
 * - a leader serving a certificate the followers cannot verify (its own CA);
 * - a Lease whose holderIdentity is an http:// URL (never contacted: a plain HTTP server counts
 *   its connections);
 * - a leader (a member, elected) whose own upstream watch is cut (a TCP proxy between it and the
 *   apiserver resets its connections and refuses new ones): it ends its followers' watches and
 *   refuses them (503) until its watch is back.
 *
 * The members are proxies in-process (test/helpers/pool-harness.ts). In the first two cases the
 * test holds the Lease for the leader it names (another shared proxy), so that no member takes it
 * over (the members read it every retry period: 2 s jittered up to 4.4 s at client-go's 15 s
 * lease, which the time to leave includes); the times are measured by polling each follower's own
 * kube_cache_proxy_pool_watches every 50 ms, printed, and held to the acceptance bound only.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import { splitLines } from '../../../src/informer/lister-watcher.ts';
import { FAILOVER_BOUND_MS } from '../../../src/protocol/pool-protocol.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import type { PoolProxy, Seen } from '../../helpers/pool-harness.ts';
import { collect, holdLease, leaseHolder, startChurn, startPoolProxy, watchingOn } from '../../helpers/pool-harness.ts';
import type { Client } from '../../helpers/shared-proxy.ts';
import { clientFor } from '../../helpers/shared-proxy.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';

const shared = useSharedAdmin();

/** Clients watching configmaps of `ns` through each follower, and the apiserver's own watch (the truth), from one RV. */
async function watchAll(
  t: TestContext,
  ns: string,
  followers: readonly PoolProxy[],
  client: Client,
): Promise<{ truth: Seen; clients: Seen[] }> {
  const { admin } = shared;
  const collection = `/api/v1/namespaces/${ns}/configmaps`;
  const start = await kube<{ metadata: { resourceVersion: string } }>(admin, 'GET', collection);
  const path = `${collection}?watch=1&allowWatchBookmarks=true&resourceVersion=${start.metadata.resourceVersion}`;
  const direct = await admin.stream({ method: 'GET', path });
  assert.equal(direct.statusCode, 200);
  const streams: { destroy(): void }[] = [direct.body];
  // Closed at the end (and on failure), so that the proxies stop without waiting for these watches.
  t.after(() => {
    for (const stream of streams) stream.destroy();
  });
  const clients = await Promise.all(
    followers.map(async (f) => {
      const res = await request(`${f.url}${path}`, { dispatcher: client.dispatcher, headers: client.headers });
      assert.equal(res.statusCode, 200);
      streams.push(res.body);
      return collect(res.body);
    }),
  );
  return { truth: collect(direct.body), clients };
}

/** Every client saw what the apiserver's watch saw, up to the last write, and its watch is still open. */
async function assertNothingLost(truth: Seen, clients: readonly Seen[], lastRv: number, writes: number): Promise<void> {
  const state = (): string =>
    [truth, ...clients]
      .map(
        (s, i) =>
          `${i === 0 ? 'apiserver' : `client ${String(i - 1)}`} at ${String(s.lastRv)} (${String(s.events.length)} events${s.ended ? ', ended' : ''})`,
      )
      .join(', ');
  await eventually(
    'every watch to reach the last write',
    () => truth.lastRv >= lastRv && clients.every((c) => c.lastRv >= lastRv),
    30_000,
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}: ${String(lastRv)}; ${state()}`);
  });
  assert.ok(truth.events.length >= writes, `the apiserver's watch saw ${String(truth.events.length)} of ${String(writes)} writes`);
  for (const [i, seen] of clients.entries()) {
    assert.equal(seen.ended, false, `client ${String(i)}'s watch was not closed`);
    assert.deepEqual(seen.events, truth.events, `client ${String(i)}: the apiserver's events, in its order`);
  }
}

/** Waits for every follower to read `resource` from `upstream`; returns how long that took from `since` (ms). */
async function movedTo(
  followers: readonly PoolProxy[],
  pool: string,
  resource: string,
  upstream: 'leader' | 'apiserver',
  since: number,
  timeoutMs: number,
): Promise<number> {
  await eventually(
    `every follower to read ${resource} from the ${upstream}`,
    () => watchingOn(followers, pool, resource, upstream),
    timeoutMs,
  );
  return Date.now() - since;
}

/**
 * The case of a Lease naming a leader the followers cannot use (`bad`): the followers settle on a
 * healthy leader, the Lease names `bad`, then the healthy leader again; writes all along.
 */
async function leaveAndReturn(
  t: TestContext,
  what: string,
  setUp: (ns: string) => Promise<{ bad: string; contacted: () => Promise<number> }>,
): Promise<void> {
  const { admin, cp } = shared;
  const ns = await testNamespace(t, admin);
  const pool = `p-${ns}`;
  const resource = `configmaps in ${ns}`;
  const { bad, contacted } = await setUp(ns);
  const good = await startPoolProxy(t, cp, { namespace: ns });
  await holdLease(admin, ns, pool, good.url);
  const followers = await Promise.all([1, 2].map(() => startPoolProxy(t, cp, { namespace: ns, pool })));
  await movedTo(followers, pool, resource, 'leader', Date.now(), 30_000);
  const client = clientFor(t, readFileSync(cp.caFile, 'utf8'), { kind: 'token', token: cp.users.admin.token });
  const { truth, clients } = await watchAll(t, ns, followers, client);
  const churn = startChurn(t, admin, ns);
  await eventually('writes before the leader goes bad', () => churn.writes() >= 10);

  const failedAt = Date.now();
  await holdLease(admin, ns, pool, bad);
  const leftMs = await movedTo(followers, pool, resource, 'apiserver', failedAt, 30_000);
  t.diagnostic(`${what}: every follower on the apiserver ${String(leftMs)} ms after the Lease named ${bad}`);
  assert.ok(leftMs <= FAILOVER_BOUND_MS, `on the apiserver after ${String(leftMs)} ms`);
  const during = churn.writes();
  await eventually('writes while on the apiserver', () => churn.writes() >= during + 10);

  const healedAt = Date.now();
  await holdLease(admin, ns, pool, good.url);
  const backMs = await movedTo(followers, pool, resource, 'leader', healedAt, 30_000);
  t.diagnostic(`${what}: every follower back on the healthy leader ${String(backMs)} ms after the Lease named it`);
  const after = churn.writes();
  await eventually('writes after the return', () => churn.writes() >= after + 10);
  const lastRv = await churn.stop();
  await assertNothingLost(truth, clients, lastRv, churn.writes());
  assert.equal(await contacted(), 0, `${what}: the bad leader answered no request`);
}

test(
  'pool: a leader serving a certificate the followers cannot verify is left for the apiserver within the bound, and returned to once healthy; no event lost',
  { timeout: 180_000 },
  async (t) => {
    await leaveAndReturn(t, 'unverifiable certificate', async (ns) => {
      // A shared proxy with a certificate of its own CA (--tls-generate): no member trusts it.
      const untrusted = await startPoolProxy(t, shared.cp, { namespace: ns, untrusted: true });
      const served = async (): Promise<number> => metricSum(await untrusted.metrics(), 'kube_cache_proxy_requests_total');
      return { bad: untrusted.url, contacted: served };
    });
  },
);

test(
  'pool: an http:// holderIdentity is never contacted; the followers read from the apiserver within the bound, and return to the leader it names next; no event lost',
  { timeout: 180_000 },
  async (t) => {
    await leaveAndReturn(t, 'http:// holderIdentity', async () => {
      // A plain HTTP server: any connection to it would carry a follower's credentials in the clear.
      let connections = 0;
      const plain = createServer((_req, res) => {
        res.writeHead(500);
        res.end();
      });
      plain.on('connection', () => {
        connections++;
      });
      await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
      t.after(
        () =>
          new Promise<void>((resolve) => {
            plain.closeAllConnections();
            plain.close(() => {
              resolve();
            });
          }),
      );
      const address = plain.address();
      if (address === null || typeof address === 'string') throw new Error('no port');
      return { bad: `http://127.0.0.1:${String(address.port)}`, contacted: () => Promise.resolve(connections) };
    });
  },
);

test(
  'pool: a leader whose upstream watch is cut ends and refuses its followers’ watches; they read from the apiserver within the bound, and return once its watch is back; no event lost',
  { timeout: 180_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    const pool = `p-${ns}`;
    const resource = `configmaps in ${ns}`;
    const config = await upstreamConfigFor(cp);
    // The leader's whole upstream (its informers, its reviews, its Lease) goes through this link.
    const link = await startTcpProxy(config.server.hostname, Number(config.server.port));
    t.after(() => link.close());
    // A 30 s lease: its renew deadline (20 s) outlasts the cut, so that it leads throughout.
    const leader = await startPoolProxy(t, cp, {
      namespace: ns,
      pool,
      leaseSeconds: 30,
      upstream: { ...config, server: new URL(`https://127.0.0.1:${String(link.port)}`) },
    });
    await eventually('the first member to lead', async () => (await leaseHolder(admin, ns, pool)) === leader.url, 30_000);
    const followers = await Promise.all([1, 2].map(() => startPoolProxy(t, cp, { namespace: ns, pool, leaseSeconds: 30 })));
    await movedTo(followers, pool, resource, 'leader', Date.now(), 30_000);
    const client = clientFor(t, readFileSync(cp.caFile, 'utf8'), { kind: 'token', token: cp.users.admin.token });
    const { truth, clients } = await watchAll(t, ns, followers, client);
    const churn = startChurn(t, admin, ns);
    await eventually('writes before the cut', () => churn.writes() >= 10);

    const cutAt = Date.now();
    link.setBlocked(true);
    link.cut();
    const leftMs = await movedTo(followers, pool, resource, 'apiserver', cutAt, 30_000);
    t.diagnostic(`cut upstream: every follower on the apiserver ${String(leftMs)} ms after the leader's link was cut`);
    assert.ok(leftMs <= FAILOVER_BOUND_MS, `on the apiserver after ${String(leftMs)} ms`);
    // Well inside the leader's renew deadline (20 s for its 30 s lease): it keeps the Lease.
    const during = churn.writes();
    await eventually('writes while the link is down', () => churn.writes() >= during + 10);
    const healedAt = Date.now();
    link.setBlocked(false);
    const backMs = await movedTo(followers, pool, resource, 'leader', healedAt, 60_000);
    t.diagnostic(`cut upstream: every follower back on the leader ${String(backMs)} ms after its link came back`);
    assert.equal(await leaseHolder(admin, ns, pool), leader.url, 'the same leader throughout');
    const after = churn.writes();
    await eventually('writes after the return', () => churn.writes() >= after + 10);
    const lastRv = await churn.stop();
    await assertNothingLost(truth, clients, lastRv, churn.writes());
  },
);

test(
  'pool: a leader answers only-if-cached reads from a cache whose upstream watch is open, with heartbeats on its watches; else a 503 saying why, never passed through',
  { timeout: 120_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    const config = await upstreamConfigFor(cp);
    const link = await startTcpProxy(config.server.hostname, Number(config.server.port));
    t.after(() => link.close());
    const leader = await startPoolProxy(t, cp, {
      namespace: ns,
      upstream: { ...config, server: new URL(`https://127.0.0.1:${String(link.port)}`) },
    });
    const client = clientFor(t, readFileSync(cp.caFile, 'utf8'), { kind: 'token', token: cp.users.admin.token });
    const onlyIfCached = { ...client.headers, 'cache-control': 'only-if-cached', accept: 'application/json' };
    const read = async (path: string): Promise<{ status: number; body: string }> => {
      const res = await request(`${leader.url}${path}`, { dispatcher: client.dispatcher, headers: onlyIfCached });
      return { status: res.statusCode, body: await res.body.text() };
    };
    const passed = async (): Promise<number> =>
      metricSum(await leader.metrics(), 'kube_cache_proxy_requests_total', { served_from: 'apiserver' });
    const before = await passed();
    const cached = await read(`/api/v1/namespaces/${ns}/configmaps`);
    assert.equal(cached.status, 200, cached.body);
    // A type it does not cache: refused, in a Status that says why; not passed through.
    const uncached = await read(`/api/v1/namespaces/${ns}/secrets`);
    assert.equal(uncached.status, 503);
    const status = JSON.parse(uncached.body) as { kind: string; reason: string; code: number; message: string };
    assert.deepEqual([status.kind, status.reason, status.code], ['Status', 'ServiceUnavailable', 503]);
    assert.match(status.message, /only-if-cached\): uncached: /);
    assert.equal(await passed(), before, 'nothing passed through');

    // A watch: heartbeats (bookmarks at the RV it reached) while nothing happens.
    const rv = (JSON.parse(cached.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const watch = await request(`${leader.url}/api/v1/namespaces/${ns}/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`, {
      dispatcher: client.dispatcher,
      headers: onlyIfCached,
    });
    assert.equal(watch.statusCode, 200);
    const lines: string[] = [];
    let ended = false;
    void (async () => {
      try {
        for await (const line of splitLines(watch.body)) lines.push(line.toString());
      } catch {
        // cut by the test's end
      }
      ended = true;
    })();
    t.after(() => {
      watch.body.destroy();
    });
    await eventually('a heartbeat', () => lines.length > 0, 10_000);
    const heartbeat = JSON.parse(lines[0] ?? '') as { type: string; object: { metadata: { resourceVersion: string } } };
    assert.equal(heartbeat.type, 'BOOKMARK');
    assert.ok(BigInt(heartbeat.object.metadata.resourceVersion) >= BigInt(rv));

    // Its upstream watch cut: the watch ends, and reads are refused until it is back.
    link.setBlocked(true);
    link.cut();
    await eventually('the follower watch to end', () => ended, 10_000);
    await eventually('reads refused: the upstream watch is not open', async () => {
      const refused = await read(`/api/v1/namespaces/${ns}/configmaps`);
      return refused.status === 503 && refused.body.includes('only-if-cached): not-watching: ');
    });
    link.setBlocked(false);
    await eventually('reads from the cache again', async () => (await read(`/api/v1/namespaces/${ns}/configmaps`)).status === 200, 60_000);
    assert.equal(await passed(), before, 'nothing passed through');
    // The same read without the directive: passed through, and counted so.
    const plain = await request(`${leader.url}/api/v1/namespaces/${ns}/secrets`, {
      dispatcher: client.dispatcher,
      headers: client.headers,
    });
    await plain.body.dump();
    assert.equal(plain.statusCode, 200);
    assert.equal(await passed(), before + 1);
  },
);
