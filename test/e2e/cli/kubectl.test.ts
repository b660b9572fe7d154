/**
 * The real kubectl (the control plane's own build, v1.37.2) pointed at the proxy must behave as
 * when pointed at the apiserver: for every read the same exit code, stdout and stderr, byte for
 * byte (`-o json` included), but for what the two sides legitimately differ in (ages, and a
 * list's resourceVersion where a cache answers); and writes through the proxy reach the apiserver
 * with kubectl's usual output.
 *
 * kubectl runs with a throwaway kubeconfig (an empty file: the proxy adds its own credentials, and
 * the user's ~/.kube/config is never read) and a fresh --cache-dir per run, so discovery and
 * OpenAPI are fetched through the proxy every time, never from kubectl's disk cache.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { startProxy } from '../../../src/proxy/proxy.ts';
import type { RunningProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { assertSameAnswer, kubectls, withoutAges, withoutListResourceVersion } from '../../helpers/kubectl.ts';

const shared = useSharedAdmin();

/** The proxy as `kube-cache-proxy proxy` starts it, in-process, on a free port. */
async function startCachingProxy(): Promise<RunningProxy & { readonly url: string }> {
  const options = parseProxyOptions(['--port', '0', '--resources', 'pods,configmaps,namespaces,services', '--log-level', 'warn']);
  const proxy = await startProxy(options, await upstreamConfigFor(shared.cp));
  const url = proxy.url;
  assert.ok(url !== undefined, 'the proxy serves on TCP');
  await eventually('the caches to sync (/readyz 200)', async () => (await request(`${url}/readyz`)).statusCode === 200);
  return Object.assign(proxy, { url });
}

const podManifest = (ns: string, name: string): object => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns, labels: { app: 'kubectl-test' }, annotations: { note: '<escaped & kept>' } },
  spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10', ports: [{ containerPort: 8080 }] }] },
});

/** Waits until the proxy's cache (an RV=0 read, which only the cache answers) holds every name. */
async function waitForCache(proxyUrl: string, path: string, names: readonly string[]): Promise<void> {
  await eventually(`the proxy's cache to hold ${names.join(', ')} at ${path}`, async () => {
    const res = await request(`${proxyUrl}${path}?resourceVersion=0`);
    const body = (await res.body.json()) as { items?: { metadata: { name: string } }[] };
    const cached = new Set((body.items ?? []).map((i) => i.metadata.name));
    return names.every((n) => cached.has(n));
  });
}

test('kubectl: reads through the proxy print what they print against the apiserver', { timeout: 180_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  for (const name of ['web-1', 'web-2']) await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, podManifest(ns, name));
  for (const [name, data] of [
    ['settings', { mode: 'fast', text: '<escaped & kept>' }],
    ['empty', {}],
  ] as const) {
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name }, data });
  }
  const proxy = await startCachingProxy();
  try {
    await waitForCache(proxy.url, `/api/v1/namespaces/${ns}/pods`, ['web-1', 'web-2']);
    await waitForCache(proxy.url, `/api/v1/namespaces/${ns}/configmaps`, ['settings', 'empty']);
    const kubectl = kubectls(t, shared.cp, proxy.url);

    // -o json: byte for byte, but for the List's own resourceVersion (see withoutListResourceVersion).
    const json = await assertSameAnswer(t, kubectl, ['get', 'pods', '-A', '-o', 'json'], withoutListResourceVersion);
    assert.match(json.stdout, new RegExp(`"namespace": "${ns}"`), 'our pods are in the list');
    assert.match(json.stdout, /\\u003cescaped \\u0026 kept\\u003e|<escaped & kept>/);
    await assertSameAnswer(t, kubectl, ['get', 'pods', '-A', '-o', 'yaml'], withoutListResourceVersion);
    const names = await assertSameAnswer(t, kubectl, ['get', 'pods', '-A', '-o', 'name']);
    assert.match(names.stdout, /^pod\/web-1$/m);
    const cms = await assertSameAnswer(t, kubectl, ['get', 'cm', '-n', ns], withoutAges);
    assert.match(cms.stdout, /^NAME\s+DATA\s+AGE\nempty\s+0\s+\S+\nsettings\s+2\s+\S+\n$/);
    await assertSameAnswer(t, kubectl, ['get', 'pods', '-n', ns], withoutAges);
    // kubectl's own reads leave resourceVersion unset (passed through); these are the cache's.
    const raw = await assertSameAnswer(
      t,
      kubectl,
      ['get', '--raw', `/api/v1/namespaces/${ns}/pods?resourceVersion=0`],
      withoutListResourceVersion,
    );
    assert.match(raw.stdout, /^\{"kind":"PodList".*"name":"web-1".*"name":"web-2"/);
    await assertSameAnswer(t, kubectl, ['get', '--raw', `/api/v1/namespaces/${ns}/configmaps/settings?resourceVersion=0`]);
    await assertSameAnswer(t, kubectl, ['get', 'pod', 'web-1', '-n', ns, '-o', 'json']);
    await assertSameAnswer(t, kubectl, ['get', 'pod', 'missing', '-n', ns]);
    const described = await assertSameAnswer(t, kubectl, ['describe', 'pod', 'web-1', '-n', ns], withoutAges);
    assert.match(described.stdout, /^Name:\s+web-1$/m);
    assert.match(described.stdout, /^Status:\s+Pending$/m);

    // No scheduler and no kubelet: the pod stays Pending, on no node. v1.37.2 answers its log with
    // 204 No Content (kubectl prints nothing and exits 0). The failures are the pod's and the server's.
    const logs = await assertSameAnswer(t, kubectl, ['logs', 'web-1', '-n', ns]);
    assert.deepEqual(logs, { code: 0, stdout: '', stderr: '' });
    const noContainer = await assertSameAnswer(t, kubectl, ['logs', 'web-1', '-n', ns, '-c', 'nosuch']);
    assert.deepEqual(noContainer, { code: 1, stdout: '', stderr: 'error: container nosuch is not valid for pod web-1 out of: main\n' });
    const noPod = await assertSameAnswer(t, kubectl, ['logs', 'nosuch', '-n', ns]);
    assert.deepEqual(noPod, {
      code: 1,
      stdout: '',
      stderr: `error: error from server (NotFound): pods "nosuch" not found in namespace "${ns}"\n`,
    });

    const resources = await assertSameAnswer(t, kubectl, ['api-resources']);
    assert.match(resources.stdout, /^pods\s+po\s+v1\s+true\s+Pod$/m);
    const explained = await assertSameAnswer(t, kubectl, ['explain', 'pods']);
    assert.match(explained.stdout, /^KIND:\s+Pod$/m);
    const canList = await assertSameAnswer(t, kubectl, ['auth', 'can-i', 'list', 'pods']);
    assert.equal(canList.stdout, 'yes\n');
    const canCreate = await assertSameAnswer(t, kubectl, ['auth', 'can-i', 'create', 'secrets', '-n', ns]);
    assert.equal(canCreate.stdout, 'yes\n');
  } finally {
    await proxy.stop(0);
  }
});

test('kubectl: create, apply and delete -f through the proxy reach the apiserver', { timeout: 180_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const proxy = await startCachingProxy();
  try {
    const kubectl = kubectls(t, shared.cp, proxy.url);
    const dir = mkdtempSync(join(tmpdir(), 'kcp-manifests-'));
    t.after(() => {
      rmSync(dir, { recursive: true, force: true });
    });
    const manifest = (name: string, doc: object): string => {
      const file = join(dir, `${name}.json`);
      writeFileSync(file, JSON.stringify(doc));
      return file;
    };

    // create -f: the object exists upstream, and the proxy's cache catches up with it.
    const created = manifest('created', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'created', namespace: ns },
      data: { a: '1' },
    });
    const create = await kubectl.viaProxy(['create', '-f', created]);
    assert.deepEqual(create, { code: 0, stdout: 'configmap/created created\n', stderr: '' });
    const stored = await kube<{ data: Record<string, string> }>(shared.admin, 'GET', `/api/v1/namespaces/${ns}/configmaps/created`);
    assert.deepEqual(stored.data, { a: '1' });
    await waitForCache(proxy.url, `/api/v1/namespaces/${ns}/configmaps`, ['created']);
    // Creating it again fails the same way both ways.
    await assertSameAnswer(t, kubectl, ['create', '-f', created]);

    // A pod too, with kubectl's own output.
    const pod = manifest('pod', podManifest(ns, 'made-by-kubectl'));
    assert.deepEqual(await kubectl.viaProxy(['create', '-f', pod]), { code: 0, stdout: 'pod/made-by-kubectl created\n', stderr: '' });
    await waitForCache(proxy.url, `/api/v1/namespaces/${ns}/pods`, ['made-by-kubectl']);
    await assertSameAnswer(t, kubectl, ['get', 'pod', 'made-by-kubectl', '-n', ns, '-o', 'json']);

    // apply -f: created, then configured with a change, then unchanged.
    const applied = (data: Record<string, string>): string =>
      manifest('applied', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'applied', namespace: ns }, data });
    assert.deepEqual(await kubectl.viaProxy(['apply', '-f', applied({ v: 'one' })]), {
      code: 0,
      stdout: 'configmap/applied created\n',
      stderr: '',
    });
    assert.deepEqual(await kubectl.viaProxy(['apply', '-f', applied({ v: 'two', extra: 'x' })]), {
      code: 0,
      stdout: 'configmap/applied configured\n',
      stderr: '',
    });
    const after = await kube<{ data: Record<string, string>; metadata: { annotations: Record<string, string> } }>(
      shared.admin,
      'GET',
      `/api/v1/namespaces/${ns}/configmaps/applied`,
    );
    assert.deepEqual(after.data, { v: 'two', extra: 'x' });
    assert.ok('kubectl.kubernetes.io/last-applied-configuration' in after.metadata.annotations);
    assert.deepEqual(await kubectl.viaProxy(['apply', '-f', applied({ v: 'two', extra: 'x' })]), {
      code: 0,
      stdout: 'configmap/applied unchanged\n',
      stderr: '',
    });
    await eventually('the cache to hold the applied change', async () => {
      const res = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps/applied?resourceVersion=0`);
      return ((await res.body.json()) as { data?: Record<string, string> }).data?.v === 'two';
    });
    await assertSameAnswer(t, kubectl, ['get', 'cm', 'applied', '-n', ns, '-o', 'json']);

    // delete -f: gone upstream; a second delete fails the same way both ways.
    assert.deepEqual(await kubectl.viaProxy(['delete', '-f', created]), {
      code: 0,
      stdout: `configmap "created" deleted from ${ns} namespace\n`,
      stderr: '',
    });
    await kube(shared.admin, 'GET', `/api/v1/namespaces/${ns}/configmaps/created`, undefined, 404);
    await assertSameAnswer(t, kubectl, ['delete', '-f', created]);
    await assertSameAnswer(t, kubectl, ['get', 'cm', '-n', ns, '-o', 'json'], withoutListResourceVersion);
  } finally {
    await proxy.stop(0);
  }
});
