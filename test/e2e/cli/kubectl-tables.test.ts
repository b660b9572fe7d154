/**
 * `kubectl get` (Tables, printed by the proxy from its cache) prints through the proxy what it
 * prints against the apiserver, for each type with a ported printer that the test makes objects
 * of: plain, `-o wide`, `--show-labels`, `-L`, `--sort-by`, one object by name, and `-w` with
 * changes made while it watches. Once the caches have synced, none of these reads reaches the
 * apiserver (the proxy's kube_cache_proxy_requests_total says who answered).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { printerFor } from '../../../src/table/printers/index.ts';
import { proxyCounter } from '../../helpers/caching-proxy.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { assertSameAnswer, kubectls, withoutAges } from '../../helpers/kubectl.ts';

const shared = useSharedAdmin();

const pod = (name: string, labels: Record<string, string>): object => ({
  metadata: { name, labels },
  spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
});
const template = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] } };

/** kubectl name, API group, resource, collection path under the namespace, and objects to create there. */
const TYPES: readonly { kind: string; group: string; resource: string; path: string; objects: readonly object[] }[] = [
  {
    kind: 'pods',
    group: '',
    resource: 'pods',
    path: '/api/v1/namespaces/NS/pods',
    objects: [pod('web-1', { app: 'web', tier: 'a' }), pod('web-2', { app: 'db' })],
  },
  {
    kind: 'configmaps',
    group: '',
    resource: 'configmaps',
    path: '/api/v1/namespaces/NS/configmaps',
    objects: [{ metadata: { name: 'b-settings', labels: { app: 'web' } }, data: { a: '1' } }, { metadata: { name: 'a-empty' } }],
  },
  {
    kind: 'secrets',
    group: '',
    resource: 'secrets',
    path: '/api/v1/namespaces/NS/secrets',
    objects: [{ metadata: { name: 'token', labels: { app: 'web' } }, stringData: { k: 'v' } }],
  },
  {
    kind: 'services',
    group: '',
    resource: 'services',
    path: '/api/v1/namespaces/NS/services',
    objects: [{ metadata: { name: 'web', labels: { app: 'web' } }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } }],
  },
  {
    kind: 'serviceaccounts',
    group: '',
    resource: 'serviceaccounts',
    path: '/api/v1/namespaces/NS/serviceaccounts',
    objects: [{ metadata: { name: 'robot' } }],
  },
  {
    kind: 'limitranges',
    group: '',
    resource: 'limitranges',
    path: '/api/v1/namespaces/NS/limitranges',
    objects: [{ metadata: { name: 'lr' }, spec: { limits: [{ type: 'Container', max: { cpu: '1' } }] } }],
  },
  {
    kind: 'resourcequotas',
    group: '',
    resource: 'resourcequotas',
    path: '/api/v1/namespaces/NS/resourcequotas',
    objects: [{ metadata: { name: 'rq' }, spec: { hard: { pods: '10' } } }],
  },
  {
    kind: 'roles',
    group: 'rbac.authorization.k8s.io',
    resource: 'roles',
    path: '/apis/rbac.authorization.k8s.io/v1/namespaces/NS/roles',
    objects: [{ metadata: { name: 'reader' }, rules: [] }],
  },
  {
    kind: 'rolebindings',
    group: 'rbac.authorization.k8s.io',
    resource: 'rolebindings',
    path: '/apis/rbac.authorization.k8s.io/v1/namespaces/NS/rolebindings',
    objects: [
      {
        metadata: { name: 'read' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
        subjects: [{ kind: 'User', name: 'alice' }],
      },
    ],
  },
  {
    kind: 'events',
    group: '',
    resource: 'events',
    path: '/api/v1/namespaces/NS/events',
    objects: [
      {
        metadata: { name: 'web-1.started' },
        involvedObject: { kind: 'Pod', name: 'web-1', apiVersion: 'v1', namespace: 'NS' },
        reason: 'Started',
        message: 'Started container main',
        type: 'Normal',
        source: { component: 'kubelet', host: 'node-1' },
        firstTimestamp: '2026-01-01T00:00:00Z',
        lastTimestamp: '2026-01-01T00:05:00Z',
        count: 3,
      },
    ],
  },
  {
    kind: 'leases',
    group: 'coordination.k8s.io',
    resource: 'leases',
    path: '/apis/coordination.k8s.io/v1/namespaces/NS/leases',
    objects: [{ metadata: { name: 'lock' }, spec: { holderIdentity: 'me' } }],
  },
  {
    kind: 'deployments',
    group: 'apps',
    resource: 'deployments',
    path: '/apis/apps/v1/namespaces/NS/deployments',
    objects: [
      { metadata: { name: 'web', labels: { app: 'web' } }, spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template } },
    ],
  },
  {
    kind: 'statefulsets',
    group: 'apps',
    resource: 'statefulsets',
    path: '/apis/apps/v1/namespaces/NS/statefulsets',
    objects: [{ metadata: { name: 'db' }, spec: { serviceName: 'db', selector: { matchLabels: { app: 'web' } }, template } }],
  },
  {
    kind: 'daemonsets',
    group: 'apps',
    resource: 'daemonsets',
    path: '/apis/apps/v1/namespaces/NS/daemonsets',
    objects: [{ metadata: { name: 'agent' }, spec: { selector: { matchLabels: { app: 'web' } }, template } }],
  },
  {
    kind: 'jobs',
    group: 'batch',
    resource: 'jobs',
    path: '/apis/batch/v1/namespaces/NS/jobs',
    objects: [{ metadata: { name: 'once' }, spec: { template: { spec: { ...template.spec, restartPolicy: 'Never' } } } }],
  },
  {
    kind: 'cronjobs',
    group: 'batch',
    resource: 'cronjobs',
    path: '/apis/batch/v1/namespaces/NS/cronjobs',
    objects: [
      {
        metadata: { name: 'nightly' },
        spec: { schedule: '0 3 * * *', jobTemplate: { spec: { template: { spec: { ...template.spec, restartPolicy: 'Never' } } } } },
      },
    ],
  },
  {
    kind: 'poddisruptionbudgets',
    group: 'policy',
    resource: 'poddisruptionbudgets',
    path: '/apis/policy/v1/namespaces/NS/poddisruptionbudgets',
    objects: [{ metadata: { name: 'pdb' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } } }],
  },
  {
    kind: 'ingresses',
    group: 'networking.k8s.io',
    resource: 'ingresses',
    path: '/apis/networking.k8s.io/v1/namespaces/NS/ingresses',
    objects: [{ metadata: { name: 'front' }, spec: { defaultBackend: { service: { name: 'web', port: { number: 80 } } } } }],
  },
  {
    kind: 'networkpolicies',
    group: 'networking.k8s.io',
    resource: 'networkpolicies',
    path: '/apis/networking.k8s.io/v1/namespaces/NS/networkpolicies',
    objects: [{ metadata: { name: 'deny' }, spec: { podSelector: {} } }],
  },
];

test(
  'kubectl get: Tables printed by the proxy from its cache equal the apiserver’s, for every ported type',
  { timeout: 300_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const types = TYPES.filter((type) => printerFor(type.group, type.resource) !== undefined);
    t.diagnostic(`types with a printer: ${types.map((type) => type.kind).join(', ')}`);
    for (const type of types) {
      for (const object of type.objects) {
        // A label of this run's own, so that -A can be compared while other suites write elsewhere.
        const { metadata } = object as { metadata: { labels?: Record<string, string> } };
        const body = JSON.parse(JSON.stringify(object).replaceAll('"NS"', JSON.stringify(ns))) as object;
        await kube(shared.admin, 'POST', type.path.replace('NS', ns), {
          ...body,
          metadata: { ...metadata, labels: { ...metadata.labels, 'kcp-run': ns } },
        });
      }
    }
    // Every type named, as a sidecar names what its app reads (secrets are cached only when named).
    const resources = types.map((type) => (type.group === '' ? type.resource : `${type.resource}.${type.group}`)).join(',');
    const proxy = await startProxy(
      parseProxyOptions(['--port', '0', '--resources', resources, '--log-level', 'warn']),
      await upstreamConfigFor(shared.cp),
    );
    t.after(() => proxy.stop(0));
    const url = proxy.url ?? assert.fail('the proxy serves on TCP');
    await eventually('the caches to sync (/readyz 200)', async () => (await request(`${url}/readyz`)).statusCode === 200);
    const kubectl = kubectls(t, shared.cp, url);
    // kubectl's discovery and OpenAPI reads (resource "") go to the apiserver; the types' reads must not.
    const upstream = async (): Promise<number> => {
      let sum = 0;
      for (const type of types) {
        const resource = type.group === '' ? type.resource : `${type.resource}.${type.group}`;
        sum += await proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { served_from: 'apiserver', resource });
      }
      return sum;
    };
    const before = await upstream();
    for (const type of types) {
      const name = (type.objects[0] as { metadata: { name: string } }).metadata.name;
      for (const args of [
        ['get', type.kind, '-n', ns],
        ['get', type.kind, '-n', ns, '-o', 'wide'],
        ['get', type.kind, '-n', ns, '--show-labels'],
        ['get', type.kind, '-n', ns, '-L', 'app,tier'],
        ['get', type.kind, '-n', ns, '--sort-by=.metadata.name'],
        ['get', type.kind, name, '-n', ns],
        ['get', type.kind, '-A', '-l', `kcp-run=${ns}`],
        ['get', type.kind, '-A', '-l', `kcp-run=${ns}`, '-o', 'wide', '--show-labels'],
      ]) {
        await assertSameAnswer(t, kubectl, args, withoutAges);
      }
    }
    assert.equal(await upstream(), before, 'no read of these types reached the apiserver');
  },
);

/** Types watched with kubectl get -w: a first object, then one created, patched (its labels) and the first deleted. */
const WATCHED: readonly { kind: string; resources: string; path: string; make: (name: string) => object }[] = [
  {
    kind: 'configmaps',
    resources: 'configmaps',
    path: '/api/v1/namespaces/NS/configmaps',
    make: (name) => ({ metadata: { name }, data: { a: '1' } }),
  },
  { kind: 'pods', resources: 'pods', path: '/api/v1/namespaces/NS/pods', make: (name) => pod(name, { app: 'web' }) },
  {
    kind: 'deployments',
    resources: 'deployments.apps',
    path: '/apis/apps/v1/namespaces/NS/deployments',
    make: (name) => ({ metadata: { name }, spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template } }),
  },
  {
    kind: 'services',
    resources: 'services',
    path: '/api/v1/namespaces/NS/services',
    make: (name) => ({ metadata: { name }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } }),
  },
];

test(
  'kubectl get -w: the Table watch from the cache prints what the apiserver’s does as objects change',
  { timeout: 180_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const proxy = await startProxy(
      parseProxyOptions(['--port', '0', '--resources', WATCHED.map((w) => w.resources).join(','), '--log-level', 'warn']),
      await upstreamConfigFor(shared.cp),
    );
    t.after(() => proxy.stop(0));
    const url = proxy.url ?? assert.fail('the proxy serves on TCP');
    await eventually('the caches to sync', async () => (await request(`${url}/readyz`)).statusCode === 200);
    const dir = mkdtempSync(join(tmpdir(), 'kcp-kubectl-w-'));
    const empty = join(dir, 'empty');
    writeFileSync(empty, '');
    for (const w of WATCHED) {
      const path = w.path.replace('NS', ns);
      await kube(shared.admin, 'POST', path, w.make('first'));
      const watch = (args: readonly string[]): { output: () => string; stop: () => void } => {
        const child = spawn(
          shared.cp.binaries.kubectl,
          [...args, 'get', w.kind, '-n', ns, '-w', '--cache-dir', join(dir, String(Math.random()))],
          {
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let out = '';
        child.stdout.on('data', (c: Buffer) => (out += c.toString()));
        return { output: () => out, stop: () => child.kill() };
      };
      const viaProxy = watch(['--kubeconfig', empty, '--server', url]);
      const direct = watch(['--kubeconfig', shared.cp.kubeconfig]);
      t.after(() => {
        viaProxy.stop();
        direct.stop();
      });
      await eventually(
        `both ${w.kind} watches to print the first object`,
        () => viaProxy.output().includes('first') && direct.output().includes('first'),
      );
      await kube(shared.admin, 'POST', path, w.make('second'));
      await kube(shared.admin, 'PATCH', `${path}/second`, { metadata: { labels: { changed: 'yes' } } });
      await kube(shared.admin, 'DELETE', `${path}/first`);
      const lines = (s: string): number => s.split('\n').filter((l) => l !== '').length;
      // The header, `first`, `second` added, `second` modified, `first` deleted (a pod's deletion may print more).
      await eventually(`both ${w.kind} watches to print every change`, () => lines(viaProxy.output()) >= 5 && lines(direct.output()) >= 5);
      await eventually(`the ${w.kind} watches to agree`, () => withoutAges(viaProxy.output()) === withoutAges(direct.output())).catch(
        () => undefined,
      );
      assert.equal(withoutAges(viaProxy.output()), withoutAges(direct.output()), `kubectl get ${w.kind} -w`);
      viaProxy.stop();
      direct.stop();
      t.diagnostic(`kubectl get ${w.kind} -w:\n${viaProxy.output()}`);
    }
  },
);
