/**
 * Every read the proxy passes to the apiserver says why: against the real apiserver, one read per
 * reason of the catalogue (src/cache/pass-reason.ts) that a client can bring about, each counted in
 * kube_cache_proxy_pass_through_total under its type and reason, and answered by the apiserver.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import type { PassReason } from '../../../src/cache/pass-reason.ts';
import { PASS_REASONS } from '../../../src/cache/pass-reason.ts';
import type { CachingProxy } from '../../helpers/caching-proxy.ts';
import { proxyCounter, startCachingProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube, testCrd } from '../../helpers/kube.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';
import { CONFIGMAPS, PODTEMPLATES, crdSpec } from '../../helpers/resource-specs.ts';

const shared = useSharedAdmin();

const PASSED = 'kube_cache_proxy_pass_through_total';

interface Case {
  readonly reason: PassReason;
  /** The `resource` label it is counted under. */
  readonly resource: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
}

/** Sends each case's read through the proxy and checks that it was passed through and counted with its reason. */
async function expectPassed(t: TestContext, proxy: CachingProxy, cases: readonly Case[]): Promise<void> {
  for (const c of cases) {
    await t.test(c.reason, async () => {
      assert.ok(Object.hasOwn(PASS_REASONS, c.reason), 'a reason of the catalogue');
      const before = await proxyCounter(proxy.metrics, PASSED, { resource: c.resource, reason: c.reason });
      const forwarded = proxy.forwarded.length;
      const res = await request(`${proxy.url}${c.path}`, { headers: c.headers ?? {} });
      await res.body.dump();
      assert.ok(proxy.forwarded.length > forwarded, `${c.path}: answered by the apiserver (${String(res.statusCode)})`);
      const after = await proxyCounter(proxy.metrics, PASSED, { resource: c.resource, reason: c.reason });
      assert.equal(after - before, 1, `${c.path}: counted once as ${c.reason}`);
    });
  }
}

test('pass-through reasons: each read the cache cannot answer is counted with its reason', { timeout: 120_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const crd = await testCrd(t, shared.admin);
  const widgets = crdSpec(crd);
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm' } });
  const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS, widgets] });
  const configmaps = `/api/v1/namespaces/${ns}/configmaps`;
  const widgetList = `/apis/${crd.group}/${crd.version}/namespaces/${ns}/${crd.plural}`;
  const widgetType = `${crd.plural}.${crd.group}`;
  // The premise: the cache answers a plain LIST of both types.
  for (const path of [configmaps, widgetList]) {
    await eventually(`${path} from the cache`, async () => {
      const before = proxy.forwarded.length;
      const res = await request(`${proxy.url}${path}`);
      await res.body.dump();
      return res.statusCode === 200 && proxy.forwarded.length === before;
    });
  }
  await expectPassed(t, proxy, [
    { reason: 'not-a-resource', resource: '', path: '/version' },
    { reason: 'uncached', resource: 'secrets', path: `/api/v1/namespaces/${ns}/secrets` },
    { reason: 'subresource', resource: 'configmaps', path: `${configmaps}/cm/status` },
    { reason: 'bad-selector', resource: 'configmaps', path: `${configmaps}?labelSelector=${encodeURIComponent('a in (')}` },
    // Valid to the apiserver, more than a shared cache holds per filter (selector/selector-bounds.ts).
    {
      reason: 'selector-too-large',
      resource: 'configmaps',
      path: `${configmaps}?labelSelector=${encodeURIComponent(`app in (${Array.from({ length: 600 }, (_, i) => `web-${String(i)}`).join(',')})`)}`,
    },
    {
      reason: 'selector-too-large',
      resource: 'configmaps',
      path: `${configmaps}?watch=1&timeoutSeconds=1&labelSelector=${Array.from({ length: 65 }, (_, i) => `k${String(i)}`).join(',')}`,
    },
    { reason: 'bad-resource-version', resource: 'configmaps', path: `${configmaps}?resourceVersion=abc` },
    { reason: 'bad-continue', resource: 'configmaps', path: `${configmaps}?limit=1&continue=garbage` },
    // Nested 5,000 deep: a recursive reader's stack overflow was counted as cache-error.
    {
      reason: 'bad-continue',
      resource: 'configmaps',
      path: `${configmaps}?limit=1&continue=${Buffer.from(`${'['.repeat(5_000)}${']'.repeat(5_000)}`).toString('base64url')}`,
    },
    { reason: 'no-snapshot', resource: 'configmaps', path: `${configmaps}?resourceVersion=1&resourceVersionMatch=Exact` },
    {
      reason: 'rv-not-reached',
      resource: 'configmaps',
      path: `${configmaps}?resourceVersion=999999999&resourceVersionMatch=NotOlderThan`,
    },
    { reason: 'yaml', resource: 'configmaps', path: configmaps, headers: { accept: 'application/yaml' } },
    {
      reason: 'protobuf-only',
      resource: widgetType,
      path: widgetList,
      headers: { accept: 'application/vnd.kubernetes.protobuf' },
    },
    {
      reason: 'no-printer',
      resource: widgetType,
      path: widgetList,
      headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
    },
    { reason: 'impersonation', resource: 'configmaps', path: configmaps, headers: { 'impersonate-user': 'alice' } },
  ]);
});

test(
  "pass-through reasons: strong consistency sends GETs, and a quiet type's LISTs while its cache trails the cluster, to the apiserver, by reason",
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const template = { containers: [{ name: 'c', image: 'busybox' }] };
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, { metadata: { name: 'pt' }, template: { spec: template } });
    // PodTemplates, which other tests of the run seldom write: ConfigMaps, written by them, would not stay quiet.
    const proxy = await startCachingProxy(t, shared.cp, { specs: [PODTEMPLATES], readConsistency: 'strong' });
    // Quiet: no change of the type within the last second (IN_FLIGHT_MS).
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    // Behind: a write of another type moves the cluster's RV past the cache's, and only a proof
    // could show that no PodTemplate changed.
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'moves-the-rv' } });
    await expectPassed(t, proxy, [
      { reason: 'strong-get', resource: 'podtemplates', path: `/api/v1/namespaces/${ns}/podtemplates/pt` },
      { reason: 'strong-quiet', resource: 'podtemplates', path: `/api/v1/namespaces/${ns}/podtemplates` },
    ]);
  },
);

test('pass-through reasons: while the upstream watch is cut, RV-unset reads pass as not-watching', { timeout: 60_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const config = await upstreamConfigFor(shared.cp);
  const link = await startTcpProxy(config.server.hostname, Number(config.server.port));
  t.after(() => link.close());
  const informerUpstream = { ...config, server: new URL(`https://127.0.0.1:${String(link.port)}`) };
  const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS], informerUpstream });
  link.setBlocked(true);
  link.cut();
  await eventually('the cache to know its watch is down', async () => {
    const before = await proxyCounter(proxy.metrics, PASSED, { reason: 'not-watching' });
    const res = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`);
    await res.body.dump();
    return (await proxyCounter(proxy.metrics, PASSED, { reason: 'not-watching' })) > before;
  });
  await expectPassed(t, proxy, [{ reason: 'not-watching', resource: 'configmaps', path: `/api/v1/namespaces/${ns}/configmaps` }]);
  link.setBlocked(false);
});
