/**
 * The authorizer attributes of a request, as the apiserver builds them
 * (endpoints/filters/authorization.go GetAuthorizerAttributes over request/requestinfo.go),
 * selectors included (KEP-4601: the authorizer may allow a list or watch for its selectors alone,
 * as the Node authorizer allows a kubelet its own pods by `spec.nodeName=<node>`).
 */
import { parseRawFieldSelector } from '../selector/field-selector.ts';
import type { FieldRequirement } from '../selector/field-selector.ts';
import { parseLabelSelector } from '../selector/label-selector.ts';
import type { LabelRequirement } from '../selector/label-selector.ts';
import type { ParsedRequest } from '../request/parsed-request.ts';
import type { RequestAttributes, UserInfo } from './user-info.ts';

/** requestinfo.go verbsWithSelectors: the verbs whose selectors the authorizer is told. */
const VERBS_WITH_SELECTORS = new Set(['list', 'watch', 'deletecollection']);

/** path.IsValidPathSegmentName: not `.` or `..`, no `/` or `%`. */
function validPathSegmentName(name: string): boolean {
  return name !== '.' && name !== '..' && !name.includes('/') && !name.includes('%');
}

/**
 * GetAuthorizerAttributes: a selector that does not parse gives no requirements (its parsing
 * error is the authorizer's to weigh, and the request is refused later with its 400).
 */
function fieldRequirements(raw: string | null): readonly FieldRequirement[] {
  if (raw === null || raw === '') return [];
  try {
    return parseRawFieldSelector(raw).requirements;
  } catch {
    return [];
  }
}

function labelRequirements(raw: string | null): readonly LabelRequirement[] {
  if (raw === null || raw === '') return [];
  try {
    return parseLabelSelector(raw).requirements;
  } catch {
    return [];
  }
}

export function requestAttributes(user: UserInfo, request: ParsedRequest): RequestAttributes {
  const info = request.info;
  if (info === undefined || !info.isResourceRequest) {
    const path = info?.path ?? request.url.split('?', 1)[0] ?? '/';
    return {
      user,
      verb: request.verb,
      resourceRequest: false,
      namespace: '',
      apiGroup: '',
      apiVersion: '',
      resource: '',
      subresource: '',
      name: '',
      path,
    };
  }
  // requestinfo.go: selectors only for the verbs that take them, and not on the deprecated
  // verb-in-the-path form (`/api/v1/watch/...`), which does not take them consistently.
  const withSelectors = VERBS_WITH_SELECTORS.has(info.verb) && !info.legacyWatch;
  const fieldSelector = withSelectors ? fieldRequirements(request.query().get('fieldSelector')) : [];
  const labelSelector = withSelectors ? labelRequirements(request.query().get('labelSelector')) : [];
  let name = info.name;
  // requestinfo.go: a GET of a collection (a list or watch, not by the `/watch/` path form)
  // selecting one name by metadata.name is authorized as of that name (RBAC resourceNames then
  // apply to it).
  if (name === '' && (info.verb === 'list' || info.verb === 'watch') && !info.legacyWatch) {
    const selected = fieldSelector.find((r) => r.field === 'metadata.name' && r.operator === '=')?.value;
    if (selected !== undefined && validPathSegmentName(selected)) name = selected;
  }
  return {
    user,
    verb: info.verb,
    resourceRequest: true,
    namespace: info.namespace,
    apiGroup: info.apiGroup,
    apiVersion: info.apiVersion,
    resource: info.resource,
    subresource: info.subresource,
    name,
    path: info.path,
    fieldSelector,
    labelSelector,
  };
}
