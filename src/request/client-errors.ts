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
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return goFramingRefusal(rawText(error), error.code);
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
      // Go parses any HTTP/d.d and then refuses what is not 1.x with a 505; other spellings
      // (HTTP/1.10, HTTP/x) are a 400. (llhttp reads every d.d itself where http-versions.ts could
      // make it; this is the answer where it could not.)
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

const BAD_REQUEST = `HTTP/1.1 400 Bad Request${ERROR_HEADERS}400 Bad Request`;
const NOT_IMPLEMENTED = `HTTP/1.1 501 Not Implemented${ERROR_HEADERS}Unsupported transfer encoding`;
const VERSION_NOT_SUPPORTED = `HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version${ERROR_HEADERS}505 HTTP Version Not Supported: unsupported protocol version`;

/**
 * Go's answer to a request whose length or coding llhttp refused, in the order Go reads them
 * (request.go readRequest, transfer.go readTransfer, then server.go's version check):
 * - a request line without a version, or more than one Host: 400;
 * - from HTTP/1.1 on, Transfer-Encoding first (parseTransferEncoding): more than one field, or a
 *   coding other than chunked, is its 501 whatever the length says; then a Content-Length it
 *   cannot read: 400. With one chunked and a good Content-Length Go drops the length and reads the
 *   chunks (then refuses a version other than 1.x: 505), where llhttp refuses the pair (request
 *   smuggling): a 400, listed in docs/differences.md;
 * - below HTTP/1.1 Go ignores Transfer-Encoding: a Content-Length it cannot read is its 400;
 *   otherwise HTTP/1.0 is refused (400) as goRequestRefusal refuses it, another version is 505.
 */
function goFramingRefusal(text: string, code: string): string {
  const head = text.split('\r\n\r\n', 1)[0] ?? '';
  const fields = (name: string): string[] =>
    [...head.matchAll(new RegExp(`\\r\\n${name}:[ \\t]*([^\\r\\n]*)`, 'gi'))].map((m) => (m[1] ?? '').trim());
  const version = /^[^\r\n]* HTTP\/(\d)\.(\d)(?:\r\n|$)/.exec(head);
  if (version === null || fields('host').length > 1) return BAD_REQUEST;
  const major = Number(version[1]);
  const minor = Number(version[2]);
  const lengths = fields('content-length');
  const badLength = lengths.some((length) => length !== lengths[0] || !/^\d+$/.test(length));
  if (major > 1 || (major === 1 && minor >= 1)) {
    const encodings = fields('transfer-encoding');
    if (encodings.length > 1 || (encodings.length === 1 && encodings[0]?.toLowerCase() !== 'chunked')) return NOT_IMPLEMENTED;
    // No Transfer-Encoding field llhttp could name, yet it refused one: a coding Go cannot read either.
    if (encodings.length === 0 && code === 'HPE_INVALID_TRANSFER_ENCODING') return NOT_IMPLEMENTED;
    return badLength || major === 1 ? BAD_REQUEST : VERSION_NOT_SUPPORTED;
  }
  if (badLength) return BAD_REQUEST;
  return major === 1 ? BAD_REQUEST : VERSION_NOT_SUPPORTED;
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
 * What Go's server refuses (or answers itself) that llhttp passes to a handler or an upgrade, in
 * Go's order (net/http request.go readRequest and readTransfer, then server.go readRequest and
 * serverHandler; transfer.go parseTransferEncoding):
 * - a request line without a version: 400. llhttp reads it as HTTP/0.9 and cannot tell it from
 *   an explicit `HTTP/0.9` (Go's 505): 0.9 is answered as the first, a difference docs/differences.md lists;
 * - more than one Host header: 400;
 * - from HTTP/1.1 on, a Transfer-Encoding other than one field `chunked` (any case): 501. On
 *   HTTP/1.0 Go ignores the header and reads the body by Content-Length, where llhttp reads it as
 *   on HTTP/1.1 (chunks): the two would read different bodies, so the proxy refuses it (400, a
 *   difference docs/differences.md lists; RFC 9112 §6.1 calls such framing faulty);
 * - a version other than 1.x: 505;
 * - no Host from HTTP/1.1 on (CONNECT aside): Go's 400 with its reason (Node's own check is off,
 *   so that the answer is Go's, word for word);
 * - `OPTIONS *`: 200 with no body (globalOptionsHandler); `*` with another method: Go's mux 404.
 * Cheap enough for every request: a few field reads, and a scan of the raw headers only when
 * they hold a Transfer-Encoding or more than one Host could hide in them.
 */
export function goRequestRefusal(req: IncomingMessage): GoRefusal | undefined {
  const major = req.httpVersionMajor;
  const minor = req.httpVersionMinor;
  if (major === 0 && minor === 9) return closing(400, 'Bad Request', '400 Bad Request');
  const raw = req.rawHeaders;
  let hosts = 0;
  let encodings = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] ?? '';
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
    else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') encodings++;
  }
  if (hosts > 1) return closing(400, 'Bad Request', '400 Bad Request');
  const atLeast11 = major > 1 || (major === 1 && minor >= 1);
  const te = req.headers['transfer-encoding'];
  if (encodings > 0 && atLeast11 && (encodings > 1 || te?.toLowerCase() !== 'chunked')) {
    return closing(501, 'Not Implemented', 'Unsupported transfer encoding');
  }
  if (encodings > 0 && major === 1 && minor === 0) return closing(400, 'Bad Request', '400 Bad Request');
  if (major !== 1) {
    const text = 'HTTP Version Not Supported: unsupported protocol version';
    return closing(505, text, `505 ${text}`);
  }
  if (hosts === 0 && atLeast11 && req.method !== 'CONNECT') {
    const text = 'Bad Request: missing required Host header';
    return closing(400, text, `400 ${text}`);
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
  socket.end(closingRefusalBytes(refusal));
}

/** A refusal after which Go closes, as Go writes it on the connection (server.go conn.serve). */
export function closingRefusalBytes(refusal: GoRefusal): string {
  return `HTTP/1.1 ${String(refusal.statusCode)} ${refusal.statusLine}${ERROR_HEADERS}${refusal.body}`;
}
