/**
 * A TCP proxy on loopback between a client and the apiserver, for fault injection: cut every
 * open connection mid-stream, refuse new ones for a while, hold or delay what the apiserver
 * sends. It sees only TLS bytes.
 */
import { createServer, connect } from 'node:net';
import type { Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Connections accepted so far. */
  connections(): number;
  /** Destroys every open connection (both sides). */
  cut(): void;
  /** While blocked, new connections are reset at once. */
  setBlocked(blocked: boolean): void;
  /**
   * While held, nothing the target sends reaches the clients, on open and new connections alike,
   * and no connection closes: a link that went silent without breaking. Released, the held bytes
   * flow on in order.
   */
  setHeld(held: boolean): void;
  /**
   * A slow link: every byte the target sends from now on reaches its client `ms` later, in order
   * (0: at once again, after what is already delayed).
   */
  setDelay(ms: number): void;
  /** New connections go to this target from now on; open ones stay where they are (a Service's endpoints changing). */
  retarget(host: string, port: number): void;
  close(): Promise<void>;
}

export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  let targetHost = host;
  let targetPort = port;
  const open = new Set<Socket>();
  let accepted = 0;
  let blocked = false;
  let held = false;
  let delayMs = 0;
  /** Each open connection's upstream side. */
  const upstreams = new Set<Socket>();
  const server = createServer((client) => {
    if (blocked) {
      client.resetAndDestroy();
      return;
    }
    accepted++;
    const upstream = connect(targetPort, targetHost);
    open.add(client);
    open.add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    client.pipe(upstream);
    // What the target sends: at once, or after the delay, always in order.
    const queue: { readonly due: number; readonly chunk: Buffer | undefined }[] = [];
    let timer: NodeJS.Timeout | undefined;
    const deliver = (): void => {
      timer = undefined;
      const now = performance.now();
      for (let next = queue[0]; next !== undefined && next.due <= now; next = queue[0]) {
        queue.shift();
        if (next.chunk === undefined) drop();
        else client.write(next.chunk);
      }
      const first = queue[0];
      if (first !== undefined) timer = setTimeout(deliver, first.due - now);
    };
    const forward = (chunk: Buffer | undefined): void => {
      if (delayMs === 0 && queue.length === 0) {
        if (chunk === undefined) drop();
        else client.write(chunk);
        return;
      }
      queue.push({ due: performance.now() + delayMs, chunk });
      timer ??= setTimeout(deliver, delayMs);
    };
    upstream.on('data', (chunk: Buffer) => {
      forward(chunk);
    });
    // The target's close reaches the client after what was delayed before it.
    upstream.on('close', () => {
      upstreams.delete(upstream);
      forward(undefined);
    });
    upstreams.add(upstream);
    if (held) upstream.pause();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  const cut = (): void => {
    for (const socket of open) socket.resetAndDestroy();
    open.clear();
  };
  return {
    retarget(newHost, newPort) {
      targetHost = newHost;
      targetPort = newPort;
    },
    port: address.port,
    connections: () => accepted,
    cut,
    setBlocked(value) {
      blocked = value;
    },
    setHeld(value) {
      if (value === held) return;
      held = value;
      // A paused upstream's bytes wait in its socket until resumed.
      for (const upstream of upstreams) {
        if (held) upstream.pause();
        else upstream.resume();
      }
    },
    setDelay(ms) {
      delayMs = Math.max(0, ms);
    },
    close() {
      cut();
      return new Promise((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}
