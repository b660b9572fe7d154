/**
 * The workload and service-networking printers (apps, batch, autoscaling, policy,
 * networking.k8s.io, discovery.k8s.io) print what the apiserver prints, for objects made in a test
 * namespace. No controller runs in the test cluster, so every status is written by the test
 * through the /status subresource, as a controller would write it.
 */
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import { randomBytes } from 'node:crypto';
import type { Printer } from '../../../src/table/model.ts';
import { printerFor } from '../../../src/table/printers/index.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';
import { apiserverTable, assertPrintsAsApiserver } from '../../helpers/table-compare.ts';

const shared = useSharedAdmin();

function printer(group: string, resource: string): Printer {
  const p = printerFor(group, resource);
  if (p === undefined) throw new Error(`no printer for ${resource}.${group}`);
  return p;
}

/** An RFC 3339 time `agoMs` before now, at Go's second precision. */
function ago(agoMs: number): string {
  return new Date(Math.floor((Date.now() - agoMs) / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

const MINUTE = 60_000;

/** A pod template with the given labels and containers (name, image; '' leaves the image out). */
function template(labels: Record<string, string>, containers: readonly [string, string][]): unknown {
  return {
    metadata: { labels },
    spec: { containers: containers.map(([name, image]) => (image === '' ? { name } : { name, image })) },
  };
}

/** Writes `status` through the object's /status subresource (a merge patch). */
async function writeStatus(client: UpstreamClient, path: string, status: unknown): Promise<void> {
  await kube(client, 'PATCH', `${path}/status`, { status });
}

/** An object to create: its metadata (with a name) and whatever else the type holds. */
interface NewObject {
  readonly metadata: { readonly name: string; readonly [field: string]: unknown };
  readonly [field: string]: unknown;
}

/** Creates a cluster-scoped object, deleted when the test ends. */
async function createClusterScoped(t: TestContext, client: UpstreamClient, collection: string, body: NewObject): Promise<void> {
  await kube(client, 'POST', collection, body);
  t.after(async () => {
    await kube(client, 'DELETE', `${collection}/${body.metadata.name}`, undefined, [200, 202, 404]);
  });
}

test('printers: deployments (replica counts, containers, selectors with labels and expressions)', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/apps/v1/namespaces/${ns}/deployments`;
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'plain' },
    spec: { selector: { matchLabels: { app: 'plain' } }, template: template({ app: 'plain' }, [['web', 'nginx:1.27']]) },
  });
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'full' },
    spec: {
      replicas: 3,
      selector: {
        matchLabels: { 'a-b': '1', a: '1', tier: 'x' },
        matchExpressions: [
          { key: 'env', operator: 'In', values: ['prod', 'dev'] },
          { key: 'zone', operator: 'DoesNotExist' },
          { key: 'a', operator: 'Exists' },
          { key: 'env', operator: 'NotIn', values: ['test'] },
        ],
      },
      template: template({ 'a-b': '1', a: '1', tier: 'x', env: 'prod' }, [
        ['web', 'nginx:1.27'],
        ['sidecar', 'busybox'],
      ]),
    },
  });
  await writeStatus(shared.admin, `${base}/full`, { replicas: 3, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 1 });
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'zero' },
    spec: { replicas: 0, selector: { matchLabels: { app: 'zero' } }, template: template({ app: 'zero' }, [['c', 'i']]) },
  });
  assertPrintsAsApiserver(printer('apps', 'deployments'), await apiserverTable(shared.admin, base), 'deployments');
  assertPrintsAsApiserver(printer('apps', 'deployments'), await apiserverTable(shared.admin, `${base}/full`), 'deployments GET');
});

test('printers: replicasets', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/apps/v1/namespaces/${ns}/replicasets`;
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'plain' },
    spec: { selector: { matchLabels: { app: 'plain' } }, template: template({ app: 'plain' }, [['web', 'nginx']]) },
  });
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'counted' },
    spec: {
      replicas: 4,
      selector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['b', 'a'] }] },
      template: template({ app: 'a' }, [
        ['one', 'img:1'],
        ['two', 'img:2'],
      ]),
    },
  });
  await writeStatus(shared.admin, `${base}/counted`, { replicas: 3, fullyLabeledReplicas: 3, readyReplicas: 2, availableReplicas: 1 });
  assertPrintsAsApiserver(printer('apps', 'replicasets'), await apiserverTable(shared.admin, base), 'replicasets');
});

test('printers: daemonsets (node selectors sorted as k=v strings)', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/apps/v1/namespaces/${ns}/daemonsets`;
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'plain' },
    spec: { selector: { matchLabels: { app: 'plain' } }, template: template({ app: 'plain' }, [['agent', 'agent:1']]) },
  });
  const selected = template({ app: 'sel' }, [
    ['agent', 'agent:1'],
    ['log', 'fluent'],
  ]) as { spec: Record<string, unknown> };
  selected.spec.nodeSelector = { b: '2', 'a-b': 'x', a: '1', 'kubernetes.io/os': 'linux' };
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'selected' },
    spec: { selector: { matchLabels: { app: 'sel' } }, template: selected },
  });
  await writeStatus(shared.admin, `${base}/selected`, {
    desiredNumberScheduled: 5,
    currentNumberScheduled: 4,
    numberReady: 3,
    updatedNumberScheduled: 2,
    numberAvailable: 1,
    numberMisscheduled: 0,
  });
  assertPrintsAsApiserver(printer('apps', 'daemonsets'), await apiserverTable(shared.admin, base), 'daemonsets');
});

test('printers: statefulsets', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/apps/v1/namespaces/${ns}/statefulsets`;
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'plain' },
    spec: { selector: { matchLabels: { app: 'plain' } }, template: template({ app: 'plain' }, [['db', 'postgres:17']]) },
  });
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'scaled' },
    spec: {
      replicas: 3,
      serviceName: 'scaled',
      selector: { matchLabels: { app: 'scaled' } },
      template: template({ app: 'scaled' }, [
        ['db', 'postgres:17'],
        ['exporter', 'exporter:2'],
      ]),
    },
  });
  await writeStatus(shared.admin, `${base}/scaled`, {
    replicas: 3,
    readyReplicas: 2,
    currentReplicas: 3,
    updatedReplicas: 1,
    availableReplicas: 1,
  });
  assertPrintsAsApiserver(printer('apps', 'statefulsets'), await apiserverTable(shared.admin, base), 'statefulsets');
});

test('printers: controllerrevisions (controller owners of a group, of the core group, none)', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/apps/v1/namespaces/${ns}/controllerrevisions`;
  const uid = '6a1c5c39-8d1f-4c55-9b0e-2f4a0e3a1b01';
  await kube(shared.admin, 'POST', base, { metadata: { name: 'orphan' }, revision: 1, data: { v: 1 } });
  await kube(shared.admin, 'POST', base, {
    metadata: {
      name: 'owned',
      ownerReferences: [
        { apiVersion: 'v1', kind: 'ConfigMap', name: 'not-the-controller', uid },
        { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agents', uid, controller: true },
      ],
    },
    revision: 12,
    data: { v: 1 },
  });
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'core-owned', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid, controller: true }] },
    revision: 3,
    data: { v: 1 },
  });
  await kube(shared.admin, 'POST', base, {
    metadata: {
      name: 'not-controller',
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 's', uid, controller: false }],
    },
    revision: 0,
    data: { v: 1 },
  });
  assertPrintsAsApiserver(printer('apps', 'controllerrevisions'), await apiserverTable(shared.admin, base), 'controllerrevisions');
});

test('printers: jobs (each status, completions with and without a count, duration running and done)', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/batch/v1/namespaces/${ns}/jobs`;
  const jobTemplate = (containers: readonly [string, string][]): unknown => {
    const tpl = template({}, containers) as { spec: Record<string, unknown> };
    tpl.spec.restartPolicy = 'Never';
    return tpl;
  };
  const job = async (name: string, spec: Record<string, unknown>, status?: unknown): Promise<void> => {
    await kube(shared.admin, 'POST', base, { metadata: { name }, spec: { template: jobTemplate([['main', 'busybox']]), ...spec } });
    if (status !== undefined) await writeStatus(shared.admin, `${base}/${name}`, status);
  };
  const started = ago(5 * MINUTE);
  await job('pending', {});
  await job('running-parallel', { parallelism: 3 }, { startTime: ago(3 * MINUTE + 7_000), active: 3, succeeded: 1 });
  await job('running-counted', { completions: 5, parallelism: 2 }, { startTime: ago(90 * MINUTE), active: 2, succeeded: 2 });
  await job(
    'complete',
    { completions: 2 },
    {
      startTime: started,
      completionTime: ago(2 * MINUTE),
      succeeded: 2,
      conditions: [
        { type: 'SuccessCriteriaMet', status: 'True', lastProbeTime: ago(2 * MINUTE), lastTransitionTime: ago(2 * MINUTE) },
        { type: 'Complete', status: 'True', lastProbeTime: ago(2 * MINUTE), lastTransitionTime: ago(2 * MINUTE) },
      ],
    },
  );
  await job(
    'failed',
    { backoffLimit: 0 },
    {
      startTime: started,
      failed: 1,
      conditions: [
        { type: 'FailureTarget', status: 'True', lastProbeTime: ago(MINUTE), lastTransitionTime: ago(MINUTE) },
        { type: 'Failed', status: 'True', lastProbeTime: ago(MINUTE), lastTransitionTime: ago(MINUTE) },
      ],
    },
  );
  await job(
    'failure-target',
    { backoffLimit: 0 },
    {
      startTime: started,
      failed: 1,
      active: 1,
      conditions: [{ type: 'FailureTarget', status: 'True', lastProbeTime: ago(MINUTE), lastTransitionTime: ago(MINUTE) }],
    },
  );
  await job(
    'success-criteria-met',
    { completions: 1 },
    {
      startTime: started,
      succeeded: 1,
      conditions: [{ type: 'SuccessCriteriaMet', status: 'True', lastProbeTime: ago(MINUTE), lastTransitionTime: ago(MINUTE) }],
    },
  );
  await job(
    'suspended',
    { suspend: true },
    { conditions: [{ type: 'Suspended', status: 'True', lastProbeTime: ago(MINUTE), lastTransitionTime: ago(MINUTE) }] },
  );
  await job(
    'resumed',
    {},
    {
      startTime: started,
      active: 1,
      conditions: [{ type: 'Suspended', status: 'False', lastProbeTime: ago(MINUTE), lastTransitionTime: ago(MINUTE) }],
    },
  );
  // Terminating: deleted while a finalizer holds it.
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'terminating', finalizers: ['kcp.test/hold'] },
    spec: { template: jobTemplate([['main', 'busybox']]) },
  });
  t.after(async () => {
    await kube(shared.admin, 'PATCH', `${base}/terminating`, { metadata: { finalizers: null } }, [200, 404]);
  });
  await kube(shared.admin, 'DELETE', `${base}/terminating`, undefined, [200, 202]);
  assertPrintsAsApiserver(printer('batch', 'jobs'), await apiserverTable(shared.admin, base), 'jobs');
});

test('printers: cronjobs (time zone, suspend, active jobs, last schedule)', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/batch/v1/namespaces/${ns}/cronjobs`;
  const jobTemplate = (containers: readonly [string, string][]): unknown => {
    const tpl = template({}, containers) as { spec: Record<string, unknown> };
    tpl.spec.restartPolicy = 'OnFailure';
    return { spec: { template: tpl } };
  };
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'plain' },
    spec: { schedule: '*/5 * * * *', jobTemplate: jobTemplate([['main', 'busybox']]) },
  });
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'zoned' },
    spec: {
      schedule: '0 3 * * 1-5',
      timeZone: 'Europe/Paris',
      suspend: true,
      jobTemplate: jobTemplate([
        ['backup', 'backup:3'],
        ['notify', 'curl'],
      ]),
    },
  });
  const uid = '6a1c5c39-8d1f-4c55-9b0e-2f4a0e3a1b02';
  await writeStatus(shared.admin, `${base}/zoned`, {
    lastScheduleTime: ago(17 * MINUTE),
    active: [
      { kind: 'Job', apiVersion: 'batch/v1', namespace: ns, name: 'zoned-1', uid },
      { kind: 'Job', apiVersion: 'batch/v1', namespace: ns, name: 'zoned-2', uid },
    ],
  });
  assertPrintsAsApiserver(printer('batch', 'cronjobs'), await apiserverTable(shared.admin, base), 'cronjobs');
});

test('printers: horizontalpodautoscalers at v2 and at v1 (every metric type, with and without current values)', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`;
  const ref = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' };
  const cpu = (utilization: number): unknown => ({
    type: 'Resource',
    resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: utilization } },
  });
  const memory = { type: 'Resource', resource: { name: 'memory', target: { type: 'AverageValue', averageValue: '1Gi' } } };
  const metric = (name: string): unknown => ({ name });
  const objectValue = {
    type: 'Object',
    object: {
      describedObject: { apiVersion: 'v1', kind: 'Service', name: 'web' },
      metric: metric('rps'),
      target: { type: 'Value', value: '10k' },
    },
  };
  const objectAverage = {
    type: 'Object',
    object: {
      describedObject: { apiVersion: 'v1', kind: 'Service', name: 'web' },
      metric: metric('rps'),
      target: { type: 'AverageValue', averageValue: '500m' },
    },
  };
  const externalAverage = { type: 'External', external: { metric: metric('queue'), target: { type: 'AverageValue', averageValue: '30' } } };
  const externalValue = { type: 'External', external: { metric: metric('queue'), target: { type: 'Value', value: '100' } } };
  const pods = { type: 'Pods', pods: { metric: metric('packets'), target: { type: 'AverageValue', averageValue: '1k' } } };
  const containerCpu = {
    type: 'ContainerResource',
    containerResource: { name: 'cpu', container: 'app', target: { type: 'Utilization', averageUtilization: 70 } },
  };
  const containerMemory = {
    type: 'ContainerResource',
    containerResource: { name: 'memory', container: 'app', target: { type: 'AverageValue', averageValue: '256Mi' } },
  };
  /** `v1`: the object reads the same through autoscaling/v1 (see hpaFromV1 for those that do not). */
  const hpa = async (name: string, v1: boolean, spec: Record<string, unknown>, status?: Record<string, unknown>): Promise<void> => {
    await kube(shared.admin, 'POST', base, {
      metadata: { name, labels: { v1: String(v1) } },
      spec: { scaleTargetRef: ref, maxReplicas: 10, ...spec },
    });
    if (status !== undefined) await writeStatus(shared.admin, `${base}/${name}`, { currentReplicas: 3, desiredReplicas: 4, ...status });
  };
  await hpa('defaults', true, {});
  await hpa(
    'cpu',
    true,
    { minReplicas: 2, metrics: [cpu(60)] },
    { currentMetrics: [{ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: 42, averageValue: '250m' } } }] },
  );
  await hpa(
    'cpu-last',
    true,
    { metrics: [memory, cpu(50)] },
    {
      currentMetrics: [
        { type: 'Resource', resource: { name: 'memory', current: { averageValue: '700Mi' } } },
        { type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: 40 } } },
      ],
    },
  );
  await hpa(
    'object-external',
    true,
    { metrics: [objectValue, externalAverage] },
    {
      currentMetrics: [
        {
          type: 'Object',
          object: { describedObject: { apiVersion: 'v1', kind: 'Service', name: 'web' }, metric: metric('rps'), current: { value: '12k' } },
        },
        { type: 'External', external: { metric: metric('queue'), current: { averageValue: '25' } } },
      ],
    },
  );
  await hpa('object-external-unknown', true, { metrics: [objectAverage, externalValue] });
  await hpa(
    'pods-and-more',
    true,
    { metrics: [pods, containerCpu, containerMemory, externalValue] },
    {
      currentMetrics: [{ type: 'Pods', pods: { metric: metric('packets'), current: { averageValue: '800' } } }],
    },
  );
  await hpa(
    'containers',
    true,
    { metrics: [containerMemory, containerCpu] },
    {
      currentMetrics: [
        { type: 'ContainerResource', containerResource: { name: 'memory', container: 'app', current: { averageValue: '100Mi' } } },
        { type: 'ContainerResource', containerResource: { name: 'cpu', container: 'app', current: { averageUtilization: 90 } } },
      ],
    },
  );
  // Through autoscaling/v1 these print otherwise (the apiserver prints the stored v2 object):
  // a CPU utilization target first, and a current value v1 cannot hold (nil, read back as 0).
  await hpa(
    'cpu-first',
    false,
    { metrics: [cpu(50), memory] },
    {
      currentMetrics: [
        { type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: 40 } } },
        { type: 'Resource', resource: { name: 'memory', current: { averageValue: '700Mi' } } },
      ],
    },
  );
  await hpa(
    'nil-quantity',
    false,
    { metrics: [memory] },
    {
      currentMetrics: [{ type: 'Resource', resource: { name: 'memory', current: { averageUtilization: 50 } } }],
    },
  );
  const p = printer('autoscaling', 'horizontalpodautoscalers');
  assertPrintsAsApiserver(p, await apiserverTable(shared.admin, base), 'horizontalpodautoscalers v2');
  assertPrintsAsApiserver(
    p,
    await apiserverTable(shared.admin, `/apis/autoscaling/v1/namespaces/${ns}/horizontalpodautoscalers?labelSelector=v1%3Dtrue`),
    'horizontalpodautoscalers v1',
  );
});

test('printers: poddisruptionbudgets', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`;
  const selector = { matchLabels: { app: 'web' } };
  await kube(shared.admin, 'POST', base, { metadata: { name: 'min' }, spec: { minAvailable: 2, selector } });
  await writeStatus(shared.admin, `${base}/min`, {
    disruptionsAllowed: 1,
    currentHealthy: 3,
    desiredHealthy: 2,
    expectedPods: 3,
    observedGeneration: 1,
  });
  await kube(shared.admin, 'POST', base, { metadata: { name: 'max-percent' }, spec: { maxUnavailable: '25%', selector } });
  await kube(shared.admin, 'POST', base, { metadata: { name: 'min-percent' }, spec: { minAvailable: '50%', selector } });
  await kube(shared.admin, 'POST', base, { metadata: { name: 'unset' }, spec: { selector } });
  assertPrintsAsApiserver(printer('policy', 'poddisruptionbudgets'), await apiserverTable(shared.admin, base), 'poddisruptionbudgets');
});

test('printers: ingresses (classes, hosts past three, TLS ports, load-balancer addresses)', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`;
  const backend = { service: { name: 'web', port: { number: 80 } } };
  const http = { paths: [{ path: '/', pathType: 'Prefix', backend }] };
  await kube(shared.admin, 'POST', base, { metadata: { name: 'default-backend' }, spec: { defaultBackend: backend } });
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'many-hosts' },
    spec: {
      ingressClassName: 'nginx',
      rules: ['a.example.com', '', 'b.example.com', 'c.example.com', 'd.example.com', ''].map((host) =>
        host === '' ? { http } : { host, http },
      ),
      tls: [{ hosts: ['a.example.com'], secretName: 'tls' }],
    },
  });
  await writeStatus(shared.admin, `${base}/many-hosts`, {
    loadBalancer: {
      ingress: [
        { ip: '10.0.0.2' },
        { hostname: 'lb.example.com' },
        { ip: '10.0.0.1', hostname: 'ignored.example.com' },
        { ip: '10.0.0.2' },
      ],
    },
  });
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'three-hosts' },
    spec: { rules: ['x.example.com', '', 'y.example.com', 'z.example.com'].map((host) => (host === '' ? { http } : { host, http })) },
  });
  await kube(shared.admin, 'POST', base, { metadata: { name: 'no-hosts' }, spec: { rules: [{ http }, { http }] } });
  assertPrintsAsApiserver(printer('networking.k8s.io', 'ingresses'), await apiserverTable(shared.admin, base), 'ingresses');
});

test('printers: ingressclasses (default, parameters with and without a group)', async (t) => {
  const suffix = randomBytes(3).toString('hex');
  const base = '/apis/networking.k8s.io/v1/ingressclasses';
  const labels = { test: `kcp-${suffix}` };
  await createClusterScoped(t, shared.admin, base, {
    metadata: { name: `default-${suffix}`, labels, annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } },
    spec: { controller: 'example.com/ingress', parameters: { apiGroup: 'k8s.example.com', kind: 'IngressParameters', name: 'external' } },
  });
  await createClusterScoped(t, shared.admin, base, {
    metadata: { name: `core-params-${suffix}`, labels, annotations: { 'ingressclass.kubernetes.io/is-default-class': 'false' } },
    spec: {
      controller: 'example.com/ingress',
      parameters: { kind: 'ConfigMap', name: 'params', scope: 'Namespace', namespace: 'default' },
    },
  });
  await createClusterScoped(t, shared.admin, base, {
    metadata: { name: `bare-${suffix}`, labels },
    spec: { controller: 'example.com/other' },
  });
  const table = await apiserverTable(shared.admin, `${base}?labelSelector=test%3Dkcp-${suffix}`);
  assertPrintsAsApiserver(printer('networking.k8s.io', 'ingressclasses'), table, 'ingressclasses');
});

test('printers: networkpolicies', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`;
  await kube(shared.admin, 'POST', base, { metadata: { name: 'all' }, spec: { podSelector: {} } });
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'some' },
    spec: {
      podSelector: { matchLabels: { role: 'db' }, matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['test', 'dev'] }] },
      policyTypes: ['Ingress'],
    },
  });
  assertPrintsAsApiserver(printer('networking.k8s.io', 'networkpolicies'), await apiserverTable(shared.admin, base), 'networkpolicies');
});

test('printers: servicecidrs and ipaddresses (cluster-scoped)', async (t) => {
  const suffix = randomBytes(3).toString('hex');
  const octet = String(randomBytes(1)[0] ?? 0);
  const labels = { test: `kcp-${suffix}` };
  const cidrs = '/apis/networking.k8s.io/v1/servicecidrs';
  await createClusterScoped(t, shared.admin, cidrs, {
    metadata: { name: `single-${suffix}`, labels },
    spec: { cidrs: [`10.${octet}.0.0/24`] },
  });
  await createClusterScoped(t, shared.admin, cidrs, {
    metadata: { name: `dual-${suffix}`, labels },
    spec: { cidrs: [`10.${octet}.1.0/24`, `fd00:10:${octet}::/112`] },
  });
  assertPrintsAsApiserver(
    printer('networking.k8s.io', 'servicecidrs'),
    await apiserverTable(shared.admin, `${cidrs}?labelSelector=test%3Dkcp-${suffix}`),
    'servicecidrs',
  );
  const ips = '/apis/networking.k8s.io/v1/ipaddresses';
  await createClusterScoped(t, shared.admin, ips, {
    metadata: { name: `10.${octet}.0.10`, labels },
    spec: { parentRef: { group: '', resource: 'services', namespace: 'default', name: 'web' } },
  });
  await createClusterScoped(t, shared.admin, ips, {
    metadata: { name: `10.${octet}.0.11`, labels },
    spec: { parentRef: { group: 'gateway.networking.k8s.io', resource: 'gateways', namespace: 'default', name: 'gw' } },
  });
  await createClusterScoped(t, shared.admin, ips, {
    metadata: { name: `10.${octet}.0.12`, labels },
    spec: { parentRef: { group: 'example.com', resource: 'widgets', name: 'cluster-wide' } },
  });
  assertPrintsAsApiserver(
    printer('networking.k8s.io', 'ipaddresses'),
    await apiserverTable(shared.admin, `${ips}?labelSelector=test%3Dkcp-${suffix}`),
    'ipaddresses',
  );
});

test('printers: endpointslices (ports by number, name or *, addresses past three, empty lists)', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`;
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'full' },
    addressType: 'IPv4',
    ports: [{}, { name: 'http', port: 80, protocol: 'TCP' }, { name: 'dyn' }, { name: 'metrics', port: 9090 }],
    endpoints: [
      { addresses: ['10.0.0.1', '10.0.0.5'] },
      { addresses: ['10.0.0.2'] },
      { addresses: ['10.0.0.3'] },
      { addresses: ['10.0.0.4'] },
    ],
  });
  await kube(shared.admin, 'POST', base, { metadata: { name: 'empty' }, addressType: 'FQDN', ports: [], endpoints: [] });
  await kube(shared.admin, 'POST', base, {
    metadata: { name: 'small' },
    addressType: 'IPv6',
    ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
    endpoints: [{ addresses: ['fd00::1'] }, { addresses: ['fd00::2'] }],
  });
  assertPrintsAsApiserver(printer('discovery.k8s.io', 'endpointslices'), await apiserverTable(shared.admin, base), 'endpointslices');
});
