/**
 * The apiserver's answer to a request it will not execute now (apiserver
 * pkg/server/filters/priority-and-fairness.go and maxinflight.go, tooManyRequests):
 *
 *     w.Header().Set("Retry-After", retryAfter)
 *     http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
 *
 * Go's http.Error writes plain text, not a Status: `Content-Type: text/plain; charset=utf-8`,
 * `X-Content-Type-Options: nosniff`, the message and a newline; the apiserver's WithCacheControl
 * filter has set `Cache-Control: no-cache, private` on every answer before. client-go reads it as a 429 with
 * Retry-After (errors.IsTooManyRequests, reason TooManyRequests, details.retryAfterSeconds from the
 * header) and retries after that many seconds on its own, as it does against the apiserver. (The
 * apiserver's X-Kubernetes-PF-FlowSchema-UID and -PriorityLevel-UID headers name its own objects:
 * the proxy has none to name; its Audit-Id names an audit event the proxy does not write.)
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** http.Error's body: the message and Fprintln's newline. */
export const TOO_MANY_REQUESTS_BODY = Buffer.from('Too many requests, please try again later.\n');

/** The status and headers of the answer, with Retry-After in whole seconds. */
export function tooManyRequestsHeaders(retryAfterSeconds: number): OutgoingHttpHeaders {
  return {
    'cache-control': 'no-cache, private',
    'content-type': 'text/plain; charset=utf-8',
    'retry-after': String(retryAfterSeconds),
    'x-content-type-options': 'nosniff',
    'content-length': TOO_MANY_REQUESTS_BODY.length,
  };
}

/**
 * Writes the 429 on `res`, then closes the connection (`Connection: close`, where Go's server
 * would keep it): over HTTP/1.1 each watch or request in flight is a connection of its own, and a
 * TLS connection holds ~50-85 KiB of the proxy's memory, so a refused client's connections must
 * not linger for the keep-alive timeout; it reconnects when it retries. A response already begun
 * is cut instead (nothing else can be said on it).
 */
export function writeTooManyRequests(res: ServerResponse, retryAfterSeconds: number): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.shouldKeepAlive = false;
  res.writeHead(429, tooManyRequestsHeaders(retryAfterSeconds));
  res.end(TOO_MANY_REQUESTS_BODY);
}
