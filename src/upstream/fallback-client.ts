/**
 * A chained proxy's upstream (`--server`, a node proxy) with the apiserver behind it as a
 * fallback: while the upstream proxy cannot be reached, every request goes to the apiserver
 * instead, with the same credentials (the kubeconfig's or the pod's service account), and once the
 * upstream proxy answers its `/readyz` again, requests go back to it. A node proxy being rolled,
 * restarted or gone thus never takes the API away from the sidecars chained to it, writes
 * included. No client-go counterpart (client-go talks to one server).
 *
 * What counts as unreachable is what happens before any answer: a refused or timed-out
 * connection, an unknown host, a TLS handshake the upstream fails (its certificate), a connection
 * closed before the answer's head. A request that failed so is sent again to the apiserver when
 * nothing of it can have been acted on: the proxy's own requests (informers' lists and watches,
 * probes, reviews) and any client request whose connection was never made; a client's write whose
 * connection broke after it was sent is not resent (its error is the client's, as it would be
 * without the proxy). An answer, whatever its status, is the upstream's.
 *
 * While on the apiserver, the upstream's `/readyz` is asked every PROBE_INTERVAL_MS; at its first
 * 200 the informers' watches opened on the apiserver are ended, so that they re-watch the upstream
 * from their resourceVersion (one RV space: the same etcd behind both).
 */
import type { Dispatcher } from 'undici';
import type { ForwardRequest, UpgradeRequest, UpgradeResponse, UpstreamClient, UpstreamRequest, UpstreamResponse } from './client.ts';

/** How often a chained proxy on the apiserver asks its upstream proxy whether it is back. */
export const PROBE_INTERVAL_MS = 5_000;
/** Each probe's bound: an upstream that does not answer within it is still away. */
const PROBE_TIMEOUT_MS = 3_000;

/** Node's and undici's codes of a failure to make the connection: nothing of the request left. */
const NOT_CONNECTED_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_SSL_WRONG_VERSION_NUMBER',
]);
/** Those, and the connection's breaking before any answer (the request may have been sent). */
const UNREACHABLE_CODES = new Set([...NOT_CONNECTED_CODES, 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/** The error's code, or its cause's (undici wraps a socket's error). */
function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return code;
  }
  return undefined;
}

export type FallbackTarget = 'upstream' | 'apiserver';

export interface FallbackState {
  readonly target: FallbackTarget;
  /** When the current target was taken (ms since the epoch). */
  readonly sinceMs: number;
  /** Why the upstream was left, while on the apiserver. */
  readonly reason: string | undefined;
  /** Times the upstream was left since start. */
  readonly fallbacks: number;
}

export interface FallbackClientOptions {
  /** The upstream proxy (`--server`). */
  readonly upstream: UpstreamClient;
  /** The apiserver, with the same credentials. */
  readonly apiserver: UpstreamClient;
  readonly log: (level: 'info' | 'warn', fields: Record<string, unknown>, message: string) => void;
  readonly probeIntervalMs?: number;
  readonly now?: () => number;
}

export interface FallbackClient extends UpstreamClient {
  state(): FallbackState;
}

/** Idempotent methods: sent again after a connection broke mid-request, as Go's transport retries them. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS']);

export function newFallbackClient(options: FallbackClientOptions): FallbackClient {
  const { upstream, apiserver, log } = options;
  const now = options.now ?? Date.now;
  let target: FallbackTarget = 'upstream';
  let sinceMs = now();
  let reason: string | undefined;
  let fallbacks = 0;
  let probing: NodeJS.Timeout | undefined;
  let closed = false;
  /** The proxy's own streams (watches) opened on the apiserver: ended when the upstream is back. */
  const onApiserver = new Set<Dispatcher.ResponseData['body']>();

  const backToUpstream = (): void => {
    if (target === 'upstream') return;
    target = 'upstream';
    const awayMs = now() - sinceMs;
    sinceMs = now();
    reason = undefined;
    if (probing !== undefined) clearInterval(probing);
    probing = undefined;
    log(
      'info',
      { server: upstream.config.server.origin, awaySeconds: Math.round(awayMs / 100) / 10 },
      'upstream proxy back: requests go to it again',
    );
    for (const body of onApiserver) body.destroy(new Error('the upstream proxy is back: watching it again'));
    onApiserver.clear();
  };

  const probe = async (): Promise<void> => {
    try {
      const res = await upstream.request({
        method: 'GET',
        path: '/readyz',
        headers: { accept: 'text/plain' },
        signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      });
      if (res.statusCode === 200 && !closed) backToUpstream();
    } catch {
      // still away
    }
  };

  const leaveUpstream = (code: string): void => {
    if (target === 'apiserver' || closed) return;
    target = 'apiserver';
    sinceMs = now();
    reason = code;
    fallbacks++;
    log(
      'warn',
      { server: upstream.config.server.origin, apiserver: apiserver.config.server.origin, reason: code },
      'upstream proxy unreachable: requests go to the apiserver until it is back',
    );
    probing = setInterval(() => void probe(), options.probeIntervalMs ?? PROBE_INTERVAL_MS);
    probing.unref();
  };

  /**
   * Sends on the current target; a failure before any answer from the upstream proxy moves to the
   * apiserver, and the request is sent there when `resend` says nothing of it was acted on.
   */
  const routed = async <T>(send: (client: UpstreamClient) => Promise<T>, resend: (code: string) => boolean): Promise<T> => {
    if (target === 'apiserver') return send(apiserver);
    try {
      return await send(upstream);
    } catch (error) {
      const code = errorCode(error);
      if (code === undefined) throw error;
      leaveUpstream(code);
      if (!resend(code)) throw error;
      return send(apiserver);
    }
  };

  const ownStream = async (req: UpstreamRequest): Promise<Dispatcher.ResponseData> => {
    let via: UpstreamClient = upstream;
    const res = await routed(
      (client) => {
        via = client;
        return client.stream(req);
      },
      () => true,
    );
    if (via === apiserver) {
      onApiserver.add(res.body);
      res.body.once('close', () => onApiserver.delete(res.body));
    }
    return res;
  };

  return {
    get config() {
      return upstream.config;
    },
    state: () => ({ target, sinceMs, reason, fallbacks }),
    request: (req: UpstreamRequest): Promise<UpstreamResponse> =>
      routed(
        (client) => client.request(req),
        () => true,
      ),
    stream: ownStream,
    forward: (req: ForwardRequest): Promise<Dispatcher.ResponseData> =>
      routed(
        (client) => client.forward(req),
        (code) => NOT_CONNECTED_CODES.has(code) || (IDEMPOTENT.has(req.method) && req.body === undefined),
      ),
    upgrade: (req: UpgradeRequest): Promise<UpgradeResponse> =>
      routed(
        (client) => client.upgrade(req),
        (code) => NOT_CONNECTED_CODES.has(code),
      ),
    async close() {
      closed = true;
      if (probing !== undefined) clearInterval(probing);
      await Promise.all([upstream.close(), apiserver.close()]);
    },
  };
}
