/**
 * The apiserver's answers to a request it does not let through, word for word: 401 for no or bad
 * credentials (filters/authentication.go: apierrors.NewUnauthorized("Unauthorized")), and 403 with
 * the authorizer's words (endpoints/handlers/responsewriters/errors.go ForbiddenStatusError and
 * forbiddenMessage, wrapped by apierrors.NewForbidden).
 */
import { StatusError } from '../kube/status.ts';
import { groupResourceString } from '../kube/group-resource.ts';
import { goQuote } from '../kube/go-format.ts';
import type { RequestAttributes } from './user-info.ts';

export function unauthorized(): StatusError {
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Unauthorized',
    reason: 'Unauthorized',
    code: 401,
  });
}

/** errors.go's sanitizer: nothing in the message may read as HTML. */
function sanitize(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** forbiddenMessage (errors.go). */
export function forbiddenMessage(a: RequestAttributes): string {
  const user = goQuote(a.user.username);
  if (!a.resourceRequest) return `User ${user} cannot ${a.verb} path ${goQuote(a.path)}`;
  const resource = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
  const what = `User ${user} cannot ${a.verb} resource ${goQuote(resource)} in API group ${goQuote(a.apiGroup)}`;
  return a.namespace === '' ? `${what} at the cluster scope` : `${what} in the namespace ${goQuote(a.namespace)}`;
}

/** ForbiddenStatusError: NewForbidden(groupResource, name, message[: reason]). */
export function forbiddenFor(a: RequestAttributes, reason: string): StatusError {
  const text = sanitize(forbiddenMessage(a));
  const err = reason === '' ? text : `${text}: ${reason}`;
  const gr = { group: a.apiGroup, resource: a.resource };
  const empty = gr.group === '' && gr.resource === '';
  const message = empty
    ? `forbidden: ${err}`
    : a.name === ''
      ? `${groupResourceString(gr)} is forbidden: ${err}`
      : `${groupResourceString(gr)} ${goQuote(a.name)} is forbidden: ${err}`;
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: 'Forbidden',
    details: { name: a.name, group: a.apiGroup, kind: a.resource },
    code: 403,
  });
}
