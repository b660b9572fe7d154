/**
 * Answers to requests too malformed to reach a handler (bad request line, bad headers, headers
 * too large), written as the apiserver's HTTP server (Go's net/http, server.go conn.serve) writes
 * them, so that a client cannot tell the proxy from the apiserver by its errors either. Node's
 * parser (llhttp) detects these; Go's answers are plain text, not Status objects.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * The apiserver's limit on a request's header section: Go's MaxHeaderBytes (1 MiB, set by
 * k8s.io/apiserver's SecureServingInfo) plus the 4 KiB Go reads beyond it (initialReadLimitSize).
 */
export const MAX_HEADER_BYTES = (1 << 20) + 4096;

/** server.go conn.serve's errorHeaders. */
const ERROR_HEADERS = '\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n';

/** llhttp's error code and the bytes it failed on. */
interface ParserError extends Error {
  readonly code?: string;
  /** A Buffer at run time (Fastify's types describe it as a JSON'd Buffer). */
  readonly rawPacket?: unknown;
  /** How far into rawPacket the parser got. */
  readonly bytesParsed?: unknown;
  /** llhttp's words for the failure ("Chunk size overflow", "Expected LF after chunk data"). */
  readonly reason?: unknown;
}

/**
 * The bytes of the request that failed to parse: the packet from the end of the last complete
 * request before the failure (`bytesParsed`) on, since requests pipelined before it share the
 * packet.
 */
function rawText(error: ParserError): string {
  if (!Buffer.isBuffer(error.rawPacket)) return '';
  const text = error.rawPacket.toString('latin1');
  const at = typeof error.bytesParsed === 'number' ? Math.min(error.bytesParsed, text.length) : 0;
  const previousEnd = text.lastIndexOf('\r\n\r\n', at);
  return previousEnd < 0 || previousEnd + 4 > at ? text : text.slice(previousEnd + 4);
}

/** What Go writes for this parse failure; undefined: nothing (the peer is gone). */
export function goClientErrorResponse(error: ParserError): string | undefined {
  switch (error.code) {
    case 'ECONNRESET':
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return undefined; // isCommonNetReadError: no reply
    case 'HPE_HEADER_OVERFLOW':
      return `HTTP/1.1 431 Request Header Fields Too Large${ERROR_HEADERS}431 Request Header Fields Too Large`;
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING': {
      // Go reads Transfer-Encoding first (transfer.go parseTransferEncoding): a coding other than
      // chunked is its 501 whatever the length says. With chunked and a Content-Length Go drops
      // the length and reads the chunks, where llhttp refuses the pair (request smuggling): a
      // 400, listed in the README's differences. A bad length alone is Go's 400 too.
      const encoding = /\r\ntransfer-encoding:[ \t]*([^\r\n]*)/i.exec(rawText(error))?.[1]?.trim();
      if (encoding === undefined && error.code === 'HPE_INVALID_TRANSFER_ENCODING') {
        return `HTTP/1.1 501 Not Implemented${ERROR_HEADERS}Unsupported transfer encoding`;
      }
      if (encoding !== undefined && encoding.toLowerCase() !== 'chunked') {
        return `HTTP/1.1 501 Not Implemented${ERROR_HEADERS}Unsupported transfer encoding`;
      }
      return `HTTP/1.1 400 Bad Request${ERROR_HEADERS}400 Bad Request`;
    }
    case 'HPE_INVALID_CHUNK_SIZE':
      // The body fails while the handler reads it: the apiserver answers a 500 Status with the
      // reader's error (net/http/internal/chunked.go), ErrorToAPIStatus of a plain error.
      return chunkedBodyError(error.reason === 'Chunk size overflow' ? 'http chunk length too large' : 'invalid byte in chunk length');
    case 'HPE_STRICT':
      // llhttp's strict checks inside a chunked body (no CRLF after a chunk's data): Go's reader
      // fails the same body with "malformed chunked encoding".
      if (/chunk/i.test(String(error.reason))) return chunkedBodyError('malformed chunked encoding');
      return `HTTP/1.1 400 Bad Request${ERROR_HEADERS}400 Bad Request`;
    case 'HPE_INVALID_VERSION': {
      // Go parses any HTTP/d.d and then refuses what is not 1.x with a 505; other spellings are a 400.
      const line = rawText(error).split('\r\n', 1)[0] ?? '';
      if (/ HTTP\/[0-9]\.[0-9]$/.test(line)) {
        const text = '505 HTTP Version Not Supported: unsupported protocol version';
        return `HTTP/1.1 ${text}${ERROR_HEADERS}${text}`;
      }
      return `HTTP/1.1 400 Bad Request${ERROR_HEADERS}400 Bad Request`;
    }
    default:
      return `HTTP/1.1 400 Bad Request${ERROR_HEADERS}400 Bad Request`;
  }
}

/** The apiserver's 500 Status for a chunked request body its handler could not read. */
function chunkedBodyError(message: string): string {
  const body = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"${message}","code":500}\n`;
  return `HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: ${String(body.length)}\r\nConnection: close\r\n\r\n${body}`;
}

/**
 * Fastify's clientErrorHandler: Go's answer, then the connection is closed (as Go does). A
 * request pipelined before the bad bytes may still be being answered: Go reads a connection's
 * next request only once the previous answer is written, so that answer goes out whole first.
 * (`_httpMessage` is Node's own record of the response in flight on a socket, which its default
 * clientError handling reads for the same reason.)
 */
export function goClientErrorHandler(error: ParserError, socket: Socket): void {
  if (socket.destroyed) return;
  const answer = goClientErrorResponse(error);
  if (answer === undefined || !socket.writable) {
    socket.destroy();
    return;
  }
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (inFlight === null || inFlight === undefined || inFlight.writableFinished) {
    socket.end(answer);
    return;
  }
  if (!inFlight.req.complete) {
    // The failure is in this request's own body (a bad chunk, an unknown coding): answered now.
    // Its handler hears of it too (the request errors) and would destroy the connection with
    // its response; detached first, the response cannot, and the answer leaves whole.
    inFlight.detachSocket(socket);
    socket.end(answer);
    return;
  }
  const after = (): void => {
    inFlight.off('finish', after);
    inFlight.off('close', after);
    if (inFlight.writableFinished && socket.writable) socket.end(answer);
    else socket.destroy();
  };
  inFlight.on('finish', after);
  inFlight.on('close', after);
}

/** An answer Go's server gives on its own, before any handler. */
export interface GoRefusal {
  readonly statusCode: number;
  /** Go's own status line text where it is not the standard one. */
  readonly statusLine: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Go closes the connection after it (a request it could not read as HTTP/1.x). */
  readonly close: boolean;
}

const GO_NOT_FOUND = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' } as const;

/**
 * What Go's server refuses (or answers itself) that llhttp passes to a handler (net/http
 * server.go readRequest and serverHandler, transfer.go parseTransferEncoding):
 * - a version other than 1.x: 505, a request line without a version (HTTP/0.9): 400;
 * - more than one Host header: 400;
 * - on HTTP/1.1, a Transfer-Encoding other than one field `chunked` (any case): 501;
 * - `OPTIONS *`: 200 with no body (globalOptionsHandler); `*` with another method: Go's mux 404.
 * Cheap enough for every request: a few field reads, and a scan of the raw headers only when
 * they hold a Transfer-Encoding or more than one Host could hide in them.
 */
export function goRequestRefusal(req: IncomingMessage): GoRefusal | undefined {
  if (req.httpVersionMajor !== 1) {
    if (req.httpVersionMajor === 0) return closing(400, 'Bad Request', '400 Bad Request');
    return closing(
      505,
      'HTTP Version Not Supported: unsupported protocol version',
      '505 HTTP Version Not Supported: unsupported protocol version',
    );
  }
  const raw = req.rawHeaders;
  let hosts = 0;
  let encodings = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] ?? '';
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
    else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') encodings++;
  }
  if (hosts > 1) return closing(400, 'Bad Request', '400 Bad Request');
  const te = req.headers['transfer-encoding'];
  if (encodings > 0 && req.httpVersionMinor >= 1 && (encodings > 1 || te?.toLowerCase() !== 'chunked')) {
    return closing(501, 'Not Implemented', 'Unsupported transfer encoding');
  }
  if (req.url === '*') {
    if (req.method === 'OPTIONS') return { statusCode: 200, statusLine: 'OK', headers: { 'content-length': '0' }, body: '', close: false };
    return { statusCode: 404, statusLine: 'Not Found', headers: GO_NOT_FOUND, body: '404 page not found\n', close: false };
  }
  return undefined;
}

function closing(statusCode: number, statusLine: string, body: string): GoRefusal {
  return { statusCode, statusLine, headers: { 'content-type': 'text/plain; charset=utf-8' }, body, close: true };
}

/** Writes Go's refusal: on the raw connection, then closed, when Go would close it; else as a response. */
export function writeGoRefusal(res: ServerResponse, refusal: GoRefusal): void {
  const socket = res.socket;
  if (!refusal.close || socket === null) {
    res.writeHead(refusal.statusCode, refusal.headers);
    res.end(refusal.body);
    return;
  }
  // Go's own status line (its 505's text is not the standard one), and nothing more read.
  res.detachSocket(socket);
  socket.end(`HTTP/1.1 ${String(refusal.statusCode)} ${refusal.statusLine}${ERROR_HEADERS}${refusal.body}`);
}
