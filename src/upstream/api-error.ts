/**
 * Errors from the apiserver, classified as client-go's apimachinery/pkg/api/errors does, so the
 * reflector can tell "relist" (410 Expired) from "back off and retry" (429, 5xx, connection).
 */

/** metav1.StatusCause: one reason of a failure, e.g. one invalid field. */
export interface StatusCause {
  /** Machine-readable, e.g. `FieldValueInvalid`. */
  readonly reason?: string;
  /** For people. */
  readonly message?: string;
  /** The field at fault, e.g. `metadata.name`. */
  readonly field?: string;
}

/** A metav1.Status as the apiserver sends it. */
export interface ApiStatus {
  /** `Status`. */
  readonly kind?: 'Status';
  /** `v1`. */
  readonly apiVersion?: string;
  /** `Failure` (or `Success`). */
  readonly status?: string;
  /** For people. */
  readonly message?: string;
  /** Machine-readable (metav1.StatusReason), e.g. `Conflict`, `Expired`, `NotFound`. */
  readonly reason?: string;
  /** The HTTP status code. */
  readonly code?: number;
  /** More about the failure. */
  readonly details?: {
    /** The reasons, e.g. one per invalid field. */
    readonly causes?: readonly StatusCause[];
    /** When to retry, for 429 and some 5xx. */
    readonly retryAfterSeconds?: number;
    /** The object's name. */
    readonly name?: string;
    /** The object's kind (or resource). */
    readonly kind?: string;
  };
}

/** The apiserver answered with an error: its HTTP status code and its Status (or the body's text as its message). */
export class ApiStatusError extends Error {
  /** The HTTP status code: 404 Not Found, 409 Conflict, 410 Gone (Expired), 429, 5xx. */
  readonly code: number;
  /** The Status the apiserver sent. */
  readonly status: ApiStatus;
  /** From the Retry-After header or details.retryAfterSeconds, if any. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: number, status: ApiStatus, retryAfterSeconds?: number) {
    super(`${String(code)} ${status.reason ?? ''}: ${status.message ?? '(no message)'}`);
    this.name = 'ApiStatusError';
    this.code = code;
    this.status = status;
    this.retryAfterSeconds = retryAfterSeconds ?? status.details?.retryAfterSeconds;
  }

  /** Builds the error from a non-2xx response body (a Status, or anything else). */
  static fromResponse(statusCode: number, body: Buffer | string, retryAfterHeader?: string | string[]): ApiStatusError {
    let status: ApiStatus = { message: body.toString().slice(0, 500) };
    try {
      const parsed: unknown = JSON.parse(body.toString());
      if (typeof parsed === 'object' && parsed !== null && (parsed as { kind?: unknown }).kind === 'Status') status = parsed;
    } catch {
      // not JSON: keep the text as the message
    }
    const header = Array.isArray(retryAfterHeader) ? retryAfterHeader[0] : retryAfterHeader;
    const retryAfter = header === undefined ? undefined : Number.parseInt(header, 10);
    return new ApiStatusError(statusCode, status, Number.isFinite(retryAfter) ? retryAfter : undefined);
  }
}

function statusOf(error: unknown): ApiStatusError | undefined {
  return error instanceof ApiStatusError ? error : undefined;
}

/** 410: the resourceVersion or continue token is older than the server keeps (IsResourceExpired || IsGone). */
export function isExpired(error: unknown): boolean {
  const e = statusOf(error);
  return e !== undefined && (e.code === 410 || e.status.reason === 'Expired' || e.status.reason === 'Gone');
}

/** 504 Timeout whose cause is ResourceVersionTooLarge: the server has not seen that RV yet. */
export function isTooLargeResourceVersion(error: unknown): boolean {
  const e = statusOf(error);
  return e?.status.details?.causes?.some((c) => c.reason === 'ResourceVersionTooLarge') === true;
}

export function isTooManyRequests(error: unknown): boolean {
  const e = statusOf(error);
  return e !== undefined && (e.code === 429 || e.status.reason === 'TooManyRequests');
}

export function isServerError(error: unknown): boolean {
  const e = statusOf(error);
  return e !== undefined && e.code >= 500;
}

/** 403: the caller's identity may not do this (IsForbidden). */
export function isForbidden(error: unknown): boolean {
  return statusOf(error)?.code === 403;
}

export function isNotFound(error: unknown): boolean {
  return statusOf(error)?.code === 404;
}

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** The apiserver could not be reached or the connection broke (client-go: utilnet.IsConnectionRefused and friends). */
export function isConnectionError(error: unknown): boolean {
  for (let e: unknown = error; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_ERROR_CODES.has(code)) return true;
  }
  return false;
}
