/**
 * Printers of cluster.ts for what the test cluster does not serve or cannot hold (LeaseCandidate,
 * StorageVersion, ResourcePoolStatusRequest, Workload, PodGroup, CompositePodGroup,
 * EvictionRequest, Eviction; PodCertificateRequest, which only a node's kubelet can create; a
 * global default PriorityClass, which would change the pods of tests running beside): each
 * case's cells and the columns are what kube-apiserver v1.37.2's own printers (printers.go, run
 * through printerstorage.TableConvertor as the apiserver runs them) answered for the same object,
 * its times given relative to the moment of printing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Cell, ColumnDefinition, KubeJson } from '../../../src/table/model.ts';
import { printStorageClassListRows, sortFlowSchemas } from '../../../src/table/printers/cluster.ts';
import { printerFor } from '../../../src/table/printers/index.ts';

/** The fixed clock of these tests: a whole second, as metav1.Time keeps them. */
const NOW = Date.parse('2026-03-01T12:00:00Z');

/** A `{ $ago: ms }` in a case is the time `ms` before NOW (negative: after). */
type Json = string | number | boolean | null | readonly Json[] | { readonly [k: string]: Json };

function resolveTimes(v: Json): Json {
  if (Array.isArray(v)) return v.map(resolveTimes);
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, Json>;
    const ago = o.$ago;
    if (typeof ago === 'number' && Object.keys(o).length === 1) return new Date(NOW - ago).toISOString().replace(/\.\d+Z$/, 'Z');
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, resolveTimes(x)]));
  }
  return v;
}

interface Case {
  readonly group: string;
  readonly resource: string;
  readonly what: string;
  readonly object: Json;
  readonly cells: readonly Cell[];
}

/** The apiserver's columnDefinitions by group/resource. */
const COLUMNS: Readonly<Record<string, readonly ColumnDefinition[]>> = {
  'coordination.k8s.io/leasecandidates': [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description:
        'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
      priority: 0,
    },
    {
      name: 'LeaseName',
      type: 'string',
      format: '',
      description: 'leaseName is the name of the lease for which this candidate is contending. This field is immutable.',
      priority: 0,
    },
    { name: 'BinaryVersion', type: 'string', format: '', description: '', priority: 0 },
    { name: 'EmulationVersion', type: 'string', format: '', description: '', priority: 0 },
    {
      name: 'Age',
      type: 'string',
      format: '',
      description:
        'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
      priority: 0,
    },
  ],
  'internal.apiserver.k8s.io/storageversions': [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description:
        'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
      priority: 0,
    },
    {
      name: 'CommonEncodingVersion',
      type: 'string',
      format: '',
      description:
        "commonEncodingVersion is set to an encoding storage version if all API server instances share that same version. If they don't share one storage version, this field is left empty. API servers should finish updating its storageVersionStatus entry before serving write operations, so that this field will be in sync with the reality.",
      priority: 0,
    },
    {
      name: 'StorageVersions',
      type: 'string',
      format: '',
      description: 'storageVersions lists the reported versions per API server instance.',
      priority: 0,
    },
    {
      name: 'Age',
      type: 'string',
      format: '',
      description:
        'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
      priority: 0,
    },
  ],
  'resource.k8s.io/resourcepoolstatusrequests': [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description:
        'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
      priority: 0,
    },
    { name: 'Driver', type: 'string', format: '', description: 'The driver to query pools for.', priority: 0 },
    { name: 'Total', type: 'string', format: '', description: 'Total number of devices across all pools.', priority: 0 },
    { name: 'Available', type: 'string', format: '', description: 'Number of available devices across all pools.', priority: 0 },
    { name: 'Allocated', type: 'string', format: '', description: 'Number of allocated devices across all pools.', priority: 0 },
    { name: 'Unavailable', type: 'string', format: '', description: 'Number of unavailable devices across all pools.', priority: 0 },
    { name: 'Errors', type: 'string', format: '', description: 'Number of pools with validation errors.', priority: 0 },
    { name: 'Pools', type: 'integer', format: '', description: 'Total number of matching pools.', priority: 0 },
    { name: 'Status', type: 'string', format: '', description: 'Processing status.', priority: 0 },
    { name: 'Completed', type: 'string', format: '', description: 'Time since the observation completed.', priority: 0 },
  ],
  'scheduling.k8s.io/workloads': [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description:
        'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
      priority: 0,
    },
    {
      name: 'Age',
      type: 'string',
      format: '',
      description:
        'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
      priority: 0,
    },
  ],
  'scheduling.k8s.io/podgroups': [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description:
        'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
      priority: 0,
    },
    {
      name: 'Policy',
      type: 'string',
      format: '',
      description:
        'schedulingPolicy defines the scheduling policy for this instance of the PodGroup. Controllers are expected to fill this field by copying it from a PodGroupTemplate.',
      priority: 0,
    },
    { name: 'Workload', type: 'string', format: '', description: 'Name of the referenced Workload object', priority: 0 },
    { name: 'Status', type: 'string', format: '', description: 'Status of the PodGroup', priority: 0 },
    {
      name: 'Age',
      type: 'string',
      format: '',
      description:
        'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
      priority: 0,
    },
  ],
  'scheduling.k8s.io/compositepodgroups': [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description:
        'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
      priority: 0,
    },
    {
      name: 'Policy',
      type: 'string',
      format: '',
      description:
        'schedulingPolicy defines the scheduling policy for this instance of the CompositePodGroup. Controllers are expected to fill this field by copying it from a CompositePodGroupTemplate. This field is immutable.',
      priority: 0,
    },
    { name: 'Workload', type: 'string', format: '', description: 'Name of the referenced Workload object', priority: 0 },
    {
      name: 'Age',
      type: 'string',
      format: '',
      description:
        'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
      priority: 0,
    },
  ],
  'lifecycle.k8s.io/evictionrequests': [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description:
        'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
      priority: 0,
    },
    {
      name: 'Target',
      type: 'string',
      format: '',
      description: 'target contains a reference to an object (e.g. a pod) that should be evicted. This field is required and immutable.',
      priority: 0,
    },
    {
      name: 'Target Type',
      type: 'string',
      format: '',
      description: 'target contains a reference to an object (e.g. a pod) that should be evicted. This field is required and immutable.',
      priority: 0,
    },
    {
      name: 'Status',
      type: 'string',
      format: '',
      description:
        'conditions contain information about the eviction request.\n\nEvictionRequest specific conditions are: TargetEvicted or Failed (managed by evictionrequest-controller). - Failed means that the eviction request is no longer being processed\n  by any eviction responder. This can happen if the request is canceled or if no responder\n  managed to evict the target (e.g. terminate or delete a pod).\n- TargetEvicted means that the target has been evicted (e.g. a pod has been terminated or deleted).\n\nThese conditions can be reset if the eviction was unsuccessful and a new Eviction intent has been submitted.\n\nThe maximum length of the conditions list is 100.',
      priority: 0,
    },
    {
      name: 'Requester',
      type: 'string',
      format: '',
      description:
        'requester allows you to identify the entity, that requested the eviction of the target.\n\nIt must be a valid domain-prefixed key (such as "acme.io/foo"). Domain names *.k8s.io and *.kubernetes.io are reserved. This field is required and immutable.',
      priority: 0,
    },
    {
      name: 'Intent',
      type: 'string',
      format: '',
      description:
        "intent specifies the action that should be taken for the specified target.\n\n- Eviction means that the requester is interested in the eviction of the target. - Withdrawn means that the requester is no longer interested in the eviction of the target.\n  If all requesters' intents are withdrawn for a common target, the eviction will be canceled.\n  Cancellation consequences:\n  - Inactive responders will never run.\n  - Active responders are expected to cancel the eviction.\n  - Completed or Interrupted responders should not take any action.",
      priority: 0,
    },
    {
      name: 'Age',
      type: 'string',
      format: '',
      description:
        'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
      priority: 0,
    },
  ],
  'lifecycle.k8s.io/evictions': [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description:
        'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
      priority: 0,
    },
    {
      name: 'Target',
      type: 'string',
      format: '',
      description: 'target contains a reference to an object (e.g. a pod) that should be evicted. This field is required and immutable.',
      priority: 0,
    },
    {
      name: 'Target Type',
      type: 'string',
      format: '',
      description: 'target contains a reference to an object (e.g. a pod) that should be evicted. This field is required and immutable.',
      priority: 0,
    },
    {
      name: 'Status',
      type: 'string',
      format: '',
      description:
        'conditions contain information about the eviction request.\n\nEviction specific conditions are: TargetEvicted or Failed (managed by evictionrequest-controller). - Failed means that the eviction request is no longer being processed\n  by any eviction responder. This can happen if the request is canceled or if no responder\n  managed to evict the target (e.g. terminate or delete a pod).\n- TargetEvicted means that the target has been evicted (e.g. a pod has been terminated or deleted).\n\n\tThe maximum length of the conditions list is 100.',
      priority: 0,
    },
    {
      name: 'Active Responder',
      type: 'string',
      format: '',
      description:
        'state specifies a state that is assigned by the evictionrequest-controller. Responders should observe this state in order to navigate their lifecycle. - Inactive means that the responder should not yet process this eviction request. - Active means that the responder is either running or expected to start soon.\n  Also, startTime has been set in the ResponderStatus by the evictionrequest-controller.\n\n  An active responder should currently interact with the eviction process by updating\n  .status.responders, where .name is the active responder name. ResponderStatus fields\n  should be periodically updated to indicate the progress or completion of the eviction process.\n  If .status.responders[].heartbeatTime field is not updated within the heartbeat deadline defined\n  by the Eviction API (currently 20 minutes), the eviction is passed over to the next responder\n\t with a lower priority. Only one responder can be active at a time.\n- Interrupted means that the responder has failed to start or failed to update\n  heartbeatTime in ResponderStatus in a timely manner.\n- Canceled means that the responder has been canceled. In other words, there\tis no\n  EvictionRequest with the same target and Eviction intent in .spec.intent.\n- Completed means that the responder has successfully completed and set completionTime\n  in ResponderStatus.\n\nPlease refer to the ResponderStatus in .status.responders for more details on each responder.',
      priority: 0,
    },
    {
      name: 'Responder Status',
      type: 'string',
      format: '',
      description:
        'ResponderStatus represents the last observed status of the eviction process of the responder. It should be only updated by the designated responder whose name is .name field.',
      priority: 0,
    },
    {
      name: 'Responder Expected Finish',
      type: 'string',
      format: '',
      description:
        'expectedCompletionTime is the time at which the eviction process step is expected to end for the responder. The time cannot be set to the past. May be omitted if no estimate can be made.',
      priority: 0,
    },
    {
      name: 'Requesters',
      type: 'string',
      format: '',
      description:
        'requesters allow you to identify the entities, that requested the eviction of the target. If all the requesters withdraw their eviction intent, the eviction will be canceled.\n\nThe maximum length of the requesters list is 100. If this limit is exceeded, requesters with Withdrawn intent should be dropped first.',
      priority: 0,
    },
    {
      name: 'Age',
      type: 'string',
      format: '',
      description:
        'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
      priority: 0,
    },
    {
      name: 'Responder Heartbeat',
      type: 'string',
      format: '',
      description:
        'heartbeatTime is the last time at which the eviction process was reported to be in progress by the responder. It should reflect the present time when set. Responders should avoid heartbeats more frequent than 20 seconds to avoid overloading the control-plane.',
      priority: 1,
    },
    {
      name: 'Responder Status Message',
      type: 'string',
      format: '',
      description:
        'message provides human-readable details about the state of the responder and the eviction process. Maximum length is 4000 characters.',
      priority: 1,
    },
  ],
  'certificates.k8s.io/podcertificaterequests': [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description:
        'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
      priority: 0,
    },
    {
      name: 'PodName',
      type: 'string',
      format: '',
      description: 'podName is the name of the pod into which the certificate will be mounted.',
      priority: 0,
    },
    {
      name: 'ServiceAccountName',
      type: 'string',
      format: '',
      description: 'serviceAccountName is the name of the service account the pod is running as.',
      priority: 0,
    },
    { name: 'NodeName', type: 'string', format: '', description: 'nodeName is the name of the node the pod is assigned to.', priority: 0 },
    {
      name: 'SignerName',
      type: 'string',
      format: '',
      description:
        'signerName indicates the requested signer.\n\nAll signer names beginning with `kubernetes.io` are reserved for use by the Kubernetes project.  There is currently one well-known signer documented by the Kubernetes project, `kubernetes.io/kube-apiserver-client-pod`, which will issue client certificates understood by kube-apiserver.  It is currently unimplemented.',
      priority: 0,
    },
    { name: 'State', type: 'string', format: '', description: 'Is the request Pending, Issued, Denied, or Failed?', priority: 0 },
    {
      name: 'UnverifiedUserAnnotations',
      type: 'string',
      format: '',
      description:
        'unverifiedUserAnnotations allow pod authors to pass additional information to the signer implementation.  Kubernetes does not restrict or validate this metadata in any way.\n\nEntries are subject to the same validation as object metadata annotations, with the addition that all keys must be domain-prefixed. No restrictions are placed on values, except an overall size limitation on the entire field.\n\nSigners should document the keys and values they support.  Signers should deny requests that contain keys they do not recognize.',
      priority: 0,
    },
  ],
  'scheduling.k8s.io/priorityclasses': [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description:
        'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
      priority: 0,
    },
    {
      name: 'Value',
      type: 'integer',
      format: '',
      description:
        'value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.',
      priority: 0,
    },
    {
      name: 'Global-Default',
      type: 'boolean',
      format: '',
      description:
        'globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.',
      priority: 0,
    },
    {
      name: 'Age',
      type: 'string',
      format: '',
      description:
        'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
      priority: 0,
    },
    {
      name: 'PreemptionPolicy',
      type: 'string',
      format: '',
      description:
        'preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.',
      priority: 0,
    },
  ],
};

const CASES: readonly Case[] = [
  {
    group: 'coordination.k8s.io',
    resource: 'leasecandidates',
    what: 'a candidate',
    object: {
      apiVersion: 'coordination.k8s.io/v1beta1',
      kind: 'LeaseCandidate',
      metadata: { name: 'kcm-a', creationTimestamp: { $ago: 259200000 }, namespace: 'kube-system' },
      spec: {
        leaseName: 'kube-controller-manager',
        binaryVersion: '1.37.2',
        emulationVersion: '1.36.0',
        strategy: 'OldestEmulationVersion',
        renewTime: '2026-01-01T00:00:00.000000Z',
      },
    },
    cells: ['kcm-a', 'kube-controller-manager', '1.37.2', '1.36.0', '3d'],
  },
  {
    group: 'coordination.k8s.io',
    resource: 'leasecandidates',
    what: 'no emulation version',
    object: {
      apiVersion: 'coordination.k8s.io/v1beta1',
      kind: 'LeaseCandidate',
      metadata: { name: 'kcm-b', creationTimestamp: { $ago: 45000 }, namespace: 'kube-system' },
      spec: { leaseName: 'kube-controller-manager', binaryVersion: '1.37.2', strategy: 'OldestEmulationVersion' },
    },
    cells: ['kcm-b', 'kube-controller-manager', '1.37.2', '', '45s'],
  },
  {
    group: 'internal.apiserver.k8s.io',
    resource: 'storageversions',
    what: 'no status',
    object: {
      apiVersion: 'internal.apiserver.k8s.io/v1alpha1',
      kind: 'StorageVersion',
      metadata: { name: 'apps.deployments', creationTimestamp: { $ago: 7500000 } },
      spec: {},
      status: {},
    },
    cells: ['apps.deployments', '<unset>', '<unset>', '125m'],
  },
  {
    group: 'internal.apiserver.k8s.io',
    resource: 'storageversions',
    what: 'two servers agreeing',
    object: {
      apiVersion: 'internal.apiserver.k8s.io/v1alpha1',
      kind: 'StorageVersion',
      metadata: { name: 'core.secrets', creationTimestamp: { $ago: 7500000 } },
      spec: {},
      status: {
        commonEncodingVersion: 'v1',
        storageVersions: [
          { apiServerID: 'a', encodingVersion: 'v1', decodableVersions: ['v1'] },
          { apiServerID: 'b', encodingVersion: 'v1', decodableVersions: ['v1'] },
        ],
      },
    },
    cells: ['core.secrets', 'v1', 'a=v1,b=v1', '125m'],
  },
  {
    group: 'internal.apiserver.k8s.io',
    resource: 'storageversions',
    what: 'five servers',
    object: {
      apiVersion: 'internal.apiserver.k8s.io/v1alpha1',
      kind: 'StorageVersion',
      metadata: { name: 'batch.jobs', creationTimestamp: { $ago: 7500000 } },
      spec: {},
      status: {
        storageVersions: [
          { apiServerID: 'a', encodingVersion: 'batch/v1' },
          { apiServerID: 'b', encodingVersion: 'batch/v1' },
          { apiServerID: 'c', encodingVersion: 'batch/v1' },
          { apiServerID: 'd', encodingVersion: 'batch/v1' },
          { apiServerID: 'e', encodingVersion: 'batch/v1' },
        ],
      },
    },
    cells: ['batch.jobs', '<unset>', 'a=batch/v1,b=batch/v1,c=batch/v1 + 2 more...', '125m'],
  },
  {
    group: 'resource.k8s.io',
    resource: 'resourcepoolstatusrequests',
    what: 'no status',
    object: {
      apiVersion: 'resource.k8s.io/v1alpha3',
      kind: 'ResourcePoolStatusRequest',
      metadata: { name: 'gpus', creationTimestamp: { $ago: 7500000 } },
      spec: { driver: 'gpu.example.com' },
    },
    cells: ['gpus', 'gpu.example.com', '-', '-', '-', '-', '-', 0, 'Pending', '<none>'],
  },
  {
    group: 'resource.k8s.io',
    resource: 'resourcepoolstatusrequests',
    what: 'complete, truncated, a pool with an error',
    object: {
      apiVersion: 'resource.k8s.io/v1alpha3',
      kind: 'ResourcePoolStatusRequest',
      metadata: { name: 'gpus-done', creationTimestamp: { $ago: 7500000 } },
      spec: { driver: 'gpu.example.com' },
      status: {
        poolCount: 5,
        pools: [
          {
            driver: 'gpu.example.com',
            poolName: 'a',
            generation: 1,
            totalDevices: 8,
            allocatedDevices: 3,
            availableDevices: 4,
            unavailableDevices: 1,
          },
          { driver: 'gpu.example.com', poolName: 'b', generation: 1, totalDevices: 2, validationError: 'bad' },
        ],
        conditions: [{ type: 'Complete', status: 'True', reason: 'Test', message: 'm', lastTransitionTime: { $ago: 200000 } }],
      },
    },
    cells: ['gpus-done', 'gpu.example.com', '10', '4', '3', '1', '1', 5, 'Complete (2/5 pools)', '3m20s'],
  },
  {
    group: 'resource.k8s.io',
    resource: 'resourcepoolstatusrequests',
    what: 'complete with every pool',
    object: {
      apiVersion: 'resource.k8s.io/v1alpha3',
      kind: 'ResourcePoolStatusRequest',
      metadata: { name: 'gpus-all', creationTimestamp: { $ago: 7500000 } },
      spec: { driver: 'gpu.example.com' },
      status: {
        poolCount: 1,
        pools: [{ driver: 'gpu.example.com', poolName: 'a', generation: 1, totalDevices: 4, availableDevices: 4 }],
        conditions: [
          { type: 'Failed', status: 'False', reason: 'Test', message: 'm', lastTransitionTime: { $ago: 600000 } },
          { type: 'Complete', status: 'True', reason: 'Test', message: 'm', lastTransitionTime: { $ago: 93600000 } },
        ],
      },
    },
    cells: ['gpus-all', 'gpu.example.com', '4', '4', '0', '0', '0', 1, 'Complete', '26h'],
  },
  {
    group: 'resource.k8s.io',
    resource: 'resourcepoolstatusrequests',
    what: 'failed',
    object: {
      apiVersion: 'resource.k8s.io/v1alpha3',
      kind: 'ResourcePoolStatusRequest',
      metadata: { name: 'gpus-failed', creationTimestamp: { $ago: 7500000 } },
      spec: { driver: 'gpu.example.com' },
      status: {
        poolCount: 2,
        pools: [{ driver: 'gpu.example.com', poolName: 'a', generation: 1, totalDevices: 4 }],
        conditions: [{ type: 'Failed', status: 'True', reason: 'Test', message: 'm', lastTransitionTime: { $ago: 600000 } }],
      },
    },
    cells: ['gpus-failed', 'gpu.example.com', '-', '-', '-', '-', '-', 2, 'Failed', '<none>'],
  },
  {
    group: 'resource.k8s.io',
    resource: 'resourcepoolstatusrequests',
    what: 'in progress',
    object: {
      apiVersion: 'resource.k8s.io/v1alpha3',
      kind: 'ResourcePoolStatusRequest',
      metadata: { name: 'gpus-running', creationTimestamp: { $ago: 7500000 } },
      spec: { driver: 'gpu.example.com' },
      status: {
        pools: [{ driver: 'gpu.example.com', poolName: 'a', generation: 1, totalDevices: 4, allocatedDevices: 1 }],
        conditions: [{ type: 'Complete', status: 'False', reason: 'Test', message: 'm', lastTransitionTime: { $ago: 600000 } }],
      },
    },
    cells: ['gpus-running', 'gpu.example.com', '4', '0', '1', '0', '0', 0, 'Pending', '<none>'],
  },
  {
    group: 'scheduling.k8s.io',
    resource: 'workloads',
    what: 'a workload',
    object: {
      apiVersion: 'scheduling.k8s.io/v1beta1',
      kind: 'Workload',
      metadata: { name: 'training', creationTimestamp: { $ago: 34560000000 }, namespace: 'ml' },
      spec: { podGroupTemplates: [{ name: 'workers', schedulingPolicy: { gang: { minCount: 4 } } }] },
    },
    cells: ['training', '400d'],
  },
  {
    group: 'scheduling.k8s.io',
    resource: 'podgroups',
    what: 'basic, pending',
    object: {
      apiVersion: 'scheduling.k8s.io/v1beta1',
      kind: 'PodGroup',
      metadata: { name: 'pg-basic', creationTimestamp: { $ago: 7500000 }, namespace: 'ml' },
      spec: { schedulingPolicy: { basic: {} } },
    },
    cells: ['pg-basic', 'Basic', '<none>', 'Pending', '125m'],
  },
  {
    group: 'scheduling.k8s.io',
    resource: 'podgroups',
    what: 'gang, scheduled',
    object: {
      apiVersion: 'scheduling.k8s.io/v1beta1',
      kind: 'PodGroup',
      metadata: { name: 'pg-gang', creationTimestamp: { $ago: 7500000 }, namespace: 'ml' },
      spec: { workloadRef: { workloadName: 'training', templateName: 'workers' }, schedulingPolicy: { gang: { minCount: 4 } } },
      status: {
        conditions: [
          { type: 'PodGroupInitiallyScheduled', status: 'True', reason: 'Scheduled', message: 'm', lastTransitionTime: { $ago: 600000 } },
        ],
      },
    },
    cells: ['pg-gang', 'Gang', 'training', 'Scheduled', '125m'],
  },
  {
    group: 'scheduling.k8s.io',
    resource: 'podgroups',
    what: 'unschedulable',
    object: {
      apiVersion: 'scheduling.k8s.io/v1beta1',
      kind: 'PodGroup',
      metadata: { name: 'pg-stuck', creationTimestamp: { $ago: 7500000 }, namespace: 'ml' },
      spec: { schedulingPolicy: { gang: { minCount: 4 } } },
      status: {
        conditions: [
          {
            type: 'PodGroupInitiallyScheduled',
            status: 'False',
            reason: 'Unschedulable',
            message: 'm',
            lastTransitionTime: { $ago: 600000 },
          },
        ],
      },
    },
    cells: ['pg-stuck', 'Gang', '<none>', 'Unschedulable', '125m'],
  },
  {
    group: 'scheduling.k8s.io',
    resource: 'podgroups',
    what: 'preempted',
    object: {
      apiVersion: 'scheduling.k8s.io/v1beta1',
      kind: 'PodGroup',
      metadata: { name: 'pg-preempted', creationTimestamp: { $ago: 7500000 }, namespace: 'ml' },
      spec: { schedulingPolicy: { basic: {} } },
      status: {
        conditions: [
          { type: 'DisruptionTarget', status: 'True', reason: 'PreemptionByScheduler', message: 'm', lastTransitionTime: { $ago: 600000 } },
          { type: 'PodGroupInitiallyScheduled', status: 'True', reason: 'Scheduled', message: 'm', lastTransitionTime: { $ago: 600000 } },
        ],
      },
    },
    cells: ['pg-preempted', 'Basic', '<none>', 'PreemptionByScheduler', '125m'],
  },
  {
    group: 'scheduling.k8s.io',
    resource: 'compositepodgroups',
    what: 'basic',
    object: {
      apiVersion: 'scheduling.k8s.io/v1alpha3',
      kind: 'CompositePodGroup',
      metadata: { name: 'cpg-basic', creationTimestamp: { $ago: 7500000 }, namespace: 'ml' },
      spec: { schedulingPolicy: { basic: {} } },
    },
    cells: ['cpg-basic', 'Basic', '<none>', '125m'],
  },
  {
    group: 'scheduling.k8s.io',
    resource: 'compositepodgroups',
    what: 'gang with a workload',
    object: {
      apiVersion: 'scheduling.k8s.io/v1alpha3',
      kind: 'CompositePodGroup',
      metadata: { name: 'cpg-gang', creationTimestamp: { $ago: 7500000 }, namespace: 'ml' },
      spec: { workloadRef: { workloadName: 'training', templateName: 'all' }, schedulingPolicy: { gang: { minCount: 2 } } },
    },
    cells: ['cpg-gang', 'Gang', 'training', '125m'],
  },
  {
    group: 'lifecycle.k8s.io',
    resource: 'evictionrequests',
    what: 'new',
    object: {
      apiVersion: 'lifecycle.k8s.io/v1alpha1',
      kind: 'EvictionRequest',
      metadata: { name: 'er-new', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: { target: { pod: { name: 'web-0', uid: 'u1' } }, requester: 'example.com/drainer', intent: 'Eviction' },
    },
    cells: ['er-new', 'web-0', 'Pod', 'Pending', 'example.com/drainer', 'Eviction', '125m'],
  },
  {
    group: 'lifecycle.k8s.io',
    resource: 'evictionrequests',
    what: 'progressing',
    object: {
      apiVersion: 'lifecycle.k8s.io/v1alpha1',
      kind: 'EvictionRequest',
      metadata: { name: 'er-progress', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: { target: { pod: { name: 'web-1', uid: 'u2' } }, requester: 'example.com/drainer', intent: 'Eviction' },
      status: { observedGeneration: 1 },
    },
    cells: ['er-progress', 'web-1', 'Pod', 'Progressing', 'example.com/drainer', 'Eviction', '125m'],
  },
  {
    group: 'lifecycle.k8s.io',
    resource: 'evictionrequests',
    what: 'failed then evicted',
    object: {
      apiVersion: 'lifecycle.k8s.io/v1alpha1',
      kind: 'EvictionRequest',
      metadata: { name: 'er-done', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: { target: { pod: { name: 'web-2', uid: 'u3' } }, requester: 'example.com/drainer', intent: 'Withdrawn' },
      status: {
        observedGeneration: 2,
        conditions: [
          { type: 'Failed', status: 'True', reason: 'EvictionFailed', message: 'm', lastTransitionTime: { $ago: 600000 } },
          { type: 'TargetEvicted', status: 'True', reason: 'PodDeleted', message: 'm', lastTransitionTime: { $ago: 600000 } },
        ],
      },
    },
    cells: ['er-done', 'web-2', 'Pod', 'TargetEvicted (PodDeleted)', 'example.com/drainer', 'Withdrawn', '125m'],
  },
  {
    group: 'lifecycle.k8s.io',
    resource: 'evictionrequests',
    what: 'failed',
    object: {
      apiVersion: 'lifecycle.k8s.io/v1alpha1',
      kind: 'EvictionRequest',
      metadata: { name: 'er-failed', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: { target: {}, requester: 'example.com/drainer', intent: 'Eviction' },
      status: {
        conditions: [
          { type: 'Failed', status: 'True', reason: 'EvictionInvalid', message: 'm', lastTransitionTime: { $ago: 600000 } },
          { type: 'TargetEvicted', status: 'False', reason: 'AwaitingEviction', message: 'm', lastTransitionTime: { $ago: 600000 } },
        ],
      },
    },
    cells: ['er-failed', '<unset>', '<unset>', 'Failed (EvictionInvalid)', 'example.com/drainer', 'Eviction', '125m'],
  },
  {
    group: 'lifecycle.k8s.io',
    resource: 'evictions',
    what: 'empty',
    object: {
      apiVersion: 'lifecycle.k8s.io/v1alpha1',
      kind: 'Eviction',
      metadata: { name: 'ev-empty', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: {},
    },
    cells: ['ev-empty', '<unset>', '<unset>', 'Pending', '<unset> (0/0)', '<unset>', '<unknown>', '<none>', '125m', '<unset>', '<unset>'],
  },
  {
    group: 'lifecycle.k8s.io',
    resource: 'evictions',
    what: 'an active responder',
    object: {
      apiVersion: 'lifecycle.k8s.io/v1alpha1',
      kind: 'Eviction',
      metadata: { name: 'ev-active', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: { target: { pod: { name: 'web-0', uid: 'u1' } } },
      status: {
        observedGeneration: 2,
        targetResponders: [
          { name: 'a.example.com/backup', priority: 10, state: 'Completed' },
          { name: 'b.example.com/drain', priority: 5, state: 'Active' },
          { name: 'c.example.com/last', priority: 1, state: 'Inactive' },
        ],
        responders: [
          { name: 'a.example.com/backup', startTime: { $ago: 1200000 }, completionTime: { $ago: 900000 } },
          {
            name: 'b.example.com/drain',
            startTime: { $ago: 330000 },
            expectedCompletionTime: { $ago: -630000 },
            heartbeatTime: { $ago: 31000 },
            message: '  copying data \n',
          },
        ],
        requesters: [
          { name: 'x.example.com/drainer', intent: 'Eviction' },
          { name: 'a.example.com/autoscaler', intent: 'Eviction' },
          { name: 'w.example.com/gone', intent: 'Withdrawn' },
        ],
      },
    },
    cells: [
      'ev-active',
      'web-0',
      'Pod',
      'Progressing',
      'b.example.com/drain (2/3)',
      'Started (5m30s ago)',
      'in 10m',
      'a.example.com/autoscaler + 1 more...',
      '125m',
      '31s ago',
      'copying data',
    ],
  },
  {
    group: 'lifecycle.k8s.io',
    resource: 'evictions',
    what: 'late responder',
    object: {
      apiVersion: 'lifecycle.k8s.io/v1alpha1',
      kind: 'Eviction',
      metadata: { name: 'ev-late', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: { target: { pod: { name: 'web-1', uid: 'u2' } } },
      status: {
        targetResponders: [{ name: 'b.example.com/drain', priority: 5, state: 'Active' }],
        responders: [
          { name: 'b.example.com/drain', startTime: { $ago: 3030000 }, expectedCompletionTime: { $ago: 150000 }, message: '   ' },
        ],
        requesters: [{ name: 'w.example.com/gone', intent: 'Withdrawn' }],
      },
    },
    cells: [
      'ev-late',
      'web-1',
      'Pod',
      'Pending',
      'b.example.com/drain (1/1)',
      'Started (50m ago)',
      '2m30s ago',
      '<withdrawn>',
      '125m',
      '<unset>',
      '<unset>',
    ],
  },
  {
    group: 'lifecycle.k8s.io',
    resource: 'evictions',
    what: 'active, not started',
    object: {
      apiVersion: 'lifecycle.k8s.io/v1alpha1',
      kind: 'Eviction',
      metadata: { name: 'ev-waiting', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: { target: { pod: { name: 'web-1', uid: 'u2' } } },
      status: {
        targetResponders: [{ name: 'b.example.com/drain', priority: 5, state: 'Active' }],
        responders: [{ name: 'b.example.com/drain', expectedCompletionTime: { $ago: -3600000 } }],
        requesters: [{ name: 'one.example.com/x', intent: 'Eviction' }],
      },
    },
    cells: [
      'ev-waiting',
      'web-1',
      'Pod',
      'Pending',
      'b.example.com/drain (1/1)',
      'Active',
      '<unknown>',
      'one.example.com/x',
      '125m',
      '<unset>',
      '<unset>',
    ],
  },
  {
    group: 'lifecycle.k8s.io',
    resource: 'evictions',
    what: 'no status of the active responder',
    object: {
      apiVersion: 'lifecycle.k8s.io/v1alpha1',
      kind: 'Eviction',
      metadata: { name: 'ev-silent', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: { target: { pod: { name: 'web-1', uid: 'u2' } } },
      status: {
        targetResponders: [{ name: 'b.example.com/drain', priority: 5, state: 'Active' }],
        responders: [{ name: 'other.example.com/x', startTime: { $ago: 60000 } }],
      },
    },
    cells: [
      'ev-silent',
      'web-1',
      'Pod',
      'Pending',
      'b.example.com/drain (1/1)',
      '<unset>',
      '<unknown>',
      '<none>',
      '125m',
      '<unset>',
      '<unset>',
    ],
  },
  {
    group: 'lifecycle.k8s.io',
    resource: 'evictions',
    what: 'all processed, last completed',
    object: {
      apiVersion: 'lifecycle.k8s.io/v1alpha1',
      kind: 'Eviction',
      metadata: { name: 'ev-completed', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: { target: { pod: { name: 'web-2', uid: 'u3' } } },
      status: {
        observedGeneration: 3,
        conditions: [
          { type: 'Failed', status: 'True', reason: 'NoFurtherResponder', message: 'm', lastTransitionTime: { $ago: 600000 } },
          { type: 'TargetEvicted', status: 'True', reason: 'PodDeleted', message: 'm', lastTransitionTime: { $ago: 600000 } },
        ],
        targetResponders: [
          { name: 'a.example.com/backup', priority: 10, state: 'Canceled' },
          { name: 'b.example.com/drain', priority: 5, state: 'Completed' },
        ],
        responders: [
          {
            name: 'b.example.com/drain',
            startTime: { $ago: 7200000 },
            completionTime: { $ago: 3900000 },
            heartbeatTime: { $ago: 3960000 },
            message: 'done',
          },
        ],
      },
    },
    cells: [
      'ev-completed',
      'web-2',
      'Pod',
      'TargetEvicted (PodDeleted)',
      'b.example.com/drain (2/2)',
      'Completed (65m ago)',
      '-',
      '<none>',
      '125m',
      '66m ago',
      'done',
    ],
  },
  {
    group: 'lifecycle.k8s.io',
    resource: 'evictions',
    what: 'all processed, last interrupted',
    object: {
      apiVersion: 'lifecycle.k8s.io/v1alpha1',
      kind: 'Eviction',
      metadata: { name: 'ev-interrupted', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: { target: { pod: { name: 'web-3', uid: 'u4' } } },
      status: {
        conditions: [{ type: 'Failed', status: 'True', reason: 'EvictionFailed', message: 'm', lastTransitionTime: { $ago: 600000 } }],
        targetResponders: [
          { name: 'a.example.com/backup', priority: 10, state: 'Completed' },
          { name: 'b.example.com/drain', priority: 5, state: 'Interrupted' },
        ],
        responders: [{ name: 'b.example.com/drain', startTime: { $ago: 7200000 } }],
      },
    },
    cells: [
      'ev-interrupted',
      'web-3',
      'Pod',
      'Failed (EvictionFailed)',
      'b.example.com/drain (2/2)',
      'Interrupted',
      '-',
      '<none>',
      '125m',
      '<unset>',
      '<unset>',
    ],
  },
  {
    group: 'certificates.k8s.io',
    resource: 'podcertificaterequests',
    what: 'pending, annotations sorted as Go sorts k=v',
    object: {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'PodCertificateRequest',
      metadata: { name: 'pcr-pending', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: {
        signerName: 'example.com/signer',
        podName: 'web-0',
        podUID: 'u1',
        serviceAccountName: 'web',
        serviceAccountUID: 's1',
        nodeName: 'node-a',
        nodeUID: 'n1',
        pkixPublicKey: 'AAAA',
        proofOfPossession: 'AAAA',
        unverifiedUserAnnotations: { b: '2', 'a.b': 'x', a: '1' },
      },
    },
    cells: ['pcr-pending', 'web-0', 'web', 'node-a', 'example.com/signer', 'Pending', 'a.b=x,a=1,b=2'],
  },
  {
    group: 'certificates.k8s.io',
    resource: 'podcertificaterequests',
    what: 'issued',
    object: {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'PodCertificateRequest',
      metadata: { name: 'pcr-issued', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: {
        signerName: 'example.com/signer',
        podName: 'web-1',
        podUID: 'u2',
        serviceAccountName: 'web',
        serviceAccountUID: 's1',
        nodeName: 'node-b',
        nodeUID: 'n2',
        pkixPublicKey: 'AAAA',
        proofOfPossession: 'AAAA',
      },
      status: { conditions: [{ type: 'Issued', status: 'True', reason: 'Test', message: 'm', lastTransitionTime: { $ago: 600000 } }] },
    },
    cells: ['pcr-issued', 'web-1', 'web', 'node-b', 'example.com/signer', 'Issued', '<none>'],
  },
  {
    group: 'certificates.k8s.io',
    resource: 'podcertificaterequests',
    what: 'denied',
    object: {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'PodCertificateRequest',
      metadata: { name: 'pcr-denied', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: {
        signerName: 'example.com/signer',
        podName: 'web-2',
        podUID: 'u3',
        serviceAccountName: 'web',
        serviceAccountUID: 's1',
        nodeName: 'node-b',
        nodeUID: 'n2',
        pkixPublicKey: 'AAAA',
        proofOfPossession: 'AAAA',
      },
      status: { conditions: [{ type: 'Denied', status: 'True', reason: 'Test', message: 'm', lastTransitionTime: { $ago: 600000 } }] },
    },
    cells: ['pcr-denied', 'web-2', 'web', 'node-b', 'example.com/signer', 'Denied', '<none>'],
  },
  {
    group: 'certificates.k8s.io',
    resource: 'podcertificaterequests',
    what: 'failed',
    object: {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'PodCertificateRequest',
      metadata: { name: 'pcr-failed', creationTimestamp: { $ago: 7500000 }, namespace: 'apps' },
      spec: {
        signerName: 'example.com/signer',
        podName: 'web-3',
        podUID: 'u4',
        serviceAccountName: 'web',
        serviceAccountUID: 's1',
        nodeName: 'node-b',
        nodeUID: 'n2',
        pkixPublicKey: 'AAAA',
        proofOfPossession: 'AAAA',
      },
      status: { conditions: [{ type: 'Failed', status: 'True', reason: 'Test', message: 'm', lastTransitionTime: { $ago: 600000 } }] },
    },
    cells: ['pcr-failed', 'web-3', 'web', 'node-b', 'example.com/signer', 'Failed', '<none>'],
  },
  {
    group: 'scheduling.k8s.io',
    resource: 'priorityclasses',
    what: 'the global default',
    object: {
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: 'everyone', creationTimestamp: { $ago: 777600000 } },
      value: 100,
      globalDefault: true,
      preemptionPolicy: 'PreemptLowerPriority',
    },
    cells: ['everyone', 100, true, '9d', 'PreemptLowerPriority'],
  },
];

for (const [key, columns] of Object.entries(COLUMNS)) {
  const [group = '', resource = ''] = key.split('/');
  test(`cluster printers: ${resource} columns are the apiserver's`, () => {
    assert.deepEqual(printerFor(group, resource)?.columns, columns);
  });
}

for (const c of CASES) {
  test(`cluster printers: ${c.resource}: ${c.what}`, () => {
    const printer = printerFor(c.group, c.resource);
    assert.ok(printer !== undefined, `a printer for ${c.resource}.${c.group}`);
    const rows = printer.print(resolveTimes(c.object) as KubeJson, NOW);
    assert.deepEqual(rows, [{ cells: c.cells }]);
  });
}

test('cluster printers: a storageclasses LIST marks the newest default, the first name on equal times (printStorageClassList)', () => {
  const sc = (name: string, created: string, annotation?: string): KubeJson => ({
    metadata: { name, creationTimestamp: created, ...(annotation === undefined ? {} : { annotations: { [annotation]: 'true' } }) },
    provisioner: 'p',
  });
  const items = [
    sc('zeta', '2026-03-01T10:00:00Z', 'storageclass.kubernetes.io/is-default-class'),
    sc('beta', '2026-03-01T10:00:00Z', 'storageclass.beta.kubernetes.io/is-default-class'),
    sc('older', '2026-03-01T09:00:00Z', 'storageclass.kubernetes.io/is-default-class'),
    sc('alpha', '2026-03-01T11:00:00Z'),
  ];
  // The names kube-apiserver v1.37.2 printed for this StorageClassList.
  assert.deepEqual(
    printStorageClassListRows(items, NOW).map((r) => r.cells[0]),
    ['zeta', 'beta (default)', 'older', 'alpha'],
  );
});

test('cluster printers: flowschemas in FlowSchemaSequence order (printFlowSchemaList)', () => {
  const fs = (name: string, matchingPrecedence: number): KubeJson => ({ metadata: { name }, spec: { matchingPrecedence } });
  assert.deepEqual(
    sortFlowSchemas([fs('b', 500), fs('a', 1000), fs('c', 100), fs('a-2', 500)]).map((o) => (o.metadata as { name: string }).name),
    ['c', 'a-2', 'b', 'a'],
  );
});
