import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server as HttpsServer } from 'node:https';
import { createServer as createNetServer } from 'node:net';
import type { Server as NetServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { Registry } from 'prom-client';
import { LOOPBACK_NAMES, generateServingCertificate } from '../../../src/server/tls/serving-certificate.ts';
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

interface LogLine {
  readonly level: string;
  readonly message: string;
}

/** A member of POOL over a fake apiserver whose Lease names `holder` (none: no Lease yet), on a fake clock. */
function startMember(
  holder: string | undefined,
  pool: Partial<PoolMembership> = {},
  insecureUpstream = false,
  leaderTimeouts?: { connectMs: number; headersMs: number },
): { upstream: FakeUpstream; member: PoolMember; logs: LogLine[] } {
  const upstream = newFakeUpstream({ respond: respond(holder) });
  const logs: LogLine[] = [];
  const config = upstream.client.config;
  const member = startPoolMember({
    pool: { ...POOL, ...pool },
    client: upstream.client,
    upstream: insecureUpstream ? { ...config, tls: { ...config.tls, rejectUnauthorized: false } } : config,
    registry: new Registry(),
    log: (level, message) => logs.push({ level, message }),
    clock: new FakeClock(),
    ...(leaderTimeouts === undefined ? {} : { leaderTimeouts }),
  });
  return { upstream, member, logs };
}

/** A member's leader on loopback: the requests it received (their headers) and the connections it accepted. */
interface FakeLeader {
  readonly url: string;
  readonly requests: IncomingHttpHeaders[];
  connections: number;
}

/** Serves every request with an empty ConfigMapList at RV 11, over HTTPS with `tls` or over plain HTTP. */
async function startFakeLeader(t: TestContext, tls: { cert: string; key: string } | undefined): Promise<FakeLeader> {
  const leader = { url: '', requests: [] as IncomingHttpHeaders[], connections: 0 };
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    leader.requests.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '11' }, items: [] }));
  };
  const server: HttpServer | HttpsServer = tls === undefined ? createHttpServer(handler) : createHttpsServer(tls, handler);
  server.on('connection', () => {
    leader.connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  );
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  leader.url = `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${String(address.port)}`;
  return leader;
}

/** A PEM file of `t`'s own. */
function pemFile(t: TestContext, pem: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-pool-ca-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const file = join(dir, 'ca.crt');
  writeFileSync(file, pem);
  return file;
}

const CONFIGMAPS = { group: '', version: 'v1', resource: 'configmaps' } as const;

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

test('pool member: a leader whose certificate the follower cannot verify is left for the apiserver in the same call, whatever the upstream’s TLS settings', async (t) => {
  const serving = generateServingCertificate(LOOPBACK_NAMES);
  const leader = await startFakeLeader(t, serving);
  const otherCa = generateServingCertificate(LOOPBACK_NAMES).ca;
  const cases: { what: string; pool: Partial<PoolMembership>; insecure?: boolean; error: RegExp }[] = [
    { what: 'self-signed, no pool CA (the upstream’s CA)', pool: {}, error: /certificate/ },
    { what: 'signed by a CA the pool does not trust', pool: { certificateAuthority: pemFile(t, otherCa) }, error: /certificate/ },
    {
      what: 'the pool’s CA, but not for --pool-tls-server-name',
      pool: { certificateAuthority: pemFile(t, serving.ca), tlsServerName: 'kube-cache-proxy-node.kcp.svc' },
      error: /altnames|does not match/,
    },
    { what: 'an upstream with insecure-skip-tls-verify', pool: {}, insecure: true, error: /certificate/ },
  ];
  for (const c of cases) {
    const { upstream, member } = startMember(leader.url, c.pool, c.insecure === true);
    await member.settled;
    const whole = member.listerWatcherFor(CONFIGMAPS, undefined);
    assert.equal((await whole.list({ resourceVersion: '0' })).resourceVersion, '10', c.what);
    assert.ok(upstream.paths.includes('/api/v1/configmaps?resourceVersion=0'), c.what);
    const target = member.route.target();
    assert.equal(target.kind === 'apiserver' ? target.reason : target.kind, 'leader-unreachable', c.what);
    assert.match(target.kind === 'apiserver' ? (target.detail ?? '') : '', c.error, c.what);
    await member.stop();
    await member.close();
  }
  assert.equal(leader.requests.length, 0, 'no request reached the leader (no credentials sent)');
  assert.ok(leader.connections >= cases.length, 'each follower tried it');
});

test('pool member: a leader verified against the pool’s CA for its server name serves the follower, asked for cached answers only', async (t) => {
  const serving = generateServingCertificate({ dnsNames: ['kube-cache-proxy-node.kcp.svc'], ips: [] });
  const leader = await startFakeLeader(t, serving);
  const { upstream, member } = startMember(leader.url, {
    certificateAuthority: pemFile(t, serving.ca),
    tlsServerName: 'kube-cache-proxy-node.kcp.svc',
  });
  await member.settled;
  const whole = member.listerWatcherFor(CONFIGMAPS, undefined);
  assert.equal((await whole.list({ resourceVersion: '0' })).resourceVersion, '11', "the leader's answer");
  assert.deepEqual(member.route.target(), { kind: 'leader', url: leader.url });
  assert.equal(leader.requests[0]?.['cache-control'], 'only-if-cached');
  assert.ok(!upstream.paths.includes('/api/v1/configmaps?resourceVersion=0'));
  await member.stop();
  await member.close();
});

test('pool member: an http:// (or malformed) holderIdentity is never contacted, said once, and the apiserver read', async (t) => {
  const plain = await startFakeLeader(t, undefined);
  for (const holder of [plain.url, 'https//127.0.0.1:8443', 'https://token@127.0.0.1:1']) {
    const { upstream, member, logs } = startMember(holder);
    await member.settled;
    const whole = member.listerWatcherFor(CONFIGMAPS, undefined);
    assert.equal((await whole.list({ resourceVersion: '0' })).resourceVersion, '10', holder);
    await whole.list({ resourceVersion: '0' });
    assert.equal(upstream.paths.filter((p) => p === '/api/v1/configmaps?resourceVersion=0').length, 2, holder);
    const target = member.route.target();
    assert.equal(target.kind === 'apiserver' ? target.reason : target.kind, 'unusable-leader', holder);
    assert.deepEqual(member.status().readsFrom, 'apiserver');
    const warned = logs.filter((l) => l.level === 'warn' && l.message.includes('will not contact'));
    assert.equal(warned.length, 1, `said once: ${JSON.stringify(logs)}`);
    await member.stop();
    await member.close();
  }
  assert.equal(plain.connections, 0, 'the http leader was never contacted');
});

test('pool member: a --pool-certificate-authority that cannot be read stops the start, with the flag named', () => {
  assert.throws(
    () => startMember(undefined, { certificateAuthority: '/nonexistent/ca.crt' }),
    /--pool-certificate-authority \/nonexistent\/ca\.crt: cannot read it/,
  );
});

test(
  'pool member: a leader that does not complete its handshake, or does not answer, is left at its timeout for the apiserver',
  { timeout: 20_000 },
  async (t) => {
    // Accepts TCP and says nothing (no TLS handshake): the connect timeout.
    const held = new Set<Socket>();
    const mute = createNetServer((socket) => held.add(socket));
    // Completes TLS, reads the request, never answers: the response-head timeout.
    const serving = generateServingCertificate(LOOPBACK_NAMES);
    const silent = createHttpsServer(serving, () => undefined);
    const listen = async (server: NetServer): Promise<string> => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      t.after(
        () =>
          new Promise<void>((resolve) => {
            server.close(() => {
              resolve();
            });
          }),
      );
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('no port');
      return `https://127.0.0.1:${String(address.port)}`;
    };
    // Registered last, so run first: the servers' connections go before the servers close.
    t.after(() => {
      for (const socket of held) socket.destroy();
      silent.closeAllConnections();
    });
    const cases = [
      { url: await listen(mute), pool: {}, detail: /timeout/i },
      { url: await listen(silent), pool: { certificateAuthority: pemFile(t, serving.ca) }, detail: /headers timeout/i },
    ];
    for (const c of cases) {
      const { upstream, member } = startMember(c.url, c.pool, false, { connectMs: 200, headersMs: 200 });
      await member.settled;
      const whole = member.listerWatcherFor(CONFIGMAPS, undefined);
      assert.equal((await whole.list({ resourceVersion: '0' })).resourceVersion, '10', c.url);
      assert.ok(upstream.paths.includes('/api/v1/configmaps?resourceVersion=0'));
      const target = member.route.target();
      assert.equal(target.kind === 'apiserver' ? target.reason : target.kind, 'leader-unreachable');
      assert.match(target.kind === 'apiserver' ? (target.detail ?? '') : '', c.detail);
      await member.stop();
      await member.close();
    }
  },
);
