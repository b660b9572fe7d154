/**
 * deploy/node with deploy/node-pool, as docs/shared-mode.md says to use it: accepted by the real
 * apiserver in a server-side dry run, with the pool's flags from the downward API and a Role on
 * the pool's Lease only; and run for real: the overlay applied as its ServiceAccount's rights
 * (shared-rbac/ and the Lease Role), the serving certificate made by a private CA for the
 * Service's name (the docs' openssl steps), that CA in the ConfigMap kube-cache-proxy-ca, and two
 * node proxies run with their container's own environment and arguments as that ServiceAccount:
 * one leads, the other reads every type cached whole from it (its certificate verified against
 * the private CA for the Service's name at its pod IP), and its node's pods from the apiserver.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { Agent, request } from 'undici';
import { IN_CLUSTER_PATH_PREFIX_ENV } from '../../../src/upstream/config.ts';
import { spawnCli } from '../../helpers/cli.ts';
import type { RunningCli } from '../../helpers/cli.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import { freePort, leaseHolder } from '../../helpers/pool-harness.ts';
import { DEPLOY, applyKustomization, kubeletEnv, only, overlay } from './kustomize.ts';
import type { KubeObject, PolicyRule, Workload } from './kustomize.ts';
import { mustRun } from './run.ts';

const shared = useSharedAdmin();

/** The pool's Lease, as KCP_POOL names it in pool-env.yaml. */
const LEASE = 'kube-cache-proxy-pool-nodes';

test(
  'deploy/node with deploy/node-pool: the pool flags from the downward API, the private CA mounted, a Role on the pool’s Lease only; accepted by the apiserver',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const objects = await applyKustomization(
      shared.cp,
      overlay(t, { namespace: ns, resources: [join(DEPLOY, 'node')], components: [join(DEPLOY, 'node-pool')] }),
    );
    const daemonSet = only(objects, 'DaemonSet') as Workload;
    const proxy = daemonSet.spec.template.spec.containers.find((c) => c.name === 'kube-cache-proxy');
    assert.ok(proxy !== undefined);
    const env = kubeletEnv(proxy, { 'spec.nodeName': 'node-7', 'status.podIP': '10.1.2.3', 'metadata.namespace': ns });
    assert.equal(env.KCP_POOL, 'nodes');
    assert.equal(env.KCP_POOL_NAMESPACE, ns);
    assert.equal(env.KCP_POOL_ADVERTISE, 'https://10.1.2.3:8443');
    assert.equal(env.KCP_POOL_TLS_SERVER_NAME, `kube-cache-proxy-node.${ns}.svc`);
    assert.equal(env.KCP_RESOURCES, 'pods:spec.nodeName=node-7,services,endpointslices.discovery.k8s.io,nodes,namespaces');
    // The leader is verified against the private CA of the serving Secret (not the cluster's).
    const mount = (proxy.volumeMounts ?? []).find((m) => m.name === 'pool-ca');
    assert.equal(mount?.readOnly, true);
    assert.equal(env.KCP_POOL_CERTIFICATE_AUTHORITY, `${mount.mountPath}/ca.crt`);
    assert.equal(daemonSet.spec.template.spec.volumes?.find((v) => v.name === 'pool-ca')?.configMap?.name, 'kube-cache-proxy-ca');
    // get and update of the pool's Lease only; create (which RBAC cannot limit by name) on Leases.
    const role = only(objects, 'Role') as KubeObject & { rules: PolicyRule[] };
    assert.deepEqual(role.rules, [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [LEASE], verbs: ['get', 'update'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    ]);
    assert.equal(`kube-cache-proxy-pool-${env.KCP_POOL}`, LEASE);
    const binding = only(objects, 'RoleBinding') as KubeObject & { subjects: { name: string; namespace?: string }[] };
    assert.deepEqual(
      binding.subjects.map((s) => [s.name, s.namespace]),
      [['kube-cache-proxy-shared', ns]],
    );
  },
);

/** docs/shared-mode.md's openssl steps: a private CA, and the serving certificate it signs for the Services' names. */
function privateCa(t: TestContext, ns: string): { caFile: string; certFile: string; keyFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-private-ca-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const openssl = (args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '365',
    '-subj',
    '/CN=kube-cache-proxy-ca',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
  ]);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=kube-cache-proxy', '-keyout', 'tls.key', '-out', 'tls.csr']);
  writeFileSync(
    join(dir, 'ext'),
    `subjectAltName=DNS:kube-cache-proxy-node.${ns}.svc,DNS:kube-cache-proxy.${ns}.svc\nextendedKeyUsage=serverAuth\n`,
  );
  openssl([
    'x509',
    '-req',
    '-in',
    'tls.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '365',
    '-extfile',
    'ext',
    '-out',
    'tls.crt',
  ]);
  return { caFile: join(dir, 'ca.crt'), certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
}

test(
  'deploy/node-pool as documented: two node proxies with a private CA, as their ServiceAccount; one leads, the other reads the types cached whole from it',
  { timeout: 240_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    const suffix = `-${randomBytes(3).toString('hex')}`;
    // Applied for real (the DaemonSet stays inert: no node, no controller): the RBAC is in force.
    const applied = await applyKustomization(
      cp,
      overlay(t, { namespace: ns, resources: [join(DEPLOY, 'node')], components: [join(DEPLOY, 'node-pool')], nameSuffix: suffix }),
      { dryRun: false },
    );
    t.after(async () => {
      for (const o of applied.filter((o) => o.kind.startsWith('Cluster'))) {
        await admin.request({ method: 'DELETE', path: `/apis/rbac.authorization.k8s.io/v1/${o.kind.toLowerCase()}s/${o.metadata.name}` });
      }
    });
    const daemonSet = only(applied, 'DaemonSet') as Workload;
    const container = daemonSet.spec.template.spec.containers.find((c) => c.name === 'kube-cache-proxy');
    assert.ok(container !== undefined);
    const account = only(applied, 'ServiceAccount').metadata.name;
    // The operator's part (docs/shared-mode.md): the certificate from a private CA, and that CA
    // in the ConfigMap kube-cache-proxy-ca of the proxies' namespace.
    const pki = privateCa(t, ns);
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      metadata: { name: 'kube-cache-proxy-ca' },
      data: { 'ca.crt': readFileSync(pki.caFile, 'utf8') },
    });
    const token = (
      await mustRun(cp.binaries.kubectl, ['create', 'token', account, '-n', ns, '--duration', '1h', '--kubeconfig', cp.kubeconfig])
    ).trim();
    const apiserver = new URL(cp.server);
    const node = `node${suffix}`;
    const serviceName = `kube-cache-proxy-node.${ns}.svc`;

    /** One node proxy: the pod's files as the kubelet mounts them, its container's environment and arguments. */
    const startNodeProxy = async (): Promise<{ url: string; cli: RunningCli }> => {
      const root = mkdtempSync(join(tmpdir(), 'kcp-pool-member-'));
      t.after(() => {
        rmSync(root, { recursive: true, force: true });
      });
      const saDir = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
      mkdirSync(saDir, { recursive: true });
      writeFileSync(join(saDir, 'ca.crt'), readFileSync(cp.caFile));
      writeFileSync(join(saDir, 'namespace'), ns);
      writeFileSync(join(saDir, 'token'), token);
      // The ConfigMap's ca.crt, where the volume mounts it.
      const stored = await kube<{ data: Record<string, string> }>(admin, 'GET', `/api/v1/namespaces/${ns}/configmaps/kube-cache-proxy-ca`);
      const caDir = join(root, 'pool-ca');
      mkdirSync(caDir);
      writeFileSync(join(caDir, 'ca.crt'), stored.data['ca.crt'] ?? '');
      const port = await freePort();
      const containerEnv = kubeletEnv(container, { 'spec.nodeName': node, 'status.podIP': '127.0.0.1', 'metadata.namespace': ns });
      assert.equal(containerEnv.KCP_POOL_ADVERTISE, 'https://127.0.0.1:8443');
      // The pool CA's path as the container sees it, the mount's path replaced by where its files are.
      const mounted = (container.volumeMounts ?? []).find((m) => m.name === 'pool-ca');
      const poolCa = containerEnv.KCP_POOL_CERTIFICATE_AUTHORITY;
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...containerEnv,
        ...(poolCa === undefined || mounted === undefined
          ? {}
          : { KCP_POOL_CERTIFICATE_AUTHORITY: poolCa.replace(mounted.mountPath, caDir) }),
        // What differs outside a pod: the files' places and a free port (advertised with it).
        KCP_TLS_CERT_FILE: pki.certFile,
        KCP_TLS_PRIVATE_KEY_FILE: pki.keyFile,
        KCP_PORT: String(port),
        KCP_METRICS_BIND_ADDRESS: '127.0.0.1:0',
        KCP_POOL_ADVERTISE: `https://127.0.0.1:${String(port)}`,
        KUBERNETES_SERVICE_HOST: apiserver.hostname,
        KUBERNETES_SERVICE_PORT: apiserver.port,
        [IN_CLUSTER_PATH_PREFIX_ENV]: root,
      };
      delete env.KUBECONFIG;
      const cli = spawnCli(container.args ?? [], env);
      t.after(async () => {
        cli.child.kill('SIGTERM');
        await cli.exited;
      });
      return { url: `https://127.0.0.1:${String(port)}`, cli };
    };
    // Clients verify the proxies as the members verify each other: the private CA, the Service's name.
    const dispatcher = new Agent({ connect: { ca: readFileSync(pki.caFile, 'utf8'), servername: serviceName } });
    t.after(() => dispatcher.close());
    const adminHeaders = { authorization: `Bearer ${cp.users.admin.token}` };
    const metrics = async (url: string): Promise<string> => {
      const res = await request(`${url}/metrics`, { dispatcher, headers: adminHeaders });
      const text = await res.body.text();
      assert.equal(res.statusCode, 200, text.slice(0, 300));
      return text;
    };
    /** Ready: serving, and every cache synced; a proxy that exited fails the test with its output. */
    const ready = async (member: { url: string; cli: RunningCli }): Promise<boolean> => {
      assert.equal(member.cli.child.exitCode, null, member.cli.output().slice(-3000));
      try {
        const res = await request(`${member.url}/readyz`, { dispatcher });
        await res.body.dump();
        return res.statusCode === 200;
      } catch {
        return false; // not serving yet
      }
    };

    const first = await startNodeProxy();
    await eventually('the first node proxy to lead', async () => (await leaseHolder(admin, ns, 'nodes')) === first.url, 60_000);
    await eventually('the leader to be ready', () => ready(first), 90_000);
    const second = await startNodeProxy();
    await eventually('the follower to be ready', () => ready(second), 90_000);
    const whole = ['services', 'endpointslices.discovery.k8s.io', 'nodes', 'namespaces'];
    const watches = async (url: string, upstream: 'leader' | 'apiserver'): Promise<number> =>
      metricSum(await metrics(url), 'kube_cache_proxy_pool_watches', { pool: 'nodes', upstream });
    await eventually(
      'the follower to watch every type cached whole through the leader',
      async () => (await watches(second.url, 'leader')) === whole.length && (await watches(second.url, 'apiserver')) === 0,
      60_000,
    );
    assert.equal(await watches(first.url, 'apiserver'), whole.length, 'the leader watches them from the apiserver');
    assert.equal(await leaseHolder(admin, ns, 'nodes'), first.url, 'the same leader throughout');
    // Each node's own pods: from the apiserver, by its own proxy, whatever the pool.
    const followerMetrics = await metrics(second.url);
    assert.equal(
      metricSum(followerMetrics, 'kube_cache_proxy_reflector_watching', { resource: `pods where spec.nodeName=${node}` }),
      1,
      'the node scope watched',
    );
    assert.doesNotMatch(second.cli.output(), /will not contact|certificate/i, second.cli.output().slice(-2000));
  },
);
