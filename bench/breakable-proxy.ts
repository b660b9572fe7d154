/**
 * A plain-HTTP forwarder between one informer process and the apiserver, which the bench can
 * break: `reset()` resets (TCP RST) every connection it holds, as a restarted load balancer or
 * apiserver would; `down()` then resets every connection as it arrives until `up()`. It counts
 * the requests it forwards (LIST, WATCH, WatchList streams) and the connections it refused, so
 * that what an informer sends after a break is counted for that informer alone.
 *
 * The informer talks plain HTTP to it without credentials; it forwards with the bench's own
 * (upstream/client.ts `forward`: the kubeconfig's token and CA), so both informers see the same
 * apiserver through the same path.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { UpstreamClient } from '../src/upstream/client.ts';

/** What one informer sent through its proxy. */
export interface ProxyCounts {
  /** GETs of a collection without watch. */
  readonly lists: number;
  /** GETs with watch=true, WatchList streams (sendInitialEvents=true) among them. */
  readonly watches: number;
  readonly watchLists: number;
  /** Any other request. */
  readonly others: number;
  /** Connections reset on arrival while down. */
  readonly refused: number;
  /** When the first WATCH since the mark arrived (ms after the mark); NaN: none. */
  readonly firstWatchMs: number;
  /** The requests in order: `LIST`, `WATCH rv=…`, `WATCHLIST`, with the time since the mark (ms). */
  readonly log: readonly string[];
}

export interface BreakableProxy {
  /** http://127.0.0.1:port */
  readonly url: string;
  /** Starts counting afresh. */
  mark(): void;
  counts(): ProxyCounts;
  /** Resets every connection held (the informer's side with RST; the apiserver's side aborted). */
  reset(): void;
  /**
   * Answers the next WATCH from a resourceVersion as the apiserver answers one from a
   * resourceVersion it no longer has (compacted, or older than its watch cache's window): an
   * ERROR event of 410 Expired, then the end of the stream.
   */
  expireNextWatch(): void;
  /** reset(), then every new connection is reset as it arrives, until up(). */
  down(): void;
  up(): void;
  close(): Promise<void>;
}

/** Hop-by-hop headers (RFC 9110 7.6.1) and the client's credentials: not forwarded. */
const DROPPED = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'proxy-connection',
  'te',
  'trailer',
  'host',
  'authorization',
]);

function forwardable(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !DROPPED.has(name)) out[name] = value;
  return out;
}

/** The apiserver's Status for a watch from a resourceVersion it no longer has (storage/cacher: errors.NewResourceExpired). */
function expired(rv: string): unknown {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `too old resource version: ${rv}`,
    reason: 'Expired',
    code: 410,
  };
}

export async function startBreakableProxy(client: UpstreamClient): Promise<BreakableProxy> {
  const sockets = new Set<Socket>();
  const inFlight = new Set<AbortController>();
  let isDown = false;
  let expireNext = false;
  let marked = performance.now();
  let counts = { lists: 0, watches: 0, watchLists: 0, others: 0, refused: 0, firstWatchMs: NaN };
  let log: string[] = [];

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const at = String(Math.round(performance.now() - marked));
    const watch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
    if (req.method === 'GET' && watch) {
      counts.watches++;
      if (Number.isNaN(counts.firstWatchMs)) counts.firstWatchMs = performance.now() - marked;
      const rv = url.searchParams.get('resourceVersion') ?? '';
      if (url.searchParams.get('sendInitialEvents') === 'true') {
        counts.watchLists++;
        log.push(`${at} ms WATCHLIST`);
      } else if (expireNext && rv !== '' && rv !== '0') {
        expireNext = false;
        log.push(`${at} ms WATCH rv=${rv} (answered 410 Expired)`);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify({ type: 'ERROR', object: expired(rv) })}\n`);
        return;
      } else {
        log.push(`${at} ms WATCH rv=${rv}`);
      }
    } else if (req.method === 'GET' && /\/pods$/.test(url.pathname)) {
      counts.lists++;
      log.push(`${at} ms LIST rv=${url.searchParams.get('resourceVersion') ?? ''} limit=${url.searchParams.get('limit') ?? ''}`);
    } else {
      counts.others++;
      log.push(`${at} ms ${req.method ?? '?'} ${url.pathname}`);
    }
    const abort = new AbortController();
    inFlight.add(abort);
    res.once('close', () => {
      abort.abort();
      inFlight.delete(abort);
    });
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    client
      .forward({
        method: req.method ?? 'GET',
        path: `${url.pathname}${url.search}`,
        headers: forwardable(req.headers),
        body: hasBody ? req : undefined,
        signal: abort.signal,
      })
      .then((upstream) => {
        const headers: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(upstream.headers)) if (value !== undefined && !DROPPED.has(name)) headers[name] = value;
        res.writeHead(upstream.statusCode, headers);
        // A watch's headers go now, as the apiserver sends them, not with its first event.
        res.flushHeaders();
        upstream.body.on('error', () => res.destroy());
        upstream.body.pipe(res);
      })
      .catch(() => {
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      });
  });
  server.on('connection', (socket: Socket) => {
    if (isDown) {
      counts.refused++;
      socket.resetAndDestroy();
      return;
    }
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const reset = (): void => {
    for (const socket of sockets) socket.resetAndDestroy();
    sockets.clear();
    for (const abort of inFlight) abort.abort();
    inFlight.clear();
  };
  return {
    url: `http://127.0.0.1:${String(port)}`,
    mark() {
      marked = performance.now();
      counts = { lists: 0, watches: 0, watchLists: 0, others: 0, refused: 0, firstWatchMs: NaN };
      log = [];
    },
    counts: () => ({ ...counts, log: [...log] }),
    reset,
    expireNextWatch() {
      expireNext = true;
    },
    down() {
      isDown = true;
      reset();
    },
    up() {
      isDown = false;
    },
    async close() {
      reset();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}
