/**
 * The core printers on objects the test cluster cannot hold or the e2e test does not make:
 * expectations of printers_test.go (v1.37.2) written as v1 JSON, at a fixed `now`. The Go tests
 * print without Wide, so their rows are the first cells of ours.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Cell, KubeJson, RowCondition } from '../../../src/table/model.ts';
import { printerFor } from '../../../src/table/printers/index.ts';
import { PRINTERS } from '../../../src/table/printers/core.ts';

const NOW = Date.parse('2026-03-01T12:00:00Z');

function ago(ms: number): string {
  return new Date(NOW - ms).toISOString();
}

function print(resource: string, obj: KubeJson): { cells: readonly Cell[]; conditions: readonly RowCondition[] } {
  const printer = printerFor('', resource);
  if (printer === undefined) throw new Error(`no ${resource} printer`);
  const rows = printer.print(obj, NOW);
  assert.equal(rows.length, 1);
  const [row] = rows;
  assert.ok(row !== undefined);
  assert.equal(row.cells.length, printer.columns.length, `${resource}: a cell per column`);
  return { cells: row.cells, conditions: row.conditions ?? [] };
}

test('core printers: an empty object prints a cell per column, with Go zero values', () => {
  for (const printer of PRINTERS) {
    const [row] = printer.print({}, NOW);
    assert.equal(row?.cells.length, printer.columns.length, printer.resource);
  }
  assert.deepEqual(print('pods', {}).cells, ['', '0/0', '', '0', '<unknown>', '<none>', '<none>', '<none>', '<none>']);
  assert.deepEqual(print('nodes', {}).cells, [
    '',
    'Unknown',
    '<none>',
    '<unknown>',
    '',
    '<none>',
    '<none>',
    '<unknown>',
    '<unknown>',
    '<unknown>',
  ]);
  assert.deepEqual(print('events', {}).cells, ['<unknown>', '', '', '', '', '', '', '<unknown>', 1, '']);
});

const running = { running: {} };
const two = [{ name: 'a' }, { name: 'b' }];

test('printPod: TestPrintPod (READY, STATUS from the containers, RESTARTS summed)', () => {
  const pod = (name: string, statuses: unknown[]): KubeJson => ({
    metadata: { name },
    spec: { containers: two },
    status: { phase: 'podPhase', containerStatuses: statuses },
  });
  assert.deepEqual(print('pods', pod('test1', [{ ready: true, restartCount: 3, state: running }, { restartCount: 3 }])).cells.slice(0, 5), [
    'test1',
    '1/2',
    'podPhase',
    '6',
    '<unknown>',
  ]);
  assert.deepEqual(
    print(
      'pods',
      pod('test2', [
        { ready: true, restartCount: 3, state: running },
        { state: { waiting: { reason: 'ContainerWaitingReason' } }, restartCount: 3 },
      ]),
    ).cells.slice(0, 5),
    ['test2', '1/2', 'ContainerWaitingReason', '6', '<unknown>'],
  );
  assert.deepEqual(
    print(
      'pods',
      pod('test3', [
        { state: { waiting: { reason: 'ContainerWaitingReason' } }, restartCount: 3 },
        { state: { terminated: { reason: 'ContainerTerminatedReason' } }, restartCount: 3 },
      ]),
    ).cells.slice(0, 5),
    ['test3', '0/2', 'ContainerWaitingReason', '6', '<unknown>'],
  );
});

test('printPod: TestPrintPodwide (podIPs[0] when podIP is unset, readiness gates, nominated node)', () => {
  const gates = ['condition1', 'condition2', 'condition3'].map((conditionType) => ({ conditionType }));
  const { cells } = print('pods', {
    metadata: { name: 'test1' },
    spec: { containers: two, nodeName: 'test1', readinessGates: gates },
    status: {
      phase: 'podPhase',
      conditions: [
        { type: 'condition1', status: 'False' },
        { type: 'condition2', status: 'True' },
      ],
      podIPs: [{ ip: '1.1.1.1' }, { ip: '2001:db8::' }],
      containerStatuses: [{ ready: true, restartCount: 3, state: running }, { restartCount: 3 }],
      nominatedNodeName: 'node1',
    },
  });
  assert.deepEqual(cells, ['test1', '1/2', 'podPhase', '6', '<unknown>', '1.1.1.1', 'test1', 'node1', '1/3']);
});

test('printPod: TestPrintPodWithRestartableInitContainer', () => {
  const sidecars = [
    { name: 'restartable-init-1', restartPolicy: 'Always' },
    { name: 'restartable-init-2', restartPolicy: 'Always' },
  ];
  const lastTerminated = (ms: number): unknown => ({ terminated: { finishedAt: ago(ms) } });
  const pod = (phase: string, init: unknown[], containers: unknown[], initialized: string): KubeJson => ({
    metadata: { name: 'p' },
    spec: { initContainers: sidecars, containers: [{ name: 'c' }] },
    status: {
      phase,
      initContainerStatuses: init,
      containerStatuses: containers,
      conditions: [{ type: 'Initialized', status: initialized }],
    },
  });
  const first = (started: boolean, state: unknown = running): unknown => ({
    name: 'restartable-init-1',
    restartCount: 3,
    state,
    started,
    lastState: lastTerminated(10_000),
  });
  const waiting = { waiting: {} };

  assert.deepEqual(
    print(
      'pods',
      pod('Pending', [first(false), { name: 'restartable-init-2', state: waiting, started: false }], [{ state: waiting }], 'False'),
    ).cells.slice(0, 5),
    ['p', '0/3', 'Init:0/2', '3 (10s ago)', '<unknown>'],
  );
  assert.deepEqual(
    print(
      'pods',
      pod('Pending', [first(true), { name: 'restartable-init-2', state: running, started: false }], [{ state: waiting }], 'False'),
    ).cells.slice(0, 5),
    ['p', '0/3', 'Init:1/2', '3 (10s ago)', '<unknown>'],
  );
  assert.deepEqual(
    print(
      'pods',
      pod(
        'Running',
        [first(true), { name: 'restartable-init-2', state: running, started: true }],
        [{ ready: true, restartCount: 4, state: running, lastState: lastTerminated(20_000) }],
        'True',
      ),
    ).cells.slice(0, 5),
    ['p', '1/3', 'Running', '7 (10s ago)', '<unknown>'],
  );
  const error = { terminated: { reason: 'Error', exitCode: 137 } };
  const succeeded = print(
    'pods',
    pod(
      'Succeeded',
      [first(false, error), { name: 'restartable-init-2', state: error, started: false }],
      [{ restartCount: 4, state: { terminated: { reason: 'Completed', exitCode: 0 } }, lastState: lastTerminated(20_000) }],
      'True',
    ),
  );
  assert.deepEqual(succeeded.cells.slice(0, 5), ['p', '0/3', 'Completed', '7 (10s ago)', '<unknown>']);
  assert.deepEqual(succeeded.conditions, [
    { type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' },
  ]);

  // Statuses of containers the spec does not have.
  assert.deepEqual(
    print('pods', {
      metadata: { name: 'test4' },
      spec: {
        initContainers: [
          { name: 'init1', image: 'initimage' },
          { name: 'sidecar1', image: 'sidecarimage', restartPolicy: 'Always' },
        ],
        containers: [{ name: 'container1', image: 'containerimage' }],
      },
      status: {
        phase: 'Running',
        initContainerStatuses: [{ name: 'initinvalid' }, { name: 'init1' }, { name: 'sidecar1' }],
        containerStatuses: [{ name: 'containerinvalid' }, { name: 'container1' }],
      },
    }).cells.slice(0, 5),
    ['test4', '0/2', 'Init:0/2', '0', '<unknown>'],
  );
});

test('printPod: RESTARTS ages from the latest termination of any container', () => {
  const { cells } = print('pods', {
    metadata: { name: 'p', creationTimestamp: ago(3 * 3600_000) },
    spec: { containers: two },
    status: {
      phase: 'Running',
      containerStatuses: [
        { name: 'a', ready: true, state: running, restartCount: 1, lastState: { terminated: { finishedAt: ago(2 * 3600_000) } } },
        { name: 'b', ready: true, state: running, restartCount: 2, lastState: { terminated: { finishedAt: ago(125_000) } } },
      ],
    },
  });
  assert.deepEqual(cells.slice(0, 5), ['p', '2/2', 'Running', '3 (2m5s ago)', '3h']);
});

test('printNode: TestPrintNodeRole, and a role label without a name', () => {
  const roles = (labels: Record<string, string>): Cell => print('nodes', { metadata: { name: 'n', labels } }).cells[2] ?? null;
  assert.equal(roles({}), '<none>');
  assert.equal(
    roles({
      'node-role.kubernetes.io/master': '',
      'node-role.kubernetes.io/control-plane': '',
      'node-role.kubernetes.io/proxy': '',
      'kubernetes.io/role': 'node',
    }),
    'control-plane,master,node,proxy',
  );
  assert.equal(roles({ 'kubernetes.io/role': 'node' }), 'node');
  assert.equal(roles({ 'node-role.kubernetes.io/': '', 'kubernetes.io/role': '' }), '<none>');
  assert.equal(roles({ 'node-role.kubernetes.io/a': '', 'kubernetes.io/role': 'a' }), 'a');
});

test('printNode: TestPrintNodeStatus (only Ready counts; the last Ready condition wins)', () => {
  const status = (conditions: unknown[], unschedulable = false): Cell =>
    print('nodes', { metadata: { name: 'n' }, spec: { unschedulable }, status: { conditions } }).cells[1] ?? null;
  assert.equal(status([{ type: 'Ready', status: 'True' }]), 'Ready');
  assert.equal(status([{ type: 'Ready', status: 'True' }], true), 'Ready,SchedulingDisabled');
  assert.equal(status([{ type: 'InvalidValue', status: 'True' }]), 'Unknown');
  assert.equal(status([{ type: 'InvalidValue', status: 'True' }], true), 'Unknown,SchedulingDisabled');
  assert.equal(
    status([
      { type: 'Ready', status: 'True' },
      { type: 'Ready', status: 'False' },
    ]),
    'NotReady',
  );
});

test('printEvent: a series with count 0 prints 0; the message trimmed of Go spaces only', () => {
  const { cells } = print('events', {
    metadata: { name: 'e' },
    involvedObject: { kind: 'Deployment', name: 'web' },
    eventTime: '2026-03-01T11:00:00.500000Z',
    series: { count: 0, lastObservedTime: '2026-03-01T11:59:00.500000Z' },
    message: '\u00a0\u3000hello\u2029\ufeff',
    reportingComponent: 'c',
  });
  assert.deepEqual(cells, ['59s', '', '', 'deployment/web', '', 'c', 'hello\u2029\ufeff', '59m', 0, 'e']);
});

test('printResourceQuota: TestPrintResourceQuota', () => {
  const { cells } = print('resourcequotas', {
    metadata: { name: 'foo', creationTimestamp: ago(10 * 365 * 24 * 3600_000) },
    status: {
      used: { cpu: '0', pods: '0', services: '0', 'limits.cpu': '0' },
      hard: { cpu: '100', pods: '10', services: '10', 'limits.cpu': '100' },
    },
  });
  assert.deepEqual(cells, ['foo', 'cpu: 0/100, pods: 0/10, services: 0/10', 'limits.cpu: 0/100', '10y']);
});

test('printService: a load balancer with hostnames past 16 characters is not cut (Wide)', () => {
  const { cells } = print('services', {
    metadata: { name: 's' },
    spec: { type: 'LoadBalancer', clusterIPs: ['10.0.0.1'], ports: [{ port: 80, nodePort: 30080, protocol: 'TCP' }] },
    status: { loadBalancer: { ingress: [{ hostname: 'a-very-long-load-balancer.example.com' }] } },
  });
  assert.deepEqual(cells.slice(0, 5), ['s', 'LoadBalancer', '10.0.0.1', 'a-very-long-load-balancer.example.com', '80:30080/TCP']);
  assert.equal(print('services', { metadata: { name: 'x' }, spec: { type: 'Other' } }).cells[3], '<unknown>');
});
