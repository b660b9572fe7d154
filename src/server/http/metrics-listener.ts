/**
 * `--metrics-bind-address` (kube-proxy's and controller-runtime's flag): a second listener, in
 * plain HTTP, that serves the proxy's `/metrics`, `/livez`, `/readyz` and `/healthz` (and
 * `/<endpoint>/<check>`) and nothing else, never the API. A sidecar's API listener stays on
 * loopback, where only its pod reaches it; this one lets Prometheus scrape the sidecar and the
 * kubelet probe it with `httpGet`. Like kube-proxy's metrics port it asks for no credentials:
 * what it shows is the proxy's own counters and its caches' states, never an object; keep it
 * from other tenants' pods with a NetworkPolicy (deploy/).
 *
 * Anything else gets Go's `http.NotFound` (404 `404 page not found`); a method other than GET
 * or HEAD, 405. At most MAX_CONNECTIONS connections at once: scrapers and probes need a few.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { HealthCheck } from './health.ts';
import { healthAnswer } from './health.ts';

/** Where the listener binds: a host (undefined: every interface, as Go's `:PORT`) and a port (0: a free one). */
export interface BindAddress {
  readonly host: string | undefined;
  readonly port: number;
}

export interface MetricsListener {
  /** `HOST:PORT` it serves on. */
  readonly address: string;
  /** Stops accepting and closes its connections. */
  close(): Promise<void>;
}

/** Connections at once: a scraper or two and the kubelet's probes, which open one each. */
export const MAX_CONNECTIONS = 64;

const PLAIN = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' } as const;

export async function listenMetrics(
  bind: BindAddress,
  registry: Registry,
  healthChecks: (endpoint: string) => readonly HealthCheck[],
  onError: (error: unknown) => void,
): Promise<MetricsListener> {
  const answer = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...PLAIN, allow: 'GET, HEAD' }).end('Method Not Allowed\n');
      return;
    }
    const url = req.url ?? '/';
    const mark = url.indexOf('?');
    const path = mark < 0 ? url : url.slice(0, mark);
    if (path === '/metrics') {
      const body = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    const health = healthAnswer(healthChecks, path, mark < 0 ? '' : url.slice(mark + 1));
    if (health === undefined) {
      res.writeHead(404, PLAIN).end('404 page not found\n');
      return;
    }
    res.writeHead(health.statusCode, health.headers).end(req.method === 'HEAD' ? undefined : health.body);
  };
  const server = createServer((req, res) => {
    answer(req, res).catch((error: unknown) => {
      onError(error);
      if (!res.headersSent) res.writeHead(500, PLAIN);
      res.end();
    });
  });
  server.maxConnections = MAX_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: bind.host, port: bind.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', onError);
  const info = server.address() as AddressInfo;
  return {
    address: info.family === 'IPv6' ? `[${info.address}]:${String(info.port)}` : `${info.address}:${String(info.port)}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
