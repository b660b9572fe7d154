/**
 * The proxy's HTTP server (Fastify). Requests are never parsed into objects here: bodies stream
 * through untouched, and what the cache answers is built from stored bytes.
 *
 * For now every request is passed through to the apiserver; cached GET/LIST/WATCH routes are
 * added in front of the pass-through as they land.
 */
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import type { UpstreamClient } from '../upstream/client.ts';
import { passThrough } from './pass-through.ts';

export interface ProxyServerOptions {
  readonly client: UpstreamClient;
  /** Fastify's logger option (pino): false to log nothing. */
  readonly logger?: boolean | { level: string };
}

export function newProxyServer(options: ProxyServerOptions): FastifyInstance {
  const app = Fastify({
    logger: options.logger ?? false,
    // Kubernetes paths can be long (e.g. OpenAPI v3 hashes, long names): no router length limit.
    maxParamLength: 8192,
    // Keep-alive sockets of watch clients must not hold shutdown forever.
    forceCloseConnections: 'idle',
  });
  // Leave every body as the raw stream: the pass-through forwards it byte for byte.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => {
    done(null);
  });
  app.all('/*', (request, reply) => {
    reply.hijack();
    return passThrough(options.client, request.raw, reply.raw);
  });
  app.all('/', (request, reply) => {
    reply.hijack();
    return passThrough(options.client, request.raw, reply.raw);
  });
  return app;
}
