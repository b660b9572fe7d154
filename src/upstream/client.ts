/**
 * The proxy's connection to the apiserver: one undici Pool per apiserver, with its TLS settings
 * and the kubeconfig's credentials on every request.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { Duplex } from 'node:stream';
import { Pool } from 'undici';
import type { Dispatcher } from 'undici';
import type { UpstreamConfig } from './config.ts';

export interface UpstreamRequest {
  readonly method: Dispatcher.HttpMethod;
  /** Path and query, e.g. /api/v1/namespaces/default/pods?limit=500 */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
  readonly signal?: AbortSignal;
}

/**
 * Whose credentials a passed-through request carries upstream. The proxy's own (sidecar mode, as
 * kubectl proxy), or in shared mode the client's: its bearer token as it sent it, on a connection
 * without the proxy's client certificate (the apiserver would authenticate the certificate
 * first); or, for a client known by its certificate (which cannot be forwarded), the proxy's
 * credentials asking to act as that user (Impersonate-User, -Group, -Uid, -Extra-*: the apiserver
 * authorizes the impersonation, then the request as the client).
 */
export type ForwardIdentity =
  | { readonly kind: 'proxy' }
  | { readonly kind: 'bearer'; readonly authorization: string }
  /** A client that sent no credentials: none go upstream either, and the apiserver answers it as it answers anyone anonymous. */
  | { readonly kind: 'anonymous' }
  | {
      readonly kind: 'impersonate';
      readonly username: string;
      readonly uid: string;
      readonly groups: readonly string[];
      readonly extra: Readonly<Record<string, readonly string[]>>;
    };

export interface ForwardRequest {
  readonly method: Dispatcher.HttpMethod;
  readonly path: string;
  /** Already stripped of hop-by-hop headers and of the client's own credentials. */
  readonly headers: Record<string, string | string[]>;
  readonly body?: NodeJS.ReadableStream | Buffer | undefined;
  readonly signal?: AbortSignal;
  /** Default: the proxy's. */
  readonly as?: ForwardIdentity | undefined;
}

export interface UpgradeRequest {
  readonly method: Dispatcher.HttpMethod;
  readonly path: string;
  /** The protocol(s) the client asked for, its Upgrade header as is: `SPDY/3.1`, `websocket`. */
  readonly protocol: string;
  /**
   * Already stripped of hop-by-hop headers and of the client's own credentials. Connection and
   * Upgrade are not among them: undici writes `connection: upgrade` and `upgrade: <protocol>`.
   */
  readonly headers: Record<string, string | string[]>;
  /** Aborts the request until the apiserver answers, or the body of a refusal while it streams. */
  readonly signal?: AbortSignal;
  /** Default: the proxy's. */
  readonly as?: ForwardIdentity | undefined;
}

/** The apiserver switched protocols (101): the connection is the caller's from here on. */
export interface UpgradedResponse {
  readonly upgraded: true;
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  /**
   * The raw connection, bytes the apiserver sent after its 101 already queued for reading. It
   * has an 'error' listener that does nothing, so that a reset never crashes the process: watch
   * 'close' (hadError) or add a listener of your own.
   */
  readonly socket: Duplex;
}

/** The apiserver answered without switching (most often an error Status): its response, body streamed. */
export interface RefusedUpgradeResponse {
  readonly upgraded: false;
  readonly statusCode: number;
  readonly statusText: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Readable;
}

export type UpgradeResponse = UpgradedResponse | RefusedUpgradeResponse;

export interface UpstreamResponse {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  /** The body as received: the proxy keeps and serves these bytes, never a re-serialization. */
  readonly body: Buffer;
}

export interface UpstreamClient {
  readonly config: UpstreamConfig;
  /** Sends a request and buffers the whole response (not for watches). */
  request(request: UpstreamRequest): Promise<UpstreamResponse>;
  /** Sends a request and returns the response with its body as a stream (watches, large lists). */
  stream(request: UpstreamRequest): Promise<Dispatcher.ResponseData>;
  /**
   * Pass-through: sends the client's request as it is (headers and body untouched, streamed),
   * adding only the proxy's own credentials.
   */
  forward(request: ForwardRequest): Promise<Dispatcher.ResponseData>;
  /**
   * HTTP/1.1 Upgrade (exec, attach, port-forward over SPDY or WebSocket): sends the client's
   * request with the proxy's own credentials and resolves with the 101 and its connection, or
   * with the apiserver's other answer. The connection leaves the pool: closing the client does
   * not end it.
   */
  upgrade(request: UpgradeRequest): Promise<UpgradeResponse>;
  close(): Promise<void>;
}

/**
 * How long an idle connection to the apiserver is kept for the next request. undici's default (4 s)
 * would make a request after any pause of a few seconds pay a TLS handshake, upstream and here;
 * client-go keeps idle connections 90 s (http.DefaultTransport) and the apiserver its side 90 s
 * (secure_serving.go IdleTimeout). Kept below that, and below the common 60 s idle timeout of
 * load balancers in front of apiservers, so that the proxy closes first.
 */
export const UPSTREAM_IDLE_MS = 50_000;

/**
 * The proxy's own requests (the informers' lists and watches, discovery, reviews, probes) go over
 * HTTP/2 unless --upstream-http2=false: one watch per cached type, held for the proxy's life,
 * then shares a connection or two instead of holding one each, as client-go's do. undici runs at
 * most 100 streams on a connection (its maxConcurrentStreams, lowered by the server's
 * SETTINGS_MAX_CONCURRENT_STREAMS) and opens another when all are taken. Node's HTTP/2 gives the
 * connection's flow-control window back as bytes arrive and holds back only the stream's own, so
 * a stream that is not read stalls itself, not the others (bench/RESULTS.md, "Upstream over HTTP/2").
 *
 * Pass-through stays on HTTP/1.1, one connection per request in flight, as before: its paths and
 * headers are the clients'. Node's HTTP/2 client refuses to send a header block past 64 KiB
 * (maxSendHeaderBlockLength, which undici does not raise; the apiserver takes 1 MiB), so an own
 * request whose head could pass that (a long `continue` token or selector given to the library)
 * goes over HTTP/1.1 too.
 */
export const UPSTREAM_HTTP2_DEFAULT = true;

/** Node's default maxSendHeaderBlockLength (lib/internal/http2/util.js), less a margin. */
const MAX_H2_HEADER_BLOCK = 60 * 1024;

/**
 * An upper bound of a request's header block as nghttp2 measures it against
 * maxSendHeaderBlockLength (nghttp2_hd_deflate_bound: 12 bytes, then 6 plus the name and the value
 * of each field, the pseudo-headers included).
 */
function headerBlockBound(path: string, authority: string, headers: Readonly<Record<string, string | readonly string[]>>): number {
  // :method (at most 7 bytes), :scheme https, :authority, :path.
  let bound = 12 + (6 + 7 + 7) + (6 + 7 + 5) + (6 + 10 + authority.length) + (6 + 5 + path.length);
  for (const [name, value] of Object.entries(headers)) {
    for (const v of typeof value === 'string' ? [value] : value) bound += 6 + name.length + v.length;
  }
  return bound;
}

export function newUpstreamClient(config: UpstreamConfig, givenOptions: Pool.Options = {}): UpstreamClient {
  const options: Pool.Options = { keepAliveTimeout: UPSTREAM_IDLE_MS, keepAliveMaxTimeout: UPSTREAM_IDLE_MS, ...givenOptions };
  const connect = {
    ca: config.tls.ca,
    cert: config.tls.cert,
    key: config.tls.key,
    rejectUnauthorized: config.tls.rejectUnauthorized,
    ...(config.tls.servername === undefined ? {} : { servername: config.tls.servername }),
    ...(config.connectTimeoutMs === undefined ? {} : { timeout: config.connectTimeoutMs }),
  };
  // The proxy's own requests.
  const pool = new Pool(config.server.origin, { allowH2: config.http2 ?? UPSTREAM_HTTP2_DEFAULT, ...options, connect });
  // Pass-through as the proxy (made on first use: a proxy whose clients read only from its caches never opens one).
  let forwardPool: Pool | undefined;
  // Upgrades need HTTP/1.1 (RFC 9113 §8.6 forbids Upgrade in HTTP/2), but undici offers h2 by
  // ALPN and the apiserver takes it, so they get connections of their own. Each one leaves this
  // pool at its 101, so the pool holds only connections that are opening or were refused.
  const upgradePool = new Pool(config.server.origin, { ...options, connect, allowH2: false });
  // Shared mode's clients' own tokens (or no credentials) travel on connections without the
  // proxy's certificate (made on first use: sidecar mode never opens one).
  const clientConnect = { ...connect, cert: undefined, key: undefined };
  let clientPool: Pool | undefined;
  let clientUpgradePool: Pool | undefined;
  const poolFor = (as: ForwardIdentity | undefined, use: 'own' | 'forward' | 'upgrade'): Pool => {
    if (use === 'own') return pool;
    if (as?.kind !== 'bearer' && as?.kind !== 'anonymous')
      return use === 'upgrade' ? upgradePool : (forwardPool ??= new Pool(config.server.origin, { ...options, connect, allowH2: false }));
    if (use === 'upgrade')
      return (clientUpgradePool ??= new Pool(config.server.origin, { ...options, connect: clientConnect, allowH2: false }));
    return (clientPool ??= new Pool(config.server.origin, { ...options, connect: clientConnect, allowH2: false }));
  };
  const basePath = config.server.pathname === '/' ? '' : config.server.pathname;

  /** The credentials of a request that leaves: the proxy's own (client certs are in `connect`), or the client's. */
  const authorize = async (headers: Record<string, string | string[]>, as?: ForwardIdentity): Promise<void> => {
    if (as?.kind === 'bearer') {
      headers.authorization = as.authorization;
      return;
    }
    if (as?.kind === 'anonymous') return;
    const authorization = await config.authorization();
    if (authorization !== undefined) headers.authorization = authorization;
    if (as?.kind !== 'impersonate') return;
    headers['impersonate-user'] = as.username;
    if (as.uid !== '') headers['impersonate-uid'] = as.uid;
    if (as.groups.length > 0) headers['impersonate-group'] = [...as.groups];
    for (const [key, values] of Object.entries(as.extra)) headers[`impersonate-extra-${encodeURIComponent(key)}`] = [...values];
  };

  /** Every request goes out here: the proxy's credentials added, the server's base path prefixed. */
  const dispatch = async (
    req: Pick<ForwardRequest, 'method' | 'path' | 'signal' | 'as'>,
    headers: Record<string, string | string[]>,
    body: Dispatcher.DispatchOptions['body'],
    use: 'own' | 'forward',
    bodyTimeout?: number,
  ): Promise<Dispatcher.ResponseData> => {
    await authorize(headers, req.as);
    const path = `${basePath}${req.path}`;
    const fits = use === 'forward' || headerBlockBound(path, config.server.host, headers) <= MAX_H2_HEADER_BLOCK;
    return poolFor(req.as, fits ? use : 'forward').request({
      origin: config.server.origin,
      method: req.method,
      path,
      headers,
      body,
      signal: req.signal,
      ...(bodyTimeout === undefined ? {} : { bodyTimeout }),
    });
  };

  const send = (req: UpstreamRequest): Promise<Dispatcher.ResponseData> => {
    const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
    if (req.body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
    return dispatch(req, headers, req.body, 'own');
  };

  return {
    config,
    async request(req) {
      const res = await send(req);
      const body = Buffer.from(await res.body.arrayBuffer());
      return { statusCode: res.statusCode, headers: res.headers, body };
    },
    stream: send,
    // A watch or `logs -f` may stay quiet for long: no body timeout on a pass-through.
    forward: (req) => dispatch(req, { ...req.headers }, req.body as Dispatcher.DispatchOptions['body'], 'forward', 0),
    async upgrade(req) {
      const headers = { ...req.headers };
      await authorize(headers, req.as);
      const upgrades = poolFor(req.as, 'upgrade');
      return new Promise((resolve, reject) => {
        const options: Dispatcher.DispatchOptions = {
          origin: config.server.origin,
          method: req.method,
          path: `${basePath}${req.path}`,
          headers,
          upgrade: req.protocol,
          // A refusal is any answer but 101, a watch's stream as well (`Upgrade: h2c` on a GET,
          // say), which may stay quiet for long: no body timeout, as on a pass-through.
          bodyTimeout: 0,
        };
        try {
          upgrades.dispatch(options, new UpgradeHandler(req.signal, resolve, reject));
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
    },
    close: async () => {
      await Promise.all([pool.close(), forwardPool?.close(), upgradePool.close(), clientPool?.close(), clientUpgradePool?.close()]);
    },
  };
}

/**
 * undici's handler for an upgrade that keeps both outcomes. (undici's own `upgrade()` API fails a
 * non-101 answer as "bad upgrade" and drops its body, which is the apiserver's error Status.)
 * For a request dispatched with `upgrade`, undici calls onRequestUpgrade on a 101 and the usual
 * onResponseStart / Data / End for any other status.
 */
class UpgradeHandler implements Dispatcher.DispatchHandler {
  readonly #signal: AbortSignal | undefined;
  readonly #resolve: (response: UpgradeResponse) => void;
  readonly #reject: (error: Error) => void;
  #controller: Dispatcher.DispatchController | undefined;
  /** The refusal's body, once its headers have arrived (the promise has resolved then). */
  #body: Readable | undefined;
  /** undici is done with the request: ended, failed or aborted. */
  #finished = false;

  constructor(signal: AbortSignal | undefined, resolve: (response: UpgradeResponse) => void, reject: (error: Error) => void) {
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  readonly #onAbort = (): void => {
    const reason: unknown = this.#signal?.reason;
    this.#controller?.abort(reason instanceof Error ? reason : new Error('upgrade aborted'));
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#signal?.aborted === true) this.#onAbort();
    else this.#signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  onRequestUpgrade(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, socket: Duplex): void {
    this.#finished = true;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    // undici removed its own listeners: until the caller adds one, an error must not be unhandled.
    socket.on('error', () => undefined);
    this.#resolve({ upgraded: true, statusCode, headers, socket });
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusText?: string): void {
    const body = new Readable({
      read: () => {
        controller.resume();
      },
      destroy: (error, callback) => {
        // The caller stopped reading before the end: the connection is of no further use.
        if (!this.#finished) controller.abort(error ?? new Error('refused upgrade: body destroyed'));
        callback(error);
      },
    });
    this.#body = body;
    this.#resolve({ upgraded: false, statusCode, statusText: statusText ?? '', headers, body });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#body?.push(chunk) === false) controller.pause();
  }

  onResponseEnd(): void {
    this.#finished = true;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#body?.push(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#finished = true;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    if (this.#body === undefined) this.#reject(error);
    else this.#body.destroy(error);
  }
}
