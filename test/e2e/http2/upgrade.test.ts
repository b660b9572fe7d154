/**
 * exec, attach and port-forward asked for over HTTP/2, sent to the apiserver and to the proxy
 * alike: the answers must be the same (docs/differences.md, "exec, attach and port-forward over
 * HTTP/2").
 *
 * HTTP/2 has no Upgrade: a client may not send Connection or Upgrade (RFC 9113 §8.2.2; node:http2,
 * Go's transport and curl all refuse or strip them), so what an h2 client can send is the same
 * request without them. The apiserver routes it to the pod's connect handler, which refuses it:
 * the pod's own errors first (no node, a missing node, no such pod), then the upgrade-aware
 * proxy's 400 "Upgrade request required". WebSocket over h2 (RFC 8441's extended CONNECT) is
 * off on both sides: neither announces SETTINGS_ENABLE_CONNECT_PROTOCOL, and both reset a stream
 * that carries `:protocol` with PROTOCOL_ERROR.
 *
 * There is no kubelet: `onnode` is bound to a Node object of the test's whose kubelet address
 * nothing listens on, which the apiserver never dials for a request it refuses before the upgrade.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, constants } from 'node:http2';
import type { ClientHttp2Session, OutgoingHttpHeaders } from 'node:http2';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { newProxyServer } from '../../../src/server/http/app.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import type { UpstreamConfig } from '../../../src/upstream/config.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { HTTP2_ENV, expectEveryConnectionHttp2, http2Serving, listenForSuite } from '../../helpers/http2.ts';
import { kube } from '../../helpers/kube.ts';

process.env[HTTP2_ENV] = '1';
const shared = useSharedAdmin();

/** The requests kubectl's executors and dialers send, less the header fields HTTP/2 forbids. */
const REQUESTS = {
  spdyExec: (ns: string, pod: string) => ({
    ':method': 'POST',
    ':path': `/api/v1/namespaces/${ns}/pods/${pod}/exec?command=true&container=c&stdout=true&stderr=true`,
    'x-stream-protocol-version': ['v4.channel.k8s.io', 'v3.channel.k8s.io'],
  }),
  websocketExec: (ns: string, pod: string) => ({
    ':method': 'GET',
    ':path': `/api/v1/namespaces/${ns}/pods/${pod}/exec?command=true&container=c&stdout=true&stderr=true`,
    'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    'sec-websocket-version': '13',
    'sec-websocket-protocol': 'v5.channel.k8s.io, v4.channel.k8s.io',
  }),
  spdyAttach: (ns: string, pod: string) => ({
    ':method': 'POST',
    ':path': `/api/v1/namespaces/${ns}/pods/${pod}/attach?container=c&stdout=true`,
    'x-stream-protocol-version': 'v4.channel.k8s.io',
  }),
  spdyPortForward: (ns: string, pod: string) => ({
    ':method': 'POST',
    ':path': `/api/v1/namespaces/${ns}/pods/${pod}/portforward`,
    'x-stream-protocol-version': 'portforward.k8s.io',
  }),
  websocketPortForward: (ns: string, pod: string) => ({
    ':method': 'GET',
    ':path': `/api/v1/namespaces/${ns}/pods/${pod}/portforward?ports=80`,
    'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    'sec-websocket-version': '13',
    'sec-websocket-protocol': 'SPDY/3.1+portforward.k8s.io',
  }),
} as const;

/** An answer: its status, content type and body, or the RST_STREAM code that ended the stream instead. */
type Answer = { readonly status: number; readonly contentType: string; readonly body: string } | { readonly reset: number };

/** An h2 session to the apiserver (with the admin's credentials on each request) or to a proxy (with none). */
interface Side {
  readonly session: ClientHttp2Session;
  readonly authorization: string | undefined;
}

async function open(t: TestContext, target: UpstreamConfig | string): Promise<Side> {
  const direct = typeof target !== 'string';
  const session = direct
    ? connect(target.server.origin, { ca: target.tls.ca, cert: target.tls.cert, key: target.tls.key })
    : connect(target, { ca: readFileSync(shared.cp.caFile, 'utf8') });
  t.after(() => {
    session.close();
  });
  await new Promise<void>((resolve, reject) => {
    session.once('remoteSettings', () => {
      resolve();
    });
    session.once('error', reject);
  });
  return { session, authorization: direct ? await target.authorization() : undefined };
}

function send(side: Side, headers: OutgoingHttpHeaders): Promise<Answer> {
  const stream = side.session.request({ ...headers, ...(side.authorization === undefined ? {} : { authorization: side.authorization }) });
  return new Promise((resolve) => {
    let status = 0;
    let contentType = '';
    const chunks: Buffer[] = [];
    stream.on('response', (head) => {
      status = Number(head[':status']);
      contentType = String(head['content-type']);
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A reset stream errs, then closes: its code is read at the close.
    stream.on('error', () => undefined);
    stream.on('close', () => {
      if (stream.rstCode !== constants.NGHTTP2_NO_ERROR || status === 0) resolve({ reset: stream.rstCode });
      else resolve({ status, contentType, body: Buffer.concat(chunks).toString() });
    });
    stream.end();
  });
}

/** The pods: without a node, on a Node that does not exist, and on a Node object of the test's (no kubelet behind it). */
async function pods(t: TestContext): Promise<{ ns: string; names: readonly string[] }> {
  const ns = await testNamespace(t, shared.admin);
  const node = `kcp-h2-${randomBytes(4).toString('hex')}`;
  await kube(shared.admin, 'POST', '/api/v1/nodes', { metadata: { name: node } });
  t.after(async () => {
    await kube(shared.admin, 'DELETE', `/api/v1/nodes/${node}`, undefined, [200, 404]);
  });
  // A kubelet address the apiserver would dial only for an upgrade it goes on with.
  await kube(shared.admin, 'PATCH', `/api/v1/nodes/${node}/status`, {
    status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: 1 } } },
  });
  const container = { name: 'c', image: 'registry.invalid/none:1' };
  const placed = [
    ['pending', undefined],
    ['ghost', `${node}-missing`],
    ['onnode', node],
  ] as const;
  for (const [name, nodeName] of placed) {
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, { metadata: { name }, spec: { nodeName, containers: [container] } });
    if (nodeName !== undefined)
      await kube(shared.admin, 'PATCH', `/api/v1/namespaces/${ns}/pods/${name}/status`, { status: { phase: 'Running' } });
  }
  return { ns, names: [...placed.map(([name]) => name), 'missing'] };
}

async function startProxy(t: TestContext): Promise<string> {
  const client = newUpstreamClient(await upstreamConfigFor(shared.cp));
  const tls = http2Serving(shared.cp);
  const app = newProxyServer({ client, tls });
  const url = await listenForSuite(app, tls);
  t.after(async () => {
    await app.close();
    await client.close();
  });
  return url;
}

test(
  'exec, attach and port-forward over HTTP/2: the apiserver’s answer through the proxy, down to the upgrade it requires',
  { timeout: 60_000 },
  async (t) => {
    const proxy = await open(t, await startProxy(t));
    const apiserver = await open(t, await upstreamConfigFor(shared.cp));
    const { ns, names } = await pods(t);
    const messages = new Set<string>();
    for (const pod of names) {
      for (const [kind, build] of Object.entries(REQUESTS)) {
        const headers = build(ns, pod);
        const direct = await send(apiserver, headers);
        const viaProxy = await send(proxy, headers);
        assert.deepEqual(viaProxy, direct, `${kind} on pod ${pod}`);
        if ('body' in direct) {
          const status = JSON.parse(direct.body) as { kind: string; message: string };
          assert.equal(status.kind, 'Status', `${kind} on pod ${pod}: a Status`);
          messages.add(`${String(direct.status)} ${status.message}`);
        }
      }
    }
    t.diagnostic([...messages].join('; '));
    // Each refusal the connect handler makes, the last one the upgrade-aware proxy's own
    // (k8s.io/apimachinery pkg/util/proxy/upgradeaware.go ServeHTTP).
    assert.ok(messages.has('400 Upgrade request required'), [...messages].join('; '));
    assert.ok(messages.has(`400 pod pending does not have a host assigned`), [...messages].join('; '));
    assert.ok(messages.has(`404 pods "missing" not found`), [...messages].join('; '));
  },
);

test(
  'WebSocket over HTTP/2 (extended CONNECT) is off at the proxy as at the apiserver: not announced, and a :protocol stream is reset',
  { timeout: 60_000 },
  async (t) => {
    const proxy = await open(t, await startProxy(t));
    const apiserver = await open(t, await upstreamConfigFor(shared.cp));
    const { ns } = await pods(t);
    for (const [side, { session }] of [
      ['apiserver', apiserver],
      ['proxy', proxy],
    ] as const) {
      assert.equal(session.remoteSettings.enableConnectProtocol, false, `${side}: SETTINGS_ENABLE_CONNECT_PROTOCOL`);
    }
    const connectHeaders = {
      ':method': 'CONNECT',
      ':protocol': 'websocket',
      ':scheme': 'https',
      ':path': `/api/v1/namespaces/${ns}/pods/onnode/exec?command=true&container=c&stdout=true`,
      'sec-websocket-version': '13',
      'sec-websocket-protocol': 'v5.channel.k8s.io',
    };
    const direct = await send(apiserver, connectHeaders);
    assert.deepEqual(direct, { reset: constants.NGHTTP2_PROTOCOL_ERROR }, 'the apiserver resets it');
    assert.deepEqual(await send(proxy, connectHeaders), direct, 'the proxy resets it');
    // The sessions go on: the reset was the stream's, not the connection's.
    const after = REQUESTS.spdyExec(ns, 'missing');
    assert.deepEqual(await send(proxy, after), await send(apiserver, after));
  },
);

expectEveryConnectionHttp2();
