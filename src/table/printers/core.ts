/**
 * Printers of the core group (v1), ported from k8s.io/kubernetes
 * pkg/printers/internalversion/printers.go (v1.37.2), with GenerateOptions{Wide: true} as the
 * apiserver prints: every column, priority 1 included.
 *
 * Each reads the object's JSON as served (v1, defaults applied). Where the Go printer reads an
 * internal field whose v1 JSON differs, the port says so (a pod's IP, an event's
 * reportingComponent). Column descriptions are the apiserver's own columnDefinitions, byte for byte.
 */
// Go sorts strings by their UTF-8 bytes (sets.String.List, sort.Strings).
import { compareGoStrings } from '../../kube/go-format.ts';
import { age, formatLabels, goTrimSpace, layoutContainerCells, name } from '../format.ts';
import { AGE_COLUMN, NAME_COLUMN, column } from '../columns.ts';
import { humanDuration, parseTime, translateTimestampSince } from '../duration.ts';
import type { Cell, KubeJson, Printer, RowCondition, TableRow } from '../model.ts';
import { arr, at, map, num, optionalBool, str } from '../model.ts';

const CONTAINER_NAMES_DESCRIPTION = 'Names of each container in the template.';
const CONTAINER_IMAGES_DESCRIPTION = 'Images referenced by each container in the template.';

/**
 * resource.Quantity.String() of the quantity at `path`: the apiserver serializes a quantity with
 * the same String(), so the served string is it; an absent one is the zero Quantity, "0".
 */
function quantity(obj: unknown, ...path: readonly string[]): string {
  const v = at(obj, ...path);
  return typeof v === 'string' ? v : '0';
}

function hasDeletionTimestamp(obj: unknown): boolean {
  return parseTime(at(obj, 'metadata', 'deletionTimestamp')) !== undefined;
}

function row(...cells: Cell[]): TableRow[] {
  return [{ cells }];
}

// --- pods -------------------------------------------------------------------------------

/** podSuccessConditions / podFailedConditions (printers.go). */
const POD_SUCCESS_CONDITIONS: readonly RowCondition[] = [
  { type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' },
];
const POD_FAILED_CONDITIONS: readonly RowCondition[] = [
  { type: 'Completed', status: 'True', reason: 'Failed', message: 'The pod failed.' },
];

/** node.NodeUnreachablePodReason (pkg/util/node): the reason the node lifecycle controller gives a pod of a lost node. */
const NODE_UNREACHABLE_POD_REASON = 'NodeLost';

/** podutil.IsRestartableInitContainer: a sidecar (restartPolicy Always); false for a status without its spec. */
function isRestartableInitContainer(container: unknown): boolean {
  return str(container, 'restartPolicy') === 'Always';
}

/** A metav1.Time's instant for Before(): the zero time (absent) is undefined, before every other. */
function later(current: number | undefined, candidate: unknown): number | undefined {
  const t = parseTime(candidate);
  if (t === undefined) return current;
  return current === undefined || current < t ? t : current;
}

/** The status's condition of `type`, first match (Go ranges the slice). */
function conditionStatus(conditions: readonly unknown[], type: string): string | undefined {
  const found = conditions.find((c) => str(c, 'type') === type);
  return found === undefined ? undefined : str(found, 'status');
}

/** isPodInitializedConditionTrue. */
function isPodInitializedConditionTrue(conditions: readonly unknown[]): boolean {
  return conditionStatus(conditions, 'Initialized') === 'True';
}

/** hasPodReadyCondition: any Ready condition that is True (not just the first). */
function hasPodReadyCondition(conditions: readonly unknown[]): boolean {
  return conditions.some((c) => str(c, 'type') === 'Ready' && str(c, 'status') === 'True');
}

/** The reason a terminated container gives: its reason, else `Signal:N`, else `ExitCode:N`. */
function terminatedReason(terminated: unknown, prefix: string): string {
  const reason = str(terminated, 'reason');
  if (reason !== '') return prefix + reason;
  const signal = num(terminated, 'signal');
  return signal !== 0 ? `${prefix}Signal:${signal}` : `${prefix}ExitCode:${num(terminated, 'exitCode')}`;
}

/**
 * printPod (printers.go). READY counts ready running containers (and started sidecars) of all
 * containers plus sidecars; STATUS is the phase, overridden by status.reason, SchedulingGated,
 * the first unfinished init container (`Init:…`), then the last container with a reason
 * (walked from the end, so the first container's reason wins), Completed turned back to
 * Running/NotReady/the error of a failed container, and Terminating/Unknown when deleted.
 * RESTARTS counts init containers up to the first unfinished one while initializing, else
 * sidecars and containers, with the age of the latest lastState.terminated.finishedAt.
 */
function printPod(pod: KubeJson, now: number): TableRow[] {
  const spec = at(pod, 'spec');
  const status = at(pod, 'status');
  const conditions = arr(status, 'conditions');
  const specInitContainers = arr(spec, 'initContainers');

  let restarts = 0;
  let restartableInitContainerRestarts = 0;
  let totalContainers = arr(spec, 'containers').length;
  let readyContainers = 0;
  let lastRestartDate: number | undefined;
  let lastRestartableInitContainerRestartDate: number | undefined;

  const podPhase = str(status, 'phase');
  let reason = str(status, 'reason') !== '' ? str(status, 'reason') : podPhase;

  // The PodScheduled condition with reason SchedulingGated (any of them) names the pod's state.
  for (const condition of conditions) {
    if (str(condition, 'type') === 'PodScheduled' && str(condition, 'reason') === 'SchedulingGated') reason = 'SchedulingGated';
  }

  const rowConditions = podPhase === 'Succeeded' ? POD_SUCCESS_CONDITIONS : podPhase === 'Failed' ? POD_FAILED_CONDITIONS : undefined;

  // A Go map by name: a later spec of the same name replaces an earlier one.
  const initContainers = new Map<string, unknown>();
  for (const c of specInitContainers) {
    initContainers.set(str(c, 'name'), c);
    if (isRestartableInitContainer(c)) totalContainers++;
  }

  let initializing = false;
  const initStatuses = arr(status, 'initContainerStatuses');
  for (let i = 0; i < initStatuses.length; i++) {
    const container = initStatuses[i];
    const restartable = isRestartableInitContainer(initContainers.get(str(container, 'name')));
    const restartCount = num(container, 'restartCount');
    restarts += restartCount;
    const lastTerminated = at(container, 'lastState', 'terminated');
    if (lastTerminated !== undefined) lastRestartDate = later(lastRestartDate, at(lastTerminated, 'finishedAt'));
    if (restartable) {
      restartableInitContainerRestarts += restartCount;
      if (lastTerminated !== undefined) {
        lastRestartableInitContainerRestartDate = later(lastRestartableInitContainerRestartDate, at(lastTerminated, 'finishedAt'));
      }
    }
    const terminated = at(container, 'state', 'terminated');
    const waitingReason = str(container, 'state', 'waiting', 'reason');
    if (terminated !== undefined && num(terminated, 'exitCode') === 0) continue;
    if (restartable && optionalBool(container, 'started') === true) {
      if (optionalBool(container, 'ready') === true) readyContainers++;
      continue;
    }
    if (terminated !== undefined) {
      // initialization failed
      reason = terminatedReason(terminated, 'Init:');
    } else if (at(container, 'state', 'waiting') !== undefined && waitingReason !== '' && waitingReason !== 'PodInitializing') {
      reason = `Init:${waitingReason}`;
    } else {
      reason = `Init:${i}/${specInitContainers.length}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || isPodInitializedConditionTrue(conditions)) {
    restarts = restartableInitContainerRestarts;
    lastRestartDate = lastRestartableInitContainerRestartDate;
    let hasRunning = false;
    let errorReason = '';
    const statuses = arr(status, 'containerStatuses');
    for (let i = statuses.length - 1; i >= 0; i--) {
      const container = statuses[i];
      restarts += num(container, 'restartCount');
      const lastTerminated = at(container, 'lastState', 'terminated');
      if (lastTerminated !== undefined) lastRestartDate = later(lastRestartDate, at(lastTerminated, 'finishedAt'));
      const terminated = at(container, 'state', 'terminated');
      if (at(container, 'state', 'waiting') !== undefined && str(container, 'state', 'waiting', 'reason') !== '') {
        reason = str(container, 'state', 'waiting', 'reason');
      } else if (terminated !== undefined) {
        reason = terminatedReason(terminated, '');
        if (num(terminated, 'exitCode') !== 0) errorReason = reason;
      } else if (optionalBool(container, 'ready') === true && at(container, 'state', 'running') !== undefined) {
        hasRunning = true;
        readyContainers++;
      }
    }

    // Back to "Running" if a container still reports running.
    if (reason === 'Completed') {
      if (hasRunning && hasPodReadyCondition(conditions)) reason = 'Running';
      else if (errorReason !== '') reason = errorReason;
      else if (hasRunning) reason = 'NotReady';
    }
  }

  if (hasDeletionTimestamp(pod) && str(status, 'reason') === NODE_UNREACHABLE_POD_REASON) {
    reason = 'Unknown';
  } else if (hasDeletionTimestamp(pod) && podPhase !== 'Succeeded' && podPhase !== 'Failed') {
    // podutilv1.IsPodPhaseTerminal
    reason = 'Terminating';
  }

  const restartsCell =
    restarts !== 0 && lastRestartDate !== undefined ? `${restarts} (${humanDuration(now - lastRestartDate)} ago)` : String(restarts);

  // The internal PodIPs[0] is status.podIP when set (Convert_v1_PodStatus_To_core_PodStatus
  // makes podIP authoritative), else podIPs[0].
  const podIP = str(status, 'podIP') || str(status, 'podIPs', 0, 'ip') || '<none>';
  const nodeName = str(spec, 'nodeName') || '<none>';
  const nominatedNodeName = str(status, 'nominatedNodeName') || '<none>';

  let readinessGates = '<none>';
  const gates = arr(spec, 'readinessGates');
  if (gates.length > 0) {
    const trueConditions = gates.filter((g) => conditionStatus(conditions, str(g, 'conditionType')) === 'True').length;
    readinessGates = `${trueConditions}/${gates.length}`;
  }

  const cells: Cell[] = [
    name(pod),
    `${readyContainers}/${totalContainers}`,
    reason,
    restartsCell,
    age(pod, now),
    podIP,
    nodeName,
    nominatedNodeName,
    readinessGates,
  ];
  return [rowConditions === undefined ? { cells } : { cells, conditions: rowConditions }];
}

const PODS: Printer = {
  group: '',
  resource: 'pods',
  columns: [
    NAME_COLUMN,
    column('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'),
    column('Status', 'string', 'The aggregate status of the containers in this pod.'),
    column(
      'Restarts',
      'string',
      'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.',
    ),
    AGE_COLUMN,
    column('IP', 'string', 'podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.', {
      priority: 1,
    }),
    column(
      'Node',
      'string',
      'NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename',
      { priority: 1 },
    ),
    column(
      'Nominated Node',
      'string',
      'nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.',
      { priority: 1 },
    ),
    column(
      'Readiness Gates',
      'string',
      'If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to "True" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates',
      { priority: 1 },
    ),
  ],
  print: printPod,
};

// --- the rest, in the order of AddHandlers ---------------------------------------------------

/** printPodTemplate: no Age column. */
const POD_TEMPLATES: Printer = {
  group: '',
  resource: 'podtemplates',
  columns: [
    NAME_COLUMN,
    column('Containers', 'string', CONTAINER_NAMES_DESCRIPTION),
    column('Images', 'string', CONTAINER_IMAGES_DESCRIPTION),
    column('Pod Labels', 'string', 'The labels for the pod template.'),
  ],
  print(obj) {
    const [names, images] = layoutContainerCells(arr(obj, 'template', 'spec', 'containers'));
    return row(name(obj), names, images, formatLabels(map(obj, 'template', 'metadata', 'labels')));
  },
};

/** printReplicationController. */
const REPLICATION_CONTROLLERS: Printer = {
  group: '',
  resource: 'replicationcontrollers',
  columns: [
    NAME_COLUMN,
    column(
      'Desired',
      'integer',
      'Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller',
    ),
    column(
      'Current',
      'integer',
      'Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller',
    ),
    column('Ready', 'integer', 'The number of ready replicas for this replication controller.'),
    AGE_COLUMN,
    column('Containers', 'string', CONTAINER_NAMES_DESCRIPTION, { priority: 1 }),
    column('Images', 'string', CONTAINER_IMAGES_DESCRIPTION, { priority: 1 }),
    column(
      'Selector',
      'string',
      'Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors',
      { priority: 1 },
    ),
  ],
  print(obj, now) {
    const [names, images] = layoutContainerCells(arr(obj, 'spec', 'template', 'spec', 'containers'));
    return row(
      name(obj),
      num(obj, 'spec', 'replicas'),
      num(obj, 'status', 'replicas'),
      num(obj, 'status', 'readyReplicas'),
      age(obj, now),
      names,
      images,
      formatLabels(map(obj, 'spec', 'selector')),
    );
  },
};

/** loadBalancerStatusStringer (wide: never cut to 16 characters): IPs, else hostnames, sorted and unique. */
function loadBalancerStatusStringer(service: unknown): string {
  const result = new Set<string>();
  for (const ingress of arr(service, 'status', 'loadBalancer', 'ingress')) {
    if (str(ingress, 'ip') !== '') result.add(str(ingress, 'ip'));
    else if (str(ingress, 'hostname') !== '') result.add(str(ingress, 'hostname'));
  }
  return [...result].sort(compareGoStrings).join(',');
}

/** getServiceExternalIP. */
function getServiceExternalIP(service: unknown): string {
  const externalIPs = arr(service, 'spec', 'externalIPs').map((ip) => (typeof ip === 'string' ? ip : ''));
  switch (str(service, 'spec', 'type')) {
    case 'ClusterIP':
    case 'NodePort':
      return externalIPs.length > 0 ? externalIPs.join(',') : '<none>';
    case 'LoadBalancer': {
      const lbIps = loadBalancerStatusStringer(service);
      if (externalIPs.length > 0) return [...(lbIps.length > 0 ? lbIps.split(',') : []), ...externalIPs].join(',');
      return lbIps.length > 0 ? lbIps : '<pending>';
    }
    case 'ExternalName':
      return str(service, 'spec', 'externalName');
    default:
      return '<unknown>';
  }
}

/** makePortString: `port/protocol`, `port:nodePort/protocol` when a node port is set. */
function makePortString(ports: readonly unknown[]): string {
  return ports
    .map((p) => {
      const nodePort = num(p, 'nodePort');
      const protocol = str(p, 'protocol');
      return nodePort > 0 ? `${num(p, 'port')}:${nodePort}/${protocol}` : `${num(p, 'port')}/${protocol}`;
    })
    .join(',');
}

/** printService. */
const SERVICES: Printer = {
  group: '',
  resource: 'services',
  columns: [
    NAME_COLUMN,
    column(
      'Type',
      'string',
      'type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. "ClusterIP" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is "None", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. "NodePort" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. "LoadBalancer" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. "ExternalName" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types',
    ),
    column(
      'Cluster-IP',
      'string',
      'clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are "None", empty string (""), or a valid IP address. Setting this to "None" makes a "headless service" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies',
    ),
    column(
      'External-IP',
      'string',
      'externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.',
    ),
    column(
      'Port(s)',
      'string',
      'The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies',
    ),
    AGE_COLUMN,
    column(
      'Selector',
      'string',
      'Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/',
      { priority: 1 },
    ),
  ],
  print(obj, now) {
    const clusterIPs = arr(obj, 'spec', 'clusterIPs');
    const internalIP = clusterIPs.length > 0 ? str(clusterIPs, 0) : '<none>';
    const ports = makePortString(arr(obj, 'spec', 'ports'));
    return row(
      name(obj),
      str(obj, 'spec', 'type'),
      internalIP,
      getServiceExternalIP(obj),
      ports.length > 0 ? ports : '<none>',
      age(obj, now),
      formatLabels(map(obj, 'spec', 'selector')),
    );
  },
};

/** net.JoinHostPort: an IPv6 host in brackets. */
function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The endpoints shown at most, then ` + N more...` (formatEndpoints). */
const MAX_ENDPOINTS = 3;

/**
 * formatEndpoints(endpoints, nil): ready addresses only (notReadyAddresses are not shown), as
 * `ip:port` for each port of a subset, or the bare IP for a subset without ports; the count of
 * more includes every address of every port.
 */
function formatEndpoints(endpoints: unknown): string {
  const subsets = arr(endpoints, 'subsets');
  if (subsets.length === 0) return '<none>';
  const list: string[] = [];
  let more = false;
  let count = 0;
  for (const ss of subsets) {
    const addresses = arr(ss, 'addresses');
    const ports = arr(ss, 'ports');
    if (ports.length === 0) {
      // Headless services may have no ports.
      count += addresses.length;
      for (const addr of addresses) {
        if (list.length === MAX_ENDPOINTS) {
          more = true;
          break;
        }
        list.push(str(addr, 'ip'));
      }
      continue;
    }
    for (const port of ports) {
      count += addresses.length;
      for (const addr of addresses) {
        if (list.length === MAX_ENDPOINTS) {
          more = true;
          break;
        }
        list.push(joinHostPort(str(addr, 'ip'), num(port, 'port')));
      }
    }
  }
  const ret = list.join(',');
  return more ? `${ret} + ${count - MAX_ENDPOINTS} more...` : ret;
}

/** printEndpoints. */
const ENDPOINTS: Printer = {
  group: '',
  resource: 'endpoints',
  columns: [
    NAME_COLUMN,
    column(
      'Endpoints',
      'string',
      'The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.',
    ),
    AGE_COLUMN,
  ],
  print(obj, now) {
    return row(name(obj), formatEndpoints(obj), age(obj, now));
  },
};

/** labelNodeRolePrefix and nodeLabelRole (printers.go). */
const LABEL_NODE_ROLE_PREFIX = 'node-role.kubernetes.io/';
const NODE_LABEL_ROLE = 'kubernetes.io/role';

/** findNodeRoles: `node-role.kubernetes.io/<role>` keys and `kubernetes.io/role=<role>` values, sorted and unique. */
function findNodeRoles(node: unknown): string[] {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(map(node, 'metadata', 'labels'))) {
    if (k.startsWith(LABEL_NODE_ROLE_PREFIX)) {
      const role = k.slice(LABEL_NODE_ROLE_PREFIX.length);
      if (role.length > 0) roles.add(role);
    } else if (k === NODE_LABEL_ROLE && typeof v === 'string' && v !== '') {
      roles.add(v);
    }
  }
  return [...roles].sort(compareGoStrings);
}

/** getNodeInternalIP / getNodeExternalIP: the first address of the type. */
function nodeAddress(node: unknown, type: string): string {
  const found = arr(node, 'status', 'addresses').find((a) => str(a, 'type') === type);
  return found === undefined ? '<none>' : str(found, 'address');
}

const NODE_ADDRESSES_DESCRIPTION =
  "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";

/** printNode. */
const NODES: Printer = {
  group: '',
  resource: 'nodes',
  columns: [
    NAME_COLUMN,
    column('Status', 'string', 'The status of the node'),
    column('Roles', 'string', 'The roles of the node'),
    AGE_COLUMN,
    column('Version', 'string', 'Kubelet Version reported by the node.'),
    column('Internal-IP', 'string', NODE_ADDRESSES_DESCRIPTION, { priority: 1 }),
    column('External-IP', 'string', NODE_ADDRESSES_DESCRIPTION, { priority: 1 }),
    column('OS-Image', 'string', 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).', { priority: 1 }),
    column('Kernel-Version', 'string', "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", { priority: 1 }),
    column(
      'Container-Runtime',
      'string',
      'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).',
      { priority: 1 },
    ),
  ],
  print(obj, now) {
    // Only the Ready condition counts; by a Go map, the last of that type wins.
    let ready: unknown;
    for (const c of arr(obj, 'status', 'conditions')) if (str(c, 'type') === 'Ready') ready = c;
    const status: string[] = [];
    if (ready !== undefined) status.push(str(ready, 'status') === 'True' ? 'Ready' : 'NotReady');
    if (status.length === 0) status.push('Unknown');
    if (optionalBool(obj, 'spec', 'unschedulable') === true) status.push('SchedulingDisabled');
    const roles = findNodeRoles(obj).join(',');
    const info = at(obj, 'status', 'nodeInfo');
    let kernelVersion = str(info, 'kernelVersion') || '<unknown>';
    if (str(info, 'architecture') !== '') kernelVersion += ` (${str(info, 'architecture')})`;
    return row(
      name(obj),
      status.join(','),
      roles.length > 0 ? roles : '<none>',
      age(obj, now),
      str(info, 'kubeletVersion'),
      nodeAddress(obj, 'InternalIP'),
      nodeAddress(obj, 'ExternalIP'),
      str(info, 'osImage') || '<unknown>',
      kernelVersion,
      str(info, 'containerRuntimeVersion') || '<unknown>',
    );
  },
};

/** formatEventSource: component (else reportingComponent), then `, host` (else reporting instance) when one is set. */
function formatEventSource(event: unknown): string {
  const component = str(event, 'source', 'component') || str(event, 'reportingComponent');
  const instance = str(event, 'source', 'host') || str(event, 'reportingInstance');
  return instance.length === 0 ? component : `${component}, ${instance}`;
}

/**
 * printEvent. FIRST SEEN is firstTimestamp, else eventTime; LAST SEEN is lastTimestamp, else
 * FIRST SEEN, but series.lastObservedTime for a series; COUNT is series.count, else count, else 1.
 * The internal ReportingController is v1's `reportingComponent`.
 */
const EVENTS: Printer = {
  group: '',
  resource: 'events',
  columns: [
    column('Last Seen', 'string', 'The time at which the most recent occurrence of this event was recorded.'),
    column('Type', 'string', 'Type of this event (Normal, Warning), new types could be added in the future'),
    column(
      'Reason',
      'string',
      "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    ),
    column('Object', 'string', 'The object that this event is about.'),
    column(
      'Subobject',
      'string',
      'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: "spec.containers{name}" (where "name" refers to the name of the container that triggered the event) or if no container name is specified "spec.containers[2]" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.',
      { priority: 1 },
    ),
    column('Source', 'string', 'The component reporting this event. Should be a short machine understandable string.', { priority: 1 }),
    column('Message', 'string', 'A human-readable description of the status of this operation.'),
    column('First Seen', 'string', 'The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)', {
      priority: 1,
    }),
    column('Count', 'string', 'The number of times this event has occurred.', { priority: 1 }),
    { ...NAME_COLUMN, priority: 1 },
  ],
  print(obj, now) {
    const firstTimestamp =
      parseTime(at(obj, 'firstTimestamp')) === undefined
        ? translateTimestampSince(at(obj, 'eventTime'), now)
        : translateTimestampSince(at(obj, 'firstTimestamp'), now);
    let lastTimestamp =
      parseTime(at(obj, 'lastTimestamp')) === undefined ? firstTimestamp : translateTimestampSince(at(obj, 'lastTimestamp'), now);
    let count = num(obj, 'count');
    const series = at(obj, 'series');
    if (series !== undefined && series !== null) {
      lastTimestamp = translateTimestampSince(at(series, 'lastObservedTime'), now);
      count = num(series, 'count');
    } else if (count === 0) {
      // Singleton events don't have a count set in the new API.
      count = 1;
    }
    const kind = str(obj, 'involvedObject', 'kind').toLowerCase();
    const involvedName = str(obj, 'involvedObject', 'name');
    return row(
      lastTimestamp,
      str(obj, 'type'),
      str(obj, 'reason'),
      involvedName.length > 0 ? `${kind}/${involvedName}` : kind,
      str(obj, 'involvedObject', 'fieldPath'),
      formatEventSource(obj),
      goTrimSpace(str(obj, 'message')),
      firstTimestamp,
      count,
      name(obj),
    );
  },
};

/** printNamespace. */
const NAMESPACES: Printer = {
  group: '',
  resource: 'namespaces',
  columns: [NAME_COLUMN, column('Status', 'string', 'The status of the namespace'), AGE_COLUMN],
  print(obj, now) {
    return row(name(obj), str(obj, 'status', 'phase'), age(obj, now));
  },
};

/** printSecret: the number of keys in data (stringData is merged into data on write, never served). */
const SECRETS: Printer = {
  group: '',
  resource: 'secrets',
  columns: [
    NAME_COLUMN,
    column(
      'Type',
      'string',
      'Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types',
    ),
    column(
      'Data',
      'string',
      "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
    ),
    AGE_COLUMN,
  ],
  print(obj, now) {
    return row(name(obj), str(obj, 'type'), Object.keys(map(obj, 'data')).length, age(obj, now));
  },
};

/** printServiceAccount. */
const SERVICE_ACCOUNTS: Printer = {
  group: '',
  resource: 'serviceaccounts',
  columns: [NAME_COLUMN, AGE_COLUMN],
  print(obj, now) {
    return row(name(obj), age(obj, now));
  },
};

/** helper.GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order, each once. */
function accessModesAsString(modes: readonly unknown[]): string {
  const abbreviations: readonly [string, string][] = [
    ['ReadWriteOnce', 'RWO'],
    ['ReadOnlyMany', 'ROX'],
    ['ReadWriteMany', 'RWX'],
    ['ReadWriteOncePod', 'RWOP'],
  ];
  return abbreviations
    .filter(([mode]) => modes.includes(mode))
    .map(([, short]) => short)
    .join(',');
}

/** core.BetaStorageClassAnnotation: read before spec.storageClassName, even when empty (helper.GetPersistentVolume(Claim)Class). */
const BETA_STORAGE_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';

function storageClass(obj: unknown): string {
  const annotations = map(obj, 'metadata', 'annotations');
  const beta = annotations[BETA_STORAGE_CLASS_ANNOTATION];
  if (typeof beta === 'string') return beta;
  return str(obj, 'spec', 'storageClassName');
}

/** A *string printed as `<unset>` when nil. */
function unsetOr(obj: unknown, ...path: readonly string[]): string {
  const v = at(obj, ...path);
  return typeof v === 'string' ? v : '<unset>';
}

/** printPersistentVolume: every column whatever Wide says (VolumeMode is priority 1 all the same). */
const PERSISTENT_VOLUMES: Printer = {
  group: '',
  resource: 'persistentvolumes',
  columns: [
    NAME_COLUMN,
    column(
      'Capacity',
      'string',
      "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
    ),
    column(
      'Access Modes',
      'string',
      'accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes',
    ),
    column(
      'Reclaim Policy',
      'string',
      'persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming',
    ),
    column(
      'Status',
      'string',
      'phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase',
    ),
    column(
      'Claim',
      'string',
      'claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding',
    ),
    column('StorageClass', 'string', 'StorageClass of the pv'),
    column('VolumeAttributesClass', 'string', 'VolumeAttributesClass of the pv'),
    column(
      'Reason',
      'string',
      'reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.',
    ),
    AGE_COLUMN,
    column(
      'VolumeMode',
      'string',
      'volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.',
      { priority: 1 },
    ),
  ],
  print(obj, now) {
    const claimRef = at(obj, 'spec', 'claimRef');
    const claim = claimRef === undefined || claimRef === null ? '' : `${str(claimRef, 'namespace')}/${str(claimRef, 'name')}`;
    return row(
      name(obj),
      quantity(obj, 'spec', 'capacity', 'storage'),
      accessModesAsString(arr(obj, 'spec', 'accessModes')),
      str(obj, 'spec', 'persistentVolumeReclaimPolicy'),
      hasDeletionTimestamp(obj) ? 'Terminating' : str(obj, 'status', 'phase'),
      claim,
      storageClass(obj),
      unsetOr(obj, 'spec', 'volumeAttributesClassName'),
      str(obj, 'status', 'reason'),
      age(obj, now),
      unsetOr(obj, 'spec', 'volumeMode'),
    );
  },
};

/** printPersistentVolumeClaim: capacity and access modes from the status, once bound to a volume. */
const PERSISTENT_VOLUME_CLAIMS: Printer = {
  group: '',
  resource: 'persistentvolumeclaims',
  columns: [
    NAME_COLUMN,
    column('Status', 'string', 'phase represents the current phase of PersistentVolumeClaim.'),
    column('Volume', 'string', 'volumeName is the binding reference to the PersistentVolume backing this claim.'),
    column('Capacity', 'string', 'capacity represents the actual resources of the underlying volume.'),
    column(
      'Access Modes',
      'string',
      'accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1',
    ),
    column('StorageClass', 'string', 'StorageClass of the pvc'),
    column('VolumeAttributesClass', 'string', 'VolumeAttributesClass of the pvc'),
    AGE_COLUMN,
    column(
      'VolumeMode',
      'string',
      'volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.',
      { priority: 1 },
    ),
  ],
  print(obj, now) {
    const volumeName = str(obj, 'spec', 'volumeName');
    const bound = volumeName !== '';
    return row(
      name(obj),
      hasDeletionTimestamp(obj) ? 'Terminating' : str(obj, 'status', 'phase'),
      volumeName,
      bound ? quantity(obj, 'status', 'capacity', 'storage') : '',
      bound ? accessModesAsString(arr(obj, 'status', 'accessModes')) : '',
      storageClass(obj),
      unsetOr(obj, 'spec', 'volumeAttributesClassName'),
      age(obj, now),
      unsetOr(obj, 'spec', 'volumeMode'),
    );
  },
};

/** printComponentStatus: the first Healthy condition; no Age column. */
const COMPONENT_STATUSES: Printer = {
  group: '',
  resource: 'componentstatuses',
  columns: [
    NAME_COLUMN,
    column('Status', 'string', 'Status of the component conditions'),
    column('Message', 'string', 'Message of the component conditions'),
    column('Error', 'string', 'Error of the component conditions'),
  ],
  print(obj) {
    const healthy = arr(obj, 'conditions').find((c) => str(c, 'type') === 'Healthy');
    if (healthy === undefined) return row(name(obj), 'Unknown', '', '');
    return row(name(obj), str(healthy, 'status') === 'True' ? 'Healthy' : 'Unhealthy', str(healthy, 'message'), str(healthy, 'error'));
  },
};

/**
 * printResourceQuota: `resource: used/hard` for each resource of status.hard, sorted by name;
 * `limits.*` ones in LIMIT, the rest in REQUEST. A resource without status.used prints used 0.
 */
const RESOURCE_QUOTAS: Printer = {
  group: '',
  resource: 'resourcequotas',
  columns: [
    NAME_COLUMN,
    column('Request', 'string', 'Request represents a minimum amount of cpu/memory that a container may consume.'),
    column(
      'Limit',
      'string',
      'Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.',
    ),
    AGE_COLUMN,
  ],
  print(obj, now) {
    const requests: string[] = [];
    const limits: string[] = [];
    for (const resource of Object.keys(map(obj, 'status', 'hard')).sort(compareGoStrings)) {
      const pieces = resource.split('.');
      const target = pieces.length > 1 && pieces[0] === 'limits' ? limits : requests;
      target.push(`${resource}: ${quantity(obj, 'status', 'used', resource)}/${quantity(obj, 'status', 'hard', resource)}`);
    }
    return row(name(obj), requests.join(', '), limits.join(', '), age(obj, now));
  },
};

/** printConfigMap: the number of keys in data and binaryData. */
const CONFIG_MAPS: Printer = {
  group: '',
  resource: 'configmaps',
  columns: [
    NAME_COLUMN,
    column(
      'Data',
      'string',
      "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
    ),
    AGE_COLUMN,
  ],
  print(obj, now) {
    const keys = Object.keys(map(obj, 'data')).length + Object.keys(map(obj, 'binaryData')).length;
    return [{ cells: [str(obj, 'metadata', 'name'), keys, translateTimestampSince(at(obj, 'metadata', 'creationTimestamp'), now)] }];
  },
};

export const PRINTERS: readonly Printer[] = [
  PODS,
  POD_TEMPLATES,
  REPLICATION_CONTROLLERS,
  SERVICES,
  ENDPOINTS,
  NODES,
  EVENTS,
  NAMESPACES,
  SECRETS,
  SERVICE_ACCOUNTS,
  PERSISTENT_VOLUMES,
  PERSISTENT_VOLUME_CLAIMS,
  COMPONENT_STATUSES,
  RESOURCE_QUOTAS,
  CONFIG_MAPS,
];
