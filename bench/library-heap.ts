/**
 * Heap per pod held by the library's pod informer (kube-cache-proxy/informer, from its sources),
 * with and without the managedFields-stripping transform, and with cheap reads (`cacheDecoded`)
 * once every pod has been read: `node --expose-gc bench/library-heap.ts [count]` (default 5,000).
 *
 * The pods are served by a scripted upstream (test/helpers/fake-upstream-client.ts), not an
 * apiserver, so that the figures are the informer's alone and the same at each run: each pod is
 * shaped as a Deployment's pod on a kubelet's node (two containers, env, volumes, status with
 * conditions) with the managedFields the apiserver records for it (kube-controller-manager's
 * create, the scheduler's binding, the kubelet's status updates). Each mode runs in a child
 * process of its own: baseline heap after full collections with the factory made, then again
 * once synced (and, for the cached modes, once list() has decoded every pod); the difference
 * over the count is the heap per pod. Prints a Markdown table to stdout.
 */
import { fork } from 'node:child_process';
import { getHeapStatistics } from 'node:v8';
import { fileURLToPath } from 'node:url';
import type { InformerForOptions, SharedIndexInformer } from '../src/library/informer.ts';
import { pods, transformStripManagedFields } from '../src/library/informer.ts';
import { newTypedInformerFactory } from '../src/library/typed-factory.ts';
import { jsonResponse, newFakeUpstream } from '../test/helpers/fake-upstream-client.ts';
import type { V1Pod } from '@kubernetes/client-node';

const MODES = ['plain', 'strip', 'cached', 'strip+cached'] as const;
type Mode = (typeof MODES)[number];

const count = Number(process.argv[2] ?? 5_000);

/** A Deployment's pod as the apiserver returns it after the kubelet reported it running, with its managedFields. */
function pod(i: number): Record<string, unknown> {
  const name = `web-7d4b9c8f6d-${i.toString(36).padStart(5, '0')}`;
  const time = '2026-11-20T10:00:00Z';
  const container = (n: string, image: string): Record<string, unknown> => ({
    name: n,
    image,
    ports: [{ containerPort: 8080, protocol: 'TCP' }],
    env: [
      { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
      { name: 'LOG_LEVEL', value: 'info' },
    ],
    resources: { limits: { cpu: '500m', memory: '256Mi' }, requests: { cpu: '100m', memory: '128Mi' } },
    volumeMounts: [{ name: 'kube-api-access-x1y2z', readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }],
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'IfNotPresent',
  });
  const fieldsContainer = (n: string): Record<string, unknown> => ({
    [`k:{"name":"${n}"}`]: {
      '.': {},
      'f:env': {
        '.': {},
        'k:{"name":"LOG_LEVEL"}': { '.': {}, 'f:name': {}, 'f:value': {} },
        'k:{"name":"POD_NAME"}': { '.': {}, 'f:name': {}, 'f:valueFrom': { '.': {}, 'f:fieldRef': {} } },
      },
      'f:image': {},
      'f:imagePullPolicy': {},
      'f:name': {},
      'f:ports': { '.': {}, 'k:{"containerPort":8080,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {}, 'f:protocol': {} } },
      'f:resources': {
        '.': {},
        'f:limits': { '.': {}, 'f:cpu': {}, 'f:memory': {} },
        'f:requests': { '.': {}, 'f:cpu': {}, 'f:memory': {} },
      },
      'f:terminationMessagePath': {},
      'f:terminationMessagePolicy': {},
    },
  });
  const condition = (type: string): Record<string, unknown> => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: time });
  const statusCondition = (type: string): Record<string, unknown> => ({
    [`k:{"type":"${type}"}`]: { '.': {}, 'f:lastProbeTime': {}, 'f:lastTransitionTime': {}, 'f:status': {}, 'f:type': {} },
  });
  return {
    metadata: {
      name,
      generateName: 'web-7d4b9c8f6d-',
      namespace: `team-${String(i % 20)}`,
      uid: `6f1c${i.toString(16).padStart(8, '0')}-1b2c-4d5e-8f90-a1b2c3d4e5f6`,
      resourceVersion: String(1000 + i),
      creationTimestamp: time,
      labels: { app: 'web', 'pod-template-hash': '7d4b9c8f6d' },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: 'web-7d4b9c8f6d',
          uid: '0a1b2c3d-4e5f-6789-abcd-ef0123456789',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'v1',
          time,
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': {
              'f:generateName': {},
              'f:labels': { '.': {}, 'f:app': {}, 'f:pod-template-hash': {} },
              'f:ownerReferences': { '.': {}, 'k:{"uid":"0a1b2c3d-4e5f-6789-abcd-ef0123456789"}': {} },
            },
            'f:spec': {
              'f:containers': { ...fieldsContainer('web'), ...fieldsContainer('sidecar') },
              'f:dnsPolicy': {},
              'f:enableServiceLinks': {},
              'f:restartPolicy': {},
              'f:schedulerName': {},
              'f:securityContext': {},
              'f:terminationGracePeriodSeconds': {},
            },
          },
        },
        {
          manager: 'kubelet',
          operation: 'Update',
          apiVersion: 'v1',
          time,
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:status': {
              'f:conditions': {
                ...statusCondition('ContainersReady'),
                ...statusCondition('Initialized'),
                ...statusCondition('PodReadyToStartContainers'),
                ...statusCondition('Ready'),
              },
              'f:containerStatuses': {},
              'f:hostIP': {},
              'f:hostIPs': {},
              'f:phase': {},
              'f:podIP': {},
              'f:podIPs': { '.': {}, [`k:{"ip":"10.244.${String(i % 250)}.${String(i % 200)}"}`]: { '.': {}, 'f:ip': {} } },
              'f:startTime': {},
            },
          },
          subresource: 'status',
        },
      ],
    },
    spec: {
      volumes: [
        {
          name: 'kube-api-access-x1y2z',
          projected: { sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }], defaultMode: 420 },
        },
      ],
      containers: [container('web', 'registry.example.com/web:1.4.2'), container('sidecar', 'registry.example.com/proxy:2.0.1')],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      serviceAccountName: 'default',
      nodeName: `node-${String(i % 50)}`,
      securityContext: {},
      schedulerName: 'default-scheduler',
      tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
    },
    status: {
      phase: 'Running',
      conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(condition),
      hostIP: `172.18.0.${String(i % 50)}`,
      podIP: `10.244.${String(i % 250)}.${String(i % 200)}`,
      startTime: time,
      containerStatuses: ['web', 'sidecar'].map((n) => ({
        name: n,
        state: { running: { startedAt: time } },
        ready: true,
        restartCount: 0,
        image: `registry.example.com/${n}:1`,
        imageID: `registry.example.com/${n}@sha256:${'ab'.repeat(32)}`,
        containerID: `containerd://${'cd'.repeat(32)}`,
        started: true,
      })),
      qosClass: 'Burstable',
    },
  };
}

function heapUsed(): number {
  for (let i = 0; i < 4; i++) globalThis.gc?.();
  return getHeapStatistics().used_heap_size;
}

/** In the child: one informer in `mode`; sends the heap per pod held. */
async function measure(mode: Mode): Promise<void> {
  const up = newFakeUpstream({
    respond: () =>
      jsonResponse(200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: String(1000 + count) },
        items: Array.from({ length: count }, (_, i) => pod(i)),
      }),
  });
  const factory = newTypedInformerFactory(up.client, { useWatchList: false, pageSize: 0 });
  const options: InformerForOptions<V1Pod> = mode.endsWith('cached') ? { cacheDecoded: true } : {};
  const informer: SharedIndexInformer<V1Pod> = factory.informerFor(pods, options);
  if (mode.startsWith('strip')) informer.setTransform(transformStripManagedFields);
  const before = heapUsed();
  factory.start();
  await factory.waitForCacheSync();
  const indexer = informer.getIndexer();
  if (indexer.len() !== count) throw new Error(`${String(indexer.len())} pods held, not ${String(count)}`);
  // The first list() decodes every pod (cached: once for all); the second shows what a read costs after.
  const firstStart = performance.now();
  indexer.list();
  const firstListMs = performance.now() - firstStart;
  const secondStart = performance.now();
  indexer.list();
  const listMs = performance.now() - secondStart;
  // Not cached: the lists read are garbage now; cached: their objects are what the informer keeps.
  const after = heapUsed();
  process.send?.({ mode, perPod: (after - before) / count, firstListMs, listMs });
  await factory.shutdown();
}

const child = process.argv[3];
if (child !== undefined) {
  await measure(child as Mode);
} else {
  if (globalThis.gc === undefined) {
    process.stderr.write('run with node --expose-gc bench/library-heap.ts [count]\n');
    process.exit(2);
  }
  const withFields = Buffer.byteLength(JSON.stringify({ kind: 'Pod', apiVersion: 'v1', ...pod(1) }));
  const stripped = pod(1);
  delete (stripped['metadata'] as { managedFields?: unknown }).managedFields;
  const withoutFields = Buffer.byteLength(JSON.stringify({ kind: 'Pod', apiVersion: 'v1', ...stripped }));
  interface Result {
    readonly perPod: number;
    readonly firstListMs: number;
    readonly listMs: number;
  }
  const results = new Map<Mode, Result>();
  for (const mode of MODES) {
    const result = await new Promise<Result>((resolve, reject) => {
      const proc = fork(fileURLToPath(import.meta.url), [String(count), mode], { execArgv: ['--expose-gc'] });
      proc.on('message', (m: Result) => {
        resolve(m);
      });
      proc.on('exit', (code) => {
        if (code !== 0) reject(new Error(`${mode}: exit ${String(code)}`));
      });
    });
    results.set(mode, result);
    process.stderr.write(`${mode}: ${result.perPod.toFixed(0)} bytes of heap per pod\n`);
  }
  const row = (label: string, mode: Mode): string => {
    const r = results.get(mode);
    if (r === undefined) return `| ${label} | | | |`;
    return `| ${label} | ${(r.perPod / 1024).toFixed(2)} KiB | ${r.firstListMs.toFixed(0)} ms | ${r.listMs.toFixed(0)} ms |`;
  };
  console.log(`${String(count)} pods; JSON ${String(withFields)} bytes each with managedFields, ${String(withoutFields)} without.\n`);
  console.log(`| informer | heap per pod held | first list() of ${String(count)} | next list() |`);
  console.log('| --- | --- | --- | --- |');
  console.log(row('default: bytes, decoded at each read', 'plain'));
  console.log(row('transformStripManagedFields', 'strip'));
  console.log(row('cacheDecoded (after every pod was read)', 'cached'));
  console.log(row('cacheDecoded + transformStripManagedFields', 'strip+cached'));
}
