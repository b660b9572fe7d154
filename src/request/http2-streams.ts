/**
 * An HTTP/2 stream as the proxy reads and answers it: the request Go's h2 server hands the
 * apiserver (golang.org/x/net/http2 server.go `newWriterAndRequest`), through Node's
 * compatibility API (node:http2 Http2ServerRequest and Http2ServerResponse).
 *
 * Go's request has `Host` from `:authority`, no pseudo-header among its header fields, and a body
 * unless the HEADERS frame ended the stream (of unknown length, `ContentLength` -1, when no
 * Content-Length says it). Node's request keeps the pseudo-headers in `headers` and `rawHeaders`,
 * has no `host`, and says nothing of a body. So an h2 request is given, as own properties read
 * before the prototype's, the header fields Go's request has: `host` from `:authority`, no
 * pseudo-header, and `transfer-encoding: chunked` for a body of unknown length (what HTTP/1.1
 * says of such a body, and what the pass-through sends it upstream as). Node's own getters
 * (method, url, authority) read its internal copy and are unchanged.
 *
 * The rest of the proxy reads a request and writes its answer through the members node:http's
 * IncomingMessage and ServerResponse share with the compatibility API (headers, url, method,
 * socket.remoteAddress and the TLS socket's peer certificate, writeHead, write, end, cork,
 * writableLength, 'drain', 'close', destroy: RST_STREAM where HTTP/1.1 closes the connection).
 * What is the connection's own is not the stream's, and is asked of this file: which connection
 * a request came on (one for all streams of a session), and what closes it after an answer (a
 * GOAWAY where HTTP/1.1 says `Connection: close`, as Go's h2 server does when a handler sets it).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Http2Session } from 'node:http2';

/** The h2 session of each adapted request and answer: the connection they share with the session's other streams. */
const sessions = new WeakMap<object, Http2Session>();

/** Whether `name` is a pseudo-header field (`:method`, `:path`, `:authority`, `:scheme`, `:protocol`). */
function isPseudoHeader(name: string): boolean {
  return name.startsWith(':');
}

/**
 * The request and answer of an h2 stream, given Go's header fields (above) and seen through
 * node:http's types, whose members the proxy reads they share.
 */
export function adaptHttp2Stream(req: Http2ServerRequest, res: Http2ServerResponse): { req: IncomingMessage; res: ServerResponse } {
  const headers: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(req.headers)) if (!isPseudoHeader(name)) headers[name] = value;
  const authority = req.authority;
  if (headers['host'] === undefined && authority !== '') headers['host'] = authority;
  if (!req.stream.endAfterHeaders && headers['content-length'] === undefined) headers['transfer-encoding'] = 'chunked';
  const rawHeaders: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] ?? '';
    if (!isPseudoHeader(name)) rawHeaders.push(name, req.rawHeaders[i + 1] ?? '');
  }
  if (authority !== '' && !rawHeaders.some((_, i) => i % 2 === 0 && rawHeaders[i]?.toLowerCase() === 'host')) {
    rawHeaders.unshift('host', authority);
  }
  Object.defineProperty(req, 'headers', { value: headers, enumerable: true });
  Object.defineProperty(req, 'rawHeaders', { value: rawHeaders, enumerable: true });
  const { session } = req.stream;
  if (session !== undefined) {
    sessions.set(req, session);
    sessions.set(res, session);
  }
  return { req: req as unknown as IncomingMessage, res: res as unknown as ServerResponse };
}

/** Whether `req` came as an h2 stream. */
export function isHttp2(req: IncomingMessage): boolean {
  return (req as unknown) instanceof Http2ServerRequest;
}

/**
 * The connection `req` came on: its socket over HTTP/1.1, its session over h2 (the same for every
 * stream of it). What a connection is charged for (the sidecar's flows) is keyed by this.
 */
export function connectionOf(req: IncomingMessage): object {
  return sessions.get(req) ?? req.socket;
}

/**
 * Closes the connection of `res` once it is answered, as `Connection: close` does over HTTP/1.1
 * (set before the answer's head); over h2 a GOAWAY now: the session's streams in flight end as
 * they would, no new one is taken, and the client opens its next elsewhere (x/net/http2
 * server.go: a handler's `Connection: close` starts the connection's graceful shutdown).
 */
export function closeConnectionAfter(res: ServerResponse): void {
  const session = sessions.get(res);
  if (session === undefined) {
    res.setHeader('connection', 'close');
    return;
  }
  if (!session.closed && !session.destroyed) session.close();
}

/** Whether `res` answers an h2 stream (its connection is shared: never read-stopped or detached for one answer). */
export function answersHttp2(res: ServerResponse): boolean {
  return (res as unknown) instanceof Http2ServerResponse;
}
