/**
 * Printers of the workload and service-networking groups: apps, batch, autoscaling, policy,
 * networking.k8s.io and discovery.k8s.io, ported from k8s.io/kubernetes
 * pkg/printers/internalversion/printers.go (v1.37.2), every column printed (GenerateOptions{Wide: true}).
 *
 * Column descriptions are the apiserver's own columnDefinitions (Go SwaggerDoc strings), pasted
 * byte for byte from a v1.37.2 apiserver's answers.
 *
 * Each printer reads the object's JSON as served (external version, defaults applied). Where a
 * Go printer reads the internal type, the field has the same JSON name in the served version,
 * except for autoscaling/v1 HorizontalPodAutoscalers, whose internal (v2-shaped) metrics are
 * rebuilt here as Go's conversion rebuilds them (see hpaFromV1).
 */
import { compareGoStrings } from '../../kube/go-format.ts';
import { age, formatLabels, layoutContainerCells, listWithMoreString, name } from '../format.ts';
import { AGE_COLUMN, NAME_COLUMN, column } from '../columns.ts';
import { humanDuration, parseTime, translateTimestampSince } from '../duration.ts';
import type { KubeJson, Printer } from '../model.ts';
import { arr, at, map, num, optionalBool, optionalNum, str } from '../model.ts';
import { groupKindString, qualifiedResource } from '../../kube/group-resource.ts';

// ---------------------------------------------------------------------------------------------
// Shared columns and cells

const CONTAINERS_COLUMN = column('Containers', 'string', 'Names of each container in the template.', { priority: 1 });
const IMAGES_COLUMN = column('Images', 'string', 'Images referenced by each container in the template.', { priority: 1 });
/** Deployments and StatefulSets: "%d/%d" of ready and desired replicas. */
const READY_OF_DESIRED_COLUMN = column('Ready', 'string', 'Number of the pod with ready state');
/** batchv1.JobSpec{}.SwaggerDoc()["selector"], for Jobs and for CronJobs' job template. */
const JOB_SELECTOR_COLUMN = column(
  'Selector',
  'string',
  'A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors',
  { priority: 1 },
);

/** The Containers and Images cells of a pod template (spec.template in apps and batch types). */
function containerCells(template: unknown): [string, string] {
  return layoutContainerCells(arr(template, 'spec', 'containers'));
}

/**
 * metav1.LabelSelectorAsSelector(s).String(): '' for a nil selector (labels.Nothing()) and for an
 * empty one (labels.Everything()); else the requirements sorted by key (sort.Sort(ByKey), an
 * insertion sort, stable, below 13 requirements; Array.prototype.sort is stable at any length),
 * matchLabels before matchExpressions on equal keys, each as Requirement.String writes it
 * (`k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, values sorted). undefined where Go returns an
 * error: an unknown operator, or values that do not fit the operator. Key and value syntax, which
 * NewRequirement also checks, is not checked again: the apiserver validated every stored selector.
 */
export function labelSelectorString(selector: unknown): string | undefined {
  if (selector === undefined || selector === null) return '';
  const matchLabels = map(selector, 'matchLabels');
  const expressions = arr(selector, 'matchExpressions');
  const requirements: { key: string; text: string }[] = [];
  for (const [key, value] of Object.entries(matchLabels)) {
    requirements.push({ key, text: `${key}=${typeof value === 'string' ? value : ''}` });
  }
  for (const expr of expressions) {
    const key = str(expr, 'key');
    const values = arr(expr, 'values')
      .map((v) => (typeof v === 'string' ? v : ''))
      .sort(compareGoStrings);
    switch (str(expr, 'operator')) {
      case 'In':
        if (values.length === 0) return undefined;
        requirements.push({ key, text: `${key} in (${values.join(',')})` });
        break;
      case 'NotIn':
        if (values.length === 0) return undefined;
        requirements.push({ key, text: `${key} notin (${values.join(',')})` });
        break;
      case 'Exists':
        if (values.length !== 0) return undefined;
        requirements.push({ key, text: key });
        break;
      case 'DoesNotExist':
        if (values.length !== 0) return undefined;
        requirements.push({ key, text: `!${key}` });
        break;
      default:
        return undefined;
    }
  }
  requirements.sort((a, b) => compareGoStrings(a.key, b.key));
  return requirements.map((r) => r.text).join(',');
}

/** metav1.FormatLabelSelector: the selector's string, `<none>` when it is empty, `<error>` when invalid. */
export function formatLabelSelector(selector: unknown): string {
  const s = labelSelectorString(selector);
  if (s === undefined) return '<error>';
  return s === '' ? '<none>' : s;
}

/** printBoolPtr: `True`, `False`, or `<unset>` for a nil pointer. */
function printBoolPtr(value: boolean | undefined): string {
  if (value === undefined) return '<unset>';
  return value ? 'True' : 'False';
}

/** intstr.IntOrString.String(): the number in decimal, or the string; `<nil>` for a nil pointer. */
function intOrString(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return value;
  return '<nil>';
}

// ---------------------------------------------------------------------------------------------
// apps

/** printDeployment: READY is "ready/desired"; SELECTOR is the selector's String(), `<invalid>` on error (not `<none>`: '' when empty). */
const DEPLOYMENTS: Printer = {
  group: 'apps',
  resource: 'deployments',
  columns: [
    NAME_COLUMN,
    READY_OF_DESIRED_COLUMN,
    column('Up-to-date', 'string', 'Total number of non-terminating pods targeted by this deployment that have the desired template spec.'),
    column(
      'Available',
      'string',
      'Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.',
    ),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    column(
      'Selector',
      'string',
      "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.",
      { priority: 1 },
    ),
  ],
  print(obj, now) {
    const [names, images] = containerCells(at(obj, 'spec', 'template'));
    return [
      {
        cells: [
          name(obj),
          `${num(obj, 'status', 'readyReplicas')}/${num(obj, 'spec', 'replicas')}`,
          num(obj, 'status', 'updatedReplicas'),
          num(obj, 'status', 'availableReplicas'),
          age(obj, now),
          names,
          images,
          labelSelectorString(at(obj, 'spec', 'selector')) ?? '<invalid>',
        ],
      },
    ];
  },
};

/** printReplicaSet: desired, current and ready as numbers. */
const REPLICA_SETS: Printer = {
  group: 'apps',
  resource: 'replicasets',
  columns: [
    NAME_COLUMN,
    column(
      'Desired',
      'integer',
      'Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset',
    ),
    column(
      'Current',
      'integer',
      'Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset',
    ),
    column('Ready', 'integer', 'The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.'),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    column(
      'Selector',
      'string',
      "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
      { priority: 1 },
    ),
  ],
  print(obj, now) {
    const [names, images] = containerCells(at(obj, 'spec', 'template'));
    return [
      {
        cells: [
          name(obj),
          num(obj, 'spec', 'replicas'),
          num(obj, 'status', 'replicas'),
          num(obj, 'status', 'readyReplicas'),
          age(obj, now),
          names,
          images,
          formatLabelSelector(at(obj, 'spec', 'selector')),
        ],
      },
    ];
  },
};

/** printDaemonSet: the five status counts as numbers, the template's nodeSelector as labels. */
const DAEMON_SETS: Printer = {
  group: 'apps',
  resource: 'daemonsets',
  columns: [
    NAME_COLUMN,
    column(
      'Desired',
      'integer',
      'The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/',
    ),
    column(
      'Current',
      'integer',
      'The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/',
    ),
    column(
      'Ready',
      'integer',
      'numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.',
    ),
    column('Up-to-date', 'integer', 'The total number of nodes that are running updated daemon pod'),
    column(
      'Available',
      'integer',
      'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)',
    ),
    column(
      'Node Selector',
      'string',
      "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
    ),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    column(
      'Selector',
      'string',
      "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
      { priority: 1 },
    ),
  ],
  print(obj, now) {
    const [names, images] = containerCells(at(obj, 'spec', 'template'));
    return [
      {
        cells: [
          name(obj),
          num(obj, 'status', 'desiredNumberScheduled'),
          num(obj, 'status', 'currentNumberScheduled'),
          num(obj, 'status', 'numberReady'),
          num(obj, 'status', 'updatedNumberScheduled'),
          num(obj, 'status', 'numberAvailable'),
          formatLabels(map(obj, 'spec', 'template', 'spec', 'nodeSelector')),
          age(obj, now),
          names,
          images,
          formatLabelSelector(at(obj, 'spec', 'selector')),
        ],
      },
    ];
  },
};

/** printStatefulSet: READY is "ready/desired"; no Selector column. */
const STATEFUL_SETS: Printer = {
  group: 'apps',
  resource: 'statefulsets',
  columns: [NAME_COLUMN, READY_OF_DESIRED_COLUMN, AGE_COLUMN, CONTAINERS_COLUMN, IMAGES_COLUMN],
  print(obj, now) {
    const [names, images] = containerCells(at(obj, 'spec', 'template'));
    return [{ cells: [name(obj), `${num(obj, 'status', 'readyReplicas')}/${num(obj, 'spec', 'replicas')}`, age(obj, now), names, images] }];
  },
};

/**
 * printControllerRevision: CONTROLLER is the first controller owner reference (metav1.GetControllerOf)
 * as formatResourceName writes it, `kind.group/name` lowercased (`daemonset.apps/x`), just the
 * name when both kind and group are empty, `<none>` without a controller.
 */
const CONTROLLER_REVISIONS: Printer = {
  group: 'apps',
  resource: 'controllerrevisions',
  columns: [
    NAME_COLUMN,
    column('Controller', 'string', 'Controller of the object'),
    column('Revision', 'string', 'Revision indicates the revision of the state represented by Data.'),
    AGE_COLUMN,
  ],
  print(obj, now) {
    const ref = arr(obj, 'metadata', 'ownerReferences').find((r) => optionalBool(r, 'controller') === true);
    let controller = '<none>';
    if (ref !== undefined) {
      const group = parseGroup(str(ref, 'apiVersion'));
      if (group === undefined) {
        // schema.ParseGroupVersion fails on more than one '/': Go returns the error and the
        // apiserver fails the whole request. Unreachable for stored objects (ownerReference
        // validation rejects such an apiVersion), so thrown, not printed.
        throw new Error(`unexpected GroupVersion string: ${str(ref, 'apiVersion')}`);
      }
      const kind = str(ref, 'kind');
      const name = str(ref, 'name');
      controller = group === '' && kind === '' ? name : `${groupKindString(group, kind).toLowerCase()}/${name}`;
    }
    return [{ cells: [name(obj), controller, num(obj, 'revision'), age(obj, now)] }];
  },
};

/** The group of schema.ParseGroupVersion(apiVersion): '' for '', '/' and 'v1'; undefined where Go errs (two or more '/'). */
function parseGroup(apiVersion: string): string | undefined {
  if (apiVersion === '' || apiVersion === '/') return '';
  const parts = apiVersion.split('/');
  if (parts.length === 1) return '';
  if (parts.length === 2) return parts[0];
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// batch

/** hasJobCondition: the first condition of that type decides (status True), later ones of the same type are not read. */
function hasJobCondition(conditions: readonly unknown[], type: string): boolean {
  const condition = conditions.find((c) => str(c, 'type') === type);
  return condition !== undefined && str(condition, 'status') === 'True';
}

/**
 * printJob. COMPLETIONS: "succeeded/completions", or without completions "succeeded/1", or
 * "succeeded/1 of parallelism" when parallelism > 1. DURATION: '' before the job starts,
 * HumanDuration(now - startTime) while it runs (so it moves with `now`), completion - start once
 * complete. STATUS: the first of Complete, Failed, Terminating (deletionTimestamp set), Suspended,
 * FailureTarget, SuccessCriteriaMet that holds, else Running.
 */
const JOBS: Printer = {
  group: 'batch',
  resource: 'jobs',
  columns: [
    NAME_COLUMN,
    column('Status', 'string', 'Status of the job.'),
    column(
      'Completions',
      'string',
      'The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.',
    ),
    column('Duration', 'string', 'Time required to complete the job.'),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    JOB_SELECTOR_COLUMN,
  ],
  print(obj, now) {
    const succeeded = num(obj, 'status', 'succeeded');
    const completions = optionalNum(obj, 'spec', 'completions');
    const parallelism = optionalNum(obj, 'spec', 'parallelism') ?? 0;
    let completionsCell: string;
    if (completions !== undefined) completionsCell = `${succeeded}/${completions}`;
    else if (parallelism > 1) completionsCell = `${succeeded}/1 of ${parallelism}`;
    else completionsCell = `${succeeded}/1`;

    const start = parseTime(at(obj, 'status', 'startTime'));
    const completion = parseTime(at(obj, 'status', 'completionTime'));
    let duration = '';
    // A present zero time (never written by JSON) is a set pointer in Go; parseTime folds it into absent.
    if (start !== undefined) duration = humanDuration((completion ?? now) - start);

    const conditions = arr(obj, 'status', 'conditions');
    let status: string;
    if (hasJobCondition(conditions, 'Complete')) status = 'Complete';
    else if (hasJobCondition(conditions, 'Failed')) status = 'Failed';
    else if (at(obj, 'metadata', 'deletionTimestamp') != null) status = 'Terminating';
    else if (hasJobCondition(conditions, 'Suspended')) status = 'Suspended';
    else if (hasJobCondition(conditions, 'FailureTarget')) status = 'FailureTarget';
    else if (hasJobCondition(conditions, 'SuccessCriteriaMet')) status = 'SuccessCriteriaMet';
    else status = 'Running';

    const [names, images] = containerCells(at(obj, 'spec', 'template'));
    return [
      {
        cells: [
          name(obj),
          status,
          completionsCell,
          duration,
          age(obj, now),
          names,
          images,
          formatLabelSelector(at(obj, 'spec', 'selector')),
        ],
      },
    ];
  },
};

/**
 * printCronJob. SUSPEND is a string (`True`/`False`/`<unset>`) although its column says boolean;
 * ACTIVE counts status.active; LAST SCHEDULE is relative to `now`, `<none>` before the first run.
 */
const CRON_JOBS: Printer = {
  group: 'batch',
  resource: 'cronjobs',
  columns: [
    NAME_COLUMN,
    column('Schedule', 'string', 'The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.'),
    column(
      'Timezone',
      'string',
      'The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones',
    ),
    column(
      'Suspend',
      'boolean',
      'This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.',
    ),
    column('Active', 'integer', 'A list of pointers to currently running jobs.'),
    column('Last Schedule', 'string', 'Information when was the last time the job was successfully scheduled.'),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    JOB_SELECTOR_COLUMN,
  ],
  print(obj, now) {
    const lastSchedule = at(obj, 'status', 'lastScheduleTime');
    const timeZone = at(obj, 'spec', 'timeZone');
    const jobSpec = at(obj, 'spec', 'jobTemplate', 'spec');
    const [names, images] = containerCells(at(jobSpec, 'template'));
    return [
      {
        cells: [
          name(obj),
          str(obj, 'spec', 'schedule'),
          typeof timeZone === 'string' ? timeZone : '<none>',
          printBoolPtr(optionalBool(obj, 'spec', 'suspend')),
          arr(obj, 'status', 'active').length,
          lastSchedule == null ? '<none>' : translateTimestampSince(lastSchedule, now),
          age(obj, now),
          names,
          images,
          formatLabelSelector(at(jobSpec, 'selector')),
        ],
      },
    ];
  },
};

// ---------------------------------------------------------------------------------------------
// autoscaling

/**
 * formatHPAMetrics over the internal (= autoscaling/v2) shapes: each spec with the status at the
 * same index (not matched by name), `<unknown>` where that status lacks the value; two at most,
 * then `+ N more...`; `<none>` without specs. A nil quantity prints `<nil>` (Quantity.String on a
 * nil pointer), as Go does.
 */
export function formatHpaMetrics(specs: readonly unknown[], statuses: readonly unknown[]): string {
  if (specs.length === 0) return '<none>';
  const max = 2;
  const list: string[] = [];
  specs.forEach((spec, i) => {
    const status = i < statuses.length ? statuses[i] : undefined;
    switch (str(spec, 'type')) {
      case 'External':
        list.push(valueOrAverage(at(spec, 'external', 'target'), at(status, 'external')));
        break;
      case 'Pods': {
        const current = at(status, 'pods') != null ? quantity(at(status, 'pods', 'current', 'averageValue')) : '<unknown>';
        list.push(`${current}/${quantity(at(spec, 'pods', 'target', 'averageValue'))}`);
        break;
      }
      case 'Object':
        list.push(valueOrAverage(at(spec, 'object', 'target'), at(status, 'object')));
        break;
      case 'Resource':
        list.push(resourceMetric(at(spec, 'resource'), at(status, 'resource')));
        break;
      case 'ContainerResource':
        list.push(resourceMetric(at(spec, 'containerResource'), at(status, 'containerResource')));
        break;
      default:
        list.push('<unknown type>');
    }
  });
  if (list.length > max) return `${list.slice(0, max).join(', ')} + ${String(list.length - max)} more...`;
  return list.join(', ');
}

/** resource.Quantity.String() of a *Quantity as served: the canonical string, `<nil>` when absent. */
function quantity(value: unknown): string {
  return typeof value === 'string' ? value : '<nil>';
}

/** The External and Object cases: `current/target (avg)` with an average value target, else `current/target` on value. */
function valueOrAverage(target: unknown, status: unknown): string {
  const averageValue = at(target, 'averageValue');
  if (averageValue != null) {
    const current = at(status, 'current', 'averageValue');
    return `${status != null && current != null ? quantity(current) : '<unknown>'}/${quantity(averageValue)} (avg)`;
  }
  const current = status != null ? quantity(at(status, 'current', 'value')) : '<unknown>';
  return `${current}/${quantity(at(target, 'value'))}`;
}

/** The Resource and ContainerResource cases: `name: current/target`, utilizations as `N%`, `<auto>` without a target utilization. */
function resourceMetric(source: unknown, status: unknown): string {
  const name = str(source, 'name');
  const averageValue = at(source, 'target', 'averageValue');
  if (averageValue != null) {
    const current = status != null ? quantity(at(status, 'current', 'averageValue')) : '<unknown>';
    return `${name}: ${current}/${quantity(averageValue)}`;
  }
  const currentUtilization = optionalNum(status, 'current', 'averageUtilization');
  const targetUtilization = optionalNum(source, 'target', 'averageUtilization');
  const current = status != null && currentUtilization !== undefined ? `${currentUtilization}%` : '<unknown>';
  return `${name}: ${current}/${targetUtilization === undefined ? '<auto>' : `${targetUtilization}%`}`;
}

const METRIC_SPECS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/metrics';
const METRIC_STATUSES_ANNOTATION = 'autoscaling.alpha.kubernetes.io/current-metrics';
/** autoscaling.DefaultCPUUtilization: v1's implicit target when no metric is given. */
const DEFAULT_CPU_UTILIZATION = 80;

/** A JSON array of objects from an annotation, or undefined where Go's json.Unmarshal into a slice would fail. */
function parseAnnotationList(value: unknown): readonly unknown[] | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(value);
    if (parsed === null) return [];
    if (!Array.isArray(parsed) || !parsed.every((e) => e !== null && typeof e === 'object' && !Array.isArray(e))) return undefined;
    return parsed as readonly unknown[];
  } catch {
    return undefined;
  }
}

/** A non-pointer v1 Quantity: Go's zero value prints "0" when the field is absent. */
function v1Quantity(value: unknown): string {
  return typeof value === 'string' ? value : '0';
}

/** Convert_v1_MetricSpec_To_autoscaling_MetricSpec (autoscaling/v1 conversion.go), into v2's JSON shape. */
function v1MetricSpecToV2(spec: unknown): unknown {
  const type = str(spec, 'type');
  const out: Record<string, unknown> = { type };
  const resource = (s: unknown): unknown => ({
    name: str(s, 'name'),
    target: { averageValue: at(s, 'targetAverageValue'), averageUtilization: at(s, 'targetAverageUtilization') },
  });
  const object = at(spec, 'object');
  const external = at(spec, 'external');
  if (at(spec, 'resource') != null) out.resource = resource(at(spec, 'resource'));
  if (at(spec, 'containerResource') != null) out.containerResource = resource(at(spec, 'containerResource'));
  if (at(spec, 'pods') != null) out.pods = { target: { averageValue: v1Quantity(at(spec, 'pods', 'targetAverageValue')) } };
  if (object != null) {
    // Value is &TargetValue without an average value; printed only then.
    out.object = { target: { averageValue: at(object, 'averageValue'), value: v1Quantity(at(object, 'targetValue')) } };
  }
  if (external != null) {
    out.external = { target: { value: at(external, 'targetValue'), averageValue: at(external, 'targetAverageValue') } };
  }
  return out;
}

/** Convert_v1_MetricStatus_To_autoscaling_MetricStatus, into v2's JSON shape. */
function v1MetricStatusToV2(status: unknown): unknown {
  const out: Record<string, unknown> = { type: str(status, 'type') };
  const resource = (s: unknown): unknown => ({
    name: str(s, 'name'),
    current: { averageValue: v1Quantity(at(s, 'currentAverageValue')), averageUtilization: at(s, 'currentAverageUtilization') },
  });
  const object = at(status, 'object');
  const external = at(status, 'external');
  if (at(status, 'resource') != null) out.resource = resource(at(status, 'resource'));
  if (at(status, 'containerResource') != null) out.containerResource = resource(at(status, 'containerResource'));
  if (at(status, 'pods') != null) out.pods = { current: { averageValue: v1Quantity(at(status, 'pods', 'currentAverageValue')) } };
  if (object != null) out.object = { current: { value: v1Quantity(at(object, 'currentValue')), averageValue: at(object, 'averageValue') } };
  if (external != null) {
    out.external = { current: { value: v1Quantity(at(external, 'currentValue')), averageValue: at(external, 'currentAverageValue') } };
  }
  return out;
}

/**
 * The internal spec.metrics and status.currentMetrics of an autoscaling/v1 object, as
 * Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler rebuilds them: the
 * metrics annotation's specs, then the targetCPUUtilizationPercentage one; the current-metrics
 * annotation, else currentCPUUtilizationPercentage; 80% CPU when no metric is left.
 *
 * Not always what the apiserver prints (it prints the stored v2 object): a CPU utilization
 * target that is not last among several metrics comes last here, and statuses are matched by
 * index, so such an HPA prints in another order, or with mismatched currents. A cache that
 * serves Tables should hold autoscaling/v2 objects.
 */
function hpaFromV1(obj: KubeJson): { specs: readonly unknown[]; statuses: readonly unknown[] } {
  const annotations = map(obj, 'metadata', 'annotations');
  const targetCpu = optionalNum(obj, 'spec', 'targetCPUUtilizationPercentage');
  const cpuSpec = (utilization: number): unknown => ({
    type: 'Resource',
    resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: utilization } },
  });
  let specs: unknown[] = targetCpu === undefined ? [] : [cpuSpec(targetCpu)];
  const otherSpecs = parseAnnotationList(annotations[METRIC_SPECS_ANNOTATION]);
  if (otherSpecs !== undefined) specs = [...otherSpecs.map(v1MetricSpecToV2), ...specs];
  if (specs.length === 0) specs = [cpuSpec(DEFAULT_CPU_UTILIZATION)];

  const currentCpu = optionalNum(obj, 'status', 'currentCPUUtilizationPercentage');
  let statuses: readonly unknown[] =
    currentCpu === undefined ? [] : [{ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: currentCpu } } }];
  const otherStatuses = parseAnnotationList(annotations[METRIC_STATUSES_ANNOTATION]);
  if (otherStatuses !== undefined) statuses = otherStatuses.map(v1MetricStatusToV2);
  return { specs, statuses };
}

/**
 * printHorizontalPodAutoscaler. One printer for autoscaling/v1 and v2 (the apiserver prints the
 * internal object whichever version was asked for): v2 JSON is the internal shape; v1 JSON is
 * converted back as Go converts it. MINPODS is a string (`<unset>` when nil), MAXPODS and
 * REPLICAS are numbers.
 */
const HORIZONTAL_POD_AUTOSCALERS: Printer = {
  group: 'autoscaling',
  resource: 'horizontalpodautoscalers',
  columns: [
    NAME_COLUMN,
    column(
      'Reference',
      'string',
      'scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.',
    ),
    column(
      'Targets',
      'string',
      'metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond. If not set, the default metric will be set to 80% average CPU utilization.',
    ),
    column(
      'MinPods',
      'string',
      'minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.',
    ),
    column(
      'MaxPods',
      'string',
      'maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.',
    ),
    column(
      'Replicas',
      'string',
      'currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.',
    ),
    AGE_COLUMN,
  ],
  print(obj, now) {
    const { specs, statuses } =
      str(obj, 'apiVersion') === 'autoscaling/v1'
        ? hpaFromV1(obj)
        : { specs: arr(obj, 'spec', 'metrics'), statuses: arr(obj, 'status', 'currentMetrics') };
    const minReplicas = optionalNum(obj, 'spec', 'minReplicas');
    return [
      {
        cells: [
          name(obj),
          `${str(obj, 'spec', 'scaleTargetRef', 'kind')}/${str(obj, 'spec', 'scaleTargetRef', 'name')}`,
          formatHpaMetrics(specs, statuses),
          minReplicas === undefined ? '<unset>' : String(minReplicas),
          num(obj, 'spec', 'maxReplicas'),
          num(obj, 'status', 'currentReplicas'),
          age(obj, now),
        ],
      },
    ];
  },
};

// ---------------------------------------------------------------------------------------------
// policy

/** printPodDisruptionBudget: MIN AVAILABLE and MAX UNAVAILABLE as IntOrString.String(), `N/A` when unset. */
const POD_DISRUPTION_BUDGETS: Printer = {
  group: 'policy',
  resource: 'poddisruptionbudgets',
  columns: [
    NAME_COLUMN,
    column('Min Available', 'string', 'The minimum number of pods that must be available.'),
    column('Max Unavailable', 'string', 'The maximum number of pods that may be unavailable.'),
    column('Allowed Disruptions', 'integer', 'Calculated number of pods that may be disrupted at this time.'),
    AGE_COLUMN,
  ],
  print(obj, now) {
    const minAvailable = at(obj, 'spec', 'minAvailable');
    const maxUnavailable = at(obj, 'spec', 'maxUnavailable');
    return [
      {
        cells: [
          name(obj),
          minAvailable == null ? 'N/A' : intOrString(minAvailable),
          maxUnavailable == null ? 'N/A' : intOrString(maxUnavailable),
          num(obj, 'status', 'disruptionsAllowed'),
          age(obj, now),
        ],
      },
    ];
  },
};

// ---------------------------------------------------------------------------------------------
// networking.k8s.io

/**
 * formatHosts: the first three non-empty hosts; once three are listed, `+ N more...` where N
 * counts every rule past the third, hosts or not (Go's arithmetic: len(rules) - 3); `*` when no
 * rule has a host.
 */
function formatHosts(rules: readonly unknown[]): string {
  const max = 3;
  const list: string[] = [];
  let more = false;
  for (const rule of rules) {
    if (list.length === max) more = true;
    const host = str(rule, 'host');
    if (!more && host.length !== 0) list.push(host);
  }
  if (list.length === 0) return '*';
  const ret = list.join(',');
  return more ? `${ret} + ${String(rules.length - max)} more...` : ret;
}

/**
 * ingressLoadBalancerStatusStringer(s, wide=true): each ingress point's IP, else its hostname,
 * deduplicated and sorted (sets.String.List), joined by ','; not truncated, as the apiserver
 * prints wide.
 */
function ingressAddresses(ingress: readonly unknown[]): string {
  const result = new Set<string>();
  for (const point of ingress) {
    const ip = str(point, 'ip');
    const hostname = str(point, 'hostname');
    if (ip !== '') result.add(ip);
    else if (hostname !== '') result.add(hostname);
  }
  return [...result].sort(compareGoStrings).join(',');
}

/** printIngress: PORTS is `80, 443` with any TLS entry, else `80`; CLASS is spec.ingressClassName or `<none>`. */
const INGRESSES: Printer = {
  group: 'networking.k8s.io',
  resource: 'ingresses',
  columns: [
    NAME_COLUMN,
    column('Class', 'string', 'The name of the IngressClass resource that should be used for additional configuration'),
    column('Hosts', 'string', 'Hosts that incoming requests are matched against before the ingress rule'),
    column('Address', 'string', 'Address is a list containing ingress points for the load-balancer'),
    column('Ports', 'string', 'Ports of TLS configurations that open'),
    AGE_COLUMN,
  ],
  print(obj, now) {
    const className = at(obj, 'spec', 'ingressClassName');
    return [
      {
        cells: [
          name(obj),
          typeof className === 'string' ? className : '<none>',
          formatHosts(arr(obj, 'spec', 'rules')),
          ingressAddresses(arr(obj, 'status', 'loadBalancer', 'ingress')),
          arr(obj, 'spec', 'tls').length !== 0 ? '80, 443' : '80',
          age(obj, now),
        ],
      },
    ];
  },
};

/** networkingv1.AnnotationIsDefaultIngressClass, "true" marks the default class. */
const IS_DEFAULT_INGRESS_CLASS = 'ingressclass.kubernetes.io/is-default-class';

/** printIngressClass: the name gets ` (default)` for the default class; PARAMETERS is `Kind[.apiGroup]/name` or `<none>`. */
const INGRESS_CLASSES: Printer = {
  group: 'networking.k8s.io',
  resource: 'ingressclasses',
  columns: [
    NAME_COLUMN,
    column('Controller', 'string', 'Controller that is responsible for handling this class'),
    column('Parameters', 'string', 'A reference to a resource with additional parameters'),
    AGE_COLUMN,
  ],
  print(obj, now) {
    let className = name(obj);
    if (map(obj, 'metadata', 'annotations')[IS_DEFAULT_INGRESS_CLASS] === 'true') className += ' (default)';
    const params = at(obj, 'spec', 'parameters');
    let parameters = '<none>';
    if (params != null) {
      // apiGroup is a pointer: an empty string still adds the '.'.
      const apiGroup = at(params, 'apiGroup');
      parameters = `${str(params, 'kind')}${typeof apiGroup === 'string' ? `.${apiGroup}` : ''}/${str(params, 'name')}`;
    }
    return [{ cells: [className, str(obj, 'spec', 'controller'), parameters, age(obj, now)] }];
  },
};

/** printNetworkPolicy: POD-SELECTOR as FormatLabelSelector (`<none>` for the empty selector, which selects all). */
const NETWORK_POLICIES: Printer = {
  group: 'networking.k8s.io',
  resource: 'networkpolicies',
  columns: [
    NAME_COLUMN,
    column(
      'Pod-Selector',
      'string',
      "podSelector selects the pods to which this NetworkPolicy object applies. The array of rules is applied to any pods selected by this field. An empty selector matches all pods in the policy's namespace. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is optional. If it is not specified, it defaults to an empty selector.",
    ),
    AGE_COLUMN,
  ],
  print(obj, now) {
    // &obj.Spec.PodSelector is never nil: an absent podSelector is the empty one.
    return [{ cells: [name(obj), formatLabelSelector(map(obj, 'spec', 'podSelector')), age(obj, now)] }];
  },
};

/** printServiceCIDR: the CIDRs joined by ','. */
const SERVICE_CIDRS: Printer = {
  group: 'networking.k8s.io',
  resource: 'servicecidrs',
  columns: [
    NAME_COLUMN,
    column(
      'CIDRs',
      'string',
      'cidrs defines the IP blocks in CIDR notation (e.g. "192.168.0.0/24" or "2001:db8::/64") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable.',
    ),
    AGE_COLUMN,
  ],
  print(obj, now) {
    const cidrs = arr(obj, 'spec', 'cidrs').map((c) => (typeof c === 'string' ? c : ''));
    return [{ cells: [name(obj), cidrs.join(','), age(obj, now)] }];
  },
};

/**
 * printIPAddress: PARENTREF is `resource[.group][/namespace]/name` lowercased, `<none>` without one.
 * The apiserver declares two columns (no Age) but prints three cells: the age comes last anyway,
 * and is kept so that our rows equal its rows.
 */
const IP_ADDRESSES: Printer = {
  group: 'networking.k8s.io',
  resource: 'ipaddresses',
  columns: [
    NAME_COLUMN,
    column(
      'ParentRef',
      'string',
      'parentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object.',
    ),
  ],
  print(obj, now) {
    const ref = at(obj, 'spec', 'parentRef');
    let parent = '<none>';
    if (ref != null) {
      const group = str(ref, 'group');
      const resource = str(ref, 'resource');
      parent = qualifiedResource(group, resource).toLowerCase();
      const namespace = str(ref, 'namespace');
      if (namespace !== '') parent += `/${namespace}`;
      parent += `/${str(ref, 'name')}`;
    }
    return [{ cells: [name(obj), parent, age(obj, now)] }];
  },
};

// ---------------------------------------------------------------------------------------------
// discovery.k8s.io

/** formatDiscoveryPorts: each port's number, else its name, else `*`; three at most. */
function formatDiscoveryPorts(ports: readonly unknown[]): string {
  const max = 3;
  const list: string[] = [];
  let more = false;
  for (const port of ports) {
    if (list.length < max) {
      const number = optionalNum(port, 'port');
      const name = at(port, 'name');
      list.push(number !== undefined ? String(number) : typeof name === 'string' ? name : '*');
    } else if (list.length === max) {
      more = true;
    }
  }
  return listWithMoreString(list, more, ports.length, max);
}

/** formatDiscoveryEndpoints: the addresses of all endpoints in order; three at most, the count over every address. */
function formatDiscoveryEndpoints(endpoints: readonly unknown[]): string {
  const max = 3;
  const list: string[] = [];
  let more = false;
  let count = 0;
  for (const endpoint of endpoints) {
    for (const address of arr(endpoint, 'addresses')) {
      if (list.length < max) list.push(typeof address === 'string' ? address : '');
      else if (list.length === max) more = true;
      count++;
    }
  }
  return listWithMoreString(list, more, count, max);
}

/** printEndpointSlice. */
const ENDPOINT_SLICES: Printer = {
  group: 'discovery.k8s.io',
  resource: 'endpointslices',
  columns: [
    NAME_COLUMN,
    column(
      'AddressType',
      'string',
      'addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType "IPv4" and "IPv6". No semantics are defined for the "FQDN" type.',
    ),
    column(
      'Ports',
      'string',
      'ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list.',
    ),
    column(
      'Endpoints',
      'string',
      'endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.',
    ),
    AGE_COLUMN,
  ],
  print(obj, now) {
    return [
      {
        cells: [
          name(obj),
          str(obj, 'addressType'),
          formatDiscoveryPorts(arr(obj, 'ports')),
          formatDiscoveryEndpoints(arr(obj, 'endpoints')),
          age(obj, now),
        ],
      },
    ];
  },
};

export const PRINTERS: readonly Printer[] = [
  DEPLOYMENTS,
  REPLICA_SETS,
  DAEMON_SETS,
  STATEFUL_SETS,
  CONTROLLER_REVISIONS,
  JOBS,
  CRON_JOBS,
  HORIZONTAL_POD_AUTOSCALERS,
  POD_DISRUPTION_BUDGETS,
  INGRESSES,
  INGRESS_CLASSES,
  NETWORK_POLICIES,
  SERVICE_CIDRS,
  IP_ADDRESSES,
  ENDPOINT_SLICES,
];
