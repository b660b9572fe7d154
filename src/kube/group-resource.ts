/**
 * apimachinery's schema.GroupResource and schema.GroupVersion (pkg/runtime/schema/group_version.go)
 * as the strings every layer prints: metric labels, --resources names, cache and informer names,
 * Status messages, apiVersion fields. The core group is '' and disappears from each form.
 */

/** A schema.GroupResource; `group` is '' for the core group. */
export interface GroupResource {
  readonly group: string;
  readonly resource: string;
}

/** schema.ParseGroupResource: `deployments.apps` is resource deployments in group apps. */
export function parseGroupResource(qualified: string): GroupResource {
  const dot = qualified.indexOf('.');
  return dot < 0 ? { group: '', resource: qualified } : { group: qualified.slice(dot + 1), resource: qualified.slice(0, dot) };
}

/** GroupResource.String(): `configmaps`, `deployments.apps` (kubectl's resource.group form, as --resources names types). */
export function groupResourceString(gr: GroupResource): string {
  return qualifiedResource(gr.group, gr.resource);
}

/** GroupResource.String() of a group and a resource, without building the pair. */
export function qualifiedResource(group: string, resource: string): string {
  return group === '' ? resource : `${resource}.${group}`;
}

/** GroupKind.String(): `Deployment.apps`, the same form as a GroupResource's. */
export function groupKindString(group: string, kind: string): string {
  return qualifiedResource(group, kind);
}

/** GroupVersion.String(): `apps/v1`, `v1` for the core group (an object's apiVersion). */
export function groupVersionString(group: string, version: string): string {
  return group === '' ? version : `${group}/${version}`;
}

/**
 * The API groups served by kube-apiserver itself. Their list bodies are typed (`kind`,
 * `apiVersion`, `metadata`, `items`, items without kind); other groups' (custom resources)
 * are unstructured: keys sorted, items with kind and apiVersion.
 */
export const BUILT_IN_GROUPS: ReadonlySet<string> = new Set([
  '',
  'admissionregistration.k8s.io',
  'apiextensions.k8s.io',
  'apiregistration.k8s.io',
  'apps',
  'authentication.k8s.io',
  'authorization.k8s.io',
  'autoscaling',
  'batch',
  'certificates.k8s.io',
  'coordination.k8s.io',
  'discovery.k8s.io',
  'events.k8s.io',
  'flowcontrol.apiserver.k8s.io',
  'internal.apiserver.k8s.io',
  'networking.k8s.io',
  'node.k8s.io',
  'policy',
  'rbac.authorization.k8s.io',
  'resource.k8s.io',
  'scheduling.k8s.io',
  'storage.k8s.io',
  'storagemigration.k8s.io',
]);
