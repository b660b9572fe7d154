/**
 * Pass-through: every request the cache does not answer goes to the apiserver unchanged, its
 * body streamed up and the response streamed back (watches and `logs -f` included), with the
 * proxy's own credentials in place of the client's, as `kubectl proxy` does.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import type { Dispatcher } from 'undici';
import { isConnectionError } from '../../upstream/api-error.ts';
import { parseRequestInfo } from '../../request/request-info.ts';
import type { ForwardIdentity, UpstreamClient } from '../../upstream/client.ts';
import { badGateway, serviceUnavailable } from '../../kube/status.ts';

/**
 * Connection-specific fields, never forwarded by a proxy (RFC 9110 §7.6.1), plus the fields
 * the connection header names. `host` is set for the upstream connection by undici.
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
  'host',
  // Node's server has answered the client's Expect: 100-continue (no checkContinue listener);
  // undici refuses to send the header (UND_ERR_NOT_SUPPORTED), and the body follows anyway.
  'expect',
]);

/**
 * The prefix of a bearer token offered as a WebSocket subprotocol, the form browsers can send
 * (`base64url.bearer.authorization.k8s.io.<base64url(token)>`: authentication/request/websocket/
 * protocol.go, which takes every offered protocol with this prefix, case-sensitively, as a token).
 */
const BEARER_PROTOCOL_PREFIX = 'base64url.bearer.authorization.k8s.io.';

/**
 * The request-header authenticator's fields (apiserver authentication/request/headerrequest:
 * --requestheader-username-headers, -uid-, -group- and -extra-headers-prefix, whose documented
 * values are X-Remote-User, X-Remote-Uid, X-Remote-Group and X-Remote-Extra-). The apiserver
 * believes them only from a front proxy's client certificate; a proxy that speaks as itself never
 * lets a client's reach the apiserver, whatever certificate the proxy's own identity is.
 */
const REQUEST_HEADER_PREFIX = 'x-remote-';

/**
 * What an answer from a pod, a service or a node (the `proxy` subresource, or the legacy
 * `/api/v1/proxy/...` verb) is served with: the apiserver and kubectl proxy add nothing, and a page
 * of the pod's then runs on the proxy's origin, where its same-origin requests carry no Origin and
 * would pass the browser guard with the proxy's credentials. A sandbox without allow-same-origin
 * gives the page an opaque origin of its own (its requests to the API then say `Origin: null`,
 * which the request filter refuses); scripts, forms and popups still work, so a dashboard keeps
 * rendering. Added beside any policy the answer carries: a browser enforces both.
 */
export const PROXIED_CONTENT_POLICY = 'sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads';

/** Whether `url` asks the apiserver to proxy to a pod, a service or a node: its answer is theirs, not the apiserver's. */
export function proxiesContent(method: string, url: string): boolean {
  // Cheap first: nearly every request has no `/proxy` in it.
  if (!url.includes('/proxy')) return false;
  try {
    const info = parseRequestInfo(method, url);
    return info.verb === 'proxy' || info.subresource === 'proxy';
  } catch {
    return false;
  }
}

/** The request asks to act as someone else (Impersonate-User, -Group, -Uid, -Extra-*: the apiserver's impersonation filter). */
export function asksImpersonation(headers: IncomingHttpHeaders): boolean {
  for (const name in headers) if (name.startsWith('impersonate-')) return true;
  return false;
}

/**
 * The client's headers as they go upstream: no hop-by-hop fields, and the client's credentials
 * only when the request goes as the client (its own token, or none: shared mode).
 *
 * As the proxy (sidecar mode, or shared mode impersonating a client known by its certificate), no
 * client credential leaves: Authorization (any scheme; the upstream client sets the proxy's),
 * cookies, the request-header authenticator's X-Remote-* fields, and a bearer token offered as a WebSocket subprotocol (the client's other protocols
 * are kept, as the apiserver keeps them once it has read the token). Impersonate-* go upstream in
 * sidecar mode, as kubectl proxy passes them: the apiserver grants or refuses the impersonation to
 * the proxy's identity, which every client of the sidecar already acts as, so a client can only
 * act as someone that identity may be. When the proxy impersonates a certificate's user, the
 * upstream client sets Impersonate-* itself and the client's own are dropped.
 */
export function requestHeadersForUpstream(headers: IncomingHttpHeaders, as?: ForwardIdentity): Record<string, string | string[]> {
  if (as?.kind === 'bearer' || as?.kind === 'anonymous') return forwardable(headers, (name) => name === 'authorization');
  const impersonated = as?.kind === 'impersonate';
  const out = forwardable(
    headers,
    (name) =>
      name === 'authorization' ||
      name === 'cookie' ||
      name.startsWith(REQUEST_HEADER_PREFIX) ||
      (impersonated && name.startsWith('impersonate-')),
  );
  const protocols = out['sec-websocket-protocol'];
  if (protocols !== undefined) {
    const offered = (Array.isArray(protocols) ? protocols : [protocols]).flatMap((value) => value.split(',')).map((p) => p.trim());
    const kept = offered.filter((protocol) => !protocol.startsWith(BEARER_PROTOCOL_PREFIX));
    // Untouched unless a token was among them; none left: no header (the apiserver answers as to a client that offered none).
    if (kept.length < offered.length) {
      if (kept.length === 0) delete out['sec-websocket-protocol'];
      else out['sec-websocket-protocol'] = kept.join(', ');
    }
  }
  return out;
}

/**
 * The apiserver's response headers as they go to the client; an answer that is a pod's, a
 * service's or a node's own (`proxiedContent`) gets PROXIED_CONTENT_POLICY beside its own policies.
 */
export function responseHeadersForClient(headers: IncomingHttpHeaders, proxiedContent = false): Record<string, string | string[]> {
  const out = forwardable(headers);
  if (!proxiedContent) return out;
  const own = out['content-security-policy'];
  out['content-security-policy'] =
    own === undefined ? PROXIED_CONTENT_POLICY : [...(Array.isArray(own) ? own : [own]), PROXIED_CONTENT_POLICY];
  return out;
}

function forwardable(headers: IncomingHttpHeaders, drop: (name: string) => boolean = () => false): Record<string, string | string[]> {
  const listed = new Set(
    (headers.connection ?? '')
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter((token) => token !== ''),
  );
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name) || drop(name)) continue;
    out[name] = value;
  }
  return out;
}

/** A request carries a body when it says so (RFC 9112 §6.3): a length above 0 or a transfer coding. */
function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** The Status answer when the apiserver cannot be reached: 503 when it refuses, 502 otherwise. */
function upstreamFailure(res: ServerResponse, error: unknown): void {
  const detail = error instanceof Error ? error.message : String(error);
  const status = isConnectionError(error) ? serviceUnavailable(`error trying to reach service: ${detail}`) : badGateway(detail);
  const body = status.body();
  res.writeHead(status.status.code, { ...status.headers, 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

/**
 * Sees a whole answer as it streams by (read-your-writes reads the written RV from a write's
 * answer): its status, headers and body, or undefined for a body over `maxBytes`.
 */
export type ResponseObserver = (statusCode: number, headers: IncomingHttpHeaders, body: Buffer | undefined) => void;

/** What a passed-through answer is shown to: an observer of its whole body (up to maxBytes), and where its failure goes. */
export interface Observation {
  readonly observer: ResponseObserver;
  readonly maxBytes: number;
  /** Hand over the body's first maxBytes, however long it is (a LIST's metadata); default: all of it, or nothing past maxBytes. */
  readonly head?: boolean;
  /** The observer threw: the answer still reaches the client; the failure is reported (never swallowed). */
  readonly failed: (error: unknown) => void;
}

/**
 * A transform that passes every chunk on untouched and hands the whole body (up to maxBytes), or
 * its head, to the observer at its end.
 */
export function tap(statusCode: number, headers: IncomingHttpHeaders, observation: Observation): Transform {
  const { observer, maxBytes } = observation;
  let kept: Buffer[] | undefined = [];
  let size = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (kept !== undefined) {
        const room = maxBytes - size;
        size += chunk.length;
        if (chunk.length <= room) kept.push(chunk);
        else if (observation.head !== true) kept = undefined;
        else if (room > 0) kept.push(chunk.subarray(0, room));
      }
      callback(null, chunk);
    },
    flush(callback) {
      try {
        observer(statusCode, headers, kept === undefined ? undefined : Buffer.concat(kept));
      } catch (error) {
        // The observer's own failure: the answer still reaches the client.
        observation.failed(error);
      }
      callback();
    },
  });
}

export async function passThrough(
  client: UpstreamClient,
  req: IncomingMessage,
  res: ServerResponse,
  observe?: Observation,
  as?: ForwardIdentity,
): Promise<void> {
  const abort = new AbortController();
  // The client went away before the answer ended: stop the upstream request too. `writableEnded`
  // (end() called), not `writableFinished`: an h2 answer whose stream the client reset reads as
  // finished (node:http2 compat), and its upstream watch would run on to its timeout.
  res.on('close', () => {
    if (!res.writableEnded) abort.abort();
  });
  let upstream: Dispatcher.ResponseData;
  try {
    upstream = await client.forward({
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: requestHeadersForUpstream(req.headers, as),
      body: hasBody(req) ? req : undefined,
      signal: abort.signal,
      as,
    });
  } catch (error) {
    if (abort.signal.aborted) return;
    upstreamFailure(res, error);
    return;
  }
  res.writeHead(upstream.statusCode, responseHeadersForClient(upstream.headers, proxiesContent(req.method ?? 'GET', req.url ?? '/')));
  // Watches and logs stream (no Content-Length): send the headers at once, then each chunk as it
  // arrives. An answer of known length leaves with its first chunk, in one write.
  if (upstream.headers['content-length'] === undefined) res.flushHeaders();
  const { body } = upstream;
  const source = observe === undefined ? body : body.pipe(tap(upstream.statusCode, upstream.headers, observe));
  // HOT PATH: pipe() and listeners, not stream.pipeline, which makes (and aborts) an
  // AbortController per call: 5% of a pass-through's CPU.
  await new Promise<void>((resolve) => {
    const cleanup = (): void => {
      body.off('error', broken);
      source.off('error', broken);
      res.off('error', broken);
      res.off('close', closed);
    };
    // Either side failed or closed mid-stream: close the other.
    function broken(): void {
      cleanup();
      body.destroy();
      if (!res.writableEnded) res.destroy();
      resolve();
    }
    function closed(): void {
      if (!res.writableEnded) {
        broken();
        return;
      }
      cleanup();
      resolve();
    }
    body.on('error', broken);
    source.on('error', broken);
    res.on('error', broken);
    res.on('close', closed);
    source.pipe(res);
  });
}
