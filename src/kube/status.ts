/**
 * The Status catalogue: every error the server answers with, built byte-identical to
 * kube-apiserver's. Builders copy apimachinery/pkg/api/errors/errors.go unless a comment cites
 * another file; shapes the Go source does not show were read off kube-apiserver v1.37.2
 * (test/e2e/server/conformance-errors.test.ts holds them against the real apiserver).
 *
 * Wire form (responsewriters.ErrorNegotiated + the JSON serializer): the fields of metav1.Status
 * in declaration order, empty ones left out (`omitempty`), then a newline. A Status whose
 * details carry retryAfterSeconds also sets `Retry-After` (responsewriters/writers.go).
 */
import type { FieldError } from './field-error.ts';
import { aggregateString } from './field-error.ts';
import { goMarshal } from './go-json.ts';
import { goQuote } from './go-format.ts';
import type { GroupResource } from './group-resource.ts';
import { groupResourceString, parseGroupResource, groupKindString } from './group-resource.ts';

/** metav1.StatusCause; `reason` is its Go field `Type`. */
export interface V1StatusCause {
  readonly reason?: string;
  readonly message?: string;
  readonly field?: string;
}

/** metav1.StatusDetails. An empty object is still written (`"details":{}`) when present. */
export interface V1StatusDetails {
  readonly name?: string;
  readonly group?: string;
  readonly kind?: string;
  readonly uid?: string;
  readonly causes?: readonly V1StatusCause[];
  readonly retryAfterSeconds?: number;
}

/** metav1.ListMeta of a Status: empty but for an expired continue's fresh token. */
export interface V1StatusListMeta {
  readonly selfLink?: string;
  readonly resourceVersion?: string;
  readonly continue?: string;
  readonly remainingItemCount?: number;
}

/** metav1.Status, keys in the order the apiserver writes them. */
export interface V1Status {
  readonly kind: 'Status';
  readonly apiVersion: 'v1';
  readonly metadata: V1StatusListMeta;
  readonly status: 'Failure' | 'Success';
  readonly message?: string;
  /** metav1.StatusReason; undefined is StatusReasonUnknown (left out on the wire). */
  readonly reason?: StatusReason;
  readonly details?: V1StatusDetails;
  readonly code: number;
}

/** metav1.StatusReason values the server sends (types.go). */
export type StatusReason =
  | 'BadRequest'
  | 'Expired'
  | 'Forbidden'
  | 'Gone'
  | 'InternalError'
  | 'Invalid'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'NotFound'
  | 'ServiceUnavailable'
  | 'Timeout'
  | 'TooManyRequests'
  | 'Unauthorized'
  | 'UnsupportedMediaType';

/** How the body is written: `compact` (json + "\n"), or `indent` (two spaces, no newline). */
export type StatusEncoding = 'compact' | 'indent';

/** An error that is answered as a Status. */
export class StatusError extends Error {
  readonly status: V1Status;
  /** Response headers the apiserver sets with this Status (Retry-After). */
  readonly headers: Readonly<Record<string, string>>;
  readonly encoding: StatusEncoding;

  constructor(status: V1Status, encoding: StatusEncoding = 'compact') {
    super(status.message ?? '');
    this.name = 'StatusError';
    this.status = status;
    this.encoding = encoding;
    const retryAfter = status.details?.retryAfterSeconds;
    this.headers = retryAfter !== undefined && retryAfter > 0 ? { 'Retry-After': String(retryAfter) } : {};
  }

  get code(): number {
    return this.status.code;
  }

  toJSON(): V1Status {
    return this.status;
  }

  /** The response body, byte-identical to the apiserver's. */
  body(): Buffer {
    return statusBody(this.status, this.encoding);
  }
}

function cause(c: V1StatusCause): Record<string, string | undefined> {
  return { reason: nonEmpty(c.reason), message: nonEmpty(c.message), field: nonEmpty(c.field) };
}

function nonEmpty(s: string | undefined): string | undefined {
  return s === undefined || s === '' ? undefined : s;
}

function nonZero(n: number | undefined): number | undefined {
  return n === undefined || n === 0 ? undefined : n;
}

/**
 * The apiserver's JSON bytes for a Status: Go's encoding (struct order, omitempty, < > & escaped)
 * and, for the compact encoding, the serializer's trailing newline.
 */
export function statusBody(status: V1Status, encoding: StatusEncoding = 'compact'): Buffer {
  const d = status.details;
  const m = status.metadata;
  const wire = {
    kind: status.kind,
    apiVersion: status.apiVersion,
    metadata: {
      selfLink: nonEmpty(m.selfLink),
      resourceVersion: nonEmpty(m.resourceVersion),
      continue: nonEmpty(m.continue),
      remainingItemCount: m.remainingItemCount,
    },
    status: status.status,
    message: nonEmpty(status.message),
    reason: nonEmpty(status.reason),
    details:
      d === undefined
        ? undefined
        : {
            name: nonEmpty(d.name),
            group: nonEmpty(d.group),
            kind: nonEmpty(d.kind),
            uid: nonEmpty(d.uid),
            causes: d.causes === undefined || d.causes.length === 0 ? undefined : d.causes.map(cause),
            retryAfterSeconds: nonZero(d.retryAfterSeconds),
          },
    code: nonZero(status.code),
  };
  return Buffer.from(encoding === 'compact' ? `${goMarshal(wire)}\n` : goMarshal(wire, '  '));
}

function failure(code: number, reason: StatusReason | undefined, message: string, details?: V1StatusDetails): V1Status {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    ...(reason === undefined ? {} : { reason }),
    ...(details === undefined ? {} : { details }),
    code,
  };
}

function toGroupResource(r: GroupResource | string): GroupResource {
  return typeof r === 'string' ? parseGroupResource(r) : r;
}

/** NewNotFound: 404 `configmaps "x" not found`, details {name, group, kind: resource}. */
export function notFound(resource: GroupResource | string, name: string): StatusError {
  const gr = toGroupResource(resource);
  return new StatusError(
    failure(404, 'NotFound', `${groupResourceString(gr)} ${goQuote(name)} not found`, { name, group: gr.group, kind: gr.resource }),
  );
}

/** 403 Forbidden with the message as given, no details (the proxy's own refusals; the apiserver's carry its NewForbidden wording). */
export function forbidden(message: string): StatusError {
  return new StatusError(failure(403, 'Forbidden', message));
}

/** NewBadRequest: 400 with the message as given, no details. */
export function badRequest(message: string): StatusError {
  return new StatusError(failure(400, 'BadRequest', message));
}

/**
 * NewInvalid: 422 `<Kind.group> "<name>" is invalid: <aggregate>` with one cause per field error
 * (reason = the error type, message = ErrorBody(), field = the path).
 */
export function invalid(
  groupKind: { readonly group: string; readonly kind: string },
  name: string,
  errs: readonly FieldError[],
): StatusError {
  const gk = groupKindString(groupKind.group, groupKind.kind);
  const message = errs.length === 0 ? `${gk} ${goQuote(name)} is invalid` : `${gk} ${goQuote(name)} is invalid: ${aggregateString(errs)}`;
  return new StatusError(
    failure(422, 'Invalid', message, {
      name,
      group: groupKind.group,
      kind: groupKind.kind,
      causes: errs.map((e) => ({ reason: e.type, message: e.body, field: e.field })),
    }),
  );
}

/** ValidateListOptions failures (endpoints/handlers/get.go: NewInvalid(meta.k8s.io ListOptions, "", errs)). */
export function invalidListOptions(errs: readonly FieldError[]): StatusError {
  return invalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', errs);
}

/** NewResourceExpired: 410 Expired; `continueToken` fills metadata.continue (etcd3/errors.go, paging). */
export function expired(message: string, continueToken?: string): StatusError {
  const status = failure(410, 'Expired', message);
  return new StatusError(continueToken === undefined ? status : { ...status, metadata: { continue: continueToken } });
}

/** The watch cache's 410 (cacher/watch_cache.go): `too old resource version: <rv> (<oldest-1>)`. */
export function tooOldResourceVersion(requested: bigint | number, oldest: bigint | number): StatusError {
  return expired(`too old resource version: ${String(requested)} (${String(oldest)})`);
}

/** etcd3/errors.go: a LIST at a compacted resourceVersion. */
export const EXPIRED_LIST_MESSAGE = 'The resourceVersion for the provided list is too old.';
/** etcd3/errors.go: an expired continue token for which no fresh token could be made. */
export const CONTINUE_EXPIRED_MESSAGE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.';
/** etcd3/errors.go: an expired continue token; the Status carries a token to go on inconsistently. */
export const INCONSISTENT_CONTINUE_MESSAGE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without ' +
  'the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing ' +
  'with the provided token results in an inconsistent list - objects that were created, modified, or deleted between ' +
  'the time the first chunk was returned and now may show up in the list.';

/**
 * etcd3/errors.go handleCompactedErrorForPaging: 410 with a token at rv -1 that continues the list
 * at the latest resourceVersion (see continue-token.ts).
 */
export function expiredContinue(inconsistentContinueToken?: string): StatusError {
  return inconsistentContinueToken === undefined
    ? expired(CONTINUE_EXPIRED_MESSAGE)
    : expired(INCONSISTENT_CONTINUE_MESSAGE, inconsistentContinueToken);
}

/** NewGone (deprecated upstream in favour of Expired, still used by some paths). */
export function gone(message: string): StatusError {
  return new StatusError(failure(410, 'Gone', message));
}

/** NewTimeoutError: 504 `Timeout: <message>`, details.retryAfterSeconds (and Retry-After when > 0). */
export function timeout(message: string, retryAfterSeconds: number, causes?: readonly V1StatusCause[]): StatusError {
  return new StatusError(
    failure(504, 'Timeout', `Timeout: ${message}`, { ...(causes === undefined ? {} : { causes }), retryAfterSeconds }),
  );
}

/** metav1.CauseTypeResourceVersionTooLarge and storage/errors.go's tooLargeResourceVersionCauseMsg. */
export const RESOURCE_VERSION_TOO_LARGE_CAUSE: V1StatusCause = {
  reason: 'ResourceVersionTooLarge',
  message: 'Too large resource version',
};

/**
 * storage/errors.go NewTooLargeResourceVersionError, as the cacher returns it after waiting 3s
 * for a resourceVersion it has not seen: 504 with `Retry-After: 1`.
 */
export function resourceVersionTooLarge(requested: bigint | number, current: bigint | number, retryAfterSeconds = 1): StatusError {
  return timeout(`Too large resource version: ${String(requested)}, current: ${String(current)}`, retryAfterSeconds, [
    RESOURCE_VERSION_TOO_LARGE_CAUSE,
  ]);
}

/**
 * 405 for an HTTP method no route serves (e.g. PUT on a collection): go-restful's answer through
 * the apiserver, with an empty but present `details` (observed on v1.37.2).
 */
export function methodNotAllowed(): StatusError {
  return new StatusError(failure(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {}));
}

/** NewMethodNotSupported: 405 `<action> is not supported on resources of kind "<resource>"`. */
export function methodNotSupported(resource: GroupResource | string, action: string): StatusError {
  const gr = toGroupResource(resource);
  return new StatusError(
    failure(405, 'MethodNotAllowed', `${action} is not supported on resources of kind ${goQuote(groupResourceString(gr))}`, {
      group: gr.group,
      kind: gr.resource,
    }),
  );
}

/** The media types kube-apiserver serves for built-in resources, in its order. */
export const SERVED_MEDIA_TYPES: readonly string[] = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'];

/**
 * 406 when no Accept entry can be served. Observed on v1.37.2: written indented (MarshalIndent,
 * two spaces) with no trailing newline, `details` empty but present.
 */
export function notAcceptable(available: readonly string[] = SERVED_MEDIA_TYPES): StatusError {
  return new StatusError(
    failure(406, 'NotAcceptable', `406: Not Acceptable\n\nAvailable representations: ${available.join(', ')}`, {}),
    'indent',
  );
}

/** 415 for a request body in a format the server does not decode (handlers/rest.go, negotiation). */
export function unsupportedMediaType(accepted: readonly string[] = SERVED_MEDIA_TYPES): StatusError {
  return new StatusError(
    failure(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
    ),
  );
}

/** NewInternalError: 500 `Internal error occurred: <err>`, the error again as the one cause. */
export function internalError(err: Error | string): StatusError {
  const text = typeof err === 'string' ? err : err.message;
  return new StatusError(failure(500, 'InternalError', `Internal error occurred: ${text}`, { causes: [{ message: text }] }));
}

/**
 * responsewriters.ErrorToAPIStatus for an error that is not a Status: 500, no reason, the error's
 * text as the message. kube-apiserver answers so for a bad resourceVersion on GET and WATCH.
 */
export function unknownError(message: string, code = 500): StatusError {
  return new StatusError(failure(code, undefined, message));
}

/** NewServiceUnavailable: 503 with the message as given. */
export function serviceUnavailable(message: string): StatusError {
  return new StatusError(failure(503, 'ServiceUnavailable', message));
}

/**
 * NewTooManyRequests: 429 with details.retryAfterSeconds and Retry-After. (The apiserver's own
 * priority-and-fairness rejection is plain text, "Too many requests, please try again later.";
 * the proxy sends a Status so that clients can read the reason.)
 */
export function tooManyRequests(message: string, retryAfterSeconds: number): StatusError {
  return new StatusError(failure(429, 'TooManyRequests', message, { retryAfterSeconds }));
}

/**
 * The upstream apiserver could not be reached or broke the connection. kube-apiserver's own proxy
 * paths answer `error trying to reach service: <err>` (kube-aggregator, 503 there); the proxy sends
 * 502 with no reason, as responsewriters does for an error that is not a Status.
 */
export function badGateway(detail: string): StatusError {
  return unknownError(`error trying to reach service: ${detail}`, 502);
}

/**
 * The upstream apiserver did not answer in time: NewTimeoutError's shape, so that client-go's
 * IsTimeout and its retry-after handling apply.
 */
export function gatewayTimeout(detail: string, retryAfterSeconds = 1): StatusError {
  return timeout(`error trying to reach service: ${detail}`, retryAfterSeconds);
}
