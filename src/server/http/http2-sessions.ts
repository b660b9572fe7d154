/**
 * The HTTP/2 side of a TLS listener: its settings, as the apiserver's (apiserver
 * pkg/server/secure_serving.go `Serve`), and its sessions' lives.
 *
 * - Streams per connection: `--http2-max-streams-per-connection`, the apiserver's flag. Its
 *   default here is 1000, the generic apiserver's recommended value (apiserver
 *   pkg/server/options/recommended.go), not kube-apiserver's 100: a shared proxy's clients are
 *   whole processes that multiplex every watch and request on one connection (a
 *   kube-controller-manager holds ~60 watches and tens of requests in flight at start, and a
 *   fleet's informers more); past the limit Go's client opens another connection, each with its own
 *   TLS state (~80 KiB here) and its handshake on the proxy's one loop. What a client may hold at
 *   once is bounded by the per-flow limits (watches and requests in flight), not by this.
 * - Uploads: 256 KiB per stream and per frame (resourceBody99Percentile), the connection's
 *   window that times the streams: what the apiserver lets a client send before it reads.
 * - Header list: Go's 1 MiB (MaxHeaderBytes), as over HTTP/1.1.
 * - Idle: a connection without a stream for 90 s is closed with a GOAWAY (Go's IdleTimeout, which
 *   counts from the last stream's end, never while a quiet watch is open). Node's own session
 *   timeout counts frames instead, and would cut quiet watches: it stays off. As over HTTP/1.1
 *   (idle-connections.ts), an address's first MAX_IDLE_CONNECTIONS_PER_FLOW idle connections are
 *   kept that long and each one past them EXCESS_IDLE_MS: an idle TLS connection costs ~80 KiB,
 *   and a client that opens thousands and sends nothing on them is let go of them at once.
 * - Shutdown: closing the server sends every session a GOAWAY (Node's, as Go's Shutdown): streams
 *   in flight end as they would, none is taken after it.
 *
 * The sessions' memory: Node bounds what nghttp2 holds per session (maxSessionMemory, in MiB),
 * refusing new streams past it. The outbound data of a session's streams is the streams' own
 * (each a watcher's unsent bytes, bounded per stream and by the unsent budget), so the bound is
 * set to hold the settings above for every stream with room to spare.
 */
import type { Http2SecureServer, Http2Session, SecureServerOptions, ServerHttp2Stream } from 'node:http2';
import type { Server as NetServer, Socket } from 'node:net';
import { EXCESS_IDLE_MS, MAX_IDLE_CONNECTIONS_PER_FLOW } from './idle-connections.ts';

/** The default of --http2-max-streams-per-connection (see above). */
export const DEFAULT_HTTP2_MAX_STREAMS_PER_CONNECTION = 1000;
/** resourceBody99Percentile: the apiserver's per-stream upload buffer and largest frame read. */
export const HTTP2_STREAM_WINDOW_BYTES = 256 * 1024;
/** Go's http.Server IdleTimeout as the apiserver sets it (secure_serving.go): 90 s. */
export const HTTP2_IDLE_TIMEOUT_MS = 90_000;
/** nghttp2's memory per session, in MiB (Node's default is 10). */
const MAX_SESSION_MEMORY_MIB = 64;

export type ClientProtocol = 'h2' | 'http/1.1';

/** The HTTP/2 options of a TLS server allowing HTTP/1.1 as well, with `maxStreams` per connection. */
export function http2ServerOptions(maxStreams: number, maxHeaderBytes: number): SecureServerOptions {
  return {
    allowHTTP1: true,
    maxSessionMemory: MAX_SESSION_MEMORY_MIB,
    settings: {
      maxConcurrentStreams: maxStreams,
      initialWindowSize: HTTP2_STREAM_WINDOW_BYTES,
      maxFrameSize: HTTP2_STREAM_WINDOW_BYTES,
      maxHeaderListSize: maxHeaderBytes,
    },
  };
}

/** Clients' connections by protocol: open now, and accepted since start. */
export interface ClientConnections {
  open(): Readonly<Record<ClientProtocol, number>>;
  accepted(): Readonly<Record<ClientProtocol, number>>;
  /** Destroys every connection open now, whatever it is doing (the end of a shutdown's grace period). */
  destroyAll(): void;
}

/**
 * Counts the connections of `server` by the protocol ALPN chose (a plain server's are all
 * HTTP/1.1), and keeps its h2 sessions' lives as above (`idleMs`).
 */
export function trackClientConnections(
  server: Http2SecureServer | NetServer,
  options: { readonly tls: boolean; readonly idleMs?: number; readonly maxIdlePerAddress?: number; readonly excessIdleMs?: number },
): ClientConnections {
  const open: Record<ClientProtocol, number> = { h2: 0, 'http/1.1': 0 };
  const accepted: Record<ClientProtocol, number> = { h2: 0, 'http/1.1': 0 };
  const sockets = new Set<Socket>();
  const count = (socket: Socket, protocol: ClientProtocol): void => {
    open[protocol]++;
    accepted[protocol]++;
    sockets.add(socket);
    socket.once('close', () => {
      open[protocol]--;
      sockets.delete(socket);
    });
  };
  server.on(options.tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    // A TLS socket's protocol as ALPN chose it (false when none was); a plain socket has none.
    const alpn: unknown = Reflect.get(socket, 'alpnProtocol');
    count(socket, alpn === 'h2' ? 'h2' : 'http/1.1');
  });
  const idle: IdleSettings = {
    idleMs: options.idleMs ?? HTTP2_IDLE_TIMEOUT_MS,
    maxPerAddress: options.maxIdlePerAddress ?? MAX_IDLE_CONNECTIONS_PER_FLOW,
    excessIdleMs: options.excessIdleMs ?? EXCESS_IDLE_MS,
    byAddress: new Map(),
  };
  server.on('session', (session: Http2Session) => {
    closeWhenIdle(session, idle);
  });
  return {
    open: () => ({ ...open }),
    accepted: () => ({ ...accepted }),
    destroyAll: () => {
      for (const socket of sockets) socket.destroy();
    },
  };
}

interface IdleSettings {
  readonly idleMs: number;
  readonly maxPerAddress: number;
  readonly excessIdleMs: number;
  /** Idle sessions now, by their client's address. */
  readonly byAddress: Map<string, number>;
}

/**
 * Closes `session` (GOAWAY) once it has had no stream for the idle timeout (EXCESS_IDLE_MS when
 * its address has its bound of idle sessions already); a stream that opens meanwhile keeps it.
 */
function closeWhenIdle(session: Http2Session, idle: IdleSettings): void {
  const address = session.socket.remoteAddress ?? '';
  let streams = 0;
  let timer: NodeJS.Timeout | undefined;
  const busy = (): void => {
    if (timer === undefined) return;
    clearTimeout(timer);
    timer = undefined;
    const left = (idle.byAddress.get(address) ?? 1) - 1;
    if (left > 0) idle.byAddress.set(address, left);
    else idle.byAddress.delete(address);
  };
  const arm = (): void => {
    const already = idle.byAddress.get(address) ?? 0;
    idle.byAddress.set(address, already + 1);
    timer = setTimeout(
      () => {
        if (streams === 0 && !session.closed && !session.destroyed) session.close();
      },
      already >= idle.maxPerAddress ? idle.excessIdleMs : idle.idleMs,
    );
    timer.unref();
  };
  arm();
  session.on('stream', (stream: ServerHttp2Stream) => {
    streams++;
    busy();
    stream.once('close', () => {
      streams--;
      if (streams === 0 && !session.closed && !session.destroyed) arm();
    });
  });
  session.once('close', busy);
}
