/**
 * Objects of many built-in types with rich specs, for byte comparisons of encodings against the
 * apiserver: every kind of optional field (pointers, maps, nested lists, quantities, times,
 * int-or-string, raw extensions, inline structs, bytes), in a namespace of the test's own
 * (cluster-scoped ones get a name unique to it).
 */

export interface RichObject {
  readonly apiVersion: string;
  readonly kind: string;
  /** Where to POST it. */
  readonly collection: string;
  readonly body: Record<string, unknown>;
}

/**
 * Objects the apiserver holds of its own, read rather than written: an APIService written by a
 * test would be an aggregated API with no server behind it for the whole run, which changes
 * discovery for every other test.
 */
export const BUILT_IN_OBJECTS: readonly { readonly apiVersion: string; readonly kind: string; readonly path: string }[] = [
  { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', path: '/apis/apiregistration.k8s.io/v1/apiservices/v1.apps' },
  { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', path: '/apis/apiregistration.k8s.io/v1/apiservices/v1.' },
  { apiVersion: 'v1', kind: 'Namespace', path: '/api/v1/namespaces/default' },
  { apiVersion: 'v1', kind: 'Service', path: '/api/v1/namespaces/default/services/kubernetes' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', path: '/apis/rbac.authorization.k8s.io/v1/clusterroles/admin' },
  { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'FlowSchema', path: '/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt' },
];

const POD_SPEC = {
  containers: [
    {
      name: 'app',
      image: 'registry.k8s.io/pause:3.10',
      command: ['/pause'],
      args: ['--x', '<&>'],
      env: [
        { name: 'A', value: 'b' },
        { name: 'FROM', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'RES', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
      ],
      ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
      resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '1', memory: '128Mi', 'ephemeral-storage': '1Gi' } },
      readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 5, failureThreshold: 3 },
      livenessProbe: { tcpSocket: { port: 8080 }, initialDelaySeconds: 10 },
      securityContext: { runAsNonRoot: true, runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
      volumeMounts: [{ name: 'config', mountPath: '/etc/config', readOnly: true }],
    },
  ],
  volumes: [
    { name: 'config', configMap: { name: 'cfg', defaultMode: 420, items: [{ key: 'a', path: 'a.txt' }] } },
    { name: 'scratch', emptyDir: { sizeLimit: '500Mi' } },
    {
      name: 'proj',
      projected: {
        sources: [
          { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
          { configMap: { name: 'cfg', optional: true } },
        ],
      },
    },
  ],
  nodeSelector: { 'kubernetes.io/os': 'linux' },
  tolerations: [
    { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
    { key: 'n', operator: 'Equal', value: 'v', effect: 'NoSchedule' },
  ],
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] }],
      },
    },
  },
  terminationGracePeriodSeconds: 5,
  priority: 0,
  dnsConfig: { options: [{ name: 'ndots', value: '2' }] },
};

/** A certificate request (CN=kcp), base64 of its PEM, as CertificateSigningRequest.spec.request carries it. */
const CSR_PEM_BASE64 =
  'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQ1V6Q0NBVHNDQVFBd0RqRU1NQW9HQTFVRUF3d0RhMk53TUlJQklqQU5CZ2txaGtpRzl3MEJBUUVGQUFPQwpBUThBTUlJQkNnS0NBUUVBeDB0Sk5Xb3hrR3FpZlFaTy9SaEY0UDVHdUxnL0h4NlJUUlViNnc3MFRXTnIvT3FFCkJXS0E5VVplM2tuQ1pVaGMySVB5ZEF3RjB3bG4zNWo5bzJzTWdMT3F0MTRNSkJTMzl2Q2N5QkRNZHRXRlh0UzYKaksrWVdMWFY0Y2w5KzRZdkZNOVVLNzdpeVM5TW4zNy9VeENjbXZkblhoS0JjTXE5SFRXRXAwU2FPS2YrdjkvQQowSGhHT3hXcDRjL2Q3bDQ1KzF3WGUrSTVwQXMxNW1uVGRLT1VmZ1duNVp4SW9GSjhDSFBwbzBlcjAzdGlUZ1BaCnA2VmdaMDJMeGhoQ243YUV5c1BpeGNrS3NjSEluUDRsSGpNSTcvZkk4RHNIb1VFWGZkMTBoLzlOdUtnZWtMY3UKWDBaWEpHYmNtdzVob3JMRFp1WHIzVk1IUlFxb2RiU1UvVGNOZ3dJREFRQUJvQUF3RFFZSktvWklodmNOQVFFTApCUUFEZ2dFQkFFREhvTkJ2UytwaEFTcktlQldheW41YXAyZlVsK2d2aTBTVXBYTytDRkVEcnJRYUc4cGcyYjRjCnZsWWxoTUxHNnNYU1hJeHdveXNrblVsUUpVK3ZWaHZoRVFWWk83VVJrOG0raWJQZk1NSGE2RnNwQTBlZlpKaFQKRks3cDlwOWMreXNYbm8ydHBRZTVZT3grTzV3SkpUanhQdnQzMHNLOUZBOG1zK1IxMlZRZkRsTVZ2OGd6cFMxWApoNzZ0NTh6azExV3picWJmQlYxdkdVSWYvcWN6TFMzZEh5Y1lRZzhkT3JSR1ltTm40ZXJuMXdSK2ZqUmdSeEdjCm5SZmlVdHI4eXJTUnBGbW9DOGovanVCVWE3ZysrZDBsWnhBZncxSzE3YWZuc0dSRDFEa3FXNGJjOHJqa0V3RVMKMVZKazZITUViZUoyY0NHeTN0SkJrZTFHM3VZZWtTVT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==';

export function RICH_OBJECTS(ns: string): RichObject[] {
  const unique = ns;
  const core = (resource: string): string => `/api/v1/namespaces/${ns}/${resource}`;
  const group = (gv: string, resource: string): string => `/apis/${gv}/namespaces/${ns}/${resource}`;
  const cluster = (gv: string, resource: string): string => `/apis/${gv}/${resource}`;
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      collection: core('configmaps'),
      body: {
        metadata: { name: 'cm', labels: { b: '2', a: '1', 'a.b/c': 'x' }, annotations: { note: '<&> ünïcødé', 'z.example/b': '' } },
        data: { z: 'last', a: 'first', empty: '' },
        binaryData: { bin: 'AAEC', none: '' },
      },
    },
    { apiVersion: 'v1', kind: 'ConfigMap', collection: core('configmaps'), body: { metadata: { generateName: 'plain-' } } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      collection: core('secrets'),
      body: { metadata: { name: 's' }, type: 'Opaque', data: { k: 'dmFsdWU=' }, stringData: { t: 'text' } },
    },
    { apiVersion: 'v1', kind: 'Pod', collection: core('pods'), body: { metadata: { name: 'rich', ownerReferences: [] }, spec: POD_SPEC } },
    {
      apiVersion: 'v1',
      kind: 'Service',
      collection: core('services'),
      body: {
        metadata: { name: 'svc' },
        spec: {
          selector: { app: 'x' },
          ports: [
            { name: 'http', port: 80, targetPort: 'http' },
            { name: 'n', port: 81, targetPort: 9000 },
          ],
        },
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      collection: group('apps/v1', 'deployments'),
      body: {
        metadata: { name: 'd' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'd' } },
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: 1 } },
          template: { metadata: { labels: { app: 'd' } }, spec: POD_SPEC },
        },
      },
    },
    {
      apiVersion: 'batch/v1',
      kind: 'Job',
      collection: group('batch/v1', 'jobs'),
      body: {
        metadata: { name: 'j' },
        spec: { backoffLimit: 2, parallelism: 1, template: { spec: { ...POD_SPEC, restartPolicy: 'Never' } }, suspend: true },
      },
    },
    {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      collection: group('coordination.k8s.io/v1', 'leases'),
      body: {
        metadata: { name: 'l' },
        spec: {
          holderIdentity: 'me',
          leaseDurationSeconds: 15,
          acquireTime: '2026-01-02T03:04:05.123456Z',
          renewTime: '2026-01-02T03:04:06.000001Z',
          leaseTransitions: 3,
        },
      },
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      collection: group('policy/v1', 'poddisruptionbudgets'),
      body: {
        metadata: { name: 'pdb' },
        spec: { minAvailable: '50%', selector: { matchExpressions: [{ key: 'app', operator: 'Exists' }] } },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      collection: core('resourcequotas'),
      body: { metadata: { name: 'q' }, spec: { hard: { pods: '10', 'requests.cpu': '4', 'requests.memory': '8Gi' } } },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      collection: group('networking.k8s.io/v1', 'networkpolicies'),
      body: {
        metadata: { name: 'np' },
        spec: {
          podSelector: {},
          policyTypes: ['Ingress'],
          ingress: [
            {
              from: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] } }],
              ports: [{ port: 80 }, { port: 'http', protocol: 'TCP' }],
            },
          ],
        },
      },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      collection: group('rbac.authorization.k8s.io/v1', 'roles'),
      body: { metadata: { name: 'r' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }] },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'ControllerRevision',
      collection: group('apps/v1', 'controllerrevisions'),
      body: { metadata: { name: 'cr' }, revision: 3, data: { spec: { template: { x: [1, 2, { y: 'z' }] } } } },
    },
    {
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      collection: cluster('scheduling.k8s.io/v1', 'priorityclasses'),
      body: { metadata: { name: `pc-${unique}` }, value: 1000, description: 'd', preemptionPolicy: 'Never' },
    },
    {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      collection: group('events.k8s.io/v1', 'events'),
      body: {
        metadata: { name: 'ev' },
        eventTime: '2026-01-02T03:04:05.654321Z',
        reportingController: 'x/y',
        reportingInstance: 'i',
        action: 'A',
        reason: 'R',
        type: 'Normal',
        regarding: { kind: 'Pod', name: 'p', namespace: ns },
        note: 'n',
      },
    },
    {
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      collection: group('autoscaling/v2', 'horizontalpodautoscalers'),
      body: {
        metadata: { name: 'hpa' },
        spec: {
          scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd' },
          minReplicas: 1,
          maxReplicas: 5,
          metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }],
          behavior: { scaleDown: { stabilizationWindowSeconds: 300, policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] } },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      collection: core('serviceaccounts'),
      body: { metadata: { name: 'sa' }, automountServiceAccountToken: false, imagePullSecrets: [{ name: 'pull' }] },
    },
    {
      apiVersion: 'v1',
      kind: 'LimitRange',
      collection: core('limitranges'),
      body: {
        metadata: { name: 'lr' },
        spec: {
          limits: [
            {
              type: 'Container',
              max: { cpu: '2' },
              min: { cpu: '10m' },
              default: { cpu: '500m' },
              defaultRequest: { cpu: '100m' },
              maxLimitRequestRatio: { cpu: '10' },
            },
          ],
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'PodTemplate',
      collection: core('podtemplates'),
      body: { metadata: { name: 'pt' }, template: { metadata: { labels: { a: 'b' } }, spec: POD_SPEC } },
    },
    {
      apiVersion: 'v1',
      kind: 'ReplicationController',
      collection: core('replicationcontrollers'),
      body: {
        metadata: { name: 'rc' },
        spec: { replicas: 0, selector: { app: 'rc' }, template: { metadata: { labels: { app: 'rc' } }, spec: POD_SPEC } },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Endpoints',
      collection: core('endpoints'),
      body: {
        metadata: { name: 'ep' },
        subsets: [
          {
            addresses: [{ ip: '10.1.2.3', hostname: 'h', targetRef: { kind: 'Pod', name: 'p' } }],
            ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
          },
        ],
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      collection: group('apps/v1', 'statefulsets'),
      body: {
        metadata: { name: 'ss' },
        spec: {
          replicas: 0,
          serviceName: 'svc',
          selector: { matchLabels: { app: 'ss' } },
          template: { metadata: { labels: { app: 'ss' } }, spec: POD_SPEC },
          volumeClaimTemplates: [
            { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
          ],
          persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' },
        },
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      collection: group('apps/v1', 'daemonsets'),
      body: {
        metadata: { name: 'ds' },
        spec: {
          selector: { matchLabels: { app: 'ds' } },
          template: { metadata: { labels: { app: 'ds' } }, spec: POD_SPEC },
          updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%', maxSurge: 0 } },
        },
      },
    },
    {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      collection: group('batch/v1', 'cronjobs'),
      body: {
        metadata: { name: 'cj' },
        spec: {
          schedule: '*/5 * * * *',
          timeZone: 'Etc/UTC',
          suspend: true,
          jobTemplate: { spec: { template: { spec: { ...POD_SPEC, restartPolicy: 'OnFailure' } } } },
          successfulJobsHistoryLimit: 1,
        },
      },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      collection: group('networking.k8s.io/v1', 'ingresses'),
      body: {
        metadata: { name: 'ing' },
        spec: {
          tls: [{ hosts: ['a.example'], secretName: 's' }],
          rules: [
            {
              host: 'a.example',
              http: {
                paths: [
                  { path: '/', pathType: 'Prefix', backend: { service: { name: 'svc', port: { number: 80 } } } },
                  { path: '/n', pathType: 'Exact', backend: { service: { name: 'svc', port: { name: 'http' } } } },
                ],
              },
            },
          ],
        },
      },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      collection: group('discovery.k8s.io/v1', 'endpointslices'),
      body: {
        metadata: { name: 'es', labels: { 'kubernetes.io/service-name': 'svc' } },
        addressType: 'IPv4',
        endpoints: [
          {
            addresses: ['10.1.2.3'],
            conditions: { ready: true, serving: true, terminating: false },
            nodeName: 'n1',
            zone: 'z',
            hints: { forZones: [{ name: 'z' }] },
          },
        ],
        ports: [{ name: 'http', port: 80, protocol: 'TCP', appProtocol: 'http' }],
      },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      collection: group('rbac.authorization.k8s.io/v1', 'rolebindings'),
      body: {
        metadata: { name: 'rb' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' },
        subjects: [
          { kind: 'ServiceAccount', name: 'sa', namespace: ns },
          { kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' },
        ],
      },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      collection: cluster('rbac.authorization.k8s.io/v1', 'clusterroles'),
      body: {
        metadata: { name: `cr-${unique}` },
        rules: [{ nonResourceURLs: ['/healthz'], verbs: ['get'] }],
        aggregationRule: { clusterRoleSelectors: [{ matchLabels: { agg: unique } }] },
      },
    },
    {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      collection: cluster('storage.k8s.io/v1', 'storageclasses'),
      body: {
        metadata: { name: `sc-${unique}` },
        provisioner: 'example.com/x',
        parameters: { b: '2', a: '1' },
        reclaimPolicy: 'Retain',
        allowVolumeExpansion: true,
        mountOptions: ['ro'],
        volumeBindingMode: 'WaitForFirstConsumer',
      },
    },
    {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      collection: cluster('storage.k8s.io/v1', 'csidrivers'),
      body: {
        metadata: { name: `csi.${unique}.example` },
        spec: {
          attachRequired: false,
          podInfoOnMount: true,
          volumeLifecycleModes: ['Persistent', 'Ephemeral'],
          tokenRequests: [{ audience: 'a', expirationSeconds: 3600 }],
          fsGroupPolicy: 'File',
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      collection: '/api/v1/persistentvolumes',
      body: {
        metadata: { name: `pv-${unique}` },
        spec: {
          capacity: { storage: '5Gi' },
          accessModes: ['ReadWriteOnce'],
          hostPath: { path: '/tmp/x', type: 'DirectoryOrCreate' },
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: 'manual',
          volumeMode: 'Filesystem',
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      collection: core('persistentvolumeclaims'),
      body: {
        metadata: { name: 'pvc' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' }, limits: { storage: '2Gi' } },
          storageClassName: 'manual',
          selector: { matchLabels: { a: 'b' } },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Node',
      collection: '/api/v1/nodes',
      body: {
        metadata: { name: `node-${unique}`, labels: { 'kubernetes.io/hostname': 'h' } },
        spec: {
          podCIDR: '10.244.0.0/24',
          podCIDRs: ['10.244.0.0/24'],
          taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }],
          unschedulable: true,
        },
      },
    },
    {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      collection: cluster('node.k8s.io/v1', 'runtimeclasses'),
      body: {
        metadata: { name: `rc-${unique}` },
        handler: 'runc',
        overhead: { podFixed: { cpu: '250m', memory: '120Mi' } },
        scheduling: { nodeSelector: { a: 'b' }, tolerations: [{ key: 'x', operator: 'Exists' }] },
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      collection: cluster('admissionregistration.k8s.io/v1', 'validatingwebhookconfigurations'),
      body: {
        metadata: { name: `vw-${unique}` },
        webhooks: [
          {
            name: `v.${unique}.example.com`,
            clientConfig: { url: 'https://example.com/validate', caBundle: 'AAEC' },
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], scope: 'Namespaced' }],
            failurePolicy: 'Ignore',
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
            timeoutSeconds: 5,
            namespaceSelector: { matchLabels: { never: unique } },
            matchConditions: [{ name: 'c', expression: 'true' }],
          },
        ],
      },
    },
    {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'FlowSchema',
      collection: cluster('flowcontrol.apiserver.k8s.io/v1', 'flowschemas'),
      body: {
        metadata: { name: `fs-${unique}` },
        spec: {
          priorityLevelConfiguration: { name: 'global-default' },
          matchingPrecedence: 9000,
          distinguisherMethod: { type: 'ByUser' },
          rules: [
            {
              subjects: [{ kind: 'User', user: { name: `nobody-${unique}` } }],
              resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'], namespaces: ['*'] }],
            },
          ],
        },
      },
    },
    {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'PriorityLevelConfiguration',
      collection: cluster('flowcontrol.apiserver.k8s.io/v1', 'prioritylevelconfigurations'),
      body: {
        metadata: { name: `pl-${unique}` },
        spec: {
          type: 'Limited',
          limited: {
            nominalConcurrencyShares: 5,
            lendablePercent: 10,
            limitResponse: { type: 'Queue', queuing: { queues: 8, handSize: 2, queueLengthLimit: 10 } },
          },
        },
      },
    },
    {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      collection: cluster('certificates.k8s.io/v1', 'certificatesigningrequests'),
      body: {
        metadata: { name: `csr-${unique}` },
        spec: {
          request: CSR_PEM_BASE64,
          signerName: 'example.com/signer',
          usages: ['digital signature', 'key encipherment', 'client auth'],
          expirationSeconds: 3600,
        },
      },
    },
    {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'DeviceClass',
      collection: cluster('resource.k8s.io/v1', 'deviceclasses'),
      body: { metadata: { name: `dc-${unique}` }, spec: { selectors: [{ cel: { expression: 'device.driver == "gpu.example.com"' } }] } },
    },
    {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      collection: group('resource.k8s.io/v1', 'resourceclaims'),
      body: {
        metadata: { name: 'claim' },
        spec: {
          devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: `dc-${unique}`, allocationMode: 'ExactCount', count: 2 } }] },
        },
      },
    },
    {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      collection: cluster('apiextensions.k8s.io/v1', 'customresourcedefinitions'),
      body: {
        metadata: { name: `things.${unique}.kcp.test` },
        spec: {
          group: `${unique}.kcp.test`,
          names: { plural: 'things', singular: 'thing', kind: 'Thing', listKind: 'ThingList' },
          scope: 'Namespaced',
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: {
                  type: 'object',
                  properties: {
                    spec: {
                      type: 'object',
                      properties: { size: { type: 'integer', minimum: 1, default: 3 }, tags: { type: 'array', items: { type: 'string' } } },
                    },
                  },
                  'x-kubernetes-preserve-unknown-fields': true,
                },
              },
              additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }],
            },
          ],
        },
      },
    },
  ];
}
