/**
 * deploy/node, deploy/cluster and deploy/sidecar-chained: accepted by the real apiserver in a
 * server-side dry run, in an overlay as a user writes one, and saying what a shared proxy needs
 * (shared mode over HTTPS, probes, resources, a locked-down securityContext, a Service that keeps
 * a node's pods on their node); and deploy/shared-rbac proven enough by running the DaemonSet's
 * proxy, with its container's own environment, as that ServiceAccount against the apiserver.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { parseMemoryQuantity } from '../../../src/cli/proxy-options.ts';
import { parseGoDurationMs } from '../../../src/kube/go-duration.ts';
import { SHUTDOWN_GRACE_MS } from '../../../src/proxy/proxy.ts';
import { IN_CLUSTER_PATH_PREFIX_ENV } from '../../../src/upstream/config.ts';
import { signedCertificate } from '../../helpers/certificates.ts';
import { spawnCli } from '../../helpers/cli.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { grantInNamespace, kube } from '../../helpers/kube.ts';
import { nodeProxyMemory } from '../../helpers/node-manifest.ts';
import { clientFor } from '../../helpers/shared-proxy.ts';
import { DEPLOY, applyKustomization, envOf, kubeletEnv, only, overlay } from './kustomize.ts';
import type { Container, KubeObject, PolicyRule, Workload } from './kustomize.ts';
import { mustRun } from './run.ts';

const shared = useSharedAdmin();

/** The types of a KCP_RESOURCES list, without their selector scopes. */
function cachedTypes(resources: string): string[] {
  return resources.split(',').map((r) => r.split(':')[0] ?? r);
}

/** `resource` or `resource.group`, as --resources names it, for each resource a rule grants. */
function grantedTypes(rules: readonly PolicyRule[], verbs: readonly string[]): Set<string> {
  const types = new Set<string>();
  for (const rule of rules) {
    if (!verbs.every((v) => rule.verbs.includes(v))) continue;
    for (const group of rule.apiGroups ?? []) for (const r of rule.resources ?? []) types.add(group === '' ? r : `${r}.${group}`);
  }
  return types;
}

/**
 * The shared proxy's container in `workload`, checked for what shared mode needs (its roles grant
 * reads of exactly the types it caches); returns it.
 */
function assertSharedProxy(workload: Workload, objects: readonly KubeObject[]): Container {
  const pod = workload.spec.template.spec;
  const account = only(objects, 'ServiceAccount');
  assert.equal(pod.serviceAccountName, account.metadata.name);
  const proxy = pod.containers.find((c) => c.name === 'kube-cache-proxy');
  assert.ok(proxy !== undefined, 'the proxy container');
  assert.deepEqual(proxy.args, ['proxy']);
  const env = envOf(proxy);
  assert.equal(env.KCP_SHARED, 'true');
  assert.equal(env.KCP_ADDRESS, '0.0.0.0');
  // HTTPS with the certificate of a Secret, mounted read-only where the flags say.
  const tlsMount = (proxy.volumeMounts ?? []).find((m) => m.name === 'tls');
  assert.equal(tlsMount?.readOnly, true);
  assert.equal(env.KCP_TLS_CERT_FILE, `${tlsMount.mountPath}/tls.crt`);
  assert.equal(env.KCP_TLS_PRIVATE_KEY_FILE, `${tlsMount.mountPath}/tls.key`);
  assert.equal(pod.volumes?.find((v) => v.name === 'tls')?.secret?.secretName, 'kube-cache-proxy-tls');
  const port = proxy.ports?.find((p) => p.name === 'https');
  assert.equal(String(port?.containerPort), env.KCP_PORT);
  for (const [probe, path] of [
    [proxy.startupProbe, '/livez'],
    [proxy.livenessProbe, '/livez'],
    [proxy.readinessProbe, '/readyz'],
  ] as const) {
    assert.deepEqual(probe?.httpGet, { path, port: 'https', scheme: 'HTTPS' });
  }
  for (const resource of ['cpu', 'memory']) {
    assert.ok(proxy.resources?.requests?.[resource] !== undefined, `requests.${resource}`);
    assert.ok(proxy.resources.limits?.[resource] !== undefined, `limits.${resource}`);
  }
  assert.deepEqual(proxy.env?.find((e) => e.name === 'KCP_MEMORY_LIMIT')?.valueFrom?.resourceFieldRef?.resource, 'limits.memory');
  const security = proxy.securityContext;
  assert.equal(security?.runAsNonRoot, true);
  assert.equal(security.readOnlyRootFilesystem, true);
  assert.equal(security.allowPrivilegeEscalation, false);
  assert.deepEqual(security.capabilities?.drop, ['ALL']);

  // Least RBAC: reads of exactly what KCP_RESOURCES caches (no secrets, no wildcard), discovery,
  // and create on tokenreviews and subjectaccessreviews, over its ClusterRoles (shared-rbac's and
  // its own reads), each bound to this ServiceAccount.
  const roles = objects.filter((o) => o.kind === 'ClusterRole') as (KubeObject & { rules: PolicyRule[] })[];
  const rules = roles.flatMap((r) => r.rules);
  for (const rule of rules) {
    for (const field of [rule.apiGroups, rule.resources, rule.nonResourceURLs, rule.verbs]) {
      assert.ok(!(field ?? []).includes('*'), `no wildcard: ${JSON.stringify(rule)}`);
    }
    const reviews = (rule.resources ?? []).filter((r) => r === 'tokenreviews' || r === 'subjectaccessreviews');
    if (reviews.length > 0) assert.deepEqual(rule.verbs, ['create'], JSON.stringify(rule));
    else
      assert.deepEqual(
        rule.verbs.filter((v) => !['get', 'list', 'watch'].includes(v)),
        [],
        `reads only: ${JSON.stringify(rule)}`,
      );
  }
  const read = grantedTypes(rules, ['get', 'list', 'watch']);
  read.delete('apiservices.apiregistration.k8s.io');
  assert.deepEqual([...read].sort(), cachedTypes(env.KCP_RESOURCES ?? '').sort(), 'the types read are the types cached');
  const created = grantedTypes(rules, ['create']);
  assert.deepEqual([...created].sort(), ['subjectaccessreviews.authorization.k8s.io', 'tokenreviews.authentication.k8s.io']);
  const bindings = objects.filter((o) => o.kind === 'ClusterRoleBinding') as (KubeObject & {
    roleRef: { name: string };
    subjects: { kind: string; name: string; namespace?: string }[];
  })[];
  assert.deepEqual(bindings.map((b) => b.roleRef.name).sort(), roles.map((r) => r.metadata.name).sort(), 'each role bound');
  for (const binding of bindings) {
    assert.deepEqual(
      binding.subjects.map((s) => `${s.kind}/${s.namespace ?? ''}/${s.name}`),
      [`ServiceAccount/${account.metadata.namespace ?? ''}/${account.metadata.name}`],
    );
  }
  // A rollout drops nothing: on SIGTERM it is not ready at once and serves on for the delay,
  // then drains for the 10 s grace, within the pod's termination grace period (30 s by default).
  const delayMs = parseGoDurationMs(env.KCP_SHUTDOWN_DELAY_DURATION ?? '') ?? 0;
  assert.ok(delayMs > 0, 'a shutdown delay');
  const graceSeconds = (pod as { terminationGracePeriodSeconds?: number }).terminationGracePeriodSeconds ?? 30;
  assert.ok(delayMs + SHUTDOWN_GRACE_MS < graceSeconds * 1000, `${String(delayMs)} ms + the drain within ${String(graceSeconds)} s`);
  // Its NetworkPolicy lets in its two ports only, to its own pods.
  const policy = only(objects, 'NetworkPolicy').spec as {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: { ports: { port: string }[] }[];
  };
  assert.deepEqual(policy.podSelector.matchLabels, workload.spec.selector.matchLabels);
  assert.deepEqual(policy.policyTypes, ['Ingress']);
  assert.deepEqual(
    policy.ingress.flatMap((rule) => rule.ports.map((p) => p.port)),
    ['https', 'metrics'],
  );
  assert.deepEqual((proxy.ports ?? []).map((p) => p.name).sort(), ['https', 'metrics']);
  return proxy;
}

/** The Service selects exactly `workload`'s pods and sends 443 to its https port. */
function assertServiceFor(service: KubeObject, workload: Workload): void {
  const spec = service.spec as { selector: Record<string, string>; ports: { port: number; targetPort: string }[] };
  const labels = workload.spec.template.metadata.labels;
  assert.deepEqual(spec.selector, workload.spec.selector.matchLabels);
  for (const [k, v] of Object.entries(spec.selector)) assert.equal(labels[k], v);
  assert.deepEqual(
    spec.ports.map((p) => [p.port, p.targetPort]),
    [[443, 'https']],
  );
}

test(
  'deploy/node: a DaemonSet in shared mode behind a Service with internalTrafficPolicy Local; accepted by the apiserver',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const objects = await applyKustomization(shared.cp, overlay(t, { namespace: ns, resources: [join(DEPLOY, 'node')] }));
    const daemonSet = only(objects, 'DaemonSet') as Workload;
    assert.equal(daemonSet.metadata.namespace, ns);
    const proxy = assertSharedProxy(daemonSet, objects);
    // A node is never without its proxy during a rollout (a new pod beside the old one), and the
    // node's agents depend on it as on kube-proxy.
    const strategy = (daemonSet.spec as { updateStrategy?: { rollingUpdate?: { maxSurge?: number; maxUnavailable?: number } } })
      .updateStrategy?.rollingUpdate;
    assert.deepEqual([strategy?.maxSurge, strategy?.maxUnavailable], [1, 0]);
    assert.equal((daemonSet.spec.template.spec as { priorityClassName?: string }).priorityClassName, 'system-node-critical');
    // Pods of its own node (the downward API names it), the types node agents read whole.
    assert.deepEqual(proxy.env?.find((e) => e.name === 'NODE_NAME')?.valueFrom, {
      fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' },
    });
    const env = kubeletEnv(proxy, { 'spec.nodeName': 'node-7' });
    assert.equal(env.KCP_RESOURCES, 'pods:spec.nodeName=node-7,services,endpointslices.discovery.k8s.io,nodes,namespaces');
    // A node proxy's own memory, not the cluster proxy's 2Gi: at most 512 MiB, under which V8
    // sizes its young generation at 1 MiB semi-spaces; the fleet bench runs node proxies under it.
    const { limitBytes } = nodeProxyMemory();
    assert.equal(parseMemoryQuantity(proxy.resources?.limits?.memory ?? ''), limitBytes);
    assert.ok(limitBytes <= 512 * 1024 * 1024, `limit ${String(proxy.resources?.limits?.memory)}`);
    assert.equal(parseMemoryQuantity(proxy.resources?.requests?.memory ?? ''), nodeProxyMemory().requestBytes);
    const service = only(objects, 'Service');
    assert.equal((service.spec as { internalTrafficPolicy?: string }).internalTrafficPolicy, 'Local');
    assertServiceFor(service, daemonSet);
  },
);

test(
  'deploy/cluster: a Deployment of 2 in shared mode, its Service and a PodDisruptionBudget; accepted by the apiserver',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const objects = await applyKustomization(shared.cp, overlay(t, { namespace: ns, resources: [join(DEPLOY, 'cluster')] }));
    const deployment = only(objects, 'Deployment') as Workload;
    assert.ok((deployment.spec.replicas ?? 1) >= 2, 'replicas for availability');
    assertSharedProxy(deployment, objects);
    const service = only(objects, 'Service');
    assertServiceFor(service, deployment);
    // Read-your-writes holds within a replica: a client stays on one.
    assert.equal((service.spec as { sessionAffinity?: string }).sessionAffinity, 'ClientIP');
    const pdb = only(objects, 'PodDisruptionBudget').spec as { maxUnavailable?: number; selector: { matchLabels: Record<string, string> } };
    assert.deepEqual(pdb.selector.matchLabels, deployment.spec.selector.matchLabels);
    assert.equal(pdb.maxUnavailable, 1);
  },
);

test(
  'deploy/sidecar-chained: the sidecar reaches the node proxy (--server, its CA), keeping its own identity; accepted by the apiserver',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const objects = await applyKustomization(
      shared.cp,
      overlay(t, { namespace: ns, resources: [join(DEPLOY, 'example')], components: [join(DEPLOY, 'sidecar-chained')] }),
    );
    const deployment = only(objects, 'Deployment', 'pod-lister') as Workload;
    const pod = deployment.spec.template.spec;
    const sidecar = (pod.initContainers ?? []).find((c) => c.name === 'kube-cache-proxy');
    assert.ok(sidecar !== undefined);
    const env = envOf(sidecar);
    // The node proxy's Service (deploy/node) by its cluster DNS name, over HTTPS.
    assert.match(env.KCP_SERVER ?? '', /^https:\/\/kube-cache-proxy-node\.[a-z0-9-]+\.svc$/);
    const mount = (sidecar.volumeMounts ?? []).find((m) => m.name === 'kube-cache-proxy-ca');
    assert.equal(env.KCP_CERTIFICATE_AUTHORITY, `${mount?.mountPath ?? ''}/ca.crt`);
    assert.equal(pod.volumes?.find((v) => v.name === 'kube-cache-proxy-ca')?.configMap?.name, 'kube-cache-proxy-ca');
    // Still the sidecar: its own identity, HTTPS for the app, the apps' kubeconfig.
    assert.equal(pod.serviceAccountName, 'kube-cache-proxy');
    assert.equal(env.KCP_TLS_GENERATE, 'true');
  },
);

test(
  "deploy/shared-rbac and node/reads.yaml are enough: the DaemonSet's proxy, run with its container's environment as that ServiceAccount, watches every type and serves each client as itself",
  { timeout: 180_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    const suffix = `-${randomBytes(3).toString('hex')}`;
    const rendered = await applyKustomization(cp, overlay(t, { namespace: ns, resources: [join(DEPLOY, 'node')], nameSuffix: suffix }));
    // Its RBAC applied for real (cluster-scoped: a suffix of the test's own, removed after).
    const applied = await applyKustomization(
      cp,
      overlay(t, {
        namespace: ns,
        // node/'s own reads beside shared-rbac (kustomize takes a file only from the overlay's folder).
        resources: [join(DEPLOY, 'shared-rbac'), 'reads.yaml'],
        extra: { 'reads.yaml': readFileSync(join(DEPLOY, 'node', 'reads.yaml'), 'utf8') },
        nameSuffix: suffix,
      }),
      {
        dryRun: false,
      },
    );
    t.after(async () => {
      for (const o of applied.filter((o) => o.kind.startsWith('Cluster'))) {
        await admin.request({ method: 'DELETE', path: `/apis/rbac.authorization.k8s.io/v1/${o.kind.toLowerCase()}s/${o.metadata.name}` });
      }
    });
    const account = only(applied, 'ServiceAccount').metadata.name;
    const token = (
      await mustRun(cp.binaries.kubectl, ['create', 'token', account, '-n', ns, '--duration', '1h', '--kubeconfig', cp.kubeconfig])
    ).trim();
    // The pod's files, as the kubelet mounts them: the service account's and the TLS Secret's.
    const root = mkdtempSync(join(tmpdir(), 'kcp-node-proxy-'));
    t.after(() => {
      rmSync(root, { recursive: true, force: true });
    });
    const saDir = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(saDir, { recursive: true });
    writeFileSync(join(saDir, 'ca.crt'), readFileSync(cp.caFile));
    writeFileSync(join(saDir, 'namespace'), ns);
    writeFileSync(join(saDir, 'token'), token);
    const serving = signedCertificate(t, cp, { cn: 'kube-cache-proxy-node', serving: true });

    const container = (only(rendered, 'DaemonSet') as Workload).spec.template.spec.containers.find((c) => c.name === 'kube-cache-proxy');
    assert.ok(container !== undefined);
    const apiserver = new URL(cp.server);
    // The node it runs on, as the downward API gives it: a name of the test's own.
    const node = `node${suffix}`;
    const containerEnv = kubeletEnv(container, { 'spec.nodeName': node });
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...containerEnv,
      // What differs outside a pod: the files' places and a free port.
      KCP_TLS_CERT_FILE: serving.certFile,
      KCP_TLS_PRIVATE_KEY_FILE: serving.keyFile,
      KCP_PORT: '0',
      KCP_METRICS_BIND_ADDRESS: containerEnv.KCP_METRICS_BIND_ADDRESS?.replace(/:\d+$/, ':0'),
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
    await eventually('the serving line', () => /Starting to serve on \S+/.test(cli.output()) || cli.child.exitCode !== null, 30_000);
    const port = /Starting to serve on 0\.0\.0\.0:(\d+)/.exec(cli.output())?.[1];
    assert.ok(port !== undefined, cli.output());
    const url = `https://127.0.0.1:${port}`;
    const ca = readFileSync(cp.caFile, 'utf8');
    const anonymous = clientFor(t, ca, { kind: 'anonymous' });
    // Ready: every type of KCP_RESOURCES listed and watched with no more than shared-rbac and the reads grant.
    await eventually(
      'the caches of every KCP_RESOURCES type to sync',
      async () => {
        const res = await request(`${url}/readyz`, { dispatcher: anonymous.dispatcher });
        await res.body.dump();
        return res.statusCode === 200;
      },
      90_000,
    );
    const verbose = await request(`${url}/readyz?verbose`, { dispatcher: anonymous.dispatcher });
    const checks = await verbose.body.text();
    for (const entry of (containerEnv.KCP_RESOURCES ?? '').split(',')) {
      // A scoped cache's check names its scope: `pods:spec.nodeName=n` is cache-pods-where-spec.nodeName=n.
      const name = `cache-${entry.replace(':', '-where-')}`;
      // Watching: a type its role does not let it list would be `ok: not cached` (its reads passed through).
      assert.ok(checks.includes(`[+]${name} ok: watching`), `${name} in ${checks}`);
    }
    // Prometheus scrapes the metrics port the pod's annotations name with no credentials, in plain
    // HTTP; the API port's /metrics asks for them.
    assert.equal(containerEnv.KCP_METRICS_BIND_ADDRESS, ':10249');
    await eventually('the metrics line', () => /Serving metrics and health on /.test(cli.output()), 10_000);
    const metricsPort = /Serving metrics and health on \S*:(\d+)/.exec(cli.output())?.[1];
    assert.ok(metricsPort !== undefined, cli.output());
    const scraped = await request(`http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(scraped.statusCode, 200);
    assert.match(await scraped.body.text(), /^# TYPE kube_cache_proxy_requests_total counter$/m);
    const guarded = await request(`${url}/metrics`, { dispatcher: anonymous.dispatcher });
    assert.equal(guarded.statusCode, 401);
    await guarded.body.dump();

    // A client with a namespaced Role reads its node's pods from the cache; one with nothing gets
    // the apiserver's 403 (the reviews ran with the proxy's own, least, rights).
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'c', image: 'x' }], nodeName: node },
    });
    await grantInNamespace(admin, ns, 'pod-reader', [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }], {
      kind: 'User',
      name: 'alice',
    });
    const path = `/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`;
    const alice = clientFor(t, ca, { kind: 'token', token: cp.users.alice.token });
    const asAlice = async (base: string): Promise<number> => {
      const res = await request(`${base}${path}`, { dispatcher: alice.dispatcher, headers: alice.headers });
      await res.body.dump();
      return res.statusCode;
    };
    await eventually('the grant to be in force', async () => (await asAlice(cp.server)) === 200);
    await eventually('the pod in the proxy cache', async () => (await asAlice(url)) === 200);
    const bob = clientFor(t, ca, { kind: 'token', token: cp.users.bob.token });
    const [viaProxy, direct] = await Promise.all(
      [url, cp.server].map(async (base) => {
        const res = await request(`${base}${path}`, {
          dispatcher: bob.dispatcher,
          headers: { ...bob.headers, accept: 'application/json' },
        });
        return `${String(res.statusCode)} ${await res.body.text()}`;
      }),
    );
    assert.equal(viaProxy, direct);
    assert.match(viaProxy ?? '', /^403 .*User \\"bob\\" cannot list resource \\"pods\\"/);
  },
);
