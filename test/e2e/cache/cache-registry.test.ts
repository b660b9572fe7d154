/**
 * The proxy without --resources against the real apiserver: every type cached on its first
 * read, custom resources created while it runs included, and a proxy identity with only a
 * namespaced Role caching that namespace.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import type { RunningProxy } from '../../../src/proxy/proxy.ts';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { proxyCounter } from '../../helpers/caching-proxy.ts';
import { eventually } from '../../helpers/eventually.ts';
import { apiserverRequests, kube, testCrd } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

async function proxyAs(t: TestContext, user: 'admin' | 'alice'): Promise<RunningProxy> {
  const proxy = await startProxy(parseProxyOptions(['--port', '0', '--log-level', 'warn'], {}), await upstreamConfigFor(shared.cp, user));
  t.after(() => proxy.stop(0));
  return proxy;
}

async function getText(url: string): Promise<{ status: number; body: string }> {
  const res = await request(url);
  return { status: res.statusCode, body: await res.body.text() };
}

/** Each cache is at its own RV: the list's resourceVersion is the one thing allowed to differ. */
function withoutListResourceVersion(body: string): string {
  return body.replace(/("metadata":\{(?:"continue":"",)?)"resourceVersion":"\d+"/, '$1"resourceVersion":""');
}

/**
 * Upstream LISTs of `resource` while `reads` LISTs go through the proxy, until a round costs none
 * (other test files may list the same resource now and then, never every round).
 */
async function untilServedFromCache(resource: string, read: () => Promise<unknown>): Promise<void> {
  await eventually(`LISTs of ${resource} to be served from the cache`, async () => {
    const before = await apiserverRequests(shared.admin, 'LIST', resource);
    for (let i = 0; i < 5; i++) await read();
    return (await apiserverRequests(shared.admin, 'LIST', resource)) === before;
  });
}

test(
  'cache registry: with no --resources, the first LIST starts the cache, waits for it and is served by it, as the next ones',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'one' } });
    const proxy = await proxyAs(t, 'admin');
    const url = `${proxy.url ?? ''}/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`;
    const served = { verb: 'list', resource: 'configmaps' };
    assert.equal((await getText(url)).status, 200);
    assert.equal(await proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { ...served, served_from: 'apiserver' }), 0);
    assert.equal(
      await proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { ...served, served_from: 'cache' }),
      1,
      'the cold cache served its first reader',
    );
    await untilServedFromCache('configmaps', () => getText(url));
    const direct = await shared.admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps?resourceVersion=0` });
    assert.equal(withoutListResourceVersion((await getText(url)).body), withoutListResourceVersion(direct.body.toString()));
  },
);

test('cache registry: a CRD created while the proxy runs is served from the cache, byte for byte', { timeout: 120_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const proxy = await proxyAs(t, 'admin');
  const crd = await testCrd(t, shared.admin);
  const collection = `/apis/${crd.group}/${crd.version}/namespaces/${ns}/${crd.plural}`;
  await kube(shared.admin, 'POST', collection, {
    apiVersion: `${crd.group}/${crd.version}`,
    kind: crd.kind,
    metadata: { name: 'w1', labels: { a: 'b' } },
    spec: { size: 3, text: '<&>' },
  });
  const url = `${proxy.url ?? ''}${collection}?resourceVersion=0`;
  const before = await apiserverRequests(shared.admin, 'LIST', crd.plural);
  assert.equal((await getText(url)).status, 200);
  assert.equal(await apiserverRequests(shared.admin, 'LIST', crd.plural), before + 1, 'the first LIST is passed through');
  // The type is new to the proxy's discovery: a read of it asks for a refresh; then it is cached.
  await eventually('the CRD to be served from the cache', async () => {
    const n = await apiserverRequests(shared.admin, 'LIST', crd.plural);
    await getText(url);
    return (await apiserverRequests(shared.admin, 'LIST', crd.plural)) === n;
  });
  const viaProxy = await getText(url);
  assert.equal(viaProxy.status, 200);
  assert.match(viaProxy.body, /"kind":"Widget[0-9a-f]+List"/);
  // The list body is the apiserver's, byte for byte, but for the list's own resourceVersion.
  const direct = await shared.admin.request({ method: 'GET', path: `${collection}?resourceVersion=0` });
  assert.equal(withoutListResourceVersion(viaProxy.body), withoutListResourceVersion(direct.body.toString()));
});

test(
  'cache registry: a proxy identity with only a namespaced Role caches that namespace; others get the 403',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const other = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
      metadata: { name: 'read-configmaps' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    });
    await kube(shared.admin, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      metadata: { name: 'alice-reads-configmaps' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
    });
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'mine' } });
    const proxy = await proxyAs(t, 'alice');
    const base = proxy.url ?? '';
    const url = `${base}/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`;
    await eventually('alice to be allowed in her namespace', async () => (await getText(url)).status === 200);
    await untilServedFromCache('configmaps', () => getText(url));
    const alice = newUpstreamClient(await upstreamConfigFor(shared.cp, 'alice'));
    t.after(() => alice.close());
    for (const path of [`/api/v1/namespaces/${other}/configmaps?resourceVersion=0`, '/api/v1/configmaps?resourceVersion=0']) {
      const [viaProxy, direct] = await Promise.all([getText(`${base}${path}`), alice.request({ method: 'GET', path })]);
      assert.equal(viaProxy.status, 403, viaProxy.body);
      assert.equal(viaProxy.body, direct.body.toString(), "the apiserver's own Status");
    }
  },
);
