/**
 * The authorizer attributes of a request, as the apiserver builds them
 * (endpoints/filters/authorization.go GetAuthorizerAttributes over request/requestinfo.go).
 */
import { parseRawFieldSelector } from '../cache/field-selector.ts';
import type { ParsedRequest } from '../request/parsed-request.ts';
import type { RequestAttributes, UserInfo } from './user-info.ts';

/** path.IsValidPathSegmentName: not `.` or `..`, no `/` or `%`. */
function validPathSegmentName(name: string): boolean {
  return name !== '.' && name !== '..' && !name.includes('/') && !name.includes('%');
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
  let name = info.name;
  // requestinfo.go: a list or watch selecting one name by metadata.name is authorized as of that
  // name (RBAC resourceNames then apply to it).
  if (name === '' && (info.verb === 'list' || info.verb === 'watch')) {
    const selector = request.query().get('fieldSelector');
    if (selector !== null && selector !== '') {
      try {
        const selected = parseRawFieldSelector(selector).requiresExactMatch('metadata.name');
        if (selected !== undefined && validPathSegmentName(selected)) name = selected;
      } catch {
        // An unparsable selector: no name, as requestinfo.go (the request is refused later).
      }
    }
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
  };
}
