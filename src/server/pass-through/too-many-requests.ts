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
import { answersHttp2 } from '../../request/http2-streams.ts';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

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
 * What becomes of the connection of a 429:
 * - `hold-unread`, for a refusal by a rate (bytes of large heads, reviews of unknown tokens): the
 *   connection is kept, as the apiserver keeps it, but nothing more is read from it until the
 *   Retry-After (holdUnread). A client that honours Retry-After (client-go does) loses nothing;
 *   one that sends again at once has its next request read, parsed and answered no sooner than
 *   it should have sent it: its refused requests cost one parse per Retry-After per connection,
 *   not one per round trip.
 * - `close`, for a refusal by a bound on what a flow holds at once (requests, watches or reviews
 *   in flight): `Connection: close`, where Go's server would keep it. Over HTTP/1.1 each request
 *   or watch in flight is a connection of its own, and a TLS connection holds ~50-85 KiB of the
 *   proxy's memory: a client past such a bound already holds more connections than its share, and
 *   keeping the refused ones (held or not) multiplied what the proxy held for it.
 */
export type AfterTooManyRequests = 'hold-unread' | 'close';

/** Writes the 429 on `res`; a response already begun is cut instead (nothing else can be said on it). */
export function writeTooManyRequests(res: ServerResponse, retryAfterSeconds: number, after: AfterTooManyRequests): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // Over h2 the connection is every stream's: neither closed nor read-stopped for one answer
  // (Go's h2 server keeps it; the per-flow limits have refused the stream, not the connection).
  const h2 = answersHttp2(res);
  const socket = h2 ? null : res.socket;
  if (after === 'close' && !h2) res.shouldKeepAlive = false;
  res.writeHead(429, tooManyRequestsHeaders(retryAfterSeconds));
  res.end(TOO_MANY_REQUESTS_BODY);
  if (after === 'hold-unread' && socket !== null) holdUnread(socket, retryAfterSeconds * 1000, res);
}

/** What of a net.Socket's native handle holdUnread uses (libuv's uv_read_stop and uv_read_start). */
interface ReadingHandle {
  reading: boolean;
  readStop(): number;
  readStart(): number;
}

function readingHandle(socket: Socket): ReadingHandle | undefined {
  const handle: unknown = Reflect.get(socket, '_handle');
  if (typeof handle !== 'object' || handle === null) return undefined;
  if (typeof Reflect.get(handle, 'readStop') !== 'function' || typeof Reflect.get(handle, 'readStart') !== 'function') return undefined;
  return handle as ReadingHandle;
}

/**
 * Reads nothing more from `socket` for `ms`, then reads on. Node's HTTP server consumes a
 * connection's bytes natively (its parser reads the handle, never the stream), so
 * `socket.pause()` stops nothing; stopping the handle's reads does: the client's next bytes stay
 * in the kernel's buffers (TCP's window then holds the client back) and are neither decrypted nor
 * parsed until the hold ends. A connection the server closes meanwhile (at shutdown) ends the
 * hold; one its client closes is seen closed when the hold ends, its end waiting with its bytes:
 * a gone client's connection lingers for the Retry-After at most.
 *
 * `res`, the answer just written on the connection: the HTTP server sets its keep-alive timeout on
 * the socket when that answer finishes, and a hold longer than it would end with the server
 * closing the connection, the client's next request then read at once on a new one. So the idle
 * timeout is suspended from then until the hold ends, and set again then.
 */
export function holdUnread(socket: Socket, ms: number, res?: ServerResponse): void {
  const handle = readingHandle(socket);
  if (handle === undefined || socket.destroyed) return;
  handle.reading = false;
  handle.readStop();
  let held = true;
  let idleMs = 0;
  // After the server's own 'finish' listener, which set the keep-alive timeout.
  const finished = (): void => {
    if (!held) return;
    idleMs = socket.timeout ?? 0;
    if (idleMs > 0) socket.setTimeout(0);
  };
  res?.once('finish', finished);
  // Removed when the hold ends: a connection refused again and again must not gather listeners.
  const closed = (): void => {
    clearTimeout(timer);
  };
  // The timer holds no reference to `res`: through it the refused request and its head (up to
  // 1 MiB) would be kept for the whole hold.
  const timer = setTimeout(() => {
    held = false;
    socket.off('close', closed);
    const current = readingHandle(socket);
    if (current === undefined || socket.destroyed) return;
    if (idleMs > 0) socket.setTimeout(idleMs);
    current.reading = true;
    current.readStart();
  }, ms);
  timer.unref();
  socket.once('close', closed);
}
