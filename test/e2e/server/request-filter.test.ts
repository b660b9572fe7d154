/**
 * kubectl proxy's request filter in front of the real apiserver: what it rejects never reaches
 * the apiserver, what it accepts is passed through unchanged.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { newProxyServer } from '../../../src/server/app.ts';
import { defaultRequestFilterOptions } from '../../../src/server/request-filter.ts';
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
