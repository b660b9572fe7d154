/**
 * No client credential leaves a sidecar: a recording forwarder (test/helpers/recording-upstream.ts)
 * between the proxy and the real apiserver sees every request the proxy sends upstream, its
 * informers' included. Clients send a secret in every place a credential travels (Authorization
 * in several schemes, Proxy-Authorization, cookies, X-Remote-* fields, a WebSocket subprotocol
 * bearer token) on cached reads, passed-through reads, writes and upgrades (exec and port-forward,
 * WebSocket and SPDY); the forwarder must see none of it, only the proxy's own token, and a
 * WebSocket upgrade must keep the other subprotocols its client offered.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { request } from 'undici';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import { startRecordingUpstream } from '../../helpers/recording-upstream.ts';
import type { RecordedRequest } from '../../helpers/recording-upstream.ts';

const shared = useSharedAdmin();

const BEARER_PROTOCOL_PREFIX = 'base64url.bearer.authorization.k8s.io.';

/** The values of every header line `name` (any case) of a recorded request. */
function headerValues(r: RecordedRequest, name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < r.rawHeaders.length; i += 2)
    if ((r.rawHeaders[i] ?? '').toLowerCase() === name) values.push(r.rawHeaders[i + 1] ?? '');
  return values;
}

/** An Upgrade request's answer: the status, and what came with it before the connection closed. */
function upgrade(base: string, method: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, agent: false, headers });
    req.on('error', reject);
    req.on('upgrade', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      const chunks = [head];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', () => {
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('latin1') });
      });
    });
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
      });
    });
    req.end();
  });
}

test(
  'client credentials: a recording upstream sees none of them on cached reads, passed-through reads, writes and upgrades',
  { timeout: 120_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm' }, data: { k: 'v' } });
    // No kubelet: exec and port-forward are refused by the apiserver, after the request reached it.
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });

    const direct = await upstreamConfigFor(cp);
    const recorder = await startRecordingUpstream(direct);
    t.after(() => recorder.close());
    const proxyToken = `Bearer ${cp.users.admin.token}`;
    // exec as well as port-forward: kubectl proxy's default filter refuses exec before anything goes upstream.
    const options = parseProxyOptions(['--port', '0', '--resources', 'configmaps', '--reject-paths', '', '--log-level', 'silent']);
    const proxy = await startProxy(options, {
      server: new URL(recorder.url),
      tls: { rejectUnauthorized: true },
      authorization: () => Promise.resolve(proxyToken),
      source: 'the recording upstream',
    });
    t.after(() => proxy.stop(0));
    const base = proxy.url;
    assert.ok(base !== undefined);
    await eventually('the cache to sync (/readyz 200)', async () => (await request(`${base}/readyz`)).statusCode === 200);

    // The secret, and the forms a client sends it in.
    const secret = `client-secret-${randomBytes(8).toString('hex')}`;
    const basic = Buffer.from(`someone:${secret}`).toString('base64');
    const inProtocol = Buffer.from(secret).toString('base64url');
    const forms = [secret, basic, inProtocol];
    const authorizations = [`Bearer ${secret}`, `Basic ${basic}`, `Negotiate ${secret}`, `bearer ${secret}`];
    let turn = 0;
    const credentials = (): Record<string, string> => ({
      authorization: authorizations[turn++ % authorizations.length] ?? '',
      'proxy-authorization': `Basic ${basic}`,
      cookie: `session=${secret}; theme=dark`,
      // The request-header authenticator's fields: a front proxy's claim of who the client is.
      'x-remote-user': 'system:admin',
      'x-remote-group': 'system:masters',
      'x-remote-extra-scopes': 'all',
    });
    const websocket = (protocols: string): Record<string, string> => ({
      ...credentials(),
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13',
      'sec-websocket-protocol': `${BEARER_PROTOCOL_PREFIX}${inProtocol}, ${protocols}`,
    });

    const cm = `/api/v1/namespaces/${ns}/configmaps/cm`;
    const send = async (method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<number> => {
      const res = await request(`${base}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          ...credentials(),
          // A WebSocket token on a plain request too: it must not leave either.
          'sec-websocket-protocol': `${BEARER_PROTOCOL_PREFIX}${inProtocol}`,
          ...(body === undefined ? {} : { 'content-type': contentType }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      await res.body.text();
      return res.statusCode;
    };
    const metrics = async (): Promise<string> => proxy.metrics.registry.metrics();
    const before = metricSum(await metrics(), 'kube_cache_proxy_requests_total', { served_from: 'cache' });
    // Cached reads: a GET, a LIST and a WATCH the cache answers.
    assert.equal(await send('GET', `${cm}?resourceVersion=0`), 200);
    assert.equal(await send('GET', `/api/v1/namespaces/${ns}/configmaps`), 200);
    assert.equal(await send('GET', `/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1`), 200);
    assert.equal(metricSum(await metrics(), 'kube_cache_proxy_requests_total', { served_from: 'cache' }), before + 3, 'from the cache');
    // Passed-through reads: not cached, or not the cache's to answer.
    const passedReads = ['/version', `/api/v1/namespaces/${ns}/pods`, `/api/v1/namespaces/${ns}/pods/p/log`, `/api/v1/namespaces/${ns}`];
    for (const path of passedReads) await send('GET', path);
    // Writes.
    assert.equal(await send('POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'written' } }), 201);
    assert.equal(await send('PATCH', cm, { data: { k: 'w' } }, 'application/merge-patch+json'), 200);
    assert.equal(await send('DELETE', `/api/v1/namespaces/${ns}/configmaps/written`), 200);
    // Upgrades: exec over WebSocket and SPDY, port-forward over WebSocket; the apiserver refuses them (no node).
    const exec = `/api/v1/namespaces/${ns}/pods/p/exec?command=true&stdout=true`;
    const viaProxy = await upgrade(base, 'GET', exec, websocket('v5.channel.k8s.io, v4.channel.k8s.io'));
    assert.equal(viaProxy.status, 400, viaProxy.body);
    assert.match(viaProxy.body, /does not have a host assigned/);
    await upgrade(base, 'POST', exec, {
      ...credentials(),
      connection: 'Upgrade',
      upgrade: 'SPDY/3.1',
      'x-stream-protocol-version': 'v4.channel.k8s.io',
    });
    await upgrade(base, 'GET', `/api/v1/namespaces/${ns}/pods/p/portforward?ports=80`, websocket('SPDY/3.1+portforward.k8s.io'));

    const seen = recorder.requests;
    const paths = seen.map((r) => r.url.split('?', 1)[0]);
    // Everything but the cached reads went through the recorder (so the checks below are about them).
    for (const path of [...passedReads, `/api/v1/namespaces/${ns}/configmaps`, cm, `/api/v1/namespaces/${ns}/pods/p/exec`]) {
      assert.ok(paths.includes(path), `the recorder saw ${path}`);
    }
    assert.equal(seen.filter((r) => r.upgrade).length, 3, 'the three upgrades went upstream');
    const leaks: string[] = [];
    for (const r of seen) {
      for (let i = 0; i < r.rawHeaders.length; i += 2) {
        const name = r.rawHeaders[i] ?? '';
        const value = r.rawHeaders[i + 1] ?? '';
        const credential =
          ['cookie', 'proxy-authorization'].includes(name.toLowerCase()) ||
          name.toLowerCase().startsWith('x-remote-') ||
          value.includes(BEARER_PROTOCOL_PREFIX);
        if (credential || forms.some((form) => name.includes(form) || value.includes(form)))
          leaks.push(`${r.method} ${r.url}: ${name}: ${value}`);
      }
      const authorization = headerValues(r, 'authorization');
      if (authorization.join() !== proxyToken) leaks.push(`${r.method} ${r.url}: Authorization ${authorization.join(', ')}`);
    }
    assert.deepEqual(leaks, [], 'client credentials that reached the upstream');
    // The client's other subprotocols go on, in its order (SPDY offers none).
    const protocols = seen.filter((r) => r.upgrade).map((r) => headerValues(r, 'sec-websocket-protocol'));
    assert.deepEqual(protocols, [['v5.channel.k8s.io, v4.channel.k8s.io'], [], ['SPDY/3.1+portforward.k8s.io']]);
    t.diagnostic(`${String(seen.length)} requests recorded upstream, ${String(seen.filter((r) => r.upgrade).length)} of them upgrades`);
  },
);
