/**
 * A TCP proxy on loopback between a client and the apiserver, for fault injection: cut every
 * open connection mid-stream, or refuse new ones for a while. It sees only TLS bytes.
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
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let accepted = 0;
  let blocked = false;
  let held = false;
  /** Each open connection's upstream side and the client it is piped to. */
  const links = new Map<Socket, Socket>();
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
    upstream.on('close', drop);
    client.pipe(upstream);
    links.set(upstream, client);
    upstream.on('close', () => links.delete(upstream));
    if (!held) upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  const cut = (): void => {
    for (const socket of open) socket.resetAndDestroy();
    open.clear();
  };
  return {
    port: address.port,
    connections: () => accepted,
    cut,
    setBlocked(value) {
      blocked = value;
    },
    setHeld(value) {
      if (value === held) return;
      held = value;
      // unpipe leaves the upstream paused: its bytes wait in the socket until piped again.
      for (const [upstream, client] of links) {
        if (held) upstream.unpipe(client);
        else upstream.pipe(client);
      }
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
