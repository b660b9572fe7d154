/**
 * Answers to requests too malformed to reach a handler (bad request line, bad headers, headers
 * too large), written as the apiserver's HTTP server (Go's net/http, server.go conn.serve) writes
 * them, so that a client cannot tell the proxy from the apiserver by its errors either. Node's
 * parser (llhttp) detects these; Go's answers are plain text, not Status objects.
 */
import type { ServerResponse } from 'node:http';
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
    case 'HPE_INVALID_TRANSFER_ENCODING':
      // Go refuses a coding it does not know with a 501, but both framings at once with a 400.
      if (/\r\ncontent-length:/i.test(rawText(error))) return `HTTP/1.1 400 Bad Request${ERROR_HEADERS}400 Bad Request`;
      return `HTTP/1.1 501 Not Implemented${ERROR_HEADERS}Unsupported transfer encoding`;
    case 'HPE_INVALID_CHUNK_SIZE': {
      // The body fails while the handler reads it: the apiserver answers a 500 Status with the
      // reader's error (net/http/internal/chunked.go), ErrorToAPIStatus of a plain error.
      const body = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"invalid byte in chunk length","code":500}\n`;
      return `HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: ${String(body.length)}\r\nConnection: close\r\n\r\n${body}`;
    }
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
  // A request whose own body failed to parse (a bad chunk) is answered now, as before.
  if (inFlight === null || inFlight === undefined || inFlight.writableFinished || !inFlight.req.complete) {
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
