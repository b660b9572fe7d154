/**
 * Whether an answer from the cache is gzipped: exactly when the apiserver would gzip the same
 * answer to the same request (apiserver `endpoints/handlers/responsewriters/compression.go`
 * `ContentEncodingSupported`, `writers.go` `deferredResponseWriter`; the APIResponseCompression
 * feature, on by default).
 *
 * - The request's Accept-Encoding (its first header: Go's `Header.Get`), split on ',', holds a
 *   token that is exactly `gzip` once trimmed of spaces: `gzip;q=1`, `GZIP` or `x-gzip` are not.
 * - The body is longer than GZIP_THRESHOLD_BYTES. Go decides on the first write: one that is
 *   longer than the threshold is gzipped, one of at most 4 bytes (the streaming JSON and protobuf
 *   list encoders of 1.33+ open with `{` or the `k8s\0` prefix) is buffered until the buffer
 *   passes the threshold (gzip) or the body ends (none); any other first write is the whole body
 *   (the non-streaming serializers, `json.go` and `protobuf.go` `doEncode`, write once: GETs,
 *   Tables, pretty JSON). Either way: gzip exactly when the whole body is longer than 128 KiB.
 * - Watches never (`watch.go` serveWatch writes its frames to the ResponseWriter itself), and
 *   Status errors only past the threshold (`ErrorNegotiated` goes through the same writer; none is
 *   that long).
 *
 * A gzipped answer carries `Content-Encoding: gzip` and `Vary: Accept-Encoding`, and no
 * Content-Length (Go's writer streams it, chunked over HTTP/1.1).
 */

/** apiserver `writers.go` defaultGzipThresholdBytes: bodies longer than this are gzipped when asked. */
export const GZIP_THRESHOLD_BYTES = 128 * 1024;

/**
 * apiserver `compression.go` gzipContentEncodingLevel: 1, the least CPU for a ratio within
 * 1.1-1.3x of the best (kubernetes/kubernetes#112296). zlib's level 1 lands within a few percent
 * of Go's compress/flate level 1 on Kubernetes JSON and protobuf.
 */
export const GZIP_LEVEL = 1;

/** The headers a gzipped answer adds (`writers.go` unbufferedWrite). */
export const GZIP_HEADERS = { 'content-encoding': 'gzip', vary: 'Accept-Encoding' } as const;

/** apiserver `compression.go` ContentEncodingSupported: whether `acceptEncoding` (the request's first Accept-Encoding header) asks for gzip. */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  if (acceptEncoding === undefined || acceptEncoding === '') return false;
  // String.prototype.trim and Go's strings.TrimSpace both trim Unicode white space.
  return acceptEncoding.split(',').some((token) => token.trim() === 'gzip');
}

/** Whether an answer of `length` bytes to a request with `acceptEncoding` is gzipped (see the top of this file). */
export function gzipsAnswer(acceptEncoding: string | undefined, length: number): boolean {
  return length > GZIP_THRESHOLD_BYTES && acceptsGzip(acceptEncoding);
}

/** The request's first Accept-Encoding header, as Go's `Header.Get` reads it (Node joins repeated ones). */
export function firstAcceptEncoding(rawHeaders: readonly string[]): string | undefined {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] ?? '';
    if (name.length === 15 && name.toLowerCase() === 'accept-encoding') return rawHeaders[i + 1];
  }
  return undefined;
}
