/**
 * TLS handshakes paced in time.
 *
 * A server's TLS handshake is done on the event loop where the ClientHello is read: ~1-3 ms of it
 * (its key exchange, hybrid X25519MLKEM768 by default, its signature, the socket's set-up). Over HTTP/1.1 every watch and
 * every request in flight is a connection of its own. The loop accepts one connection per turn,
 * but turns are short while only accepting, so a client opening a thousand connections at once
 * has hundreds accepted within milliseconds, and their ClientHellos are then read, and
 * handshaken, in one later turn: 0.4-0.9 s in which no other client's read or watch event is
 * written. (Go's apiserver handshakes each connection on a goroutine of its own, on every core;
 * here they share the one loop with everything else.)
 *
 * So at most `perWindow` new connections are handed to TLS in each window of `windowMs`; the
 * rest wait, in turn by source address (one address's burst never holds another's new
 * connections behind it), at most `maxWaitingPerAddress` each: past that a new connection is
 * closed at once, before any byte of it is read. A waiting connection's ClientHello stays in the
 * kernel until it is handed over; one its client closed meanwhile is dropped at its turn.
 *
 * The default, one each 5 ms (200 new TLS connections a second), leaves the loop between two
 * handshakes of a burst: a read waits for one handshake at most, not four back to back (a burst
 * of 4 each 20 ms held every other client's reads 5-10 ms at a time). Clients reconnecting after
 * a restart wait their turn (within client-go's TLS handshake timeout, 10 s: 2,000 connections
 * from one address).
 *
 * Cost: nothing while fewer than `perWindow` connections arrive in a window (they are handed over
 * at once); a Map entry per address with connections waiting, and one timer while any wait.
 */
import type { Server as NetServer, Socket } from 'node:net';

export const HANDSHAKES_PER_WINDOW = 1;
export const HANDSHAKE_WINDOW_MS = 5;
/** The default rate (--tls-handshakes-per-second): HANDSHAKES_PER_WINDOW each HANDSHAKE_WINDOW_MS. */
export const DEFAULT_TLS_HANDSHAKES_PER_SECOND = (HANDSHAKES_PER_WINDOW * 1000) / HANDSHAKE_WINDOW_MS;

/** Connections from one source address that may wait for their handshake. */
export const MAX_WAITING_HANDSHAKES_PER_ADDRESS = 4096;

/**
 * The windows for `perSecond` handshakes a second (0: none, no pacing): windows of
 * HANDSHAKE_WINDOW_MS while that holds one handshake or more, so that a burst is spread as finely
 * as the default spreads it; below 200 a second, one handshake per longer window.
 */
export function pacingForRate(perSecond: number): { perWindow: number; windowMs: number } | undefined {
  if (!(perSecond > 0)) return undefined;
  const perWindow = (perSecond * HANDSHAKE_WINDOW_MS) / 1000;
  if (perWindow >= 1) return { perWindow: Math.round(perWindow), windowMs: HANDSHAKE_WINDOW_MS };
  return { perWindow: 1, windowMs: 1000 / perSecond };
}

export interface HandshakePacingOptions {
  readonly perWindow?: number;
  readonly windowMs?: number;
  readonly maxWaitingPerAddress?: number;
  /** Milliseconds, monotonic, and a timer on the same clock (tests give their own). */
  readonly now?: () => number;
  readonly setTimer?: (fire: () => void, ms: number) => () => void;
}

function realTimer(fire: () => void, ms: number): () => void {
  const timer = setTimeout(fire, ms);
  return () => {
    clearTimeout(timer);
  };
}

export interface HandshakePacing {
  /** Connections waiting for their handshake now. */
  waiting(): number;
  /** Connections closed since start because their address had too many waiting. */
  refused(): number;
}

type ConnectionListener = (this: NetServer, socket: Socket) => void;

function ignore(): void {
  // A waiting connection's reset is no error of the server's: it is dropped at its turn.
}

/**
 * Paces the handshakes of a TLS server (node:tls or node:https, whose own 'connection' listener
 * starts the handshake): that listener is called for each new connection at the pace above.
 */
export function paceTlsHandshakes(server: NetServer, options: HandshakePacingOptions = {}): HandshakePacing {
  const perWindow = options.perWindow ?? HANDSHAKES_PER_WINDOW;
  const windowMs = options.windowMs ?? HANDSHAKE_WINDOW_MS;
  const maxWaiting = options.maxWaitingPerAddress ?? MAX_WAITING_HANDSHAKES_PER_ADDRESS;
  const now = options.now ?? (() => performance.now());
  const setTimer = options.setTimer ?? realTimer;
  const handshakers = server.listeners('connection') as ConnectionListener[];
  server.removeAllListeners('connection');
  /** Waiting connections by source address, addresses in the order of their turns. */
  const queues = new Map<string, Socket[]>();
  let waiting = 0;
  let refused = 0;
  let windowStart = -Infinity;
  let started = 0;
  /** Cancels the timer of the next drain, while one is set. */
  let timer: (() => void) | undefined;

  const room = (): boolean => {
    const at = now();
    if (at - windowStart >= windowMs) {
      windowStart = at;
      started = 0;
    }
    return started < perWindow;
  };

  const handOver = (socket: Socket): void => {
    socket.off('error', ignore);
    started++;
    for (const handshake of handshakers) handshake.call(server, socket);
  };

  const later = (): void => {
    if (timer !== undefined || queues.size === 0) return;
    timer = setTimer(drain, Math.max(1, windowStart + windowMs - now()));
  };

  function drain(): void {
    timer = undefined;
    while (queues.size > 0 && room()) {
      const first = queues.entries().next();
      if (first.done === true) break;
      const [address, queue] = first.value;
      const socket = queue.shift();
      waiting--;
      // The address goes to the back of the line: the next handover is the next address's.
      queues.delete(address);
      if (queue.length > 0) queues.set(address, queue);
      if (socket !== undefined && !socket.destroyed) handOver(socket);
    }
    later();
  }

  server.on('connection', (socket: Socket) => {
    if (queues.size === 0 && room()) {
      handOver(socket);
      return;
    }
    const address = socket.remoteAddress ?? '';
    const queue = queues.get(address);
    if ((queue?.length ?? 0) >= maxWaiting) {
      refused++;
      socket.destroy();
      return;
    }
    socket.on('error', ignore);
    if (queue === undefined) queues.set(address, [socket]);
    else queue.push(socket);
    waiting++;
    later();
  });

  server.once('close', () => {
    timer?.();
    timer = undefined;
    for (const queue of queues.values()) for (const socket of queue) socket.destroy();
    queues.clear();
    waiting = 0;
  });

  return { waiting: () => waiting, refused: () => refused };
}
