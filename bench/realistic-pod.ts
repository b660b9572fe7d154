/**
 * Pods as a cluster holds them: made by a ReplicaSet (its ownerReference, pod-template-hash),
 * bound to a node, then told Running by its kubelet, so that each carries the managedFields a
 * real pod carries (kube-controller-manager's Update of metadata and spec, the kubelet's Update
 * of status). No kubelet runs: the status is written as one would write it, through the status
 * subresource. About 4.5 KB of JSON each, a third of it managedFields.
 */
import type { UpstreamClient } from '../src/upstream/client.ts';

function podName(i: number): string {
  return `web-7d4b9c8f6-${String(i).padStart(5, '0')}`;
}

/** The pod a ReplicaSet's controller creates (POST as kube-controller-manager). */
function podSpec(i: number): unknown {
  const name = podName(i);
  return {
    metadata: {
      name,
      generateName: 'web-7d4b9c8f6-',
      labels: { app: 'web', tier: 'frontend', 'pod-template-hash': '7d4b9c8f6', 'app.kubernetes.io/version': '1.27.3' },
      annotations: {
        'kubectl.kubernetes.io/restartedAt': '2026-11-20T10:00:00Z',
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '9090',
      },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: 'web-7d4b9c8f6',
          uid: '5b0e6b0a-3c55-4c3e-9d43-6f2b1d1f0a11',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      nodeName: `node-${String(Math.floor(i / 50)).padStart(4, '0')}`,
      serviceAccountName: 'web',
      containers: [
        {
          name: 'web',
          image: 'registry.example.com/web:1.27.3',
          ports: [
            { name: 'http', containerPort: 8080, protocol: 'TCP' },
            { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
          ],
          env: [
            { name: 'LOG_LEVEL', value: 'info' },
            { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
            { name: 'POD_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
            { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'web-db', key: 'url' } } },
          ],
          resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
          livenessProbe: {
            httpGet: { path: '/healthz', port: 'http', scheme: 'HTTP' },
            periodSeconds: 10,
            timeoutSeconds: 1,
            successThreshold: 1,
            failureThreshold: 3,
          },
          readinessProbe: {
            httpGet: { path: '/ready', port: 'http', scheme: 'HTTP' },
            periodSeconds: 5,
            timeoutSeconds: 1,
            successThreshold: 1,
            failureThreshold: 3,
          },
          volumeMounts: [
            { name: 'config', mountPath: '/etc/web', readOnly: true },
            { name: 'kube-api-access-x7k2p', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: 'config', configMap: { name: 'web-config', defaultMode: 420 } },
        {
          name: 'kube-api-access-x7k2p',
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
            ],
          },
        },
      ],
    },
  };
}

/** What the kubelet reports once the pod runs (PATCH of the status subresource as kubelet). */
function podStatus(i: number): unknown {
  const at = '2026-11-20T10:00:05Z';
  const ip = `10.244.${String(Math.floor(i / 250) % 256)}.${String((i % 250) + 2)}`;
  return {
    status: {
      phase: 'Running',
      conditions: [
        { type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: at },
        { type: 'Initialized', status: 'True', lastTransitionTime: at },
        { type: 'Ready', status: 'True', lastTransitionTime: '2026-11-20T10:00:12Z' },
        { type: 'ContainersReady', status: 'True', lastTransitionTime: '2026-11-20T10:00:12Z' },
        { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-11-20T10:00:00Z' },
      ],
      hostIP: `192.168.1.${String((Math.floor(i / 50) % 250) + 2)}`,
      hostIPs: [{ ip: `192.168.1.${String((Math.floor(i / 50) % 250) + 2)}` }],
      podIP: ip,
      podIPs: [{ ip }],
      startTime: at,
      containerStatuses: [
        {
          name: 'web',
          state: { running: { startedAt: '2026-11-20T10:00:07Z' } },
          ready: true,
          restartCount: 0,
          image: 'registry.example.com/web:1.27.3',
          imageID: 'registry.example.com/web@sha256:3b1f9c7e0a5d4e2f8c6b9a1d0e7f3c5b2a4d6e8f0a1b3c5d7e9f1a3b5c7d9e1f',
          containerID: `containerd://${i.toString(16).padStart(8, '0')}9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c1b3d5f7e9a1c3e5b7d9f1a3c5e7b`,
          started: true,
        },
      ],
      qosClass: 'Burstable',
    },
  };
}

async function must(res: Promise<{ statusCode: number; body: Buffer }>, what: string): Promise<void> {
  const { statusCode, body } = await res;
  if (statusCode >= 300) throw new Error(`${what}: ${String(statusCode)} ${body.toString().slice(0, 300)}`);
}

/** Creates pod `i` in `namespace` and writes its Running status, as its controller and kubelet would. */
export async function createRealisticPod(client: UpstreamClient, namespace: string, i: number): Promise<void> {
  const base = `/api/v1/namespaces/${namespace}/pods`;
  await must(
    client.request({ method: 'POST', path: `${base}?fieldManager=kube-controller-manager`, body: JSON.stringify(podSpec(i)) }),
    `create pod ${String(i)}`,
  );
  await must(
    client.request({
      method: 'PATCH',
      path: `${base}/${podName(i)}/status?fieldManager=kubelet`,
      headers: { 'content-type': 'application/strategic-merge-patch+json' },
      body: JSON.stringify(podStatus(i)),
    }),
    `status of pod ${String(i)}`,
  );
}

/** A change a controller makes (an annotation, by merge patch): one update event per call. */
export async function touchPod(client: UpstreamClient, namespace: string, i: number, value: string): Promise<void> {
  await must(
    client.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${namespace}/pods/${podName(i)}?fieldManager=bench-controller`,
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ metadata: { annotations: { 'bench/touched': value } } }),
    }),
    `touch pod ${String(i)}`,
  );
}

export async function deletePod(client: UpstreamClient, namespace: string, i: number): Promise<void> {
  await must(
    client.request({
      method: 'DELETE',
      path: `/api/v1/namespaces/${namespace}/pods/${podName(i)}`,
      body: JSON.stringify({ gracePeriodSeconds: 0 }),
    }),
    `delete pod ${String(i)}`,
  );
}
