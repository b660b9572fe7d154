/**
 * CRD printer columns (src/table/crd-printer.ts) print what the apiserver prints: a CRD of this
 * run's own group (cluster-scoped, deleted after the test) whose v1 has columns of every type
 * (a missing path, a filter on conditions, a map and an array shown as strings, priority 1, a
 * description, a format), whose v2 has none (the apiserver's default Age), and whose v3 has a
 * path the jsonpath parser rejects (the apiserver keeps the columns before it). Objects with
 * varied spec and status are listed as Tables from each version and compared with crdPrinter
 * run on the CRD as the apiserver serves it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { crdPrinter } from '../../../src/table/crd-printer.ts';
import type { KubeJson } from '../../../src/table/model.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { apiserverTable, assertPrintsAsApiserver } from '../../helpers/table-compare.ts';

const shared = useSharedAdmin();

const V1_COLUMNS = [
  { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
  { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
  { name: 'Ratio', type: 'number', format: 'double', jsonPath: '.spec.ratio' },
  { name: 'RatioAsInt', type: 'integer', jsonPath: '.spec.ratio', priority: 1 },
  { name: 'RatioAsString', type: 'string', jsonPath: '.spec.ratio', priority: 1 },
  { name: 'Enabled', type: 'boolean', jsonPath: '.spec.enabled' },
  { name: 'Deadline', type: 'date', jsonPath: '.spec.deadline' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  { name: 'Missing', type: 'string', jsonPath: '.spec.nothere' },
  { name: 'Ready', type: 'string', description: 'The Ready condition', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  { name: 'Selector', type: 'string', priority: 1, jsonPath: '.spec.selector' },
  { name: 'Ports', type: 'string', priority: 1, jsonPath: '.spec.ports' },
  { name: 'FirstPort', type: 'integer', priority: 1, jsonPath: '.spec.ports[0].port' },
  { name: 'LastPortName', type: 'string', priority: 1, jsonPath: '.spec.ports[-1].name' },
  { name: 'Host', type: 'string', priority: 1, jsonPath: ".spec.selector['kubernetes.io/hostname']" },
  { name: 'Escaped', type: 'string', priority: 1, jsonPath: '.spec.selector.kubernetes\\.io/hostname' },
  { name: 'Anything', type: 'string', priority: 1, jsonPath: '.spec.anything' },
];

const V3_COLUMNS = [
  { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
  { name: 'Broken', type: 'string', jsonPath: '.spec.ports[x' },
  { name: 'After', type: 'integer', jsonPath: '.spec.replicas' },
];

const OPEN = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

/** A metav1.Time `ms` ago (whole seconds). */
function timeAgo(ms: number): string {
  return new Date(Date.now() - ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

test('printers: custom resources by additionalPrinterColumns, every type, default and broken columns', async (t) => {
  const client = shared.admin;
  const ns = await testNamespace(t, client);
  const group = `kcp-${randomBytes(4).toString('hex')}.test`;
  const plural = 'gadgets';
  const name = `${plural}.${group}`;
  const version = (v: string, columns?: readonly unknown[]): KubeJson => ({
    name: v,
    served: true,
    storage: v === 'v1',
    schema: { openAPIV3Schema: { type: 'object', properties: { spec: OPEN, status: OPEN } } },
    subresources: { status: {} },
    ...(columns === undefined ? {} : { additionalPrinterColumns: columns }),
  });
  await kube(client, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural, singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
      versions: [version('v1', V1_COLUMNS), version('v2'), version('v3', V3_COLUMNS)],
    },
  });
  t.after(async () => {
    await client.request({ method: 'DELETE', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}` });
  });

  const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
  await eventually(`CRD ${name} Established`, async () => {
    const crd = await kube<KubeJson>(client, 'GET', crdPath);
    const conditions = (crd.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
    return conditions.some((c) => c.type === 'Established' && c.status === 'True');
  });
  await eventually(`${group} in discovery`, async () => {
    const res = await client.request({ method: 'GET', path: `/apis/${group}/v3` });
    return res.statusCode === 200 && res.body.toString().includes(`"name":"${plural}"`);
  });

  const base = `/apis/${group}/v1/namespaces/${ns}/${plural}`;
  const objects: { name: string; spec: unknown; status?: unknown }[] = [
    {
      name: 'full',
      spec: {
        replicas: 3,
        ratio: 0.75,
        enabled: true,
        deadline: timeAgo(90 * 60_000),
        selector: { app: 'web', 'kubernetes.io/hostname': 'node-1', html: '<&>' },
        ports: [
          { name: 'http', port: 80 },
          { name: 'https', port: 443 },
        ],
        anything: { nested: [1, 2.5, 'x', null, true] },
      },
      status: {
        phase: 'Running',
        conditions: [
          { type: 'Synced', status: 'False' },
          { type: 'Ready', status: 'True' },
        ],
      },
    },
    { name: 'empty', spec: {} },
    {
      name: 'floats',
      spec: { replicas: 2.9, ratio: 1234567.5, enabled: 'yes', deadline: 'not a time', ports: [], anything: 1e21 },
      status: { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False' }] },
    },
    {
      name: 'big',
      spec: { replicas: 1e21, ratio: 1e-7, enabled: false, deadline: '', anything: 0.00001, selector: {} },
      status: { phase: 42, conditions: [] },
    },
    {
      name: 'odd',
      spec: {
        replicas: -0.5,
        ratio: -0.0,
        deadline: new Date(Date.now() + 3_600_000).toISOString(),
        anything: null,
        ports: [{ port: 8080.5 }],
      },
      status: { phase: null, conditions: [{ type: 'Ready' }] },
    },
    {
      name: 'types',
      spec: { replicas: '3', ratio: '0.5', enabled: 1, deadline: 12, anything: 100000000000000000000, selector: 'app=web', ports: 'none' },
      status: { phase: true, conditions: 'none' },
    },
    { name: 'zero-time', spec: { deadline: '0001-01-01T00:00:00Z', ratio: 100000, anything: 1000000 } },
  ];
  for (const o of objects) {
    await kube(client, 'POST', base, { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: o.name }, spec: o.spec });
    if (o.status !== undefined) {
      await kube(client, 'PATCH', `${base}/${o.name}/status`, { status: o.status });
    }
  }

  const crd = await kube<KubeJson>(client, 'GET', crdPath);
  for (const v of ['v1', 'v2', 'v3']) {
    const printer = crdPrinter(crd, v);
    assert.ok(printer !== undefined, `a printer for ${v}`);
    assert.equal(printer.group, group);
    assert.equal(printer.resource, plural);
    const table = await apiserverTable(client, `/apis/${group}/${v}/namespaces/${ns}/${plural}`);
    assert.equal(table.rows.length, objects.length);
    assertPrintsAsApiserver(printer, table, `${plural} ${v}`);
    // one object by GET, as kubectl get NAME asks for it
    const one = await apiserverTable(client, `/apis/${group}/${v}/namespaces/${ns}/${plural}/full`);
    assertPrintsAsApiserver(printer, one, `${plural} ${v} GET`);
  }
  assert.deepEqual(
    crdPrinter(crd, 'v3')?.columns.map((c) => c.name),
    ['Name', 'Phase'],
  );
});
