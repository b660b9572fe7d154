/**
 * The workload printers' branches the test apiserver cannot show (defaults fill the field, or
 * validation forbids the object), and printers_test.go's (v1.37.2) expectations, at a fixed `now`.
 * What the apiserver can store is compared with it in test/e2e/table/workloads-printers.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Cell, KubeJson } from '../../../src/table/model.ts';
import { printerFor } from '../../../src/table/printers/index.ts';
import { formatLabels } from '../../../src/table/format.ts';
import { formatHpaMetrics, formatLabelSelector, labelSelectorString } from '../../../src/table/printers/workloads.ts';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const MINUTE = 60_000;

function at(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

function cells(group: string, resource: string, obj: KubeJson): readonly Cell[] {
  const printer = printerFor(group, resource);
  if (printer === undefined) throw new Error(`no printer for ${resource}.${group}`);
  const rows = printer.print(obj, NOW);
  assert.equal(rows.length, 1);
  const row = rows[0];
  assert.ok(row !== undefined);
  assert.equal(row.cells.length, resource === 'ipaddresses' ? printer.columns.length + 1 : printer.columns.length);
  return row.cells;
}

test('label selectors: Go errors print <error> (FormatLabelSelector) and <invalid> (printDeployment)', () => {
  const unknownOperator = { matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] };
  assert.equal(labelSelectorString(unknownOperator), undefined);
  assert.equal(formatLabelSelector(unknownOperator), '<error>');
  assert.equal(formatLabelSelector({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }), '<error>');
  assert.equal(formatLabelSelector({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }), '<error>');
  const deployment = { metadata: { name: 'd' }, spec: { replicas: 1, selector: unknownOperator } };
  assert.equal(cells('apps', 'deployments', deployment)[7], '<invalid>');
});

test('label selectors: nil and empty print <none> (FormatLabelSelector) and nothing (printDeployment)', () => {
  assert.equal(formatLabelSelector(undefined), '<none>');
  assert.equal(formatLabelSelector({}), '<none>');
  assert.equal(cells('apps', 'deployments', { metadata: { name: 'd' }, spec: { replicas: 1, selector: {} } })[7], '');
  assert.equal(cells('apps', 'deployments', { metadata: { name: 'd' }, spec: { replicas: 1 } })[7], '');
  assert.equal(formatLabels({}), '<none>');
});

test('label selectors: sorted by key, matchLabels first on equal keys, values sorted', () => {
  assert.equal(
    labelSelectorString({
      matchLabels: { b: '2', a: '1' },
      matchExpressions: [
        { key: 'a', operator: 'NotIn', values: ['z', 'y'] },
        { key: 'c', operator: 'DoesNotExist' },
      ],
    }),
    'a=1,a notin (y,z),b=2,!c',
  );
});

test('printJob (printers_test.go): running without a start, a finished duration, a running one, each condition', () => {
  const template = { spec: { containers: [{ name: 'fake-job-container1', image: 'fake-job-image1' }] } };
  const job = (spec: KubeJson, status: KubeJson, meta: KubeJson = {}): readonly Cell[] =>
    cells('batch', 'jobs', {
      metadata: { name: 'job', creationTimestamp: at(NOW - 10 * 365 * 24 * 60 * MINUTE), ...meta },
      spec: { template, ...spec },
      status,
    });
  assert.deepEqual(job({ completions: 2 }, { succeeded: 1 }).slice(1, 5), ['Running', '1/2', '', '10y']);
  assert.deepEqual(job({}, { startTime: at(NOW + MINUTE), completionTime: at(NOW + 31 * MINUTE) }).slice(1, 4), ['Running', '0/1', '30m']);
  assert.deepEqual(job({}, { startTime: at(NOW - 20 * MINUTE) }).slice(1, 4), ['Running', '0/1', '20m']);
  assert.deepEqual(job({ parallelism: 3 }, { succeeded: 2 }).slice(2, 3), ['2/1 of 3']);
  assert.deepEqual(job({ parallelism: 1 }, {}).slice(2, 3), ['0/1']);
  for (const type of ['Complete', 'Failed', 'Suspended', 'FailureTarget', 'SuccessCriteriaMet']) {
    assert.equal(job({}, { conditions: [{ type, status: 'True' }] })[1], type);
    assert.equal(job({}, { conditions: [{ type, status: 'False' }] })[1], 'Running');
  }
  // The first condition of a type decides; Complete and Failed outrank a deletion.
  assert.equal(
    job(
      {},
      {
        conditions: [
          { type: 'Complete', status: 'False' },
          { type: 'Complete', status: 'True' },
        ],
      },
    )[1],
    'Running',
  );
  assert.equal(job({}, { conditions: [{ type: 'Failed', status: 'True' }] }, { deletionTimestamp: at(NOW) })[1], 'Failed');
  assert.equal(job({}, { conditions: [{ type: 'Suspended', status: 'True' }] }, { deletionTimestamp: at(NOW) })[1], 'Terminating');
});

test('printCronJob: suspend <unset> when absent (the apiserver defaults it), last schedule relative to now', () => {
  const c = cells('batch', 'cronjobs', {
    metadata: { name: 'cj', creationTimestamp: at(NOW - 3 * 24 * 60 * MINUTE) },
    spec: { schedule: '@hourly', jobTemplate: { spec: { template: { spec: { containers: [{ name: 'a', image: 'b' }] } } } } },
    status: { lastScheduleTime: at(NOW - 75 * 1000) },
  });
  assert.deepEqual(c, ['cj', '@hourly', '<none>', '<unset>', 0, '75s', '3d', 'a', 'b', '<none>']);
});

test('printHorizontalPodAutoscaler (printers_test.go): no metrics, minReplicas unset, no creation time', () => {
  const hpa = {
    apiVersion: 'autoscaling/v2',
    metadata: { name: 'some-hpa' },
    spec: { scaleTargetRef: { name: 'some-rc', kind: 'ReplicationController' }, maxReplicas: 10 },
    status: { currentReplicas: 4, desiredReplicas: 5 },
  };
  assert.deepEqual(cells('autoscaling', 'horizontalpodautoscalers', hpa), [
    'some-hpa',
    'ReplicationController/some-rc',
    '<none>',
    '<unset>',
    10,
    4,
    '<unknown>',
  ]);
});

test('formatHPAMetrics: <auto> without a target utilization, <unknown type>, statuses by index, + N more', () => {
  const cpuNoTarget = { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization' } } };
  assert.equal(formatHpaMetrics([cpuNoTarget], []), 'cpu: <unknown>/<auto>');
  assert.equal(formatHpaMetrics([{ type: 'Bogus' }], []), '<unknown type>');
  const external = { type: 'External', external: { target: { type: 'AverageValue', averageValue: '100m' } } };
  assert.equal(formatHpaMetrics([external], []), '<unknown>/100m (avg)');
  assert.equal(formatHpaMetrics([external], [{ type: 'External', external: { current: { averageValue: '50m' } } }]), '50m/100m (avg)');
  // A status of another type at the same index is no status for this spec.
  assert.equal(formatHpaMetrics([external], [{ type: 'Pods', pods: { current: { averageValue: '1' } } }]), '<unknown>/100m (avg)');
  const cpu80 = { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } };
  assert.equal(
    formatHpaMetrics([external, cpu80, cpu80], [{ type: 'External', external: { current: { averageValue: '50m' } } }]),
    '50m/100m (avg), cpu: <unknown>/80% + 1 more...',
  );
});

test('printHorizontalPodAutoscaler at autoscaling/v1: the CPU target last, annotations first, 80% when nothing is set', () => {
  const hpa = (spec: KubeJson, status: KubeJson, annotations: KubeJson = {}): Cell =>
    cells('autoscaling', 'horizontalpodautoscalers', {
      apiVersion: 'autoscaling/v1',
      metadata: { name: 'h', annotations },
      spec: { scaleTargetRef: { kind: 'Deployment', name: 'web' }, maxReplicas: 3, ...spec },
      status,
    })[2] ?? null;
  assert.equal(hpa({}, {}), 'cpu: <unknown>/80%');
  assert.equal(hpa({ targetCPUUtilizationPercentage: 50 }, { currentCPUUtilizationPercentage: 20 }), 'cpu: 20%/50%');
  assert.equal(
    hpa(
      { targetCPUUtilizationPercentage: 50 },
      { currentCPUUtilizationPercentage: 20 },
      {
        'autoscaling.alpha.kubernetes.io/metrics': JSON.stringify([{ type: 'Pods', pods: { metricName: 'p', targetAverageValue: '1k' } }]),
        'autoscaling.alpha.kubernetes.io/current-metrics': JSON.stringify([
          { type: 'Pods', pods: { metricName: 'p', currentAverageValue: '800' } },
          { type: 'Resource', resource: { name: 'cpu', currentAverageUtilization: 20, currentAverageValue: '0' } },
        ]),
      },
    ),
    '800/1k, cpu: 20%/50%',
  );
  // An annotation Go cannot unmarshal is ignored.
  assert.equal(hpa({}, {}, { 'autoscaling.alpha.kubernetes.io/metrics': '{' }), 'cpu: <unknown>/80%');
});

test('printEndpointSlice: * for a port with neither number nor name (the apiserver defaults the name to "")', () => {
  const c = cells('discovery.k8s.io', 'endpointslices', {
    metadata: { name: 'e' },
    addressType: 'IPv4',
    ports: [{ protocol: 'TCP' }],
    endpoints: [],
  });
  assert.deepEqual(c.slice(1, 4), ['IPv4', '*', '<unset>']);
});

test('printIngress: hosts past three count every later rule, with or without a host', () => {
  const rules = ['a', 'b', 'c', '', ''].map((host) => (host === '' ? {} : { host }));
  assert.equal(cells('networking.k8s.io', 'ingresses', { metadata: { name: 'i' }, spec: { rules } })[2], 'a,b,c + 2 more...');
});

test('printIngressClass: an empty apiGroup still adds the dot', () => {
  const c = cells('networking.k8s.io', 'ingressclasses', {
    metadata: { name: 'ic' },
    spec: { controller: 'x/y', parameters: { apiGroup: '', kind: 'K', name: 'n' } },
  });
  assert.equal(c[2], 'K./n');
});

test('printIPAddress: three cells for two columns (the Age the apiserver prints without declaring it)', () => {
  const c = cells('networking.k8s.io', 'ipaddresses', { metadata: { name: '10.0.0.1', creationTimestamp: at(NOW - 5000) }, spec: {} });
  assert.deepEqual(c, ['10.0.0.1', '<none>', '5s']);
});

test('printPodDisruptionBudget (printers_test.go): int and percent IntOrStrings, N/A', () => {
  const c = cells('policy', 'poddisruptionbudgets', {
    metadata: { name: 'pdb1', creationTimestamp: at(NOW - 10 * 365 * 24 * 60 * MINUTE) },
    spec: { minAvailable: 22 },
    status: { disruptionsAllowed: 5 },
  });
  assert.deepEqual(c, ['pdb1', '22', 'N/A', 5, '10y']);
});
