/**
 * The cluster-level groups' printers (cluster.ts) print what the apiserver prints, for objects
 * made here: namespaced ones in a test namespace, cluster-scoped ones labelled with the test's
 * own id (the control plane is shared: tables are listed by that label) and deleted after it.
 * Status is written through /status (no controller runs in the test cluster), except the
 * FlowSchemas' Dangling condition, which the apiserver's own flow-control controller maintains.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import type { KubeJson, Printer } from '../../../src/table/model.ts';
import { printStorageClassListRows, sortFlowSchemas } from '../../../src/table/printers/cluster.ts';
import { printerFor } from '../../../src/table/printers/index.ts';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';
import { apiserverTable, assertPrintsAsApiserver, sameButForTick } from '../../helpers/table-compare.ts';

const shared = useSharedAdmin();

/** A PKCS#10 request for CN=kcp-test (P-256), made once with openssl; its key is not kept. */
const CSR_PEM = `-----BEGIN CERTIFICATE REQUEST-----
MIHOMHUCAQAwEzERMA8GA1UEAwwIa2NwLXRlc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAAT0NGkJhEZlTrvU805uXoUTnmyfeJQaSrnNozYjgmg7A0CokLedvrDz
Ucavk2sI58jOfcuwZsg7XYOaGSkwJMLaoAAwCgYIKoZIzj0EAwIDSQAwRgIhAOHx
piGhIgDmq9hjZ/LhbnjvjbGUXTGv+ypbEUN9uXNkAiEA8p/KuEBSbncXxbb6P+Ts
Hc9f3dqv4aj1BAajj7Z9ue4=
-----END CERTIFICATE REQUEST-----
`;

/** A self-signed CA certificate (CN=kcp-test-ca, valid until 2126), made once with openssl; its key is not kept. */
const CERT_PEM = `-----BEGIN CERTIFICATE-----
MIIBgzCCASmgAwIBAgIUAJvDxAV8XHZz4y0y8PpvWNZrLkEwCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLa2NwLXRlc3QtY2EwIBcNMjYxMTI0MDgzNDM4WhgPMjEyNjEw
MzEwODM0MzhaMBYxFDASBgNVBAMMC2tjcC10ZXN0LWNhMFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEtBeelv8Z8cVRyrtQIyqlkFndlTq+m/1ultXL/UTDmp7Xt2O/
RhoiEsIVIB+ONidJChuZa0gMcANVNURKwLGy7qNTMFEwHQYDVR0OBBYEFFvuxmuU
/LV1eZvs1HNCNGt0VsCLMB8GA1UdIwQYMBaAFFvuxmuU/LV1eZvs1HNCNGt0VsCL
MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAMpx4Tu82TC10OP9
+DOCmAXxJNTPJwmIF+ouG0CWb8R2AiBXKam2w0EmgYSfkPsPUjpzJss3wltObpTb
wJq+VNDWCg==
-----END CERTIFICATE-----
`;

function b64(s: string): string {
  return Buffer.from(s).toString('base64');
}

/** A metav1.Time `ms` ago (whole seconds, as the apiserver keeps them). */
function timeAgo(ms: number): string {
  return new Date(Date.now() - ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * Cluster-scoped objects of one test: each carries the label `kcp-printers=<id>` and is deleted
 * (finalizers dropped first) when the test ends.
 */
interface ClusterObjects {
  readonly label: string;
  readonly selector: string;
  create(path: string, body: Record<string, unknown>): Promise<KubeJson>;
}

function clusterObjects(t: TestContext, client: UpstreamClient): ClusterObjects {
  const id = randomBytes(4).toString('hex');
  const created: string[] = [];
  t.after(async () => {
    for (const path of created.reverse()) {
      await client.request({
        method: 'PATCH',
        path,
        body: JSON.stringify({ metadata: { finalizers: null } }),
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      await client.request({ method: 'DELETE', path });
    }
  });
  return {
    label: id,
    selector: `labelSelector=kcp-printers%3D${id}`,
    async create(path, body) {
      const metadata = (body.metadata ?? {}) as Record<string, unknown>;
      const labels = (metadata.labels ?? {}) as Record<string, unknown>;
      const obj = await kube<KubeJson & { metadata: { name: string } }>(client, 'POST', path, {
        ...body,
        metadata: { ...metadata, labels: { ...labels, 'kcp-printers': id } },
      });
      created.push(`${path}/${obj.metadata.name}`);
      return obj;
    },
  };
}

function printer(group: string, resource: string): Printer {
  const p = printerFor(group, resource);
  if (p === undefined) throw new Error(`no printer for ${resource}.${group}`);
  return p;
}

/** The apiserver's Table of a collection (optionally filtered) compared with our printer's rows. */
async function compare(group: string, resource: string, path: string, query = ''): Promise<void> {
  const table = await apiserverTable(shared.admin, query === '' ? path : `${path}?${query}`);
  assertPrintsAsApiserver(printer(group, resource), table, resource);
}

/** Merge-patches an object or a subresource (status). */
async function patch(path: string, body: unknown): Promise<void> {
  await kube(shared.admin, 'PATCH', path, body);
}

test('printers: rbac.authorization.k8s.io rolebindings and clusterrolebindings', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const roleRef = { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' };
  const subjects = [
    { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' },
    { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'devs' },
    { kind: 'ServiceAccount', name: 'builder', namespace: ns },
    { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'bob' },
    { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'ops' },
    { kind: 'ServiceAccount', name: 'deployer', namespace: 'kube-system' },
  ];
  const rbPath = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`;
  await kube(shared.admin, 'POST', rbPath, { metadata: { name: 'nobody' }, roleRef });
  await kube(shared.admin, 'POST', rbPath, { metadata: { name: 'everyone' }, roleRef, subjects });
  await kube(shared.admin, 'POST', rbPath, {
    metadata: { name: 'role' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'missing' },
    subjects: subjects.slice(2, 3),
  });
  await compare('rbac.authorization.k8s.io', 'rolebindings', rbPath);

  const objects = clusterObjects(t, shared.admin);
  const crbPath = '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings';
  await objects.create(crbPath, { metadata: { name: `kcp-${objects.label}-none` }, roleRef });
  await objects.create(crbPath, { metadata: { name: `kcp-${objects.label}-all` }, roleRef, subjects });
  await compare('rbac.authorization.k8s.io', 'clusterrolebindings', crbPath, objects.selector);
});

test('printers: coordination.k8s.io leases', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const path = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`;
  await kube(shared.admin, 'POST', path, { metadata: { name: 'free' } });
  await kube(shared.admin, 'POST', path, {
    metadata: { name: 'held' },
    spec: { holderIdentity: 'node-a_1234', leaseDurationSeconds: 15, renewTime: new Date().toISOString().replace('Z', '000Z') },
  });
  await compare('coordination.k8s.io', 'leases', path);
});

test('printers: storage.k8s.io storageclasses, with the default class of a list', async (t) => {
  const objects = clusterObjects(t, shared.admin);
  const path = '/apis/storage.k8s.io/v1/storageclasses';
  const n = (s: string): string => `kcp-${objects.label}-${s}`;
  await objects.create(path, { metadata: { name: n('plain') }, provisioner: 'example.com/plain' });
  await objects.create(path, {
    metadata: { name: n('retain') },
    provisioner: 'example.com/retain',
    reclaimPolicy: 'Retain',
    volumeBindingMode: 'WaitForFirstConsumer',
    allowVolumeExpansion: true,
  });
  // Not a default: only "true" counts.
  await objects.create(path, {
    metadata: { name: n('maybe'), annotations: { 'storageclass.kubernetes.io/is-default-class': 'True' } },
    provisioner: 'example.com/maybe',
  });
  await compare('storage.k8s.io', 'storageclasses', path, objects.selector);

  // Two defaults: one by the beta annotation, then a newer one (creation times have whole seconds).
  await objects.create(path, {
    metadata: { name: n('old-default'), annotations: { 'storageclass.beta.kubernetes.io/is-default-class': 'true' } },
    provisioner: 'example.com/a',
  });
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await objects.create(path, {
    metadata: { name: n('new-default'), annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
    provisioner: 'example.com/b',
  });
  // One object (a GET) is never marked `(default)`.
  await compare('storage.k8s.io', 'storageclasses', `${path}/${n('new-default')}`);
  // A LIST marks the newest default only.
  const table = await apiserverTable(shared.admin, `${path}?${objects.selector}`);
  const rows = printStorageClassListRows(
    table.rows.map((r) => r.object),
    table.receivedAt,
  );
  assert.equal(rows.length, table.rows.length);
  table.rows.forEach((row, i) => {
    row.cells.forEach((cell, j) => {
      const ours = rows[i]?.cells[j] ?? null;
      assert.ok(sameButForTick(ours, cell), `row ${i} cell ${j}: ours ${JSON.stringify(ours)}, the apiserver's ${JSON.stringify(cell)}`);
    });
  });
  assert.ok(table.rows.some((r) => r.cells[0] === `${n('new-default')} (default)`));
  assert.ok(table.rows.some((r) => r.cells[0] === n('old-default')));
});

test('printers: storage.k8s.io volumeattributesclasses, volumeattachments, csinodes, csidrivers', async (t) => {
  const objects = clusterObjects(t, shared.admin);
  const n = (s: string): string => `kcp-${objects.label}-${s}`;

  const vacPath = '/apis/storage.k8s.io/v1/volumeattributesclasses';
  await objects.create(vacPath, { metadata: { name: n('fast') }, driverName: 'example.com/csi', parameters: { iops: '3000' } });
  await compare('storage.k8s.io', 'volumeattributesclasses', vacPath, objects.selector);

  const vaPath = '/apis/storage.k8s.io/v1/volumeattachments';
  await objects.create(vaPath, {
    metadata: { name: n('pending') },
    spec: { attacher: 'csi.example.com', nodeName: 'node-a', source: { persistentVolumeName: 'pv-a' } },
  });
  await objects.create(vaPath, {
    metadata: { name: n('attached') },
    spec: { attacher: 'csi.example.com', nodeName: 'node-b', source: { persistentVolumeName: 'pv-b' } },
  });
  await patch(`${vaPath}/${n('attached')}/status`, { status: { attached: true, attachmentMetadata: { dev: '/dev/xvdb' } } });
  await compare('storage.k8s.io', 'volumeattachments', vaPath, objects.selector);

  const csiNodePath = '/apis/storage.k8s.io/v1/csinodes';
  await objects.create(csiNodePath, { metadata: { name: n('none') }, spec: { drivers: [] } });
  await objects.create(csiNodePath, {
    metadata: { name: n('two') },
    spec: {
      drivers: [
        { name: 'a.example.com', nodeID: 'node-a' },
        { name: 'b.example.com', nodeID: 'node-a', topologyKeys: ['zone'] },
      ],
    },
  });
  await compare('storage.k8s.io', 'csinodes', csiNodePath, objects.selector);

  const driverPath = '/apis/storage.k8s.io/v1/csidrivers';
  await objects.create(driverPath, { metadata: { name: `${objects.label}.defaults.example.com` }, spec: {} });
  await objects.create(driverPath, {
    metadata: { name: `${objects.label}.full.example.com` },
    spec: {
      attachRequired: false,
      podInfoOnMount: true,
      storageCapacity: true,
      tokenRequests: [{ audience: 'vault' }, { audience: 'gcp', expirationSeconds: 3600 }],
      requiresRepublish: true,
      volumeLifecycleModes: ['Persistent', 'Ephemeral'],
    },
  });
  // An empty tokenRequests is stored as none: `<unset>`, as for a missing one.
  await objects.create(driverPath, {
    metadata: { name: `${objects.label}.empty.example.com` },
    spec: { tokenRequests: [], volumeLifecycleModes: ['Ephemeral'] },
  });
  await compare('storage.k8s.io', 'csidrivers', driverPath, objects.selector);
});

test('printers: storage.k8s.io csistoragecapacities get the default table, as from the apiserver', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const path = `/apis/storage.k8s.io/v1/namespaces/${ns}/csistoragecapacities`;
  await kube(shared.admin, 'POST', path, { metadata: { name: 'cap' }, storageClassName: 'fast', capacity: '10Gi' });
  const table = await apiserverTable(shared.admin, path);
  assert.deepEqual(
    table.columnDefinitions.map((c) => c.name),
    ['Name', 'Created At'],
  );
  assert.equal(printerFor('storage.k8s.io', 'csistoragecapacities'), undefined);
});

test('printers: scheduling.k8s.io priorityclasses, node.k8s.io runtimeclasses', async (t) => {
  const objects = clusterObjects(t, shared.admin);
  const n = (s: string): string => `kcp-${objects.label}-${s}`;
  const pcPath = '/apis/scheduling.k8s.io/v1/priorityclasses';
  // No globalDefault: true here, it would change the pods of tests running beside this one (unit-tested instead).
  await objects.create(pcPath, { metadata: { name: n('low') }, value: -10 });
  await objects.create(pcPath, { metadata: { name: n('high') }, value: 1_000_000, preemptionPolicy: 'Never', description: 'high' });
  await compare('scheduling.k8s.io', 'priorityclasses', pcPath, objects.selector);

  const rcPath = '/apis/node.k8s.io/v1/runtimeclasses';
  await objects.create(rcPath, { metadata: { name: n('gvisor') }, handler: 'runsc' });
  await objects.create(rcPath, { metadata: { name: n('kata') }, handler: 'kata', overhead: { podFixed: { memory: '120Mi' } } });
  await compare('node.k8s.io', 'runtimeclasses', rcPath, objects.selector);
});

test('printers: admissionregistration.k8s.io webhooks and admission policies', async (t) => {
  const objects = clusterObjects(t, shared.admin);
  const n = (s: string): string => `kcp-${objects.label}-${s}`;
  // Rules for a resource no one has, failing open: the shared cluster's other tests never meet them.
  const rules = [{ apiGroups: ['kcp-printers.example.com'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['nothings'] }];
  const webhook = (name: string): Record<string, unknown> => ({
    name,
    clientConfig: { url: 'https://127.0.0.1:1/hook' },
    rules,
    failurePolicy: 'Ignore',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
  });
  const mwPath = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
  await objects.create(mwPath, { metadata: { name: n('none') } });
  await objects.create(mwPath, { metadata: { name: n('two') }, webhooks: [webhook('a.example.com'), webhook('b.example.com')] });
  await compare('admissionregistration.k8s.io', 'mutatingwebhookconfigurations', mwPath, objects.selector);
  const vwPath = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';
  await objects.create(vwPath, { metadata: { name: n('none') } });
  await objects.create(vwPath, { metadata: { name: n('one') }, webhooks: [webhook('a.example.com')] });
  await compare('admissionregistration.k8s.io', 'validatingwebhookconfigurations', vwPath, objects.selector);

  const matchConstraints = { resourceRules: rules };
  const vapPath = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies';
  await objects.create(vapPath, {
    metadata: { name: n('plain') },
    spec: { matchConstraints, validations: [{ expression: 'true' }, { expression: '1 == 1' }] },
  });
  await objects.create(vapPath, {
    metadata: { name: n('params') },
    spec: { matchConstraints, paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, validations: [{ expression: 'true' }] },
  });
  await compare('admissionregistration.k8s.io', 'validatingadmissionpolicies', vapPath, objects.selector);

  // Each ParamRef case: none, namespace/name, */name, a selector (printed by its protobuf String()), an empty selector.
  const paramRefs: Record<string, Record<string, unknown> | undefined> = {
    none: undefined,
    namespaced: { name: 'settings', namespace: 'kube-system', parameterNotFoundAction: 'Deny' },
    anywhere: { name: 'settings', parameterNotFoundAction: 'Allow' },
    selector: {
      selector: {
        matchLabels: { tier: 'web', app: 'shop' },
        matchExpressions: [
          { key: 'env', operator: 'In', values: ['prod', 'staging'] },
          { key: 'canary', operator: 'DoesNotExist' },
        ],
      },
      parameterNotFoundAction: 'Deny',
    },
    everything: { selector: {}, parameterNotFoundAction: 'Deny' },
  };
  const vapbPath = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings';
  for (const [key, paramRef] of Object.entries(paramRefs)) {
    await objects.create(vapbPath, {
      metadata: { name: n(key) },
      spec: { policyName: n('params'), validationActions: ['Deny'], ...(paramRef === undefined ? {} : { paramRef }) },
    });
  }
  await compare('admissionregistration.k8s.io', 'validatingadmissionpolicybindings', vapbPath, objects.selector);

  const mapPath = '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies';
  const mutation = {
    patchType: 'ApplyConfiguration',
    applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"a": "b"}}}' },
  };
  await objects.create(mapPath, {
    metadata: { name: n('plain') },
    spec: { matchConstraints, mutations: [mutation, mutation], reinvocationPolicy: 'Never' },
  });
  await objects.create(mapPath, {
    metadata: { name: n('params') },
    spec: {
      matchConstraints,
      paramKind: { apiVersion: 'example.com/v1', kind: 'Setting' },
      mutations: [mutation],
      reinvocationPolicy: 'Never',
    },
  });
  await compare('admissionregistration.k8s.io', 'mutatingadmissionpolicies', mapPath, objects.selector);

  const mapbPath = '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings';
  for (const [key, paramRef] of Object.entries(paramRefs)) {
    await objects.create(mapbPath, {
      metadata: { name: n(key) },
      spec: { policyName: n('params'), ...(paramRef === undefined ? {} : { paramRef }) },
    });
  }
  await compare('admissionregistration.k8s.io', 'mutatingadmissionpolicybindings', mapbPath, objects.selector);
});

test('printers: certificates.k8s.io certificatesigningrequests and clustertrustbundles', async (t) => {
  const objects = clusterObjects(t, shared.admin);
  const n = (s: string): string => `kcp-${objects.label}-${s}`;
  const path = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
  const spec = { request: b64(CSR_PEM), signerName: 'example.com/signer', usages: ['client auth'] };
  await objects.create(path, { metadata: { name: n('pending') }, spec });
  for (const name of ['approved', 'denied', 'failed']) {
    await objects.create(path, {
      metadata: { name: n(name) },
      spec: { ...spec, expirationSeconds: name === 'approved' ? 3600 : 86_400 * 400 },
    });
  }
  const condition = (type: string): Record<string, unknown> => ({ type, status: 'True', reason: 'Test', message: 'by the test' });
  const decide = async (name: string, type: string): Promise<void> => {
    const csr = await kube<Record<string, unknown>>(shared.admin, 'GET', `${path}/${n(name)}`);
    await kube(shared.admin, 'PUT', `${path}/${n(name)}/approval`, { ...csr, status: { conditions: [condition(type)] } });
  };
  await decide('approved', 'Approved');
  await decide('denied', 'Denied');
  await decide('failed', 'Approved');
  await patch(`${path}/${n('approved')}/status`, { status: { certificate: b64(CERT_PEM) } });
  await patch(`${path}/${n('failed')}/status`, { status: { conditions: [condition('Approved'), condition('Failed')] } });
  await compare('certificates.k8s.io', 'certificatesigningrequests', path, objects.selector);

  const ctbPath = '/apis/certificates.k8s.io/v1/clustertrustbundles';
  await objects.create(ctbPath, { metadata: { name: n('unsigned') }, spec: { trustBundle: CERT_PEM } });
  await objects.create(ctbPath, {
    metadata: { name: `example.com:signer:${objects.label}` },
    spec: { signerName: 'example.com/signer', trustBundle: CERT_PEM },
  });
  await compare('certificates.k8s.io', 'clustertrustbundles', ctbPath, objects.selector);
});

test('printers: flowcontrol.apiserver.k8s.io flowschemas and prioritylevelconfigurations', async (t) => {
  const objects = clusterObjects(t, shared.admin);
  const n = (s: string): string => `kcp-${objects.label}-${s}`;
  const plPath = '/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations';
  await objects.create(plPath, {
    metadata: { name: n('queued') },
    spec: {
      type: 'Limited',
      limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Queue', queuing: { queues: 8, handSize: 2, queueLengthLimit: 10 } } },
    },
  });
  await objects.create(plPath, {
    metadata: { name: n('rejecting') },
    spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject' } } },
  });
  await compare('flowcontrol.apiserver.k8s.io', 'prioritylevelconfigurations', plPath, objects.selector);
  // Only the built-in `exempt` may be Exempt: the whole list has it.
  await compare('flowcontrol.apiserver.k8s.io', 'prioritylevelconfigurations', plPath);

  // Rules for a user who never calls: these schemas classify none of the other tests' requests.
  const rules = [
    {
      subjects: [{ kind: 'User', user: { name: `kcp-printers-${objects.label}` } }],
      resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: ['configmaps'], namespaces: ['*'] }],
    },
  ];
  const fsPath = '/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas';
  await objects.create(fsPath, {
    metadata: { name: n('by-user') },
    spec: { priorityLevelConfiguration: { name: n('queued') }, matchingPrecedence: 5000, distinguisherMethod: { type: 'ByUser' }, rules },
  });
  // The apiserver marks it Dangling (MissingPL True) by itself.
  await objects.create(fsPath, {
    metadata: { name: n('a-dangling') },
    spec: { priorityLevelConfiguration: { name: n('missing') }, matchingPrecedence: 5000, rules },
  });
  await objects.create(fsPath, {
    metadata: { name: n('default-precedence') },
    spec: { priorityLevelConfiguration: { name: n('rejecting') }, distinguisherMethod: { type: 'ByNamespace' }, rules },
  });
  await compare('flowcontrol.apiserver.k8s.io', 'flowschemas', fsPath, objects.selector);
  await compare('flowcontrol.apiserver.k8s.io', 'flowschemas', fsPath);
  // The apiserver lists them in FlowSchemaSequence order, not by name.
  const table = await apiserverTable(shared.admin, fsPath);
  assert.deepEqual(
    table.rows.map((r) => r.cells[0]),
    sortFlowSchemas(table.rows.map((r) => r.object)).map((o) => (o.metadata as { name: string }).name),
  );
});

test('printers: resource.k8s.io deviceclasses, resourceclaims, resourceclaimtemplates, resourceslices, devicetaintrules', async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const objects = clusterObjects(t, shared.admin);
  const n = (s: string): string => `kcp-${objects.label}-${s}`;

  const dcPath = '/apis/resource.k8s.io/v1/deviceclasses';
  await objects.create(dcPath, {
    metadata: { name: n('gpu') },
    spec: { selectors: [{ cel: { expression: 'device.driver == "gpu.example.com"' } }] },
  });
  await compare('resource.k8s.io', 'deviceclasses', dcPath, objects.selector);

  // Each state: pending, allocated, allocated and reserved, deleted (kept by a finalizer) with and without an allocation.
  const devices = { requests: [{ name: 'gpu', exactly: { deviceClassName: n('gpu') } }] };
  const claimPath = `/apis/resource.k8s.io/v1/namespaces/${ns}/resourceclaims`;
  for (const name of ['pending', 'allocated', 'reserved', 'deleted', 'deleted-allocated']) {
    await kube(shared.admin, 'POST', claimPath, {
      metadata: { name, ...(name.startsWith('deleted') ? { finalizers: ['example.com/keep'] } : {}) },
      spec: { devices },
    });
  }
  t.after(async () => {
    for (const name of ['deleted', 'deleted-allocated']) await patch(`${claimPath}/${name}`, { metadata: { finalizers: null } });
  });
  const allocation = {
    devices: { results: [{ request: 'gpu', driver: 'gpu.example.com', pool: 'node-a', device: 'gpu-0' }] },
    nodeSelector: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-a'] }] }] },
  };
  await patch(`${claimPath}/allocated/status`, { status: { allocation } });
  await patch(`${claimPath}/deleted-allocated/status`, { status: { allocation } });
  await patch(`${claimPath}/reserved/status`, {
    status: { allocation, reservedFor: [{ resource: 'pods', name: 'consumer', uid: '6f1d5b0e-0000-4000-8000-000000000001' }] },
  });
  await kube(shared.admin, 'DELETE', `${claimPath}/deleted`);
  await kube(shared.admin, 'DELETE', `${claimPath}/deleted-allocated`);
  await compare('resource.k8s.io', 'resourceclaims', claimPath);

  const templatePath = `/apis/resource.k8s.io/v1/namespaces/${ns}/resourceclaimtemplates`;
  await kube(shared.admin, 'POST', templatePath, { metadata: { name: 'one-gpu' }, spec: { spec: { devices } } });
  await compare('resource.k8s.io', 'resourceclaimtemplates', templatePath);

  const slicePath = '/apis/resource.k8s.io/v1/resourceslices';
  await objects.create(slicePath, {
    metadata: { name: n('node-a') },
    spec: {
      driver: 'gpu.example.com',
      nodeName: 'node-a',
      pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
      devices: [{ name: 'gpu-0' }],
    },
  });
  await objects.create(slicePath, {
    metadata: { name: n('network') },
    spec: { driver: 'net.example.com', allNodes: true, pool: { name: 'fabric', generation: 2, resourceSliceCount: 1 } },
  });
  await compare('resource.k8s.io', 'resourceslices', slicePath, objects.selector);

  const taintPath = '/apis/resource.k8s.io/v1/devicetaintrules';
  await objects.create(taintPath, {
    metadata: { name: n('drain') },
    spec: { deviceSelector: { driver: 'gpu.example.com' }, taint: { key: 'example.com/broken', value: 'fan', effect: 'NoExecute' } },
  });
  await objects.create(taintPath, {
    metadata: { name: n('old') },
    spec: { taint: { key: 'example.com/old', effect: 'NoSchedule', timeAdded: timeAgo(3 * 3_600_000) } },
  });
  await compare('resource.k8s.io', 'devicetaintrules', taintPath, objects.selector);
});

test('printers: storagemigration.k8s.io storageversionmigrations', async (t) => {
  const objects = clusterObjects(t, shared.admin);
  const n = (s: string): string => `kcp-${objects.label}-${s}`;
  const path = '/apis/storagemigration.k8s.io/v1/storageversionmigrations';
  await objects.create(path, { metadata: { name: n('new') }, spec: { resource: { group: '', resource: 'secrets' } } });
  await objects.create(path, { metadata: { name: n('running') }, spec: { resource: { group: 'apps', resource: 'deployments' } } });
  await objects.create(path, {
    metadata: { name: n('done') },
    spec: { resource: { group: 'rbac.authorization.k8s.io', resource: 'roles' } },
  });
  const condition = (type: string, status: string): Record<string, unknown> => ({
    type,
    status,
    reason: 'Test',
    message: 'by the test',
    lastTransitionTime: timeAgo(0),
  });
  await patch(`${path}/${n('running')}/status`, { status: { conditions: [condition('Running', 'True'), condition('Failed', 'False')] } });
  await patch(`${path}/${n('done')}/status`, { status: { conditions: [condition('Running', 'False'), condition('Succeeded', 'True')] } });
  await compare('storagemigration.k8s.io', 'storageversionmigrations', path, objects.selector);
});
