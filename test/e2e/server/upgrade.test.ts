/**
 * exec, attach and port-forward through the proxy against the real apiserver: the same Upgrade
 * request (SPDY/3.1, WebSocket v5.channel.k8s.io, port-forward) gets the same answer through the
 * proxy as from the apiserver directly, and kubectl fails or succeeds the same way with both.
 *
 * There is no kubelet: a pod stays Pending with no node, and one bound to a node that does not
 * exist can be marked Running by hand. Neither can be switched to, so what is compared is the
 * apiserver's refusal, byte for byte.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { newProxyServer } from '../../../src/server/http/app.ts';
import { defaultRequestFilterOptions } from '../../../src/request/request-filter.ts';
import type { RequestFilterOptions } from '../../../src/request/request-filter.ts';
import { closeUpgradedConnections } from '../../../src/server/pass-through/upgrade.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import type { UpstreamConfig } from '../../../src/upstream/config.ts';
import { runCommand } from '../../helpers/cli.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

/** Fixed, so that the apiserver's Sec-WebSocket-Accept is the same on both paths (RFC 6455 §1.3's sample). */
const WEBSOCKET_KEY = 'dGhlIHNhbXBsZSBub25jZQ==';

/** The Upgrade requests kubectl sends: what it asks for, by transport. */
const REQUESTS = {
  /** remotecommand's SPDY executor (kubectl exec before WebSockets, and its fallback). */
  spdyExec: (ns: string, pod: string) => ({
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/pods/${pod}/exec?command=true&container=c&stdout=true&stderr=true`,
    headers: {
      connection: 'Upgrade',
      upgrade: 'SPDY/3.1',
      'x-stream-protocol-version': ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'],
    },
  }),
  /** remotecommand's WebSocket executor (kubectl exec since 1.30). */
  websocketExec: (ns: string, pod: string) => ({
    method: 'GET',
    path: `/api/v1/namespaces/${ns}/pods/${pod}/exec?command=true&container=c&stdout=true&stderr=true`,
    headers: {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': WEBSOCKET_KEY,
      'sec-websocket-version': '13',
      'sec-websocket-protocol': 'v5.channel.k8s.io, v4.channel.k8s.io',
    },
  }),
  /** portforward's SPDY dialer. */
  spdyPortForward: (ns: string, pod: string) => ({
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/pods/${pod}/portforward`,
    headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': 'portforward.k8s.io' },
  }),
  /** portforward's WebSocket tunnel (SPDY inside WebSocket, kubectl since 1.31). */
  websocketPortForward: (ns: string, pod: string) => ({
    method: 'GET',
    path: `/api/v1/namespaces/${ns}/pods/${pod}/portforward?ports=80`,
    headers: {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': WEBSOCKET_KEY,
      'sec-websocket-version': '13',
      'sec-websocket-protocol': 'SPDY/3.1+portforward.k8s.io',
    },
  }),
} as const;

type UpgradeRequestSpec = ReturnType<(typeof REQUESTS)[keyof typeof REQUESTS]>;

/** What came back: the status, the headers that do not vary by connection, and every byte until the close. */
interface Answer {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

/** Headers that differ between any two answers (date, audit-id) or by hop (the proxy closes after a refusal). */
const VARYING = new Set(['date', 'audit-id', 'connection', 'keep-alive', 'transfer-encoding', 'content-length']);

function stable(headers: IncomingHttpHeaders): Record<string, string | string[] | undefined> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !VARYING.has(name)));
}

/** Sends the Upgrade request to the apiserver (with the admin's credentials) or to a proxy (with none). */
async function send(target: UpstreamConfig | string, spec: UpgradeRequestSpec): Promise<Answer> {
  const direct = typeof target !== 'string';
  const url = new URL(direct ? target.server.origin : target);
  const authorization = direct ? await target.authorization() : undefined;
  const options = {
    host: url.hostname,
    port: url.port,
    method: spec.method,
    path: spec.path,
    agent: false as const,
    headers: { ...spec.headers, ...(authorization === undefined ? {} : { authorization }) },
    ...(direct ? { ca: target.tls.ca, cert: target.tls.cert, key: target.tls.key, rejectUnauthorized: target.tls.rejectUnauthorized } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(options);
    req.on('error', reject);
    req.on('upgrade', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      // A switched connection: whatever the apiserver sends until it closes (an error frame).
      const chunks: Buffer[] = [head];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', () => {
        resolve({ statusCode: res.statusCode ?? 0, headers: stable(res.headers), body: Buffer.concat(chunks).toString('latin1') });
      });
    });
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        resolve({ statusCode: res.statusCode ?? 0, headers: stable(res.headers), body: Buffer.concat(chunks).toString() });
      });
    });
    req.end();
  });
}

async function startProxy(t: TestContext, filter?: RequestFilterOptions): Promise<string> {
  const client = newUpstreamClient(await upstreamConfigFor(shared.cp));
  const app = newProxyServer({ client, filter });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  t.after(async () => {
    // Sessions a failed assertion left open must not hold the close.
    closeUpgradedConnections(app.server);
    await app.close();
    await client.close();
  });
  return address;
}

/**
 * Two pods that no kubelet runs: `pending` has no node; `running` is bound to a node that does
 * not exist and marked Running through its status, so that kubectl goes as far as the upgrade.
 */
async function pods(t: TestContext): Promise<{ ns: string; pending: string; running: string }> {
  const ns = await testNamespace(t, shared.admin);
  const container = { name: 'c', image: 'registry.invalid/none:1' };
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, { metadata: { name: 'pending' }, spec: { containers: [container] } });
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
    metadata: { name: 'running' },
    spec: { nodeName: 'ghost', containers: [container] },
  });
  await kube(shared.admin, 'PATCH', `/api/v1/namespaces/${ns}/pods/running/status`, { status: { phase: 'Running' } });
  return { ns, pending: 'pending', running: 'running' };
}

test(
  'upgrade: exec and port-forward requests get the same answer through the proxy as from the apiserver',
  { timeout: 60_000 },
  async (t) => {
    const proxy = await startProxy(t);
    const config = await upstreamConfigFor(shared.cp);
    const { ns, pending, running } = await pods(t);
    const seen = new Set<number>();
    for (const pod of [pending, running, 'missing']) {
      for (const [kind, build] of Object.entries(REQUESTS)) {
        const spec = build(ns, pod);
        const direct = await send(config, spec);
        const viaProxy = await send(proxy, spec);
        assert.deepEqual(viaProxy, direct, `${kind} on pod ${pod}`);
        t.diagnostic(`${kind} on pod ${pod}: ${direct.statusCode} ${direct.body.trimEnd()}`);
        seen.add(direct.statusCode);
      }
    }
    // Refusals (not a switch), and more than one kind of them: a proxy answering one fixed
    // error to everything could not pass the comparison above.
    assert.ok(!seen.has(101), `no pod here can be switched to; got ${[...seen].join(', ')}`);
    assert.ok(seen.size > 1, `statuses seen: ${[...seen].join(', ')}`);
  },
);

test("upgrade: the apiserver's refusal of exec on a pod without a node is relayed as it is", { timeout: 60_000 }, async (t) => {
  const proxy = await startProxy(t);
  const { ns, pending } = await pods(t);
  const res = await send(proxy, REQUESTS.spdyExec(ns, pending));
  const status = JSON.parse(res.body) as { kind: string; code: number; message: string };
  assert.equal(res.statusCode, status.code);
  assert.equal(status.kind, 'Status');
  assert.match(status.message, /host/, 'the apiserver names the missing host');
});

test('upgrade: the request filter rejects exec with 403 and passes port-forward on to the apiserver', { timeout: 60_000 }, async (t) => {
  const proxy = await startProxy(t, defaultRequestFilterOptions());
  const config = await upstreamConfigFor(shared.cp);
  const { ns, running } = await pods(t);
  for (const spec of [REQUESTS.spdyExec(ns, running), REQUESTS.websocketExec(ns, running)]) {
    const res = await send(proxy, spec);
    assert.equal(res.statusCode, 403);
    assert.equal(res.body, 'Forbidden\n');
  }
  for (const spec of [REQUESTS.spdyPortForward(ns, running), REQUESTS.websocketPortForward(ns, running)]) {
    const viaProxy = await send(proxy, spec);
    assert.notEqual(viaProxy.statusCode, 403);
    assert.deepEqual(viaProxy, await send(config, spec));
  }
});

test('upgrade: kubectl exec and port-forward fail the same way through the proxy as directly', { timeout: 120_000 }, async (t) => {
  const proxy = await startProxy(t);
  const { ns, pending, running } = await pods(t);
  const cache = mkdtempSync(join(tmpdir(), 'kcp-kubectl-'));
  const kubectl = shared.cp.binaries.kubectl;
  const direct = (...args: string[]): ReturnType<typeof runCommand> =>
    runCommand(kubectl, ['--kubeconfig', shared.cp.kubeconfig, '--cache-dir', cache, '-n', ns, ...args], 60_000);
  const viaProxy = (...args: string[]): ReturnType<typeof runCommand> =>
    runCommand(kubectl, ['--kubeconfig', '/dev/null', '--server', proxy, '--cache-dir', cache, '-n', ns, ...args], 60_000);
  // Only the address differs between the two runs.
  const normalize = (text: string): string => text.replaceAll(proxy, '<server>').replaceAll(shared.cp.server, '<server>');
  const runs: [string, string[]][] = [
    ['exec on a pod without a node', ['exec', pending, '--', 'true']],
    ['exec on a pod on a missing node', ['exec', running, '--', 'true']],
    ['port-forward to a pod on a missing node', ['port-forward', `pod/${running}`, ':80']],
    ['port-forward to a pending pod', ['port-forward', `pod/${pending}`, ':80']],
  ];
  const stderr = new Map<string, string>();
  for (const [what, args] of runs) {
    const [a, b] = await Promise.all([direct(...args), viaProxy(...args)]);
    assert.notEqual(a.code, 0, `${what}: kubectl fails directly too (${a.stderr})`);
    assert.equal(b.code, a.code, `${what}: exit code (proxy: ${b.stderr})`);
    assert.equal(normalize(b.stderr), normalize(a.stderr), what);
    t.diagnostic(`${what}: exit ${a.code}, ${a.stderr.trimEnd()}`);
    stderr.set(what, b.stderr);
  }
  // The upgrade went through the proxy: kubectl quotes the apiserver's refusal of it.
  assert.match(stderr.get('exec on a pod without a node') ?? '', /unable to upgrade connection: pod pending does not have a host assigned/);
});
