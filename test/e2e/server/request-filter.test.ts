/**
 * kubectl proxy's request filter in front of the real apiserver: what it rejects never reaches
 * the apiserver, what it accepts is passed through unchanged.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { request } from 'undici';
import { newProxyServer } from '../../../src/server/http/app.ts';
import { defaultRequestFilterOptions } from '../../../src/request/request-filter.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';

const shared = useSharedAdmin();

async function startFilteredProxy(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const client = newUpstreamClient(await upstreamConfigFor(shared.cp));
  const app = newProxyServer({ client, filter: defaultRequestFilterOptions() });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  t.after(async () => {
    await app.close();
    await client.close();
  });
  return address;
}

test('request filter: a foreign Host header is 403 Forbidden (DNS rebinding)', { timeout: 30_000 }, async (t) => {
  const proxy = await startFilteredProxy(t);
  const res = await request(`${proxy}/api/v1/namespaces`, { headers: { host: 'evil.example:8001' } });
  assert.equal(res.statusCode, 403);
  assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  assert.equal(await res.body.text(), 'Forbidden\n');
});

test('request filter: pods/exec is rejected before it reaches the apiserver', { timeout: 30_000 }, async (t) => {
  const proxy = await startFilteredProxy(t);
  const ns = await testNamespace(t, shared.admin);
  const res = await request(`${proxy}/api/v1/namespaces/${ns}/pods/p/exec?command=sh&stdout=true`, { method: 'POST' });
  assert.equal(res.statusCode, 403);
  assert.equal(await res.body.text(), 'Forbidden\n');
  // The same request on the apiserver is a 404 Status (no such pod): the proxy did not ask it.
  const direct = await shared.admin.request({ method: 'POST', path: `/api/v1/namespaces/${ns}/pods/p/exec?command=sh&stdout=true` });
  assert.notEqual(direct.statusCode, 403);
});

test('request filter: an accepted request passes through to the apiserver', { timeout: 30_000 }, async (t) => {
  const proxy = await startFilteredProxy(t);
  const ns = await testNamespace(t, shared.admin);
  const res = await request(`${proxy}/api/v1/namespaces/${ns}`);
  assert.equal(res.statusCode, 200);
  const body = (await res.body.json()) as { kind: string; metadata: { name: string } };
  assert.deepEqual([body.kind, body.metadata.name], ['Namespace', ns]);
  const localhost = await request(`${proxy}/version`, { headers: { host: 'localhost:8001' } });
  assert.equal(localhost.statusCode, 200);
  await localhost.body.dump();
});

/** One WebSocket upgrade request, raw: the status line and body the proxy answers with. */
function upgradeRequest(proxy: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const target = new URL(proxy);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname, () => {
      const lines = [
        `GET ${path} HTTP/1.1`,
        `Host: ${target.host}`,
        'Connection: Upgrade',
        'Upgrade: websocket',
        'Sec-WebSocket-Version: 13',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        'Sec-WebSocket-Protocol: v4.channel.k8s.io',
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
  });
}

test(
  'request filter: a cross-origin browser request or WebSocket upgrade is refused with a Status; no Origin, or an accepted one, passes',
  { timeout: 30_000 },
  async (t) => {
    const proxy = await startFilteredProxy(t);
    const ns = await testNamespace(t, shared.admin);
    for (const origin of ['https://evil.example.com', 'null', 'http://127.0.0.1.evil.example:8001', 'file://']) {
      const res = await request(`${proxy}/api/v1/namespaces/${ns}/secrets`, { headers: { origin } });
      assert.equal(res.statusCode, 403, origin);
      assert.equal(res.headers['content-type'], 'application/json');
      const status = (await res.body.json()) as { kind: string; reason: string; code: number; message: string };
      assert.deepEqual([status.kind, status.reason, status.code], ['Status', 'Forbidden', 403], origin);
      assert.match(status.message, /cross-origin request refused/);
    }
    // The secret-reading WebSocket of the issue: refused before any upgrade.
    const upgrade = await upgradeRequest(proxy, `/api/v1/namespaces/${ns}/secrets?watch=true`, { Origin: 'https://evil.example.com' });
    assert.equal(upgrade.status, 403);
    assert.match(upgrade.body, /"reason":"Forbidden"/);
    // A page served by the proxy's own host, and every client that is not a browser, pass.
    for (const headers of [{}, { origin: 'http://localhost:8001' }, { origin: 'http://127.0.0.1:8001' }]) {
      const res = await request(`${proxy}/api/v1/namespaces/${ns}`, { headers });
      assert.equal(res.statusCode, 200, JSON.stringify(headers));
      await res.body.dump();
    }
  },
);
