/**
 * Label and field selectors against the real apiserver, the judge: for every selector in the
 * tables, a LIST with it either fails with a 400 whose Status message equals our
 * SelectorParseError's message, or returns exactly the objects our `matches` selects from an
 * unfiltered LIST of the same objects.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { parseFieldSelector } from '../../../src/selector/field-selector.ts';
import { parseLabelSelector } from '../../../src/selector/label-selector.ts';
import { SelectorParseError } from '../../../src/selector/selector-error.ts';
import type { ResourceSelectableFields } from '../../../src/cache/selectable-fields.ts';
import { objectMatchesFields, selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import type { KubeObject } from '../../../src/informer/object.ts';
import { decodeObject, objectName } from '../../../src/informer/object.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

interface Outcome {
  readonly code: number;
  /** Names selected, or the Status message. */
  readonly names?: readonly string[];
  readonly message?: string;
}

/** LISTs `path` with one selector parameter. */
async function apiserverList(client: UpstreamClient, path: string, parameter: string, selector: string): Promise<Outcome> {
  const res = await client.request({ method: 'GET', path: `${path}?${parameter}=${encodeURIComponent(selector)}` });
  const body = JSON.parse(res.body.toString()) as { items?: { metadata: { name: string } }[]; message?: string };
  if (res.statusCode === 200) return { code: 200, names: (body.items ?? []).map((i) => i.metadata.name).sort() };
  return { code: res.statusCode, message: body.message ?? '' };
}

/** The objects of an unfiltered LIST, decoded with the resource's extractor. */
async function listObjects(client: UpstreamClient, path: string, fields: ResourceSelectableFields): Promise<KubeObject[]> {
  const res = await client.request({ method: 'GET', path });
  assert.equal(res.statusCode, 200);
  const list = JSON.parse(res.body.toString()) as { items: unknown[] };
  return list.items.map((item) => decodeObject(Buffer.from(JSON.stringify(item)), fields.extract));
}

interface Case {
  readonly resource: string;
  readonly path: string;
  readonly fields: ResourceSelectableFields;
  /** Only these names count (cluster-scoped lists hold other tests' objects). */
  readonly ours: ReadonlySet<string>;
}

/** Ours, as an Outcome: parse, then match over `objects`. */
function ourOutcome(parameter: 'labelSelector' | 'fieldSelector', selector: string, c: Case, objects: readonly KubeObject[]): Outcome {
  try {
    if (parameter === 'labelSelector') {
      const s = parseLabelSelector(selector);
      return {
        code: 200,
        names: objects
          .filter((o) => s.matches(o.labels))
          .map((o) => objectName(o))
          .sort(),
      };
    }
    const s = parseFieldSelector(selector, c.fields.conversion);
    return {
      code: 200,
      names: objects
        .filter((o) => objectMatchesFields(s, o))
        .map((o) => objectName(o))
        .sort(),
    };
  } catch (err) {
    if (!(err instanceof SelectorParseError)) throw err;
    return { code: err.code, message: err.message };
  }
}

/** Runs every selector as a subtest; returns how many the apiserver rejected. */
async function compare(
  t: TestContext,
  parameter: 'labelSelector' | 'fieldSelector',
  c: Case,
  selectors: readonly string[],
): Promise<number> {
  const objects = (await listObjects(shared.admin, c.path, c.fields)).filter((o) => c.ours.has(objectName(o)));
  let rejected = 0;
  for (const selector of selectors) {
    await t.test(`${c.resource} ${parameter}=${JSON.stringify(selector)}`, async () => {
      const theirs = await apiserverList(shared.admin, c.path, parameter, selector);
      const ours = ourOutcome(parameter, selector, c, objects);
      if (theirs.code !== 200) rejected++;
      const theirsOurs = theirs.names === undefined ? theirs : { ...theirs, names: theirs.names.filter((n) => c.ours.has(n)) };
      assert.deepEqual(ours, theirsOurs);
    });
  }
  return rejected;
}

const LABEL_SELECTORS: readonly string[] = [
  '',
  '   ',
  'app',
  '!app',
  'app=web',
  'app==web',
  'app!=web',
  'app = web',
  'app in (web,db)',
  'app in (web, db)',
  'app notin (web)',
  'app notin ()',
  'app in ()',
  'app in (,web)',
  'app in (web,)',
  'app in (web,,db)',
  'app in (web,web)',
  'app=web,tier=front',
  'app,!tier',
  'tier,app notin (db)',
  'x>1',
  'x<3',
  'x>1,x<5',
  'x>-1',
  'x>a',
  'x>',
  'x>99999999999999999999',
  'x>=1',
  'x gt 1',
  'a b',
  'A B',
  'a=b=c',
  'a=(b)',
  'a in b',
  'a in (b',
  'a in (b c)',
  'a in (b,(c)',
  ',a',
  'a,',
  'a,,b',
  '!',
  '!app=web',
  '!app,app',
  '=b',
  'a!==b',
  'example.com/app=web',
  'Example.com/app',
  '/a',
  'a/',
  'a/b/c',
  'a=b c',
  'a=-b',
  'a=-b-',
  `a=${'v'.repeat(64)}`,
  'k'.repeat(64),
  'in in (in)',
  'notin=notin',
  'a==',
  'a!=',
  'a=,b',
  'é=1',
  'a=é',
  'a\tin\t(web)',
  'a<1x',
  'app in (web),app notin (db)',
  'a=b,,c',
  '-a',
  'a.b_c-d=E.f_G-1',
  'x>a-',
  'a in (-b,-c)',
  'a=\x01',
  'a=b\u00a0',
  'a=\u{1F600}',
  'a\u0000b',
  'a=b\u0000c',
  'a\n=\rb',
  'a=\u2028',
];

const FIELD_SELECTORS_POD: readonly string[] = [
  '',
  ',',
  'metadata.name=p1',
  'metadata.name==p1',
  'metadata.name!=p1',
  'spec.nodeName=node-a',
  'spec.host=node-a',
  'spec.nodeName=',
  'spec.nodeName!=',
  'spec.hostNetwork=true',
  'spec.hostNetwork=false',
  'spec.restartPolicy=Never,status.phase=Pending',
  'status.podIPs=',
  'status.podIP=',
  'status.nominatedNodeName=',
  'spec.schedulerName=custom-scheduler',
  'spec.serviceAccountName=robot',
  'metadata.namespace=other',
  'foo=bar',
  'a',
  'metadata.name=a\\x',
  'metadata.name=a\\',
  'metadata.name=a=b',
  'metadata.name=a\\=b',
  'metadata.name=a\\,b',
  'metadata.name=a\\\\b',
  'metadata.name=p1,foo=bar',
  'zzz=1,aaa=2',
  'metadata.name=p1,bogus',
  'metadata.labels.app=web',
  '=x',
  'spec.nodeName = node-a',
  'spec.nodeName=node-a,spec.nodeName!=node-a',
  'metadata.name=p1\\',
  'metadata.name!=',
  'metadata.name=\\é',
  'metadata.name=p1,metadata.name=a\\',
];

async function createPods(ns: string): Promise<string[]> {
  const pods: { name: string; labels: Record<string, string>; spec: Record<string, unknown> }[] = [
    { name: 'p1', labels: { app: 'web', tier: 'front', x: '2' }, spec: { nodeName: 'node-a' } },
    { name: 'p2', labels: { app: 'db', tier: 'back', x: '10' }, spec: { restartPolicy: 'Never' } },
    { name: 'p3', labels: { app: '', x: 'abc' }, spec: { hostNetwork: true, schedulerName: 'custom-scheduler' } },
    { name: 'p4', labels: { 'example.com/app': 'web', in: 'in', notin: 'notin' }, spec: { serviceAccountName: 'robot' } },
    { name: 'p5', labels: { a: 'b', app: 'cache', x: '0' }, spec: { restartPolicy: 'OnFailure', nodeName: 'node-b' } },
    { name: 'p6', labels: { 'a.b_c-d': 'E.f_G-1', tier: 'front' }, spec: {} },
    { name: 'p7', labels: {}, spec: {} },
  ];
  for (const p of pods) {
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: p.name, labels: p.labels },
      spec: { containers: [{ name: 'c', image: 'example.invalid/none' }], ...p.spec },
    });
  }
  return pods.map((p) => p.name);
}

test('selectors: label selectors on pods parse, fail and match as the apiserver does', { timeout: 120_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const names = await createPods(ns);
  const path = `/api/v1/namespaces/${ns}/pods`;
  const rejected = await compare(
    t,
    'labelSelector',
    { resource: 'pods', path, fields: selectableFieldsFor('', 'pods', true), ours: new Set(names) },
    LABEL_SELECTORS,
  );
  assert.ok(rejected >= 25, `only ${rejected} rejected: the table should hold many invalid selectors`);
});

test('selectors: field selectors on pods parse, convert, fail and match as the apiserver does', { timeout: 120_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const names = await createPods(ns);
  const path = `/api/v1/namespaces/${ns}/pods`;
  const c = { resource: 'pods', path, fields: selectableFieldsFor('', 'pods', true), ours: new Set(names) };
  const rejected = await compare(t, 'fieldSelector', c, [...FIELD_SELECTORS_POD, `metadata.namespace=${ns}`, `metadata.namespace!=${ns}`]);
  assert.ok(rejected >= 10, `only ${rejected} rejected`);
});

test('selectors: configmaps, secrets, events, namespaces and nodes select as the apiserver does', { timeout: 120_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const base = `/api/v1/namespaces/${ns}`;
  for (const [name, labels] of [
    ['cm1', { app: 'web' }],
    ['cm2', { app: 'db', x: '7' }],
    ['cm3', {}],
  ] as const) {
    await kube(shared.admin, 'POST', `${base}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels } });
  }
  await compare(
    t,
    'labelSelector',
    {
      resource: 'configmaps',
      path: `${base}/configmaps`,
      fields: selectableFieldsFor('', 'configmaps', true),
      ours: new Set(['cm1', 'cm2', 'cm3']),
    },
    ['app', 'app in (web,db)', 'x<10', '!x', 'a b'],
  );
  await compare(
    t,
    'fieldSelector',
    {
      resource: 'configmaps',
      path: `${base}/configmaps`,
      fields: selectableFieldsFor('', 'configmaps', true),
      ours: new Set(['cm1', 'cm2', 'cm3']),
    },
    ['metadata.name=cm1', 'metadata.name!=cm1', 'spec.nodeName=x', 'data.x=1', 'a\\,b=c', 'é"\\\\=1', 'metadata.name=cm1,zz=1'],
  );

  await kube(shared.admin, 'POST', `${base}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's1' } });
  await kube(shared.admin, 'POST', `${base}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's2' },
    type: 'example.com/custom',
  });
  await compare(
    t,
    'fieldSelector',
    { resource: 'secrets', path: `${base}/secrets`, fields: selectableFieldsFor('', 'secrets', true), ours: new Set(['s1', 's2']) },
    ['type=Opaque', 'type!=Opaque', 'type=example.com/custom', 'data=1', 'metadata.name=s2,type=example.com/custom'],
  );

  const event = (name: string, extra: Record<string, unknown>): Record<string, unknown> => ({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name },
    involvedObject: { kind: 'Pod', namespace: ns, name: 'p1', apiVersion: 'v1' },
    ...extra,
  });
  await kube(shared.admin, 'POST', `${base}/events`, event('e1', { reason: 'Started', type: 'Normal', source: { component: 'kubelet' } }));
  await kube(
    shared.admin,
    'POST',
    `${base}/events`,
    event('e2', {
      reason: 'Failed',
      type: 'Warning',
      reportingComponent: 'ctrl',
      reportingInstance: 'ctrl-1',
      involvedObject: { kind: 'ConfigMap', namespace: ns, name: 'cm1', fieldPath: 'data' },
    }),
  );
  await compare(
    t,
    'fieldSelector',
    { resource: 'events', path: `${base}/events`, fields: selectableFieldsFor('', 'events', true), ours: new Set(['e1', 'e2']) },
    [
      'involvedObject.name=p1',
      'involvedObject.kind=Pod,type=Normal',
      'reason=Started',
      'source=kubelet',
      'source=ctrl',
      'type=Warning',
      'reportingComponent=ctrl',
      'reportingComponent=',
      'involvedObject.fieldPath=data',
      'involvedObject.uid=',
      'message=x',
      'regarding.name=p1',
    ],
  );

  const nsLabel = `sel-${randomBytes(3).toString('hex')}`;
  await kube(shared.admin, 'PATCH', `/api/v1/namespaces/${ns}`, { metadata: { labels: { [nsLabel]: 'yes' } } });
  await compare(
    t,
    'fieldSelector',
    { resource: 'namespaces', path: '/api/v1/namespaces', fields: selectableFieldsFor('', 'namespaces', false), ours: new Set([ns]) },
    ['status.phase=Active', 'status.phase!=Active', `metadata.name=${ns}`, 'metadata.namespace=x', 'name=x'],
  );
  await compare(
    t,
    'labelSelector',
    { resource: 'namespaces', path: '/api/v1/namespaces', fields: selectableFieldsFor('', 'namespaces', false), ours: new Set([ns]) },
    [nsLabel, `!${nsLabel}`, `${nsLabel}=no`],
  );

  const node = `n-${randomBytes(4).toString('hex')}`;
  await kube(shared.admin, 'POST', '/api/v1/nodes', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: node },
    spec: { unschedulable: true },
  });
  t.after(async () => {
    await shared.admin.request({ method: 'DELETE', path: `/api/v1/nodes/${node}` });
  });
  await compare(
    t,
    'fieldSelector',
    { resource: 'nodes', path: '/api/v1/nodes', fields: selectableFieldsFor('', 'nodes', false), ours: new Set([node]) },
    ['spec.unschedulable=true', 'spec.unschedulable=false', `metadata.name=${node}`, 'metadata.namespace='],
  );
});
