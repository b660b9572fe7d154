/**
 * deploy/: every kustomize base is accepted by the real apiserver (`kubectl apply -k
 * --dry-run=server`: admission, validation and RBAC's escalation check run, nothing is stored),
 * used as a user would (an overlay of their own that sets the namespace), and says what the
 * sidecar needs: probes, resources, a locked-down securityContext, and no more RBAC than reads.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { DEPLOY, applyKustomization, only, overlay } from './kustomize.ts';
import { mustRun } from './run.ts';
import { loadAllYaml } from '@kubernetes/client-node';
import { eventually } from '../../helpers/eventually.ts';
import type { Container, KubeObject, PolicyRule, Probe } from './kustomize.ts';
import { parseMemoryQuantity } from '../../../src/cli/proxy-options.ts';
import { sidecarMemory } from '../../helpers/sidecar-manifest.ts';
/** Where the sidecar writes the apps' kubeconfig (deploy/sidecar/sidecar.yaml). */
const APP_KUBECONFIG = '/var/run/kube-cache-proxy/kubeconfig';
const shared = useSharedAdmin();

/** The objects of `dir` as the apiserver would store them (a server-side dry run). */
function dryRun(dir: string, namespace?: string): Promise<KubeObject[]> {
  return applyKustomization(shared.cp, dir, namespace === undefined ? {} : { namespace });
}

interface Deployment extends KubeObject {
  readonly spec: {
    template: {
      metadata?: { annotations?: Record<string, string> };
      spec: {
        serviceAccountName?: string;
        containers: Container[];
        initContainers?: Container[];
        volumes?: { name: string; emptyDir?: Record<string, unknown> }[];
      };
    };
  };
}

/** The RBAC the base grants: reads only, no secrets, no wildcards, discovery cluster-wide. */
function assertLeastRbac(objects: readonly KubeObject[], namespace: string): void {
  const role = only(objects, 'Role') as KubeObject & { rules: PolicyRule[] };
  const clusterRole = only(objects, 'ClusterRole') as KubeObject & { rules: PolicyRule[] };
  for (const rule of [...role.rules, ...clusterRole.rules]) {
    assert.deepEqual(
      rule.verbs.filter((v) => !['get', 'list', 'watch'].includes(v)),
      [],
      `reads only: ${JSON.stringify(rule)}`,
    );
    for (const field of [rule.apiGroups, rule.resources, rule.nonResourceURLs, rule.verbs]) {
      assert.ok(!(field ?? []).includes('*'), `no wildcard: ${JSON.stringify(rule)}`);
    }
    assert.ok(!(rule.resources ?? []).includes('secrets'), 'no secrets unless configured');
  }
  assert.equal(role.metadata.namespace, namespace);
  // Cluster-wide: discovery's URLs and APIServices, nothing namespaced.
  for (const rule of clusterRole.rules) {
    if (rule.nonResourceURLs !== undefined) {
      assert.deepEqual(
        rule.nonResourceURLs.filter((u) => !/^\/apis?(\/\*)?$/.test(u)),
        [],
      );
    } else {
      assert.deepEqual(rule.apiGroups, ['apiregistration.k8s.io']);
      assert.deepEqual(rule.resources, ['apiservices']);
    }
  }
  const account = only(objects, 'ServiceAccount', 'kube-cache-proxy');
  assert.equal(account.metadata.namespace, namespace);
  for (const kind of ['RoleBinding', 'ClusterRoleBinding']) {
    const binding = only(objects, kind) as KubeObject & { subjects: { kind: string; name: string; namespace?: string }[] };
    assert.deepEqual(
      binding.subjects.map((s) => `${s.kind}/${s.namespace ?? namespace}/${s.name}`),
      [`ServiceAccount/${namespace}/kube-cache-proxy`],
    );
  }
}

/** The proxy container the sidecar component adds, checked for what a sidecar needs. */
function assertSidecar(deployment: Deployment): Container {
  const pod = deployment.spec.template.spec;
  const proxy = (pod.initContainers ?? []).find((c) => c.name === 'kube-cache-proxy');
  assert.ok(proxy !== undefined, 'the proxy is added as a native sidecar');
  assert.equal(proxy.restartPolicy, 'Always');
  assert.deepEqual(proxy.args, ['proxy']);
  // HTTPS with a CA of its own, and the apps' kubeconfig written into the pod's shared volume.
  const env = Object.fromEntries((proxy.env ?? []).map((e) => [e.name, e.value]));
  assert.equal(env.KCP_TLS_GENERATE, 'true');
  assert.equal(env.KCP_WRITE_KUBECONFIG, APP_KUBECONFIG);
  assert.deepEqual(proxy.volumeMounts, [{ name: 'kube-cache-proxy', mountPath: '/var/run/kube-cache-proxy' }]);
  const volume = (pod.volumes ?? []).find((v) => v.name === 'kube-cache-proxy');
  assert.ok(volume?.emptyDir !== undefined, 'an emptyDir shared with the app containers');
  // The kubelet's probes reach the metrics listener (the API listens on loopback only), which is
  // what Prometheus scrapes by the pod's annotations (test/e2e/cli/app-kubeconfig.test.ts probes it).
  const probed = (probe: Probe | undefined): unknown =>
    probe?.httpGet === undefined ? undefined : { path: probe.httpGet.path, port: probe.httpGet.port };
  assert.deepEqual(
    [probed(proxy.startupProbe), probed(proxy.livenessProbe), probed(proxy.readinessProbe)],
    [
      { path: '/livez', port: 'metrics' },
      { path: '/livez', port: 'metrics' },
      { path: '/readyz', port: 'metrics' },
    ],
  );
  assert.equal(env.KCP_METRICS_BIND_ADDRESS, ':10249');
  assert.equal(proxy.ports?.find((p) => p.name === 'metrics')?.containerPort, 10249);
  assert.deepEqual(deployment.spec.template.metadata?.annotations, {
    'prometheus.io/scrape': 'true',
    'prometheus.io/port': '10249',
    'prometheus.io/path': '/metrics',
  });
  for (const resource of ['cpu', 'memory']) {
    assert.ok(proxy.resources?.requests?.[resource] !== undefined, `requests.${resource}`);
    assert.ok(proxy.resources.limits?.[resource] !== undefined, `limits.${resource}`);
  }
  // The memory the proxy sizes itself to is the container's limit, the one the memory-limit test
  // runs it under (test/e2e/cache/memory-limit.test.ts reads it from the manifest).
  const memory = sidecarMemory();
  assert.equal(parseMemoryQuantity(proxy.resources?.limits?.memory ?? ''), memory.limitBytes);
  assert.equal(parseMemoryQuantity(proxy.resources?.requests?.memory ?? ''), memory.requestBytes);
  assert.ok(memory.requestBytes < memory.limitBytes);
  assert.deepEqual(proxy.env?.find((e) => e.name === 'KCP_MEMORY_LIMIT')?.valueFrom?.resourceFieldRef?.resource, 'limits.memory');
  const security = proxy.securityContext;
  assert.equal(security?.runAsNonRoot, true);
  assert.ok((security.runAsUser ?? 0) > 0);
  assert.equal(security.readOnlyRootFilesystem, true);
  assert.equal(security.allowPrivilegeEscalation, false);
  assert.deepEqual(security.capabilities?.drop, ['ALL']);
  assert.equal(security.capabilities.add, undefined);
  return proxy;
}

test('deploy/rbac: accepted by the apiserver, as is and in an overlay; reads only, no secrets', { timeout: 60_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  await dryRun(join(DEPLOY, 'rbac'), ns);
  assertLeastRbac(await dryRun(overlay(t, { namespace: ns, resources: [join(DEPLOY, 'rbac')] })), ns);
});

test(
  'deploy/sidecar: added to any Deployment, StatefulSet, DaemonSet and Job, each keeping its own containers and ServiceAccount; accepted by the apiserver',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    /** A workload of `kind` whose pod template has an init container, a container and a volume of its own. */
    const workload = (apiVersion: string, kind: string, name: string, serviceAccount?: string): string =>
      [
        `apiVersion: ${apiVersion}`,
        `kind: ${kind}`,
        `metadata: { name: ${name} }`,
        'spec:',
        ...(kind === 'Job' ? [] : [`  selector: { matchLabels: { app: ${name} } }`]),
        ...(kind === 'StatefulSet' ? [`  serviceName: ${name}`] : []),
        '  template:',
        `    metadata: { labels: { app: ${name} } }`,
        '    spec:',
        ...(serviceAccount === undefined ? [] : [`      serviceAccountName: ${serviceAccount}`]),
        ...(kind === 'Job' ? ['      restartPolicy: Never'] : []),
        '      initContainers: [{ name: migrate, image: busybox, command: ["true"] }]',
        `      containers: [{ name: ${name}, image: nginx }]`,
        '      volumes: [{ name: data, emptyDir: {} }]',
        '',
      ].join('\n');
    const files = {
      'web.yaml': workload('apps/v1', 'Deployment', 'web'),
      'db.yaml': workload('apps/v1', 'StatefulSet', 'db', 'db-account'),
      'agent.yaml': workload('apps/v1', 'DaemonSet', 'agent', 'agent-account'),
      'batch.yaml': workload('batch/v1', 'Job', 'batch', 'batch-account'),
    };
    const dir = overlay(t, { namespace: ns, resources: Object.keys(files), components: [join(DEPLOY, 'sidecar')], extra: files });
    const objects = await dryRun(dir);
    for (const [kind, name, account] of [
      ['Deployment', 'web', undefined],
      ['StatefulSet', 'db', 'db-account'],
      ['DaemonSet', 'agent', 'agent-account'],
      ['Job', 'batch', 'batch-account'],
    ] as const) {
      const made = only(objects, kind, name) as Deployment;
      assertSidecar(made);
      const pod = made.spec.template.spec;
      // The app's identity is kept: the proxy acts upstream as it.
      assert.equal(pod.serviceAccountName, account, `${kind} ${name} keeps its ServiceAccount`);
      assert.deepEqual(
        pod.containers.map((c) => c.name),
        [name],
      );
      assert.deepEqual((pod.initContainers ?? []).map((c) => c.name).sort(), ['kube-cache-proxy', 'migrate']);
      assert.deepEqual((pod.volumes ?? []).map((v) => v.name).sort(), ['data', 'kube-cache-proxy']);
    }
  },
);

test('deploy/example: an app that lists its pods through the sidecar; accepted by the apiserver', { timeout: 60_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  await dryRun(join(DEPLOY, 'example'), ns);
  const objects = await dryRun(overlay(t, { namespace: ns, resources: [join(DEPLOY, 'example')] }));
  assertLeastRbac(objects, ns);
  const deployment = only(objects, 'Deployment', 'pod-lister') as Deployment;
  assert.equal(deployment.metadata.namespace, ns);
  assertSidecar(deployment);
  const [app] = deployment.spec.template.spec.containers;
  assert.ok(app !== undefined);
  // client-node with KUBECONFIG pointing into the sidecar's volume: nothing turns TLS checks off.
  const script = [...(app.command ?? []), ...(app.args ?? [])].join(' ');
  assert.match(script, /kc\.loadFromDefault\(\)/);
  assert.match(script, /api\.listNamespacedPod\(\{ namespace \}\)/);
  assert.doesNotMatch(script, /skipTLSVerify|insecure|rejectUnauthorized|http:\/\//i);
  assert.deepEqual(app.env?.find((e) => e.name === 'KUBECONFIG')?.value, APP_KUBECONFIG);
  assert.deepEqual(app.volumeMounts, [{ name: 'kube-cache-proxy', mountPath: '/var/run/kube-cache-proxy', readOnly: true }]);
  assert.equal(app.securityContext?.runAsNonRoot, true);
  assert.equal(app.securityContext.readOnlyRootFilesystem, true);
  assert.deepEqual(app.securityContext.capabilities?.drop, ['ALL']);
});

test(
  'deploy/example-controller: two replicas of the pod counter, each with the sidecar; accepted by the apiserver; writes its ConfigMap and Lease only',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    await dryRun(join(DEPLOY, 'example-controller'), ns);
    const objects = await dryRun(overlay(t, { namespace: ns, resources: [join(DEPLOY, 'example-controller')] }));
    const deployment = only(objects, 'Deployment', 'pod-counter') as Deployment & { spec: { replicas?: number } };
    assert.equal(deployment.spec.replicas, 2, 'two replicas: a leader and a warm standby');
    assertSidecar(deployment);
    const [app] = deployment.spec.template.spec.containers;
    assert.ok(app !== undefined);
    // The example's own file, run by the image's Node from /app (the package, examples/ included).
    assert.deepEqual(app.command, ['node', 'examples/pod-counter/main.ts']);
    assert.ok(existsSync(join(DEPLOY, '..', 'examples/pod-counter/main.ts')));
    const env = app.env ?? [];
    assert.equal(env.find((e) => e.name === 'KUBECONFIG')?.value, APP_KUBECONFIG);
    assert.equal(env.find((e) => e.name === 'POD_NAME')?.valueFrom?.fieldRef?.fieldPath, 'metadata.name', 'each replica its own identity');
    assert.equal(env.find((e) => e.name === 'POD_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath, 'metadata.namespace');
    assert.deepEqual(app.volumeMounts, [{ name: 'kube-cache-proxy', mountPath: '/var/run/kube-cache-proxy', readOnly: true }]);
    assert.equal(app.securityContext?.runAsNonRoot, true);
    assert.equal(app.securityContext.readOnlyRootFilesystem, true);
    // The sidecar acts as the pod's ServiceAccount: the app's writes are granted to it, and only these.
    const role = only(objects, 'Role', 'pod-counter') as KubeObject & { rules: PolicyRule[] };
    assert.deepEqual(
      role.rules.map((r) => ({ groups: r.apiGroups, resources: r.resources, verbs: r.verbs })),
      [
        { groups: [''], resources: ['configmaps'], verbs: ['create', 'update'] },
        { groups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
      ],
    );
    const binding = only(objects, 'RoleBinding', 'pod-counter') as KubeObject & {
      subjects: { kind: string; name: string; namespace?: string }[];
    };
    assert.deepEqual(
      binding.subjects.map((s) => `${s.kind}/${s.namespace ?? ns}/${s.name}`),
      [`ServiceAccount/${ns}/kube-cache-proxy`],
    );
  },
);

/**
 * A stand-in for another project's CRD (the Prometheus Operator's, cert-manager's): its group and
 * kind with an open schema, so that the apiserver takes a manifest of that kind as it is; left in
 * place for other tests (it changes nothing else).
 */
async function stubCrd(ns: string, group: string, kind: string, plural: string): Promise<void> {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
  const created = await shared.admin.request({
    method: 'POST',
    path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    body: JSON.stringify(crd),
  });
  assert.ok(created.statusCode === 201 || created.statusCode === 409, created.body.toString());
  await eventually(`the ${kind} type served`, async () => {
    const res = await shared.admin.request({ method: 'GET', path: `/apis/${group}/v1/namespaces/${ns}/${plural}` });
    return res.statusCode === 200;
  });
}

/** `kubectl apply -f FILE --dry-run=server` in `ns`: the objects as the apiserver would store them. */
async function dryRunFile(ns: string, file: string): Promise<KubeObject[]> {
  const out = await mustRun(shared.cp.binaries.kubectl, [
    'apply',
    '-n',
    ns,
    '-f',
    file,
    '--dry-run=server',
    '-o',
    'json',
    '--kubeconfig',
    shared.cp.kubeconfig,
  ]);
  const parsed = JSON.parse(out) as KubeObject & { items?: KubeObject[] };
  return parsed.kind === 'List' ? (parsed.items ?? []) : [parsed];
}

test("deploy/cert-manager: applies as its header says (cert-manager's CRDs stood in) and issues the Secret deploy/shared-proxy mounts, for the names of node/ and cluster/ Services in kube-cache-proxy", async (t) => {
  const ns = await testNamespace(t, shared.admin);
  await stubCrd(ns, 'cert-manager.io', 'Issuer', 'issuers');
  await stubCrd(ns, 'cert-manager.io', 'Certificate', 'certificates');
  const objects = await dryRunFile(ns, join(DEPLOY, 'cert-manager', 'certificates.yaml'));
  assert.deepEqual(
    objects.map((o) => `${o.kind}/${o.metadata.name}`),
    [
      'Issuer/kube-cache-proxy-selfsigned',
      'Certificate/kube-cache-proxy-ca',
      'Issuer/kube-cache-proxy-ca',
      'Certificate/kube-cache-proxy-tls',
    ],
  );
  const serving = only(objects, 'Certificate', 'kube-cache-proxy-tls') as KubeObject & {
    spec: { secretName: string; dnsNames: string[]; issuerRef: { name: string } };
  };
  // The shared proxies as kustomize makes them (their namespace is the overlay's: kube-cache-proxy here).
  const proxy = (
    await Promise.all(['node', 'cluster'].map((dir) => mustRun(shared.cp.binaries.kubectl, ['kustomize', join(DEPLOY, dir)])))
  ).flatMap((yaml) => loadAllYaml(yaml) as KubeObject[]);
  const services = proxy.filter((o) => o.kind === 'Service').map((o) => `${o.metadata.name}.kube-cache-proxy.svc`);
  assert.deepEqual([...new Set(services)].sort(), ['kube-cache-proxy-node.kube-cache-proxy.svc', 'kube-cache-proxy.kube-cache-proxy.svc']);
  for (const name of services) {
    assert.ok(serving.spec.dnsNames.includes(name), name);
    assert.ok(serving.spec.dnsNames.includes(`${name}.cluster.local`), name);
  }
  const secrets = proxy
    .filter((o) => o.kind === 'DaemonSet' || o.kind === 'Deployment')
    .flatMap(
      (o) =>
        (o as unknown as { spec: { template: { spec: { volumes?: { secret?: { secretName: string } }[] } } } }).spec.template.spec
          .volumes ?? [],
    )
    .flatMap((v) => (v.secret === undefined ? [] : [v.secret.secretName]));
  assert.ok(secrets.length > 0 && secrets.every((name) => name === serving.spec.secretName), secrets.join(','));
  assert.equal(serving.spec.issuerRef.name, 'kube-cache-proxy-ca');
});

test("deploy/monitoring: the PodMonitor and the alert rules apply as their headers say (the Prometheus Operator's CRD stood in by one of its group and kind) and scrapes the proxy's metrics port by name", async (t) => {
  const ns = await testNamespace(t, shared.admin);
  await stubCrd(ns, 'monitoring.coreos.com', 'PodMonitor', 'podmonitors');
  const [monitor] = (await dryRunFile(ns, join(DEPLOY, 'monitoring', 'pod-monitor.yaml'))) as (KubeObject & {
    spec: { podMetricsEndpoints: { port: string; path: string; relabelings: { regex: string; action: string }[] }[] };
  })[];
  assert.equal(monitor?.kind, 'PodMonitor');
  const [endpoint] = monitor.spec.podMetricsEndpoints;
  // The sidecar's and the shared proxy's container: a port named so, serving that path.
  const sidecar = (await dryRun(overlay(t, { namespace: ns, resources: [join(DEPLOY, 'example')] }))).find(
    (o) => o.kind === 'Deployment',
  ) as Deployment;
  const container = (sidecar.spec.template.spec.initContainers ?? []).find((c) => c.name === 'kube-cache-proxy');
  assert.ok(container?.ports?.some((p) => p.name === endpoint?.port) === true);
  assert.equal(endpoint?.path, '/metrics');
  assert.deepEqual(
    endpoint.relabelings.map((r) => [r.regex, r.action]),
    [[container.name, 'keep']],
  );
  // The alert rules, as their header says (their queries are checked against a running proxy's
  // metrics by test/e2e/server/metrics-reference.test.ts).
  await stubCrd(ns, 'monitoring.coreos.com', 'PrometheusRule', 'prometheusrules');
  const [rules] = await dryRunFile(ns, join(DEPLOY, 'monitoring', 'alerts.yaml'));
  assert.equal(rules?.kind, 'PrometheusRule');
});

test("deploy/rbac bound to an app's own ServiceAccount with docs/deploy.md's patch, as written there; accepted by the apiserver", async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const guide = readFileSync(new URL('../../../docs/deploy.md', import.meta.url), 'utf8');
  const written = /```yaml\n(patches:.*\n[\s\S]*?)```/.exec(guide)?.[1];
  assert.ok(written !== undefined, "docs/deploy.md's patches block");
  // The guide's namespace (its overlay's, my-app) is this test's.
  const patches = written.replace('"/subjects/0/namespace", "value": "my-app"', `"/subjects/0/namespace", "value": "${ns}"`);
  assert.notEqual(patches, written);
  const dir = mkdtempSync(join(tmpdir(), 'kcp-own-account-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  writeFileSync(
    join(dir, 'app.yaml'),
    [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata: { name: my-app }',
      'spec:',
      '  selector: { matchLabels: { app: my-app } }',
      '  template:',
      '    metadata: { labels: { app: my-app } }',
      '    spec:',
      '      serviceAccountName: my-app',
      '      containers: [{ name: app, image: nginx }]',
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'kustomization.yaml'),
    [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      `namespace: ${ns}`,
      'resources:',
      '  - app.yaml',
      `  - ${relative(dir, join(DEPLOY, 'rbac'))}`,
      'components:',
      `  - ${relative(dir, join(DEPLOY, 'sidecar'))}`,
      patches,
    ].join('\n'),
  );
  const objects = await dryRun(dir);
  const app = only(objects, 'Deployment', 'my-app') as Deployment;
  assert.equal(app.spec.template.spec.serviceAccountName, 'my-app');
  assertSidecar(app);
  for (const [kind, name] of [
    ['RoleBinding', 'kube-cache-proxy'],
    ['ClusterRoleBinding', 'kube-cache-proxy-discovery'],
  ] as const) {
    const binding = only(objects, kind, name) as KubeObject & { subjects: { kind: string; name: string; namespace?: string }[] };
    assert.deepEqual(
      binding.subjects.map((s) => `${s.kind}/${s.namespace ?? ns}/${s.name}`),
      [`ServiceAccount/${ns}/my-app`],
    );
  }
});
