/**
 * The core group's printers print what the apiserver prints, for objects made in a test namespace.
 * No controller runs in the test cluster: every status below is written through `/status`, and
 * a deleted object stays (a finalizer of the test's, or a pod bound to a node without a kubelet).
 */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import { printerFor } from '../../../src/table/printers/index.ts';
import type { Printer } from '../../../src/table/model.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';
import { apiserverTable, assertPrintsAsApiserver } from '../../helpers/table-compare.ts';

const shared = useSharedAdmin();

/** A finalizer no controller removes: keeps a deleted object in place, with its deletionTimestamp. */
const KEEP = 'kcp.test/keep';

function printer(resource: string): Printer {
  const p = printerFor('', resource);
  if (p === undefined) throw new Error(`no ${resource} printer`);
  return p;
}

/** An RFC 3339 time `agoMs` before now, at second precision (metav1.Time). */
function ago(agoMs: number): string {
  return new Date(Date.now() - agoMs).toISOString().replace(/\.\d+Z$/, 'Z');
}

/** Creates an object, then writes its status through /status when given one. */
async function create(
  client: UpstreamClient,
  collection: string,
  object: Record<string, unknown>,
  status?: Record<string, unknown>,
): Promise<void> {
  const created = await kube(client, 'POST', collection, object);
  if (status !== undefined) await kube(client, 'PATCH', `${collection}/${created.metadata.name}/status`, { status });
}

/** Deletes an object and, at the end of the test, lets it go by removing the test's finalizer. */
async function deleteKept(t: TestContext, client: UpstreamClient, path: string): Promise<void> {
  await kube(client, 'DELETE', path);
  t.after(async () => {
    await kube(client, 'PATCH', path, { metadata: { finalizers: null } }, [200, 404]);
  });
}

const MIN = 60_000;

test('printers: pods', async (t) => {
  const client = shared.admin;
  const ns = await testNamespace(t, client);
  const pods = `/api/v1/namespaces/${ns}/pods`;
  const container = (name: string): Record<string, unknown> => ({ name, image: `registry.example/${name}:1` });
  const pod = (name: string, spec: Record<string, unknown> = {}, meta: Record<string, unknown> = {}): Record<string, unknown> => ({
    metadata: { name, ...meta },
    spec: { containers: [container('app')], ...spec },
  });
  const running = (name: string, ready = true): Record<string, unknown> => ({
    name,
    ready,
    restartCount: 0,
    image: `registry.example/${name}:1`,
    imageID: '',
    state: { running: { startedAt: ago(10 * MIN) } },
  });
  const terminated = (name: string, t: Record<string, unknown>, restartCount = 0): Record<string, unknown> => ({
    name,
    ready: false,
    restartCount,
    image: `registry.example/${name}:1`,
    imageID: '',
    state: { terminated: { startedAt: ago(20 * MIN), finishedAt: ago(3 * MIN), ...t } },
  });
  const waiting = (name: string, reason: string, restartCount = 0, lastFinished?: string): Record<string, unknown> => ({
    name,
    ready: false,
    restartCount,
    image: `registry.example/${name}:1`,
    imageID: '',
    state: { waiting: { reason } },
    ...(lastFinished === undefined
      ? {}
      : { lastState: { terminated: { exitCode: 1, reason: 'Error', startedAt: ago(60 * MIN), finishedAt: lastFinished } } }),
  });
  const cond = (type: string, status: string, reason?: string): Record<string, unknown> => ({
    type,
    status,
    lastTransitionTime: ago(5 * MIN),
    ...(reason === undefined ? {} : { reason }),
  });
  const node = { nodeName: 'node-a' };

  // Pending, never scheduled: every wide cell <none>; then one with a nominated node (only unbound pods may have one).
  await create(client, pods, pod('pending'));
  await create(client, pods, pod('nominated'), { phase: 'Pending', nominatedNodeName: 'node-b' });
  // Scheduling gates: the apiserver itself writes PodScheduled=False/SchedulingGated.
  await create(client, pods, pod('gated', { schedulingGates: [{ name: 'kcp.test/gate' }] }));
  // Running and ready, with an IP, a nominated node and readiness gates (one true, one false, one absent).
  await create(
    client,
    pods,
    pod('running', {
      ...node,
      containers: [container('app'), container('side')],
      readinessGates: [{ conditionType: 'kcp.test/a' }, { conditionType: 'kcp.test/b' }, { conditionType: 'kcp.test/c' }],
    }),
    {
      phase: 'Running',
      podIP: '10.1.0.5',
      podIPs: [{ ip: '10.1.0.5' }, { ip: 'fd00::5' }],
      conditions: [cond('Ready', 'True'), cond('kcp.test/a', 'True'), cond('kcp.test/b', 'False')],
      containerStatuses: [running('app'), running('side', false)],
    },
  );
  // CrashLoopBackOff with restarts: RESTARTS `N (Xm ago)` from lastState.terminated.finishedAt.
  await create(client, pods, pod('crashloop', node), {
    phase: 'Running',
    containerStatuses: [waiting('app', 'CrashLoopBackOff', 7, ago(4 * MIN))],
  });
  // Restarts without a last termination time: the bare count.
  await create(client, pods, pod('restarts-no-time', node), {
    phase: 'Running',
    containerStatuses: [{ ...running('app'), restartCount: 2 }],
  });
  // Succeeded and Failed: row conditions Completed.
  await create(client, pods, pod('succeeded', { ...node, restartPolicy: 'Never' }), {
    phase: 'Succeeded',
    containerStatuses: [terminated('app', { exitCode: 0, reason: 'Completed' })],
  });
  await create(client, pods, pod('failed', { ...node, restartPolicy: 'Never' }), {
    phase: 'Failed',
    containerStatuses: [terminated('app', { exitCode: 1, reason: 'Error' })],
  });
  // Terminated without a reason: Signal:N, else ExitCode:N.
  await create(client, pods, pod('signal', { ...node, restartPolicy: 'Never' }), {
    phase: 'Failed',
    containerStatuses: [terminated('app', { exitCode: 137, signal: 9 })],
  });
  await create(client, pods, pod('exitcode', { ...node, restartPolicy: 'Never' }), {
    phase: 'Failed',
    containerStatuses: [terminated('app', { exitCode: 3 })],
  });
  // Status reason overrides the phase (Evicted).
  await create(client, pods, pod('evicted', { ...node, restartPolicy: 'Never' }), {
    phase: 'Failed',
    reason: 'Evicted',
    message: 'The node was low on resource: memory.',
  });
  // "Completed" turned back: Running (a ready running container and Ready=True), NotReady
  // (no Ready condition), or the error of another container.
  const two = { ...node, containers: [container('app'), container('side')] };
  await create(client, pods, pod('completed-running', two), {
    phase: 'Running',
    conditions: [cond('Ready', 'True')],
    containerStatuses: [terminated('app', { exitCode: 0, reason: 'Completed' }), running('side')],
  });
  await create(client, pods, pod('completed-notready', two), {
    phase: 'Running',
    containerStatuses: [terminated('app', { exitCode: 0, reason: 'Completed' }), running('side')],
  });
  await create(client, pods, pod('completed-error', two), {
    phase: 'Running',
    containerStatuses: [terminated('app', { exitCode: 0, reason: 'Completed' }), terminated('side', { exitCode: 2, reason: 'Error' })],
  });
  // The first container's reason wins (statuses are walked from the last).
  await create(client, pods, pod('two-reasons', two), {
    phase: 'Pending',
    containerStatuses: [waiting('app', 'ImagePullBackOff'), waiting('side', 'ContainerCreating')],
  });

  // Init containers: Init:i/n, Init:<waiting reason>, Init:<terminated reason>, Init:ExitCode, Init:Signal.
  const inits = { ...node, initContainers: [container('init-a'), container('init-b')] };
  const initPending = [waiting('app', 'PodInitializing')];
  await create(client, pods, pod('init-0', inits), {
    phase: 'Pending',
    initContainerStatuses: [waiting('init-a', 'PodInitializing'), waiting('init-b', 'PodInitializing')],
    containerStatuses: initPending,
  });
  await create(client, pods, pod('init-1', inits), {
    phase: 'Pending',
    initContainerStatuses: [terminated('init-a', { exitCode: 0, reason: 'Completed' }, 1), running('init-b', false)],
    containerStatuses: initPending,
  });
  await create(client, pods, pod('init-crashloop', inits), {
    phase: 'Pending',
    initContainerStatuses: [waiting('init-a', 'CrashLoopBackOff', 4, ago(2 * MIN)), waiting('init-b', 'PodInitializing', 9, ago(1000))],
    containerStatuses: initPending,
  });
  await create(client, pods, pod('init-error', { ...inits, restartPolicy: 'Never' }), {
    phase: 'Failed',
    initContainerStatuses: [terminated('init-a', { exitCode: 1, reason: 'Error' })],
    containerStatuses: initPending,
  });
  await create(client, pods, pod('init-exitcode', { ...inits, restartPolicy: 'Never' }), {
    phase: 'Failed',
    initContainerStatuses: [terminated('init-a', { exitCode: 5 })],
    containerStatuses: initPending,
  });
  await create(client, pods, pod('init-signal', { ...inits, restartPolicy: 'Never' }), {
    phase: 'Failed',
    initContainerStatuses: [terminated('init-a', { exitCode: 143, signal: 15 })],
    containerStatuses: initPending,
  });
  // Initializing but Initialized=True: the containers' state is shown.
  await create(client, pods, pod('init-initialized', inits), {
    phase: 'Running',
    conditions: [cond('Initialized', 'True'), cond('Ready', 'True')],
    initContainerStatuses: [waiting('init-a', 'PodInitializing')],
    containerStatuses: [running('app')],
  });

  // Sidecars (restartable init containers): counted in READY, their restarts kept once initialized.
  const sidecars = {
    ...node,
    initContainers: [{ ...container('sidecar'), restartPolicy: 'Always' }, container('init-b')],
  };
  await create(client, pods, pod('sidecar-running', sidecars), {
    phase: 'Running',
    conditions: [cond('Initialized', 'True'), cond('Ready', 'True')],
    initContainerStatuses: [
      {
        ...running('sidecar'),
        started: true,
        restartCount: 3,
        lastState: { terminated: { exitCode: 1, startedAt: ago(90 * MIN), finishedAt: ago(70 * MIN) } },
      },
      terminated('init-b', { exitCode: 0, reason: 'Completed' }, 5),
    ],
    containerStatuses: [{ ...running('app'), restartCount: 1, lastState: { terminated: { exitCode: 1, finishedAt: ago(80 * MIN) } } }],
  });
  await create(client, pods, pod('sidecar-starting', sidecars), {
    phase: 'Pending',
    initContainerStatuses: [{ ...running('sidecar', false), started: false }, waiting('init-b', 'PodInitializing')],
    containerStatuses: initPending,
  });
  await create(client, pods, pod('sidecar-started', sidecars), {
    phase: 'Pending',
    initContainerStatuses: [{ ...running('sidecar'), started: true }, running('init-b', false)],
    containerStatuses: initPending,
  });

  // Deleted: Terminating (a node without a kubelet keeps it), Unknown for NodeLost, and a
  // terminal phase that stays as it is (kept by a finalizer).
  await create(client, pods, pod('terminating', node), { phase: 'Running', containerStatuses: [running('app')] });
  await kube(client, 'DELETE', `${pods}/terminating`);
  t.after(async () => {
    await kube(client, 'DELETE', `${pods}/terminating?gracePeriodSeconds=0`, undefined, [200, 404]);
  });
  await create(client, pods, pod('nodelost', node), { phase: 'Running', reason: 'NodeLost', containerStatuses: [running('app')] });
  await kube(client, 'DELETE', `${pods}/nodelost`);
  t.after(async () => {
    await kube(client, 'DELETE', `${pods}/nodelost?gracePeriodSeconds=0`, undefined, [200, 404]);
  });
  await create(client, pods, pod('succeeded-deleted', { ...node, restartPolicy: 'Never' }, { finalizers: [KEEP] }), {
    phase: 'Succeeded',
    containerStatuses: [terminated('app', { exitCode: 0, reason: 'Completed' })],
  });
  await deleteKept(t, client, `${pods}/succeeded-deleted`);

  const table = await apiserverTable(client, pods);
  assertPrintsAsApiserver(printer('pods'), table, 'pods');
  // GET of one object prints the same row.
  assertPrintsAsApiserver(printer('pods'), await apiserverTable(client, `${pods}/running`), 'pods (GET)');
});

test('printers: services and endpoints', async (t) => {
  const client = shared.admin;
  const ns = await testNamespace(t, client);
  const services = `/api/v1/namespaces/${ns}/services`;
  await create(client, services, {
    metadata: { name: 'cluster-ip' },
    spec: {
      selector: { app: 'web', tier: 'front' },
      ports: [
        { name: 'http', port: 80, targetPort: 8080 },
        { name: 'dns', port: 53, protocol: 'UDP' },
      ],
    },
  });
  await create(client, services, { metadata: { name: 'headless' }, spec: { clusterIP: 'None', selector: { app: 'db' } } });
  await create(client, services, {
    metadata: { name: 'external-ips' },
    spec: { ports: [{ port: 443 }], externalIPs: ['192.0.2.10', '192.0.2.11'] },
  });
  await create(client, services, { metadata: { name: 'node-port' }, spec: { type: 'NodePort', ports: [{ port: 80 }] } });
  await create(client, services, { metadata: { name: 'lb-pending' }, spec: { type: 'LoadBalancer', ports: [{ port: 80 }] } });
  await create(
    client,
    services,
    { metadata: { name: 'lb' }, spec: { type: 'LoadBalancer', ports: [{ port: 80 }] } },
    {
      loadBalancer: { ingress: [{ ip: '198.51.100.9' }, { hostname: 'lb.example.com' }, { ip: '198.51.100.2' }, { ip: '198.51.100.9' }] },
    },
  );
  await create(
    client,
    services,
    { metadata: { name: 'lb-external' }, spec: { type: 'LoadBalancer', ports: [{ port: 80 }], externalIPs: ['192.0.2.20'] } },
    { loadBalancer: { ingress: [{ ip: '198.51.100.3' }] } },
  );
  await create(client, services, {
    metadata: { name: 'lb-external-pending' },
    spec: { type: 'LoadBalancer', ports: [{ port: 80 }], externalIPs: ['192.0.2.21'] },
  });
  await create(client, services, { metadata: { name: 'external-name' }, spec: { type: 'ExternalName', externalName: 'db.example.com' } });
  assertPrintsAsApiserver(printer('services'), await apiserverTable(client, services), 'services');

  const endpoints = `/api/v1/namespaces/${ns}/endpoints`;
  await kube(client, 'POST', endpoints, { metadata: { name: 'empty' } });
  await kube(client, 'POST', endpoints, {
    metadata: { name: 'some' },
    subsets: [{ addresses: [{ ip: '10.2.0.1' }, { ip: 'fd00::1' }], ports: [{ port: 8080 }] }],
  });
  await kube(client, 'POST', endpoints, {
    metadata: { name: 'many' },
    subsets: [
      {
        addresses: [{ ip: '10.2.0.1' }, { ip: '10.2.0.2' }],
        notReadyAddresses: [{ ip: '10.2.0.9' }],
        ports: [
          { name: 'a', port: 80 },
          { name: 'b', port: 81 },
        ],
      },
      { addresses: [{ ip: '10.2.0.3' }] },
    ],
  });
  await kube(client, 'POST', endpoints, {
    metadata: { name: 'no-ports' },
    subsets: [{ addresses: [{ ip: '10.2.0.1' }, { ip: '10.2.0.2' }, { ip: '10.2.0.3' }, { ip: '10.2.0.4' }] }],
  });
  await kube(client, 'POST', endpoints, {
    metadata: { name: 'not-ready-only' },
    subsets: [{ notReadyAddresses: [{ ip: '10.2.0.1' }], ports: [{ port: 80 }] }],
  });
  assertPrintsAsApiserver(printer('endpoints'), await apiserverTable(client, endpoints), 'endpoints');
});

test('printers: nodes', async (t) => {
  const client = shared.admin;
  const run = randomBytes(3).toString('hex');
  const nodes = '/api/v1/nodes';
  const labels = { 'kcp.test/run': run };
  const names: string[] = [];
  t.after(async () => {
    for (const n of names) await kube(client, 'DELETE', `${nodes}/${n}`, undefined, [200, 404]);
  });
  const node = async (suffix: string, object: Record<string, unknown>, status?: Record<string, unknown>): Promise<void> => {
    const name = `kcp-${run}-${suffix}`;
    names.push(name);
    const meta = (object.metadata ?? {}) as Record<string, unknown>;
    await create(client, nodes, { ...object, metadata: { ...meta, name, labels: { ...labels, ...(meta.labels ?? {}) } } }, status);
  };
  const readyCond = (status: string): Record<string, unknown> => ({
    type: 'Ready',
    status,
    lastHeartbeatTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    reason: 'KubeletReady',
  });
  await node('bare', {});
  await node(
    'ready',
    {
      metadata: {
        labels: { 'node-role.kubernetes.io/control-plane': '', 'node-role.kubernetes.io/worker': 'x', 'kubernetes.io/role': 'infra' },
      },
    },
    {
      conditions: [{ ...readyCond('True'), type: 'MemoryPressure', status: 'False' }, readyCond('True')],
      addresses: [
        { type: 'Hostname', address: 'ready' },
        { type: 'ExternalIP', address: '203.0.113.7' },
        { type: 'InternalIP', address: '10.0.0.7' },
        { type: 'InternalIP', address: '10.0.0.8' },
      ],
      nodeInfo: {
        machineID: '',
        systemUUID: '',
        bootID: '',
        kernelVersion: '6.1.0-18-amd64',
        osImage: 'Debian GNU/Linux 12 (bookworm)',
        containerRuntimeVersion: 'containerd://1.7.13',
        kubeletVersion: 'v1.37.2',
        kubeProxyVersion: '',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
    },
  );
  await node(
    'not-ready-cordoned',
    { metadata: { labels: { 'kubernetes.io/role': '' } }, spec: { unschedulable: true } },
    {
      conditions: [readyCond('False')],
    },
  );
  await node(
    'unknown-cordoned',
    { spec: { unschedulable: true } },
    { conditions: [readyCond('Unknown')], nodeInfo: { kubeletVersion: 'v1.36.0', architecture: 'arm64' } },
  );
  assertPrintsAsApiserver(printer('nodes'), await apiserverTable(client, `${nodes}?labelSelector=kcp.test%2Frun%3D${run}`), 'nodes');
});

test('printers: events', async (t) => {
  const client = shared.admin;
  const ns = await testNamespace(t, client);
  const events = `/api/v1/namespaces/${ns}/events`;
  const micro = (agoMs: number): string => new Date(Date.now() - agoMs).toISOString().replace(/Z$/, '123Z');
  const involved = { kind: 'Pod', namespace: ns, name: 'web-1', fieldPath: 'spec.containers{app}' };
  // Old style: first/last timestamps, count, source with host; the message trimmed as Go trims.
  await kube(client, 'POST', events, {
    metadata: { name: 'legacy' },
    involvedObject: involved,
    reason: 'BackOff',
    message: '  \u0085Back-off restarting failed container\n\t',
    type: 'Warning',
    source: { component: 'kubelet', host: 'node-a' },
    firstTimestamp: ago(50 * MIN),
    lastTimestamp: ago(2 * MIN),
    count: 12,
  });
  // No lastTimestamp: LAST SEEN is FIRST SEEN; count 0 prints 1; source without host.
  await kube(client, 'POST', events, {
    metadata: { name: 'first-only' },
    involvedObject: { kind: 'Namespace', namespace: ns, name: ns },
    reason: 'Created',
    message: 'made \ufeff',
    type: 'Normal',
    source: { component: 'tester' },
    firstTimestamp: ago(3 * MIN),
  });
  // No time at all, no involved name, no source.
  await kube(client, 'POST', events, {
    metadata: { name: 'timeless' },
    involvedObject: { kind: 'ClusterRole', namespace: ns },
    reason: 'Odd',
    message: 'nothing',
    type: 'Normal',
  });
  // New style (events.k8s.io/v1): eventTime, reportingController/Instance, then a series.
  const newEvents = `/apis/events.k8s.io/v1/namespaces/${ns}/events`;
  const newStyle = {
    regarding: involved,
    reason: 'Scheduled',
    note: 'Successfully assigned',
    type: 'Normal',
    action: 'Binding',
    reportingController: 'default-scheduler',
    reportingInstance: 'default-scheduler-node-a',
  };
  await kube(client, 'POST', newEvents, { metadata: { name: 'new-single' }, eventTime: micro(7 * MIN), ...newStyle });
  await kube(client, 'POST', newEvents, {
    metadata: { name: 'new-series' },
    eventTime: micro(40 * MIN),
    series: { count: 4, lastObservedTime: micro(90_000) },
    ...newStyle,
  });
  // The old API with eventTime: the component from reportingComponent, the host from source.
  await kube(client, 'POST', events, {
    metadata: { name: 'reporting-only' },
    involvedObject: involved,
    reason: 'Pulled',
    message: 'pulled',
    type: 'Normal',
    eventTime: micro(5 * MIN),
    source: { host: 'node-c' },
    reportingComponent: 'kubelet',
    reportingInstance: 'kubelet-node-c',
    action: 'Pull',
  });
  assertPrintsAsApiserver(printer('events'), await apiserverTable(client, events), 'events');
});

test('printers: namespaces', async (t) => {
  const client = shared.admin;
  const run = randomBytes(3).toString('hex');
  const labels = { 'kcp.test/run': run };
  const active = `kcp-${run}-active`;
  const terminating = `kcp-${run}-terminating`;
  await kube(client, 'POST', '/api/v1/namespaces', { metadata: { name: active, labels } });
  await kube(client, 'POST', '/api/v1/namespaces', { metadata: { name: terminating, labels } });
  // Without the namespace controller, a deleted namespace stays Terminating.
  await kube(client, 'DELETE', `/api/v1/namespaces/${terminating}`);
  t.after(async () => {
    await kube(client, 'DELETE', `/api/v1/namespaces/${active}`, undefined, [200, 202, 404]);
  });
  assertPrintsAsApiserver(
    printer('namespaces'),
    await apiserverTable(client, `/api/v1/namespaces?labelSelector=kcp.test%2Frun%3D${run}`),
    'namespaces',
  );
});

test('printers: secrets, service accounts, configmaps', async (t) => {
  const client = shared.admin;
  const ns = await testNamespace(t, client);
  await kube(client, 'POST', `/api/v1/namespaces/${ns}/secrets`, { metadata: { name: 'empty' } });
  await kube(client, 'POST', `/api/v1/namespaces/${ns}/secrets`, {
    metadata: { name: 'some' },
    data: { a: 'MQ==' },
    stringData: { b: '2', c: '3' },
  });
  await kube(client, 'POST', `/api/v1/namespaces/${ns}/secrets`, {
    metadata: { name: 'tls' },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': '', 'tls.key': '' },
  });
  assertPrintsAsApiserver(printer('secrets'), await apiserverTable(client, `/api/v1/namespaces/${ns}/secrets`), 'secrets');

  await kube(client, 'POST', `/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'robot' } });
  assertPrintsAsApiserver(
    printer('serviceaccounts'),
    await apiserverTable(client, `/api/v1/namespaces/${ns}/serviceaccounts`),
    'serviceaccounts',
  );

  await kube(client, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'empty' } });
  await kube(client, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
    metadata: { name: 'some' },
    data: { a: '1', b: '2' },
    binaryData: { c: 'AAE=' },
  });
  assertPrintsAsApiserver(printer('configmaps'), await apiserverTable(client, `/api/v1/namespaces/${ns}/configmaps`), 'configmaps');
});

test('printers: pod templates and replication controllers', async (t) => {
  const client = shared.admin;
  const ns = await testNamespace(t, client);
  const template = {
    metadata: { labels: { app: 'web', tier: 'front' } },
    spec: {
      containers: [
        { name: 'app', image: 'registry.example/app:1' },
        { name: 'proxy', image: 'registry.example/proxy:2' },
      ],
    },
  };
  await kube(client, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, { metadata: { name: 'web' }, template });
  await kube(client, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, {
    metadata: { name: 'bare' },
    template: { spec: { containers: [{ name: 'one', image: 'one' }] } },
  });
  assertPrintsAsApiserver(printer('podtemplates'), await apiserverTable(client, `/api/v1/namespaces/${ns}/podtemplates`), 'podtemplates');

  const rcs = `/api/v1/namespaces/${ns}/replicationcontrollers`;
  // Replicas defaulted to 1, selector defaulted to the template's labels.
  await create(client, rcs, { metadata: { name: 'defaulted' }, spec: { template } });
  await create(
    client,
    rcs,
    { metadata: { name: 'scaled' }, spec: { replicas: 5, selector: { app: 'web' }, template } },
    {
      replicas: 4,
      readyReplicas: 3,
      availableReplicas: 2,
    },
  );
  assertPrintsAsApiserver(printer('replicationcontrollers'), await apiserverTable(client, rcs), 'replicationcontrollers');
});

test('printers: persistent volumes and claims', async (t) => {
  const client = shared.admin;
  const ns = await testNamespace(t, client);
  const run = randomBytes(3).toString('hex');
  const labels = { 'kcp.test/run': run };
  const pvs = '/api/v1/persistentvolumes';
  const names: string[] = [];
  t.after(async () => {
    for (const n of names) {
      await kube(client, 'PATCH', `${pvs}/${n}`, { metadata: { finalizers: null } }, [200, 404]);
      await kube(client, 'DELETE', `${pvs}/${n}`, undefined, [200, 404]);
    }
  });
  const pv = async (
    suffix: string,
    spec: Record<string, unknown>,
    meta: Record<string, unknown> = {},
    status?: Record<string, unknown>,
  ): Promise<string> => {
    const name = `kcp-${run}-${suffix}`;
    names.push(name);
    await create(
      client,
      pvs,
      { metadata: { name, labels, ...meta }, spec: { ...('csi' in spec ? {} : { hostPath: { path: `/tmp/${name}` } }), ...spec } },
      status,
    );
    return name;
  };
  await pv('basic', { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] });
  await pv('rwop', { capacity: { storage: '100M' }, accessModes: ['ReadWriteOncePod'] });
  await pv(
    'bound',
    {
      capacity: { storage: '1500Mi' },
      accessModes: ['ReadWriteMany', 'ReadOnlyMany', 'ReadWriteOnce', 'ReadWriteOnce'],
      csi: { driver: 'csi.example.com', volumeHandle: 'h-1' },
      persistentVolumeReclaimPolicy: 'Delete',
      claimRef: { namespace: ns, name: 'claim' },
      storageClassName: 'fast',
      volumeAttributesClassName: 'gold',
      volumeMode: 'Block',
    },
    {},
    { phase: 'Bound' },
  );
  await pv(
    'failed',
    { capacity: { storage: '2Gi' }, accessModes: ['ReadOnlyMany'], storageClassName: 'fast' },
    {
      annotations: { 'volume.beta.kubernetes.io/storage-class': '' },
    },
    { phase: 'Failed', reason: 'RecyclerFailed', message: 'no recycler' },
  );
  const deleted = await pv('deleted', { capacity: { storage: '3Gi' }, accessModes: ['ReadWriteMany'] });
  // The pv-protection finalizer (added on create) keeps a deleted volume, Terminating.
  await kube(client, 'DELETE', `${pvs}/${deleted}`);
  assertPrintsAsApiserver(
    printer('persistentvolumes'),
    await apiserverTable(client, `${pvs}?labelSelector=kcp.test%2Frun%3D${run}`),
    'persistentvolumes',
  );

  const pvcs = `/api/v1/namespaces/${ns}/persistentvolumeclaims`;
  const claim = (name: string, spec: Record<string, unknown> = {}, meta: Record<string, unknown> = {}): Record<string, unknown> => ({
    metadata: { name, ...meta },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...spec },
  });
  await create(client, pvcs, claim('pending'));
  await create(client, pvcs, claim('bound', { volumeName: `kcp-${run}-bound`, storageClassName: 'fast', volumeMode: 'Block' }), {
    phase: 'Bound',
    capacity: { storage: '1500Mi' },
    accessModes: ['ReadWriteMany', 'ReadWriteOnce'],
  });
  await create(
    client,
    pvcs,
    claim(
      'bound-no-status',
      { volumeName: 'somewhere', volumeAttributesClassName: 'silver' },
      {
        annotations: { 'volume.beta.kubernetes.io/storage-class': 'beta' },
      },
    ),
  );
  await create(client, pvcs, claim('lost', { storageClassName: '' }), { phase: 'Lost' });
  await create(client, pvcs, claim('deleted'));
  // The pvc-protection finalizer keeps a deleted claim, Terminating.
  await kube(client, 'DELETE', `${pvcs}/deleted`);
  t.after(async () => {
    await kube(client, 'PATCH', `${pvcs}/deleted`, { metadata: { finalizers: null } }, [200, 404]);
  });
  assertPrintsAsApiserver(printer('persistentvolumeclaims'), await apiserverTable(client, pvcs), 'persistentvolumeclaims');
});

test('printers: resource quotas', async (t) => {
  const client = shared.admin;
  const ns = await testNamespace(t, client);
  const quotas = `/api/v1/namespaces/${ns}/resourcequotas`;
  await create(client, quotas, { metadata: { name: 'no-status' }, spec: { hard: { pods: '10' } } });
  await create(
    client,
    quotas,
    {
      metadata: { name: 'compute' },
      spec: {
        hard: { 'requests.cpu': '2', 'requests.memory': '4Gi', 'limits.cpu': '4', 'limits.memory': '8Gi', pods: '10', cpu: '1500m' },
      },
    },
    {
      hard: { 'requests.cpu': '2', 'requests.memory': '4Gi', 'limits.cpu': '4', 'limits.memory': '8Gi', pods: '10', cpu: '1500m' },
      used: { 'requests.cpu': '500m', 'limits.cpu': '1', pods: '3', cpu: '1500m', 'requests.memory': '1024Mi' },
    },
  );
  assertPrintsAsApiserver(printer('resourcequotas'), await apiserverTable(client, quotas), 'resourcequotas');
});

test('printers: componentstatuses', async () => {
  // etcd answers; the scheduler and controller-manager do not run here, so they are Unhealthy.
  assertPrintsAsApiserver(
    printer('componentstatuses'),
    await apiserverTable(shared.admin, '/api/v1/componentstatuses'),
    'componentstatuses',
  );
});

test('printers: the default table (limitranges, roles, clusterroles)', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/limitranges`, {
    metadata: { name: 'lr' },
    spec: { limits: [{ type: 'Container', max: { cpu: '1' } }] },
  });
  await kube(shared.admin, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
    metadata: { name: 'reader' },
    rules: [],
  });
  for (const [group, resource, path] of [
    ['', 'limitranges', `/api/v1/namespaces/${ns}/limitranges`],
    ['rbac.authorization.k8s.io', 'roles', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`],
    ['rbac.authorization.k8s.io', 'clusterroles', '/apis/rbac.authorization.k8s.io/v1/clusterroles?limit=5'],
  ] as const) {
    const printer = printerFor(group, resource);
    if (printer === undefined) throw new Error(`no ${resource} printer`);
    assertPrintsAsApiserver(printer, await apiserverTable(shared.admin, path), resource);
  }
});
