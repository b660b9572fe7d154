/**
 * What each resource's fieldSelector can select: the field label conversion that accepts or
 * rejects a field name (pkg/apis/<group>/<version>/conversion.go AddFieldLabelConversionFunc,
 * else runtime.DefaultMetaV1FieldSelectorConversion), and the extractor that computes an object's
 * selectable fields from its v1 JSON (the registry strategy's GetAttrs / ToSelectableFields in
 * pkg/registry/...). Values are formatted as the apiserver compares them: Go's
 * strconv.FormatBool / fmt.Sprint for booleans ("true" / "false"), strconv.Itoa for integers,
 * "" for a missing string. A name the conversion accepts but the extractor does not produce
 * (pods' `status.podIPs`) compares as "".
 *
 * Copied from kubernetes v1.37.2.
 */
import type { FieldLabelConversion, FieldSelector } from '../selector/field-selector.ts';
import type { FieldExtractor, KubeObject, ParsedObject } from '../informer/object.ts';
import { fieldValue, hasName } from '../informer/object.ts';
import { goQuote } from '../kube/go-format.ts';

export interface ResourceSelectableFields {
  readonly conversion: FieldLabelConversion;
  readonly extract: FieldExtractor;
}

/**
 * fields.Selector.Matches over a cached object's selectable fields (fieldValue: its name and
 * namespace too); a field the object lacks compares as "" (fields.Set.Get).
 */
export function objectMatchesFields(selector: FieldSelector, obj: KubeObject): boolean {
  for (const r of selector.requirements) {
    const equal = r.field === 'metadata.name' ? hasName(obj, r.value) : (fieldValue(obj, r.field) ?? '') === r.value;
    if (equal !== (r.operator === '=')) return false;
  }
  return true;
}

/** How the scheme's conversion funcs word a rejected name (pkg/apis/core/v1/conversion.go and most others). */
export function fieldLabelNotSupported(label: string): string {
  return `field label not supported: ${label}`;
}

/** runtime/conversion.go DefaultMetaV1FieldSelectorConversion, for every resource without a conversion func of its own. */
export function notAKnownFieldSelector(label: string): string {
  return `${goQuote(label)} is not a known field selector: only "metadata.name", "metadata.namespace"`;
}

function conversion(
  allowed: readonly string[],
  notSupported: (label: string) => string = fieldLabelNotSupported,
  aliases: Readonly<Record<string, string>> = {},
): FieldLabelConversion {
  return { allowed: new Set([...allowed, ...Object.keys(aliases)]), aliases, notSupported };
}

// --- reading the v1 JSON -------------------------------------------------------------------

function child(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

function at(obj: ParsedObject, ...path: string[]): unknown {
  let value: unknown = obj;
  for (const key of path) value = child(value, key);
  return value;
}

/** A string field; "" when missing (Go's zero value). */
function str(obj: ParsedObject, ...path: string[]): string {
  const value = at(obj, ...path);
  return typeof value === 'string' ? value : '';
}

/** strconv.FormatBool / fmt.Sprint of a bool; false when missing. */
function bool(obj: ParsedObject, ...path: string[]): string {
  return at(obj, ...path) === true ? 'true' : 'false';
}

/** strconv.Itoa of an int32; 0 when missing. */
function int(obj: ParsedObject, ...path: string[]): string {
  const value = at(obj, ...path);
  return typeof value === 'number' && Number.isInteger(value) ? String(value) : '0';
}

/** generic.ObjectMetaFieldsSet / AddObjectMetaFieldsSet. */
function metaFields(obj: ParsedObject, namespaced: boolean): Record<string, string> {
  const fields: Record<string, string> = { 'metadata.name': obj.metadata.name ?? '' };
  if (namespaced) fields['metadata.namespace'] = obj.metadata.namespace ?? '';
  return fields;
}

// --- per resource --------------------------------------------------------------------------

/** pkg/registry/core/pod/strategy.go ToSelectableFields. */
export const podFields: FieldExtractor = (pod) => {
  const podIPs = at(pod, 'status', 'podIPs');
  const firstIP = Array.isArray(podIPs) ? child(podIPs[0], 'ip') : undefined;
  return {
    'spec.nodeName': str(pod, 'spec', 'nodeName'),
    'spec.restartPolicy': str(pod, 'spec', 'restartPolicy'),
    'spec.schedulerName': str(pod, 'spec', 'schedulerName'),
    // v1 defaults.go keeps serviceAccount (deprecated) and serviceAccountName in step.
    'spec.serviceAccountName': str(pod, 'spec', 'serviceAccountName') || str(pod, 'spec', 'serviceAccount'),
    'spec.hostNetwork': bool(pod, 'spec', 'hostNetwork'),
    'status.phase': str(pod, 'status', 'phase'),
    // "TODO: add podIPs as a downward API value(s) with proper format": the first of podIPs.
    'status.podIP': typeof firstIP === 'string' ? firstIP : '',
    'status.nominatedNodeName': str(pod, 'status', 'nominatedNodeName'),
    ...metaFields(pod, true),
  };
};

/** pkg/registry/core/event/strategy.go ToSelectableFields, from a core/v1 Event. */
export const eventFields: FieldExtractor = (event) => {
  const reportingComponent = str(event, 'reportingComponent');
  return {
    'involvedObject.kind': str(event, 'involvedObject', 'kind'),
    'involvedObject.namespace': str(event, 'involvedObject', 'namespace'),
    'involvedObject.name': str(event, 'involvedObject', 'name'),
    'involvedObject.uid': str(event, 'involvedObject', 'uid'),
    'involvedObject.apiVersion': str(event, 'involvedObject', 'apiVersion'),
    'involvedObject.resourceVersion': str(event, 'involvedObject', 'resourceVersion'),
    'involvedObject.fieldPath': str(event, 'involvedObject', 'fieldPath'),
    reason: str(event, 'reason'),
    reportingComponent,
    source: str(event, 'source', 'component') || reportingComponent,
    type: str(event, 'type'),
    ...metaFields(event, true),
  };
};

/** The same fields from an events.k8s.io/v1 Event (regarding = involvedObject, deprecatedSource = source). */
export const eventsV1Fields: FieldExtractor = (event) => {
  const reportingController = str(event, 'reportingController');
  return {
    'involvedObject.kind': str(event, 'regarding', 'kind'),
    'involvedObject.namespace': str(event, 'regarding', 'namespace'),
    'involvedObject.name': str(event, 'regarding', 'name'),
    'involvedObject.uid': str(event, 'regarding', 'uid'),
    'involvedObject.apiVersion': str(event, 'regarding', 'apiVersion'),
    'involvedObject.resourceVersion': str(event, 'regarding', 'resourceVersion'),
    'involvedObject.fieldPath': str(event, 'regarding', 'fieldPath'),
    reason: str(event, 'reason'),
    reportingComponent: reportingController,
    source: str(event, 'deprecatedSource', 'component') || reportingController,
    type: str(event, 'type'),
    ...metaFields(event, true),
  };
};

/** pkg/registry/core/namespace/strategy.go NamespaceToSelectableFields ("name" is a kept bug, unreachable: the conversion rejects it). */
export const namespaceFields: FieldExtractor = (ns) => ({
  ...metaFields(ns, false),
  'status.phase': str(ns, 'status', 'phase'),
  name: ns.metadata.name ?? '',
});

/** pkg/registry/core/secret/strategy.go SelectableFields. */
export const secretFields: FieldExtractor = (secret) => ({ ...metaFields(secret, true), type: str(secret, 'type') });

/** pkg/registry/core/node/strategy.go NodeToSelectableFields. */
export const nodeFields: FieldExtractor = (node) => ({
  ...metaFields(node, false),
  'spec.unschedulable': bool(node, 'spec', 'unschedulable'),
});

/** pkg/registry/core/replicationcontroller/strategy.go ControllerToSelectableFields. */
export const replicationControllerFields: FieldExtractor = (rc) => ({
  ...metaFields(rc, true),
  'status.replicas': int(rc, 'status', 'replicas'),
});

/** pkg/registry/core/service/strategy.go SelectableFields. */
export const serviceFields: FieldExtractor = (svc) => ({
  ...metaFields(svc, true),
  'spec.clusterIP': str(svc, 'spec', 'clusterIP'),
  'spec.type': str(svc, 'spec', 'type'),
});

/** pkg/registry/batch/job/strategy.go JobToSelectableFields. */
export const jobFields: FieldExtractor = (job) => ({ ...metaFields(job, true), 'status.successful': int(job, 'status', 'succeeded') });

/** pkg/registry/certificates/... : CSRs and ClusterTrustBundles select on spec.signerName. */
export const signerNameFields: FieldExtractor = (obj) => ({ ...metaFields(obj, false), 'spec.signerName': str(obj, 'spec', 'signerName') });

/** generic.DefaultNamespaceScopedAttr / DefaultClusterScopedAttr. */
export function defaultFields(namespaced: boolean): FieldExtractor {
  return (obj) => metaFields(obj, namespaced);
}

const EVENT_V1_ALIASES: Readonly<Record<string, string>> = {
  'regarding.kind': 'involvedObject.kind',
  'regarding.namespace': 'involvedObject.namespace',
  'regarding.name': 'involvedObject.name',
  'regarding.uid': 'involvedObject.uid',
  'regarding.apiVersion': 'involvedObject.apiVersion',
  'regarding.resourceVersion': 'involvedObject.resourceVersion',
  'regarding.fieldPath': 'involvedObject.fieldPath',
  reportingController: 'reportingComponent',
};

/** `group/resource` (core group "") -> its own conversion and extractor. */
const RESOURCES: ReadonlyMap<string, ResourceSelectableFields> = new Map<string, ResourceSelectableFields>([
  [
    '/pods',
    {
      // pkg/apis/core/v1/conversion.go: spec.host is accepted "for backwards compatibility with old v1 clients".
      conversion: conversion(
        [
          'metadata.name',
          'metadata.namespace',
          'spec.nodeName',
          'spec.restartPolicy',
          'spec.schedulerName',
          'spec.serviceAccountName',
          'spec.hostNetwork',
          'status.phase',
          'status.podIP',
          'status.podIPs',
          'status.nominatedNodeName',
        ],
        fieldLabelNotSupported,
        { 'spec.host': 'spec.nodeName' },
      ),
      extract: podFields,
    },
  ],
  // Nodes and namespaces do not accept metadata.namespace (their conversion funcs leave it out).
  ['/nodes', { conversion: conversion(['metadata.name', 'spec.unschedulable']), extract: nodeFields }],
  ['/namespaces', { conversion: conversion(['status.phase', 'metadata.name']), extract: namespaceFields }],
  [
    '/replicationcontrollers',
    { conversion: conversion(['metadata.name', 'metadata.namespace', 'status.replicas']), extract: replicationControllerFields },
  ],
  [
    '/events',
    {
      conversion: conversion([
        'involvedObject.kind',
        'involvedObject.namespace',
        'involvedObject.name',
        'involvedObject.uid',
        'involvedObject.apiVersion',
        'involvedObject.resourceVersion',
        'involvedObject.fieldPath',
        'reason',
        'reportingComponent',
        'source',
        'type',
        'metadata.namespace',
        'metadata.name',
      ]),
      extract: eventFields,
    },
  ],
  ['/secrets', { conversion: conversion(['type', 'metadata.namespace', 'metadata.name']), extract: secretFields }],
  ['/services', { conversion: conversion(['metadata.namespace', 'metadata.name', 'spec.clusterIP', 'spec.type']), extract: serviceFields }],
  // pkg/apis/events/v1/conversion.go: events.k8s.io names map onto the core fieldset.
  [
    'events.k8s.io/events',
    {
      conversion: conversion(['reason', 'type', 'metadata.namespace', 'metadata.name'], fieldLabelNotSupported, EVENT_V1_ALIASES),
      extract: eventsV1Fields,
    },
  ],
  // pkg/apis/batch/v1/conversion.go words its error differently.
  [
    'batch/jobs',
    {
      conversion: conversion(
        ['metadata.name', 'metadata.namespace', 'status.successful'],
        (label) => `field label ${goQuote(label)} not supported for Job`,
      ),
      extract: jobFields,
    },
  ],
  [
    'certificates.k8s.io/certificatesigningrequests',
    { conversion: conversion(['metadata.name', 'spec.signerName']), extract: signerNameFields },
  ],
  ['certificates.k8s.io/clustertrustbundles', { conversion: conversion(['metadata.name', 'spec.signerName']), extract: signerNameFields }],
]);

const DEFAULT_CONVERSION = conversion(['metadata.name', 'metadata.namespace'], notAKnownFieldSelector);
const NAMESPACED_DEFAULT: ResourceSelectableFields = { conversion: DEFAULT_CONVERSION, extract: defaultFields(true) };
const CLUSTER_DEFAULT: ResourceSelectableFields = { conversion: DEFAULT_CONVERSION, extract: defaultFields(false) };

/**
 * The selectable fields of a built-in resource. Everything without a conversion func of its own
 * (configmaps, deployments, ...) selects on metadata.name and metadata.namespace only. Custom
 * resources: see `customResourceSelectableFields`.
 */
export function selectableFieldsFor(group: string, resource: string, namespaced: boolean): ResourceSelectableFields {
  return RESOURCES.get(`${group}/${resource}`) ?? (namespaced ? NAMESPACED_DEFAULT : CLUSTER_DEFAULT);
}

/**
 * A custom resource (apiextensions-apiserver pkg/apiserver/conversion/converter.go
 * ConvertFieldLabel): metadata.name, metadata.namespace when namespaced, and the version's
 * spec.selectableFields, given as field names (each jsonPath without its leading dot). Only the metadata fields are extracted so far: the declared ones
 * (JSONPaths into the object) compare as "" until their extraction lands.
 */
export function customResourceSelectableFields(namespaced: boolean, declared: readonly string[] = []): ResourceSelectableFields {
  return {
    conversion: conversion([...(namespaced ? ['metadata.name', 'metadata.namespace'] : ['metadata.name']), ...declared]),
    extract: defaultFields(namespaced),
  };
}
