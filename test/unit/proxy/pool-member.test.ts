import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import type { PoolMember } from '../../../src/proxy/pool-member.ts';
import { startPoolMember } from '../../../src/proxy/pool-member.ts';
import type { PoolMembership } from '../../../src/proxy/options.ts';
import type { UpstreamRequest } from '../../../src/upstream/client.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { FakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';

/** A leader nobody serves at: a follower's connection to it is refused at once. */
const DEAD_LEADER = 'https://127.0.0.1:1';
const LEASE_PATH = '/apis/coordination.k8s.io/v1/namespaces/kcp/leases/kube-cache-proxy-pool-zone-a';

const POOL: PoolMembership = {
  name: 'zone-a',
  namespace: 'kcp',
  advertise: 'https://10.0.0.1:8443',
  certificateAuthority: undefined,
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

function respond(holder: string | undefined): (request: UpstreamRequest) => ReturnType<typeof jsonResponse> {
  return (request) => {
    // A candidate that does not lead reads the Lease from the apiserver's watch cache.
    if ((request.path === LEASE_PATH || request.path === `${LEASE_PATH}?resourceVersion=0`) && request.method === 'GET') {
      if (holder === undefined) return jsonResponse(404, { kind: 'Status', code: 404, reason: 'NotFound' });
      return jsonResponse(200, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'kube-cache-proxy-pool-zone-a', namespace: 'kcp', resourceVersion: '5' },
        spec: { holderIdentity: holder, leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 0 },
      });
    }
    if (request.method === 'POST' && request.path.endsWith('/leases')) {
      const lease = JSON.parse(String(request.body)) as { metadata: Record<string, unknown> };
      return jsonResponse(201, { ...lease, metadata: { ...lease.metadata, resourceVersion: '6' } });
    }
    if (request.path.startsWith('/api/v1/configmaps')) {
      return jsonResponse(200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '10' }, items: [] });
    }
    return jsonResponse(404, { kind: 'Status', code: 404, reason: 'NotFound' });
  };
}

/** A member of POOL over a fake apiserver whose Lease names `holder` (none: no Lease yet), on a fake clock. */
function startMember(holder: string | undefined): { upstream: FakeUpstream; member: PoolMember } {
  const upstream = newFakeUpstream({ respond: respond(holder) });
  const member = startPoolMember({
    pool: POOL,
    client: upstream.client,
    upstream: upstream.client.config,
    registry: new Registry(),
    log: () => undefined,
    clock: new FakeClock(),
  });
  return { upstream, member };
}

test('pool member: the only candidate creates the Lease, leads, and reads every type from the apiserver', async () => {
  const { upstream, member } = startMember(undefined);
  await member.settled;
  assert.deepEqual(member.status(), {
    name: 'zone-a',
    lease: 'kcp/kube-cache-proxy-pool-zone-a',
    leader: POOL.advertise,
    role: 'leader',
    readsFrom: 'apiserver',
  });
  await member.listerWatcherFor({ group: '', version: 'v1', resource: 'configmaps' }, undefined).list({});
  assert.ok(upstream.paths.includes('/api/v1/configmaps'));
  await member.stop();
  await member.close();
});

test('pool member: a follower routes the types cached whole to the leader (the apiserver once it refuses), selector scopes never', async () => {
  const { upstream, member } = startMember(DEAD_LEADER);
  await member.settled;
  assert.deepEqual([member.status().role, member.status().readsFrom, member.status().leader], ['follower', 'leader', DEAD_LEADER]);
  assert.ok(upstream.paths.includes(`${LEASE_PATH}?resourceVersion=0`), 'a follower reads its Lease from the watch cache');
  // A node's scope: the apiserver, and the route untouched.
  const scoped = member.listerWatcherFor({ group: '', version: 'v1', resource: 'configmaps', fieldSelector: 'metadata.name=a' }, undefined);
  await scoped.list({});
  assert.ok(upstream.paths.includes('/api/v1/configmaps?fieldSelector=metadata.name%3Da'));
  assert.equal(member.status().readsFrom, 'leader');
  // The whole type: the leader first; refused, the same LIST from the apiserver.
  const whole = member.listerWatcherFor({ group: '', version: 'v1', resource: 'configmaps' }, undefined);
  assert.equal((await whole.list({ resourceVersion: '0' })).resourceVersion, '10');
  assert.ok(upstream.paths.includes('/api/v1/configmaps?resourceVersion=0'));
  assert.equal(member.status().readsFrom, 'apiserver');
  await member.stop();
  await member.close();
});
