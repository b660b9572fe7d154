/**
 * Idle keep-alive connections, bounded per flow (shared mode: a user at an address, or an address
 * alone for a client not identified, as flow-limits.ts counts them). An idle TLS connection
 * costs the proxy ~80 KiB (Node's socket and OpenSSL's buffers), and the HTTP server keeps one
 * for its keep-alive timeout after each answer (Node's: 5 s and 1 s of grace): a client that
 * sends 200 requests at once over HTTP/1.1 (a connection each) leaves 200 connections, 16 MiB,
 * held after they end, and nothing in the flow limits (requests in flight, watches) counts them.
 *
 * So a flow's first MAX_IDLE_CONNECTIONS_PER_FLOW idle connections keep the server's keep-alive
 * timeout, and each one past them is kept EXCESS_IDLE_MS: long enough for a client that sends
 * its next request at once to reuse it, short enough that a burst's connections are let go. A
 * client-go transport keeps at most 25 idle connections to a host (its MaxIdleConnsPerHost,
 * apimachinery `util/net` SetTransportDefaults): the bound leaves room for a few such clients of
 * one identity in one pod. Closing an idle connection is what the keep-alive timeout does anyway,
 * only sooner: clients retry a request that meets it. Each flow's connections are counted apart,
 * so that one client's burst never shortens another's (every client of a node shares its address
 * when it uses the host's network).
 *
 * A connection is idle from its answer's end until its next request (or its close). Cost: O(1)
 * per request; the sets hold only idle connections, at most one entry each.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Idle connections a flow keeps for the server's keep-alive timeout. */
export const MAX_IDLE_CONNECTIONS_PER_FLOW = 64;
/** How long a flow's idle connection past the bound is kept. */
export const EXCESS_IDLE_MS = 1_000;

export interface IdleConnectionsOptions {
  readonly maxPerFlow?: number;
  readonly excessIdleMs?: number;
}

export interface IdleConnections {
  /**
   * A request arrived on its connection: the connection is busy until `res` ends, then idle in
   * the flow of `address` alone, or the one flowIs() names.
   */
  track(req: IncomingMessage, res: ServerResponse, address: string): void;
  /** The request answered by `res` is of `flow` (shared-gate.ts identified it). */
  flowIs(res: ServerResponse, flow: string): void;
  /** Idle connections now, over every address. */
  idle(): number;
  /** Idle connections let go sooner since start (each past its flow's bound). */
  shortened(): number;
}

export function newIdleConnections(options: IdleConnectionsOptions = {}): IdleConnections {
  const max = options.maxPerFlow ?? MAX_IDLE_CONNECTIONS_PER_FLOW;
  const excessMs = options.excessIdleMs ?? EXCESS_IDLE_MS;
  const idleByFlow = new Map<string, Set<Socket>>();
  /** The flow each idle connection is counted in. */
  const flowOfSocket = new WeakMap<Socket, string>();
  const flowOfAnswer = new WeakMap<ServerResponse, string>();
  let idle = 0;
  let shortened = 0;

  const busy = (socket: Socket): void => {
    const flow = flowOfSocket.get(socket);
    if (flow === undefined) return;
    flowOfSocket.delete(socket);
    const sockets = idleByFlow.get(flow);
    if (sockets?.delete(socket) === true) idle--;
    if (sockets?.size === 0) idleByFlow.delete(flow);
  };
  const closed = new WeakSet<Socket>();

  return {
    track(req, res, address) {
      const { socket } = req;
      busy(socket);
      if (!closed.has(socket)) {
        closed.add(socket);
        socket.once('close', () => {
          busy(socket);
        });
      }
      res.once('finish', () => {
        // Closed with its answer (Connection: close, an error): never idle.
        if (socket.destroyed || !res.shouldKeepAlive) return;
        const flow = flowOfAnswer.get(res) ?? address;
        let sockets = idleByFlow.get(flow);
        if (sockets === undefined) {
          sockets = new Set();
          idleByFlow.set(flow, sockets);
        }
        // Node has set its keep-alive timeout on the socket ('finish' listeners run in order,
        // the server's first); the next request on it clears whichever timeout is set.
        if (sockets.size >= max) {
          socket.setTimeout(excessMs);
          shortened++;
        }
        sockets.add(socket);
        flowOfSocket.set(socket, flow);
        idle++;
      });
    },
    flowIs(res, flow) {
      flowOfAnswer.set(res, flow);
    },
    idle: () => idle,
    shortened: () => shortened,
  };
}
