/**
 * The proxy's connection to the apiserver: one undici Pool per apiserver, with its TLS settings
 * and the kubeconfig's credentials on every request.
 */
import type { IncomingHttpHeaders } from 'node:http';
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

export interface ForwardRequest {
  readonly method: Dispatcher.HttpMethod;
  readonly path: string;
  /** Already stripped of hop-by-hop headers and of the client's own credentials. */
  readonly headers: Record<string, string | string[]>;
  readonly body?: NodeJS.ReadableStream | Buffer | undefined;
  readonly signal?: AbortSignal;
}

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
  close(): Promise<void>;
}

export function newUpstreamClient(config: UpstreamConfig, options: Pool.Options = {}): UpstreamClient {
  const pool = new Pool(config.server.origin, {
    ...options,
    connect: {
      ca: config.tls.ca,
      cert: config.tls.cert,
      key: config.tls.key,
      rejectUnauthorized: config.tls.rejectUnauthorized,
      ...(config.tls.servername === undefined ? {} : { servername: config.tls.servername }),
    },
  });
  const basePath = config.server.pathname === '/' ? '' : config.server.pathname;

  /** Every request goes out here: the proxy's credentials added, the server's base path prefixed. */
  const dispatch = async (
    req: Pick<ForwardRequest, 'method' | 'path' | 'signal'>,
    headers: Record<string, string | string[]>,
    body: Dispatcher.DispatchOptions['body'],
    bodyTimeout?: number,
  ): Promise<Dispatcher.ResponseData> => {
    const authorization = await config.authorization();
    if (authorization !== undefined) headers.authorization = authorization;
    return pool.request({
      origin: config.server.origin,
      method: req.method,
      path: `${basePath}${req.path}`,
      headers,
      body,
      signal: req.signal,
      ...(bodyTimeout === undefined ? {} : { bodyTimeout }),
    });
  };

  const send = (req: UpstreamRequest): Promise<Dispatcher.ResponseData> => {
    const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
    if (req.body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
    return dispatch(req, headers, req.body);
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
    forward: (req) => dispatch(req, { ...req.headers }, req.body as Dispatcher.DispatchOptions['body'], 0),
    close: () => pool.close(),
  };
}
