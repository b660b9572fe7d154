/**
 * Printers of the cluster-level groups (rbac, certificates, coordination, storage, scheduling,
 * node, admissionregistration, flowcontrol, internal.apiserver, resource, storagemigration,
 * lifecycle), ported from k8s.io/kubernetes pkg/printers/internalversion/printers.go (v1.37.2).
 *
 * Column descriptions are the apiserver's own (`columnDefinitions` of its Tables; for the types
 * a default apiserver does not serve, of the same printers run on the same version), byte for
 * byte: Go SwaggerDoc strings, some of them empty or about another field where printers.go
 * looks up a key the type does not document (RuntimeClass's Handler, LeaseCandidate's
 * BinaryVersion and EmulationVersion, the CSR's Requestor).
 *
 * Two printers print a list differently from its items one by one, which Printer.print cannot
 * do: printStorageClassList marks the effective default class (printStorageClassListRows) and
 * printFlowSchemaList sorts by matching precedence (sortFlowSchemas).
 */
import { age, formatLabels, goLess, goSorted, goStrings, goTrimSpace, listWithMoreString, name } from '../format.ts';
import { AGE_COLUMN, NAME_COLUMN, column } from '../columns.ts';
import { humanDuration, parseTime, translateTimestampSince } from '../duration.ts';
import type { Cell, ColumnDefinition, KubeJson, Printer, TableRow } from '../model.ts';
import { arr, at, map, num, optionalBool, optionalNum, str } from '../model.ts';
import { qualifiedResource } from '../../kube/group-resource.ts';

// ---------------------------------------------------------------------------------------------
// Column definitions, as the apiserver answers them.

const ROLE_BINDING_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'Role',
    'string',
    'roleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.',
  ),
  AGE_COLUMN,
  column('Users', 'string', 'Users in the roleBinding', { priority: 1 }),
  column('Groups', 'string', 'Groups in the roleBinding', { priority: 1 }),
  column('ServiceAccounts', 'string', 'ServiceAccounts in the roleBinding', { priority: 1 }),
];

const CLUSTER_ROLE_BINDING_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'Role',
    'string',
    'roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.',
  ),
  AGE_COLUMN,
  column('Users', 'string', 'Users in the clusterRoleBinding', { priority: 1 }),
  column('Groups', 'string', 'Groups in the clusterRoleBinding', { priority: 1 }),
  column('ServiceAccounts', 'string', 'ServiceAccounts in the clusterRoleBinding', { priority: 1 }),
];

const CSR_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  AGE_COLUMN,
  column(
    'SignerName',
    'string',
    'Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it\'s a kubelet client certificate, it is assigned\n    "kubernetes.io/kube-apiserver-client-kubelet".\n 2. If it\'s a kubelet serving certificate, it is assigned\n    "kubernetes.io/kubelet-serving".\n 3. Otherwise, it is assigned "kubernetes.io/legacy-unknown".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.',
  ),
  column('Requestor', 'string', 'Base64-encoded PKCS#10 CSR data'),
  column(
    'RequestedDuration',
    'string',
    'expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.',
  ),
  column('Condition', 'string', 'Conditions applied to the request, such as approval or denial.'),
];

const CLUSTER_TRUST_BUNDLE_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'SignerName',
    'string',
    "signerName indicates the associated signer, if any.\n\nIn order to create or update a ClusterTrustBundle that sets signerName, you must have the following cluster-scoped permission: group=certificates.k8s.io resource=signers resourceName=<the signer name> verb=attest.\n\nIf signerName is not empty, then the ClusterTrustBundle object must be named with the signer name as a prefix (translating slashes to colons). For example, for the signer name `example.com/foo`, valid ClusterTrustBundle object names include `example.com:foo:abc` and `example.com:foo:v1`.\n\nIf signerName is empty, then the ClusterTrustBundle object's name must not have such a prefix.\n\nList/watch requests for ClusterTrustBundles can filter on this field using a `spec.signerName=NAME` field selector.",
  ),
];

const POD_CERTIFICATE_REQUEST_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('PodName', 'string', 'podName is the name of the pod into which the certificate will be mounted.'),
  column('ServiceAccountName', 'string', 'serviceAccountName is the name of the service account the pod is running as.'),
  column('NodeName', 'string', 'nodeName is the name of the node the pod is assigned to.'),
  column(
    'SignerName',
    'string',
    'signerName indicates the requested signer.\n\nAll signer names beginning with `kubernetes.io` are reserved for use by the Kubernetes project.  There is currently one well-known signer documented by the Kubernetes project, `kubernetes.io/kube-apiserver-client-pod`, which will issue client certificates understood by kube-apiserver.  It is currently unimplemented.',
  ),
  column('State', 'string', 'Is the request Pending, Issued, Denied, or Failed?'),
  column(
    'UnverifiedUserAnnotations',
    'string',
    'unverifiedUserAnnotations allow pod authors to pass additional information to the signer implementation.  Kubernetes does not restrict or validate this metadata in any way.\n\nEntries are subject to the same validation as object metadata annotations, with the addition that all keys must be domain-prefixed. No restrictions are placed on values, except an overall size limitation on the entire field.\n\nSigners should document the keys and values they support.  Signers should deny requests that contain keys they do not recognize.',
  ),
];

const LEASE_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'Holder',
    'string',
    'holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.',
  ),
  AGE_COLUMN,
];

const STORAGE_CLASS_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('Provisioner', 'string', 'provisioner indicates the type of the provisioner.'),
  column(
    'ReclaimPolicy',
    'string',
    'reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.',
  ),
  column(
    'VolumeBindingMode',
    'string',
    'volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.',
  ),
  column('AllowVolumeExpansion', 'string', 'allowVolumeExpansion shows whether the storage class allow volume expand.'),
  AGE_COLUMN,
];

const VOLUME_ATTRIBUTES_CLASS_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('DriverName', 'string', 'driverName is the name of the CSI driver This field is immutable.'),
  AGE_COLUMN,
];

const VOLUME_ATTACHMENT_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'Attacher',
    'string',
    'attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().',
    { format: 'name' },
  ),
  column('PV', 'string', 'persistentVolumeName represents the name of the persistent volume to attach.'),
  column('Node', 'string', 'nodeName represents the node that the volume should be attached to.'),
  column(
    'Attached',
    'boolean',
    'attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.',
  ),
  AGE_COLUMN,
];

const CSI_NODE_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('Drivers', 'integer', 'Drivers indicates the number of CSI drivers registered on the node'),
  AGE_COLUMN,
];

const CSI_DRIVER_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'AttachRequired',
    'boolean',
    'attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable.',
  ),
  column(
    'PodInfoOnMount',
    'boolean',
    'podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. "csi.storage.k8s.io/pod.name": pod.Name "csi.storage.k8s.io/pod.namespace": pod.Namespace "csi.storage.k8s.io/pod.uid": string(pod.UID) "csi.storage.k8s.io/ephemeral": "true" if the volume is an ephemeral inline volume\n                                defined by a CSIVolumeSource, otherwise "false"\n\n"csi.storage.k8s.io/ephemeral" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the "Persistent" and "Ephemeral" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn\'t support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes < 1.29 and now is mutable.',
  ),
  column(
    'StorageCapacity',
    'boolean',
    'storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is mutable.',
  ),
  column(
    'TokenRequests',
    'string',
    'tokenRequests indicates the CSI driver needs pods\' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: "csi.storage.k8s.io/serviceAccount.tokens": {\n  "<audience>": {\n    "token": <token>,\n    "expirationTimestamp": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically.',
  ),
  column(
    'RequiresRepublish',
    'boolean',
    'requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container.',
  ),
  column(
    'Modes',
    'string',
    'volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is "Persistent", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is "Ephemeral". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable.',
  ),
  AGE_COLUMN,
];

const PRIORITY_CLASS_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'Value',
    'integer',
    'value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.',
  ),
  column(
    'Global-Default',
    'boolean',
    'globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.',
  ),
  AGE_COLUMN,
  column(
    'PreemptionPolicy',
    'string',
    'preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.',
  ),
];

const RUNTIME_CLASS_COLUMNS: readonly ColumnDefinition[] = [NAME_COLUMN, column('Handler', 'string', ''), AGE_COLUMN];

const MUTATING_WEBHOOK_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('Webhooks', 'integer', 'Webhooks indicates the number of webhooks registered in this configuration'),
  AGE_COLUMN,
];

const VALIDATING_WEBHOOK_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('Webhooks', 'integer', 'Webhooks indicates the number of webhooks registered in this configuration'),
  AGE_COLUMN,
];

const VALIDATING_ADMISSION_POLICY_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('Validations', 'integer', 'Validations indicates the number of validation rules defined in this configuration'),
  column('ParamKind', 'string', 'ParamKind specifies the kind of resources used to parameterize this policy'),
  AGE_COLUMN,
];

const VALIDATING_ADMISSION_POLICY_BINDING_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('PolicyName', 'string', 'PolicyName indicates the policy definition which the policy binding binded to'),
  column('ParamRef', 'string', 'ParamRef indicates the param resource which sets the configuration param'),
  AGE_COLUMN,
];

const MUTATING_ADMISSION_POLICY_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('Mutations', 'integer', 'Mutation indicates the number of mutations rules defined in this configuration'),
  column('ParamKind', 'string', 'ParamKind specifies the kind of resources used to parameterize this policy'),
  AGE_COLUMN,
];

const MUTATING_ADMISSION_POLICY_BINDING_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('PolicyName', 'string', 'PolicyName indicates the policy definition which the policy binding binded to'),
  column('ParamRef', 'string', 'ParamRef indicates the param resource which sets the configuration param'),
  AGE_COLUMN,
];

const FLOW_SCHEMA_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('PriorityLevel', 'string', '`name` is the name of the priority level configuration being referenced Required.'),
  column(
    'MatchingPrecedence',
    'string',
    '`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.',
  ),
  column(
    'DistinguisherMethod',
    'string',
    '`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.',
  ),
  AGE_COLUMN,
  column('MissingPL', 'string', 'references a broken or non-existent PriorityLevelConfiguration'),
];

const PRIORITY_LEVEL_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'Type',
    'string',
    '`type` indicates whether this priority level is subject to limitation on request execution.  A value of `"Exempt"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `"Limited"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server\'s limited capacity is made available exclusively to this priority level. Required.',
  ),
  column(
    'NominalConcurrencyShares',
    'string',
    '`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server\'s concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a "jail" for this priority level that is used to hold some request(s)',
  ),
  column(
    'Queues',
    'string',
    '`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.',
  ),
  column(
    'HandSize',
    'string',
    "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.",
  ),
  column(
    'QueueLengthLimit',
    'string',
    '`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.',
  ),
  AGE_COLUMN,
];

const DEVICE_CLASS_COLUMNS: readonly ColumnDefinition[] = [NAME_COLUMN, AGE_COLUMN];

const DEVICE_TAINT_RULE_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('Key', 'string', 'The taint key to be applied to a device. Must be a label name.'),
  column('Value', 'string', 'The taint value corresponding to the taint key. Must be a label value.'),
  column(
    'Effect',
    'string',
    'The effect of the taint on claims that do not tolerate the taint and through such claims on the pods using them.\n\nValid effects are None, NoSchedule and NoExecute. PreferNoSchedule as used for nodes is not valid here. More effects may get added in the future. Consumers must treat unknown effects like None.',
  ),
  column(
    'TimeAdded',
    'string',
    'TimeAdded represents the time at which the taint was added or (only in a DeviceTaintRule) the effect was modified. Added automatically during create or update if not set.\n\nIn addition, in a DeviceTaintRule a value provided during an update gets replaced with the current time if the provided value is the same as the old one and the new effect is different. Changing the key and/or value while keeping the effect unchanged is possible and does not update the time stamp because the eviction which uses it is either already started (NoExecute) or not started yet (NoEffect, NoSchedule).',
  ),
  AGE_COLUMN,
];

const RESOURCE_CLAIM_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('State', 'string', 'A summary of the current state (allocated, pending, reserved, etc.).'),
  AGE_COLUMN,
];

const RESOURCE_CLAIM_TEMPLATE_COLUMNS: readonly ColumnDefinition[] = [NAME_COLUMN, AGE_COLUMN];

const RESOURCE_SLICE_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'Node',
    'string',
    'NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type as some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This field is immutable.',
  ),
  column(
    'Driver',
    'string',
    'Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the vendor of the driver. It should use only lower case characters. This field is immutable.',
  ),
  column(
    'Pool',
    'string',
    'Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required. A field selector can be used to list only ResourceSlice objects belonging to a certain pool.\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated by slashes. This field is immutable.',
  ),
  AGE_COLUMN,
];

const STORAGE_VERSION_MIGRATION_COLUMNS: readonly ColumnDefinition[] = [
  column(
    'Name',
    'string',
    'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
  ),
  column('Resource', 'string', 'GroupResource to migrate'),
  column('Status', 'string', 'Status of the migration'),
];

const LEASE_CANDIDATE_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('LeaseName', 'string', 'leaseName is the name of the lease for which this candidate is contending. This field is immutable.'),
  column('BinaryVersion', 'string', ''),
  column('EmulationVersion', 'string', ''),
  AGE_COLUMN,
];

const STORAGE_VERSION_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'CommonEncodingVersion',
    'string',
    "commonEncodingVersion is set to an encoding storage version if all API server instances share that same version. If they don't share one storage version, this field is left empty. API servers should finish updating its storageVersionStatus entry before serving write operations, so that this field will be in sync with the reality.",
  ),
  column('StorageVersions', 'string', 'storageVersions lists the reported versions per API server instance.'),
  AGE_COLUMN,
];

const RESOURCE_POOL_STATUS_REQUEST_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column('Driver', 'string', 'The driver to query pools for.'),
  column('Total', 'string', 'Total number of devices across all pools.'),
  column('Available', 'string', 'Number of available devices across all pools.'),
  column('Allocated', 'string', 'Number of allocated devices across all pools.'),
  column('Unavailable', 'string', 'Number of unavailable devices across all pools.'),
  column('Errors', 'string', 'Number of pools with validation errors.'),
  column('Pools', 'integer', 'Total number of matching pools.'),
  column('Status', 'string', 'Processing status.'),
  column('Completed', 'string', 'Time since the observation completed.'),
];

const WORKLOAD_COLUMNS: readonly ColumnDefinition[] = [NAME_COLUMN, AGE_COLUMN];

const POD_GROUP_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'Policy',
    'string',
    'schedulingPolicy defines the scheduling policy for this instance of the PodGroup. Controllers are expected to fill this field by copying it from a PodGroupTemplate.',
  ),
  column('Workload', 'string', 'Name of the referenced Workload object'),
  column('Status', 'string', 'Status of the PodGroup'),
  AGE_COLUMN,
];

const COMPOSITE_POD_GROUP_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'Policy',
    'string',
    'schedulingPolicy defines the scheduling policy for this instance of the CompositePodGroup. Controllers are expected to fill this field by copying it from a CompositePodGroupTemplate. This field is immutable.',
  ),
  column('Workload', 'string', 'Name of the referenced Workload object'),
  AGE_COLUMN,
];

const EVICTION_REQUEST_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'Target',
    'string',
    'target contains a reference to an object (e.g. a pod) that should be evicted. This field is required and immutable.',
  ),
  column(
    'Target Type',
    'string',
    'target contains a reference to an object (e.g. a pod) that should be evicted. This field is required and immutable.',
  ),
  column(
    'Status',
    'string',
    'conditions contain information about the eviction request.\n\nEvictionRequest specific conditions are: TargetEvicted or Failed (managed by evictionrequest-controller). - Failed means that the eviction request is no longer being processed\n  by any eviction responder. This can happen if the request is canceled or if no responder\n  managed to evict the target (e.g. terminate or delete a pod).\n- TargetEvicted means that the target has been evicted (e.g. a pod has been terminated or deleted).\n\nThese conditions can be reset if the eviction was unsuccessful and a new Eviction intent has been submitted.\n\nThe maximum length of the conditions list is 100.',
  ),
  column(
    'Requester',
    'string',
    'requester allows you to identify the entity, that requested the eviction of the target.\n\nIt must be a valid domain-prefixed key (such as "acme.io/foo"). Domain names *.k8s.io and *.kubernetes.io are reserved. This field is required and immutable.',
  ),
  column(
    'Intent',
    'string',
    "intent specifies the action that should be taken for the specified target.\n\n- Eviction means that the requester is interested in the eviction of the target. - Withdrawn means that the requester is no longer interested in the eviction of the target.\n  If all requesters' intents are withdrawn for a common target, the eviction will be canceled.\n  Cancellation consequences:\n  - Inactive responders will never run.\n  - Active responders are expected to cancel the eviction.\n  - Completed or Interrupted responders should not take any action.",
  ),
  AGE_COLUMN,
];

const EVICTION_COLUMNS: readonly ColumnDefinition[] = [
  NAME_COLUMN,
  column(
    'Target',
    'string',
    'target contains a reference to an object (e.g. a pod) that should be evicted. This field is required and immutable.',
  ),
  column(
    'Target Type',
    'string',
    'target contains a reference to an object (e.g. a pod) that should be evicted. This field is required and immutable.',
  ),
  column(
    'Status',
    'string',
    'conditions contain information about the eviction request.\n\nEviction specific conditions are: TargetEvicted or Failed (managed by evictionrequest-controller). - Failed means that the eviction request is no longer being processed\n  by any eviction responder. This can happen if the request is canceled or if no responder\n  managed to evict the target (e.g. terminate or delete a pod).\n- TargetEvicted means that the target has been evicted (e.g. a pod has been terminated or deleted).\n\n\tThe maximum length of the conditions list is 100.',
  ),
  column(
    'Active Responder',
    'string',
    'state specifies a state that is assigned by the evictionrequest-controller. Responders should observe this state in order to navigate their lifecycle. - Inactive means that the responder should not yet process this eviction request. - Active means that the responder is either running or expected to start soon.\n  Also, startTime has been set in the ResponderStatus by the evictionrequest-controller.\n\n  An active responder should currently interact with the eviction process by updating\n  .status.responders, where .name is the active responder name. ResponderStatus fields\n  should be periodically updated to indicate the progress or completion of the eviction process.\n  If .status.responders[].heartbeatTime field is not updated within the heartbeat deadline defined\n  by the Eviction API (currently 20 minutes), the eviction is passed over to the next responder\n\t with a lower priority. Only one responder can be active at a time.\n- Interrupted means that the responder has failed to start or failed to update\n  heartbeatTime in ResponderStatus in a timely manner.\n- Canceled means that the responder has been canceled. In other words, there\tis no\n  EvictionRequest with the same target and Eviction intent in .spec.intent.\n- Completed means that the responder has successfully completed and set completionTime\n  in ResponderStatus.\n\nPlease refer to the ResponderStatus in .status.responders for more details on each responder.',
  ),
  column(
    'Responder Status',
    'string',
    'ResponderStatus represents the last observed status of the eviction process of the responder. It should be only updated by the designated responder whose name is .name field.',
  ),
  column(
    'Responder Expected Finish',
    'string',
    'expectedCompletionTime is the time at which the eviction process step is expected to end for the responder. The time cannot be set to the past. May be omitted if no estimate can be made.',
  ),
  column(
    'Requesters',
    'string',
    'requesters allow you to identify the entities, that requested the eviction of the target. If all the requesters withdraw their eviction intent, the eviction will be canceled.\n\nThe maximum length of the requesters list is 100. If this limit is exceeded, requesters with Withdrawn intent should be dropped first.',
  ),
  AGE_COLUMN,
  column(
    'Responder Heartbeat',
    'string',
    'heartbeatTime is the last time at which the eviction process was reported to be in progress by the responder. It should reflect the present time when set. Responders should avoid heartbeats more frequent than 20 seconds to avoid overloading the control-plane.',
    { priority: 1 },
  ),
  column(
    'Responder Status Message',
    'string',
    'message provides human-readable details about the state of the responder and the eviction process. Maximum length is 4000 characters.',
    { priority: 1 },
  ),
];

// ---------------------------------------------------------------------------------------------
// Go's formatting, where a printer leans on it.

/**
 * (*metav1.LabelSelector).String(), the gogo-protobuf one in generated.pb.go (what `%v` and
 * `.String()` of a selector print): `&LabelSelector{MatchLabels:map[string]string{k: v,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[a b],},},}`.
 */
function labelSelectorGoString(selector: unknown): string {
  const labels = map(selector, 'matchLabels');
  const labelText = goSorted(Object.keys(labels))
    .map((k) => `${k}: ${str(labels, k)},`)
    .join('');
  const expressions = arr(selector, 'matchExpressions')
    .map(
      (e) =>
        `LabelSelectorRequirement{Key:${str(e, 'key')},Operator:${str(e, 'operator')},Values:[${goStrings(arr(e, 'values')).join(' ')}],},`,
    )
    .join('');
  return `&LabelSelector{MatchLabels:map[string]string{${labelText}},MatchExpressions:[]LabelSelectorRequirement{${expressions}},}`;
}

/** A pointer to a string in Go (`*string`): '' when nil, as the printers deref it. */
function derefString(obj: unknown, ...path: readonly string[]): string {
  return str(obj, ...path);
}

/** A printer of one row per object, as every printX here: `cells` is the row printX appends. */
function rowPrinter(
  group: string,
  resource: string,
  columns: readonly ColumnDefinition[],
  cells: (obj: KubeJson, now: number) => Cell[],
): Printer {
  return { group, resource, columns, print: (obj, now) => [{ cells: cells(obj, now) }] };
}

/** The conditions of an object's status, as objects (metav1.Condition and the like). */
function conditions(obj: KubeJson): readonly unknown[] {
  return arr(obj, 'status', 'conditions');
}

// ---------------------------------------------------------------------------------------------
// rbac.authorization.k8s.io

/** rbac.SubjectsStrings: users, groups and `namespace/name` service accounts, each joined by ', ' (Wide). */
function subjectCells(obj: KubeJson): string[] {
  const users: string[] = [];
  const groups: string[] = [];
  const sas: string[] = [];
  for (const s of arr(obj, 'subjects')) {
    switch (str(s, 'kind')) {
      case 'ServiceAccount':
        sas.push(`${str(s, 'namespace')}/${str(s, 'name')}`);
        break;
      case 'User':
        users.push(str(s, 'name'));
        break;
      case 'Group':
        groups.push(str(s, 'name'));
        break;
      // Other kinds go to SubjectsStrings' fourth list, which the printers drop.
    }
  }
  return [users.join(', '), groups.join(', '), sas.join(', ')];
}

/** printRoleBinding and printClusterRoleBinding: `Kind/name` of the roleRef, then the subjects (Wide). */
function bindingCells(obj: KubeJson, now: number): Cell[] {
  return [name(obj), `${str(obj, 'roleRef', 'kind')}/${str(obj, 'roleRef', 'name')}`, age(obj, now), ...subjectCells(obj)];
}

const ROLE_BINDINGS = rowPrinter('rbac.authorization.k8s.io', 'rolebindings', ROLE_BINDING_COLUMNS, bindingCells);
const CLUSTER_ROLE_BINDINGS = rowPrinter('rbac.authorization.k8s.io', 'clusterrolebindings', CLUSTER_ROLE_BINDING_COLUMNS, bindingCells);

// ---------------------------------------------------------------------------------------------
// certificates.k8s.io

/** extractCSRStatus: Denied over Approved over Pending, then `,Failed` and `,Issued` (a certificate is set). */
function csrStatus(obj: KubeJson): string {
  let approved = false;
  let denied = false;
  let failed = false;
  for (const c of conditions(obj)) {
    switch (str(c, 'type')) {
      case 'Approved':
        approved = true;
        break;
      case 'Denied':
        denied = true;
        break;
      case 'Failed':
        failed = true;
        break;
    }
  }
  let status = denied ? 'Denied' : approved ? 'Approved' : 'Pending';
  if (failed) status += ',Failed';
  // status.certificate is []byte, base64 in JSON: non-empty bytes iff a non-empty string.
  if (str(obj, 'status', 'certificate') !== '') status += ',Issued';
  return status;
}

/** printCertificateSigningRequest: the Requestor is spec.username; RequestedDuration is expirationSeconds as a HumanDuration. */
const CERTIFICATE_SIGNING_REQUESTS = rowPrinter('certificates.k8s.io', 'certificatesigningrequests', CSR_COLUMNS, (obj, now) => {
  const signerName = str(obj, 'spec', 'signerName');
  const seconds = optionalNum(obj, 'spec', 'expirationSeconds');
  // csr.ExpirationSecondsToDuration: time.Duration(seconds) * time.Second.
  const requestedDuration = seconds === undefined ? '<none>' : humanDuration(seconds * 1000);
  return [
    name(obj),
    age(obj, now),
    signerName === '' ? '<none>' : signerName,
    str(obj, 'spec', 'username'),
    requestedDuration,
    csrStatus(obj),
  ];
});

/** printClusterTrustBundle. */
const CLUSTER_TRUST_BUNDLES = rowPrinter('certificates.k8s.io', 'clustertrustbundles', CLUSTER_TRUST_BUNDLE_COLUMNS, (obj) => {
  const signerName = str(obj, 'spec', 'signerName');
  return [name(obj), signerName === '' ? '<none>' : signerName];
});

/**
 * printPodCertificateRequest: the state is that of the last Issued, Denied or Failed condition
 * (whatever its status: the API allows them only True), else Pending. No Age column.
 */
const POD_CERTIFICATE_REQUESTS = rowPrinter('certificates.k8s.io', 'podcertificaterequests', POD_CERTIFICATE_REQUEST_COLUMNS, (obj) => {
  let state = 'Pending';
  for (const c of conditions(obj)) {
    const type = str(c, 'type');
    if (type === 'Issued' || type === 'Denied' || type === 'Failed') state = type;
  }
  return [
    name(obj),
    str(obj, 'spec', 'podName'),
    str(obj, 'spec', 'serviceAccountName'),
    str(obj, 'spec', 'nodeName'),
    str(obj, 'spec', 'signerName'),
    state,
    formatLabels(map(obj, 'spec', 'unverifiedUserAnnotations')),
  ];
});

// ---------------------------------------------------------------------------------------------
// coordination.k8s.io

/** printLease: the holder ('' when none). */
const LEASES = rowPrinter('coordination.k8s.io', 'leases', LEASE_COLUMNS, (obj, now) => [
  name(obj),
  derefString(obj, 'spec', 'holderIdentity'),
  age(obj, now),
]);

/** printLeaseCandidate (coordination.k8s.io v1beta1 and v1alpha2: the same fields). */
const LEASE_CANDIDATES = rowPrinter('coordination.k8s.io', 'leasecandidates', LEASE_CANDIDATE_COLUMNS, (obj, now) => [
  name(obj),
  str(obj, 'spec', 'leaseName'),
  str(obj, 'spec', 'binaryVersion'),
  str(obj, 'spec', 'emulationVersion'),
  age(obj, now),
]);

// ---------------------------------------------------------------------------------------------
// storage.k8s.io

/** The annotations that make a StorageClass a default (storageutil.IsDefaultAnnotation). */
const IS_DEFAULT_CLASS_ANNOTATIONS = ['storageclass.kubernetes.io/is-default-class', 'storageclass.beta.kubernetes.io/is-default-class'];

function isDefaultStorageClass(obj: KubeJson): boolean {
  return IS_DEFAULT_CLASS_ANNOTATIONS.some((a) => str(obj, 'metadata', 'annotations', a) === 'true');
}

/** printStorageClassInternal: `effectiveDefault` names the class that gets ` (default)`; '' for one object. */
function storageClassCells(obj: KubeJson, now: number, effectiveDefault: string): Cell[] {
  let className = name(obj);
  if (effectiveDefault !== '' && className === effectiveDefault) className += ' (default)';
  // The internal type's pointers, with the defaults the printer assumes when nil.
  const reclaimPolicy = at(obj, 'reclaimPolicy');
  const volumeBindingMode = at(obj, 'volumeBindingMode');
  return [
    className,
    str(obj, 'provisioner'),
    typeof reclaimPolicy === 'string' ? reclaimPolicy : 'Delete',
    typeof volumeBindingMode === 'string' ? volumeBindingMode : 'Immediate',
    optionalBool(obj, 'allowVolumeExpansion') ?? false,
    age(obj, now),
  ];
}

/**
 * getEffectiveDefaultStorageClass: of the classes annotated as default, the most recently
 * created; on equal times, the first name. '' when none.
 */
function effectiveDefaultStorageClass(items: readonly KubeJson[]): string {
  let best: KubeJson | undefined;
  let bestTime = 0;
  for (const item of items) {
    if (!isDefaultStorageClass(item)) continue;
    // metav1.Time has whole seconds; a missing time is Go's zero time, before every other.
    const t = parseTime(at(item, 'metadata', 'creationTimestamp')) ?? Number.NEGATIVE_INFINITY;
    if (best === undefined || t > bestTime || (t === bestTime && goLess(name(item), name(best)))) {
      best = item;
      bestTime = t;
    }
  }
  return best === undefined ? '' : name(best);
}

/**
 * printStorageClass: one object (a GET, a watch event) never says ` (default)`; only a list does
 * (printStorageClassListRows).
 */
const STORAGE_CLASSES: Printer = {
  ...rowPrinter('storage.k8s.io', 'storageclasses', STORAGE_CLASS_COLUMNS, (obj, now) => storageClassCells(obj, now, '')),
  printList: (items, now) => printStorageClassListRows(items, now).map((row, index) => ({ index, row })),
};

/**
 * printStorageClassList: the rows of a LIST, where the effective default class (see
 * effectiveDefaultStorageClass) is named `NAME (default)`. Printer.print sees one object at a
 * time and cannot know it; a Table LIST of storageclasses must use this.
 */
export function printStorageClassListRows(items: readonly KubeJson[], now: number): TableRow[] {
  const effectiveDefault = effectiveDefaultStorageClass(items);
  return items.map((item) => ({ cells: storageClassCells(item, now, effectiveDefault) }));
}

/** printVolumeAttributesClass. */
const VOLUME_ATTRIBUTES_CLASSES = rowPrinter('storage.k8s.io', 'volumeattributesclasses', VOLUME_ATTRIBUTES_CLASS_COLUMNS, (obj, now) => [
  name(obj),
  str(obj, 'driverName'),
  age(obj, now),
]);

/** printVolumeAttachment: status.attached is a plain bool (false without a status). */
const VOLUME_ATTACHMENTS = rowPrinter('storage.k8s.io', 'volumeattachments', VOLUME_ATTACHMENT_COLUMNS, (obj, now) => [
  name(obj),
  str(obj, 'spec', 'attacher'),
  derefString(obj, 'spec', 'source', 'persistentVolumeName'),
  str(obj, 'spec', 'nodeName'),
  optionalBool(obj, 'status', 'attached') ?? false,
  age(obj, now),
]);

/** printCSINode: the number of drivers. */
const CSI_NODES = rowPrinter('storage.k8s.io', 'csinodes', CSI_NODE_COLUMNS, (obj, now) => [
  name(obj),
  arr(obj, 'spec', 'drivers').length,
  age(obj, now),
]);

/** printCSIDriver: the internal type's pointers with the printer's defaults when nil. */
const CSI_DRIVERS = rowPrinter('storage.k8s.io', 'csidrivers', CSI_DRIVER_COLUMNS, (obj, now) => {
  const modes = goStrings(arr(obj, 'spec', 'volumeLifecycleModes')).join(',');
  // `<unset>` for a nil list. tokenRequests is omitempty and stored as protobuf, so an empty list
  // is nil by the time the apiserver prints it: only a non-empty one is joined.
  const tokenRequests = arr(obj, 'spec', 'tokenRequests');
  return [
    name(obj),
    optionalBool(obj, 'spec', 'attachRequired') ?? true,
    optionalBool(obj, 'spec', 'podInfoOnMount') ?? false,
    optionalBool(obj, 'spec', 'storageCapacity') ?? false,
    tokenRequests.length === 0 ? '<unset>' : tokenRequests.map((t) => str(t, 'audience')).join(','),
    optionalBool(obj, 'spec', 'requiresRepublish') ?? false,
    modes === '' ? '<none>' : modes,
    age(obj, now),
  ];
});

// csistoragecapacities: printers.go has printCSIStorageCapacity, but the apiserver's registry for
// the type sets no TableConvertor from it, so it answers the default table (Name, Created At); no
// printer here, so that the default table is used as well.

// ---------------------------------------------------------------------------------------------
// scheduling.k8s.io

/** printPriorityClass: the preemption policy is '' when nil (the apiserver defaults it). */
const PRIORITY_CLASSES = rowPrinter('scheduling.k8s.io', 'priorityclasses', PRIORITY_CLASS_COLUMNS, (obj, now) => [
  name(obj),
  num(obj, 'value'),
  optionalBool(obj, 'globalDefault') ?? false,
  age(obj, now),
  derefString(obj, 'preemptionPolicy'),
]);

/** printWorkload. */
const WORKLOADS = rowPrinter('scheduling.k8s.io', 'workloads', WORKLOAD_COLUMNS, (obj, now) => [name(obj), age(obj, now)]);

/** The policy of a (Composite)PodGroup: Gang when spec.schedulingPolicy.gang is set, else Basic. */
function podGroupPolicy(obj: KubeJson): string {
  const gang = at(obj, 'spec', 'schedulingPolicy', 'gang');
  return gang !== undefined && gang !== null ? 'Gang' : 'Basic';
}

function workloadRefName(obj: KubeJson): string {
  const ref = at(obj, 'spec', 'workloadRef');
  return ref !== undefined && ref !== null ? str(ref, 'workloadName') : '<none>';
}

/**
 * printPodGroup: Pending; with a PodGroupInitiallyScheduled condition, Scheduled when True else
 * Unschedulable; a DisruptionTarget condition's reason overrides both. The last condition of a
 * type wins, as in the printer's map.
 */
const POD_GROUPS = rowPrinter('scheduling.k8s.io', 'podgroups', POD_GROUP_COLUMNS, (obj, now) => {
  const byType = new Map<string, unknown>();
  for (const c of conditions(obj)) byType.set(str(c, 'type'), c);
  let status = 'Pending';
  const scheduled = byType.get('PodGroupInitiallyScheduled');
  if (scheduled !== undefined) status = str(scheduled, 'status') === 'True' ? 'Scheduled' : 'Unschedulable';
  const disruption = byType.get('DisruptionTarget');
  if (disruption !== undefined) status = str(disruption, 'reason');
  return [name(obj), podGroupPolicy(obj), workloadRefName(obj), status, age(obj, now)];
});

/** printCompositePodGroup. */
const COMPOSITE_POD_GROUPS = rowPrinter('scheduling.k8s.io', 'compositepodgroups', COMPOSITE_POD_GROUP_COLUMNS, (obj, now) => [
  name(obj),
  podGroupPolicy(obj),
  workloadRefName(obj),
  age(obj, now),
]);

// ---------------------------------------------------------------------------------------------
// node.k8s.io

/** printRuntimeClass. */
const RUNTIME_CLASSES = rowPrinter('node.k8s.io', 'runtimeclasses', RUNTIME_CLASS_COLUMNS, (obj, now) => [
  name(obj),
  str(obj, 'handler'),
  age(obj, now),
]);

// ---------------------------------------------------------------------------------------------
// admissionregistration.k8s.io

/** printMutatingWebhook / printValidatingWebhook: the number of webhooks. */
function webhookCells(obj: KubeJson, now: number): Cell[] {
  return [name(obj), arr(obj, 'webhooks').length, age(obj, now)];
}

const MUTATING_WEBHOOKS = rowPrinter(
  'admissionregistration.k8s.io',
  'mutatingwebhookconfigurations',
  MUTATING_WEBHOOK_COLUMNS,
  webhookCells,
);
const VALIDATING_WEBHOOKS = rowPrinter(
  'admissionregistration.k8s.io',
  'validatingwebhookconfigurations',
  VALIDATING_WEBHOOK_COLUMNS,
  webhookCells,
);

/** `apiVersion/kind` of spec.paramKind, `<unset>` without one. */
function paramKind(obj: KubeJson): string {
  const kind = at(obj, 'spec', 'paramKind');
  return kind !== undefined && kind !== null ? `${str(kind, 'apiVersion')}/${str(kind, 'kind')}` : '<unset>';
}

/**
 * The ParamRef cell of printValidatingAdmissionPolicyBinding and printMutatingAdmissionPolicyBinding:
 * `namespace/name`, `*\/name` without a namespace, else the selector's protobuf String().
 */
function paramRef(obj: KubeJson): string {
  const ref = at(obj, 'spec', 'paramRef');
  if (ref === undefined || ref === null) return '<unset>';
  const refName = str(ref, 'name');
  if (refName !== '') {
    const ns = str(ref, 'namespace');
    return ns !== '' ? `${ns}/${refName}` : `*/${refName}`;
  }
  const selector = at(ref, 'selector');
  return selector !== undefined && selector !== null ? labelSelectorGoString(selector) : '<unset>';
}

function bindingPolicyCells(obj: KubeJson, now: number): Cell[] {
  return [name(obj), str(obj, 'spec', 'policyName'), paramRef(obj), age(obj, now)];
}

/** printValidatingAdmissionPolicy: the number of validations. */
const VALIDATING_ADMISSION_POLICIES = rowPrinter(
  'admissionregistration.k8s.io',
  'validatingadmissionpolicies',
  VALIDATING_ADMISSION_POLICY_COLUMNS,
  (obj, now) => [name(obj), arr(obj, 'spec', 'validations').length, paramKind(obj), age(obj, now)],
);

const VALIDATING_ADMISSION_POLICY_BINDINGS = rowPrinter(
  'admissionregistration.k8s.io',
  'validatingadmissionpolicybindings',
  VALIDATING_ADMISSION_POLICY_BINDING_COLUMNS,
  bindingPolicyCells,
);

/** printMutatingAdmissionPolicy: the number of mutations. */
const MUTATING_ADMISSION_POLICIES = rowPrinter(
  'admissionregistration.k8s.io',
  'mutatingadmissionpolicies',
  MUTATING_ADMISSION_POLICY_COLUMNS,
  (obj, now) => [name(obj), arr(obj, 'spec', 'mutations').length, paramKind(obj), age(obj, now)],
);

const MUTATING_ADMISSION_POLICY_BINDINGS = rowPrinter(
  'admissionregistration.k8s.io',
  'mutatingadmissionpolicybindings',
  MUTATING_ADMISSION_POLICY_BINDING_COLUMNS,
  bindingPolicyCells,
);

// ---------------------------------------------------------------------------------------------
// flowcontrol.apiserver.k8s.io

/** printFlowSchema: MissingPL is the status of the Dangling condition, `?` without one. */
const FLOW_SCHEMAS = rowPrinter('flowcontrol.apiserver.k8s.io', 'flowschemas', FLOW_SCHEMA_COLUMNS, (obj, now) => {
  const method = at(obj, 'spec', 'distinguisherMethod');
  const dangling = conditions(obj).find((c) => str(c, 'type') === 'Dangling');
  return [
    name(obj),
    str(obj, 'spec', 'priorityLevelConfiguration', 'name'),
    num(obj, 'spec', 'matchingPrecedence'),
    method !== undefined && method !== null ? str(method, 'type') : '<none>',
    age(obj, now),
    dangling === undefined ? '?' : str(dangling, 'status'),
  ];
});

/**
 * printFlowSchemaList prints in apihelpers.FlowSchemaSequence order: matching precedence, then
 * name; a Table LIST of flowschemas must order its rows so (Printer.print sees one object).
 */
export function sortFlowSchemas(items: readonly KubeJson[]): KubeJson[] {
  return [...items].sort((a, b) => {
    const pa = num(a, 'spec', 'matchingPrecedence');
    const pb = num(b, 'spec', 'matchingPrecedence');
    if (pa !== pb) return pa - pb;
    return goLess(name(a), name(b)) ? -1 : goLess(name(b), name(a)) ? 1 : 0;
  });
}

/** The flowschemas printer with its LIST ordered as printFlowSchemaList orders it. */
const FLOW_SCHEMAS_LISTED: Printer = {
  ...FLOW_SCHEMAS,
  printList: (items, now) => {
    const position = new Map(items.map((item, index) => [item, index]));
    return sortFlowSchemas(items).flatMap((item) => FLOW_SCHEMAS.print(item, now).map((row) => ({ index: position.get(item) ?? 0, row })));
  },
};

/** printPriorityLevelConfiguration: numbers for a Limited level, `<none>` where there are none (Exempt, Reject). */
const PRIORITY_LEVELS = rowPrinter('flowcontrol.apiserver.k8s.io', 'prioritylevelconfigurations', PRIORITY_LEVEL_COLUMNS, (obj, now) => {
  let ncs: Cell = '<none>';
  let queues: Cell = '<none>';
  let handSize: Cell = '<none>';
  let queueLengthLimit: Cell = '<none>';
  const limited = at(obj, 'spec', 'limited');
  if (limited !== undefined && limited !== null) {
    ncs = num(limited, 'nominalConcurrencyShares');
    const queuing = at(limited, 'limitResponse', 'queuing');
    if (queuing !== undefined && queuing !== null) {
      queues = num(queuing, 'queues');
      handSize = num(queuing, 'handSize');
      queueLengthLimit = num(queuing, 'queueLengthLimit');
    }
  }
  return [name(obj), str(obj, 'spec', 'type'), ncs, queues, handSize, queueLengthLimit, age(obj, now)];
});

// ---------------------------------------------------------------------------------------------
// internal.apiserver.k8s.io

/** formatStorageVersions: the first three `apiServerID=encodingVersion`. */
function formatStorageVersions(versions: readonly unknown[]): string {
  const max = 3;
  const list = versions.slice(0, max).map((sv) => `${str(sv, 'apiServerID')}=${str(sv, 'encodingVersion')}`);
  return listWithMoreString(list, versions.length > max, versions.length, max);
}

/** printStorageVersion. */
const STORAGE_VERSIONS = rowPrinter('internal.apiserver.k8s.io', 'storageversions', STORAGE_VERSION_COLUMNS, (obj, now) => {
  const common = at(obj, 'status', 'commonEncodingVersion');
  return [
    name(obj),
    typeof common === 'string' ? common : '<unset>',
    formatStorageVersions(arr(obj, 'status', 'storageVersions')),
    age(obj, now),
  ];
});

// ---------------------------------------------------------------------------------------------
// resource.k8s.io

/** printDeviceClass. */
const DEVICE_CLASSES = rowPrinter('resource.k8s.io', 'deviceclasses', DEVICE_CLASS_COLUMNS, (obj, now) => [name(obj), age(obj, now)]);

/** resourceClaimState: deleted, pending (not allocated, not deleted), allocated, reserved. */
function resourceClaimState(obj: KubeJson): string {
  const states: string[] = [];
  const deleted = at(obj, 'metadata', 'deletionTimestamp');
  const isDeleted = deleted !== undefined && deleted !== null;
  if (isDeleted) states.push('deleted');
  const allocation = at(obj, 'status', 'allocation');
  if (allocation === undefined || allocation === null) {
    if (!isDeleted) states.push('pending');
  } else {
    states.push('allocated');
    if (arr(obj, 'status', 'reservedFor').length > 0) states.push('reserved');
  }
  return states.join(',');
}

/** printResourceClaim. */
const RESOURCE_CLAIMS = rowPrinter('resource.k8s.io', 'resourceclaims', RESOURCE_CLAIM_COLUMNS, (obj, now) => [
  name(obj),
  resourceClaimState(obj),
  age(obj, now),
]);

/** printResourceClaimTemplate. */
const RESOURCE_CLAIM_TEMPLATES = rowPrinter('resource.k8s.io', 'resourceclaimtemplates', RESOURCE_CLAIM_TEMPLATE_COLUMNS, (obj, now) => [
  name(obj),
  age(obj, now),
]);

/** printResourceSlice: the node is '' for slices not local to a node. */
const RESOURCE_SLICES = rowPrinter('resource.k8s.io', 'resourceslices', RESOURCE_SLICE_COLUMNS, (obj, now) => [
  name(obj),
  derefString(obj, 'spec', 'nodeName'),
  str(obj, 'spec', 'driver'),
  str(obj, 'spec', 'pool', 'name'),
  age(obj, now),
]);

/**
 * printResourcePoolStatusRequest: Pending until a True Complete (with the time since) or Failed
 * condition, the first of them deciding; device counts summed over the pools unless Failed, `-`
 * without a status; `Complete (N/M pools)` when the pools listed are fewer than poolCount.
 */
const RESOURCE_POOL_STATUS_REQUESTS = rowPrinter(
  'resource.k8s.io',
  'resourcepoolstatusrequests',
  RESOURCE_POOL_STATUS_REQUEST_COLUMNS,
  (obj, now) => {
    let status = 'Pending';
    let poolCount = 0;
    let total = '-';
    let available = '-';
    let allocated = '-';
    let unavailable = '-';
    let errors = '-';
    let completedTime: unknown = undefined;
    const st = at(obj, 'status');
    if (st !== undefined && st !== null) {
      let isFailed = false;
      for (const c of arr(st, 'conditions')) {
        if (str(c, 'type') === 'Complete' && str(c, 'status') === 'True') {
          status = 'Complete';
          completedTime = at(c, 'lastTransitionTime');
          break;
        }
        if (str(c, 'type') === 'Failed' && str(c, 'status') === 'True') {
          status = 'Failed';
          isFailed = true;
          break;
        }
      }
      poolCount = num(st, 'poolCount');
      const pools = arr(st, 'pools');
      if (status === 'Complete' && poolCount > pools.length) status = `Complete (${pools.length}/${poolCount} pools)`;
      if (!isFailed) {
        // int32 sums in Go; counts of devices stay far below 2^31.
        let sumTotal = 0;
        let sumAvail = 0;
        let sumAlloc = 0;
        let sumUnavail = 0;
        let errorCount = 0;
        for (const p of pools) {
          const validationError = at(p, 'validationError');
          if (validationError !== undefined && validationError !== null) errorCount++;
          sumTotal += num(p, 'totalDevices');
          sumAvail += num(p, 'availableDevices');
          sumAlloc += num(p, 'allocatedDevices');
          sumUnavail += num(p, 'unavailableDevices');
        }
        total = String(sumTotal);
        available = String(sumAvail);
        allocated = String(sumAlloc);
        unavailable = String(sumUnavail);
        errors = String(errorCount);
      }
    }
    // A condition's lastTransitionTime is required; a zero one prints `<unknown>` as Go's would.
    const completed = status.startsWith('Complete') && completedTime !== undefined ? translateTimestampSince(completedTime, now) : '<none>';
    return [name(obj), str(obj, 'spec', 'driver'), total, available, allocated, unavailable, errors, poolCount, status, completed];
  },
);

/** printDeviceTaint: TimeAdded is '' when unset. */
const DEVICE_TAINT_RULES = rowPrinter('resource.k8s.io', 'devicetaintrules', DEVICE_TAINT_RULE_COLUMNS, (obj, now) => {
  const added = at(obj, 'spec', 'taint', 'timeAdded');
  return [
    name(obj),
    str(obj, 'spec', 'taint', 'key'),
    str(obj, 'spec', 'taint', 'value'),
    str(obj, 'spec', 'taint', 'effect'),
    added !== undefined && added !== null ? translateTimestampSince(added, now) : '',
    age(obj, now),
  ];
});

// ---------------------------------------------------------------------------------------------
// storagemigration.k8s.io

/**
 * printStorageVersionMigration: the GroupResource as `resource.group` (`resource` for the core
 * group); the status is the type of the last True Running, Failed or Succeeded condition. No Age.
 */
const STORAGE_VERSION_MIGRATIONS = rowPrinter(
  'storagemigration.k8s.io',
  'storageversionmigrations',
  STORAGE_VERSION_MIGRATION_COLUMNS,
  (obj) => {
    const group = str(obj, 'spec', 'resource', 'group');
    const resource = str(obj, 'spec', 'resource', 'resource');
    let condStatus = 'Unknown';
    for (const c of conditions(obj)) {
      if (str(c, 'status') !== 'True') continue;
      const type = str(c, 'type');
      if (type === 'Running' || type === 'Failed' || type === 'Succeeded') condStatus = type;
    }
    return [name(obj), qualifiedResource(group, resource), condStatus];
  },
);

// ---------------------------------------------------------------------------------------------
// lifecycle.k8s.io (Eviction, EvictionRequest)

/** spec.target.pod.name and `Pod`, `<unset>` for both without a pod. */
function evictionTarget(obj: KubeJson): [string, string] {
  const pod = at(obj, 'spec', 'target', 'pod');
  return pod !== undefined && pod !== null ? [str(pod, 'name'), 'Pod'] : ['<unset>', '<unset>'];
}

/**
 * resolveEvictionStatusConditions: Pending, Progressing once observed (observedGeneration > 0),
 * `Failed (reason)` when Failed is True, `TargetEvicted (reason)` when TargetEvicted is True
 * (the first condition of each type counts, as meta.FindStatusCondition finds it).
 */
function evictionStatus(obj: KubeJson): string {
  let status = (optionalNum(obj, 'status', 'observedGeneration') ?? 0) > 0 ? 'Progressing' : 'Pending';
  const all = conditions(obj);
  const evicted = all.find((c) => str(c, 'type') === 'TargetEvicted');
  const failed = all.find((c) => str(c, 'type') === 'Failed');
  if (failed !== undefined && str(failed, 'status') === 'True') status = `${str(failed, 'type')} (${str(failed, 'reason')})`;
  if (evicted !== undefined && str(evicted, 'status') === 'True') status = `${str(evicted, 'type')} (${str(evicted, 'reason')})`;
  return status;
}

/** printEvictionRequest. */
const EVICTION_REQUESTS = rowPrinter('lifecycle.k8s.io', 'evictionrequests', EVICTION_REQUEST_COLUMNS, (obj, now) => [
  name(obj),
  ...evictionTarget(obj),
  evictionStatus(obj),
  str(obj, 'spec', 'requester'),
  str(obj, 'spec', 'intent'),
  age(obj, now),
]);

/** A time cell that Go prints only for a non-nil *metav1.Time. */
function isSet(v: unknown): boolean {
  return v !== undefined && v !== null;
}

/**
 * printEviction: the active responder (else the last processed one) with `processed/total`, its
 * status and expected finish, the first non-withdrawn requester (sorted) and, Wide, its heartbeat
 * and message.
 */
const EVICTIONS = rowPrinter('lifecycle.k8s.io', 'evictions', EVICTION_COLUMNS, (obj, now) => {
  const targetResponders = arr(obj, 'status', 'targetResponders');
  let processedOrActive = 0;
  let lastActive: unknown = undefined;
  let lastProcessed: unknown = undefined;
  for (const r of targetResponders) {
    switch (str(r, 'state')) {
      case 'Canceled':
      case 'Interrupted':
      case 'Completed':
        processedOrActive++;
        lastProcessed = r;
        break;
      case 'Active':
        processedOrActive++;
        lastActive = r;
        break;
    }
  }
  // The last completed one is shown once all have been processed.
  lastActive ??= lastProcessed;
  const activeResponder = lastActive === undefined ? '<unset>' : str(lastActive, 'name');

  let expectedFinish = '<unknown>';
  let responderStatus = '<unset>';
  let heartbeat = '<unset>';
  let message = '<unset>';
  if (lastActive !== undefined) {
    const responder = arr(obj, 'status', 'responders').find((r) => str(r, 'name') === str(lastActive, 'name'));
    if (responder !== undefined) {
      const state = str(lastActive, 'state');
      responderStatus = state;
      switch (state) {
        case 'Active': {
          const start = at(responder, 'startTime');
          if (isSet(start)) {
            responderStatus = `Started (${translateTimestampSince(start, now)} ago)`;
            const expected = at(responder, 'expectedCompletionTime');
            const expectedMs = parseTime(expected);
            if (isSet(expected)) {
              // translateTimestampUntil after ExpectedCompletionTime.After(time.Now()).
              if (expectedMs !== undefined && expectedMs > now) expectedFinish = `in ${humanDuration(expectedMs - now)}`;
              // In case the estimate is wrong, or a kubelet is slow.
              else expectedFinish = `${translateTimestampSince(expected, now)} ago`;
            }
          }
          break;
        }
        case 'Canceled':
        case 'Interrupted':
          expectedFinish = '-';
          break;
        case 'Completed': {
          const completion = at(responder, 'completionTime');
          if (isSet(completion)) responderStatus = `${state} (${translateTimestampSince(completion, now)} ago)`;
          expectedFinish = '-';
          break;
        }
      }
      const beat = at(responder, 'heartbeatTime');
      if (isSet(beat)) heartbeat = `${translateTimestampSince(beat, now)} ago`;
      const msg = goTrimSpace(str(responder, 'message'));
      if (msg.length > 0) message = msg;
    }
  }

  const requesters = arr(obj, 'status', 'requesters');
  const active = goSorted(requesters.filter((r) => str(r, 'intent') !== 'Withdrawn').map((r) => str(r, 'name')));
  let requestersCell = requesters.length > 0 ? '<withdrawn>' : '<none>';
  if (active.length > 0) requestersCell = listWithMoreString(active.slice(0, 1), active.length > 1, active.length, 1);

  return [
    name(obj),
    ...evictionTarget(obj),
    evictionStatus(obj),
    `${activeResponder} (${processedOrActive}/${targetResponders.length})`,
    responderStatus,
    expectedFinish,
    requestersCell,
    age(obj, now),
    heartbeat,
    message,
  ];
});

export const PRINTERS: readonly Printer[] = [
  LEASES,
  ROLE_BINDINGS,
  CLUSTER_ROLE_BINDINGS,
  STORAGE_CLASSES,
  PRIORITY_CLASSES,
  MUTATING_WEBHOOKS,
  VALIDATING_WEBHOOKS,
  VALIDATING_ADMISSION_POLICIES,
  VALIDATING_ADMISSION_POLICY_BINDINGS,
  MUTATING_ADMISSION_POLICIES,
  MUTATING_ADMISSION_POLICY_BINDINGS,
  CERTIFICATE_SIGNING_REQUESTS,
  CLUSTER_TRUST_BUNDLES,
  POD_CERTIFICATE_REQUESTS,
  LEASE_CANDIDATES,
  VOLUME_ATTRIBUTES_CLASSES,
  VOLUME_ATTACHMENTS,
  CSI_NODES,
  CSI_DRIVERS,
  RUNTIME_CLASSES,
  FLOW_SCHEMAS_LISTED,
  PRIORITY_LEVELS,
  STORAGE_VERSIONS,
  DEVICE_CLASSES,
  RESOURCE_CLAIMS,
  RESOURCE_CLAIM_TEMPLATES,
  RESOURCE_SLICES,
  RESOURCE_POOL_STATUS_REQUESTS,
  DEVICE_TAINT_RULES,
  STORAGE_VERSION_MIGRATIONS,
  WORKLOADS,
  POD_GROUPS,
  COMPOSITE_POD_GROUPS,
  EVICTION_REQUESTS,
  EVICTIONS,
];
