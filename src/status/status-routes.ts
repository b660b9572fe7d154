/**
 * The status page at /kube-cache-proxy/ and its JSON at /kube-cache-proxy/status: a path the
 * apiserver never serves (its paths are /api, /apis, /openapi, /version, health and metrics), so
 * the proxy's own answer hides nothing of the cluster. Both are behind the same request filter
 * as the API (the Host and Origin rules): the page shows what the proxy knows of the cluster.
 *
 * The page is one self-contained file (page.html, no asset from the network: the proxy often
 * runs where there is none). Its inline script and style are allowed by hash in its
 * Content-Security-Policy, and nothing else is: no other script, no frame, no form target.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { StatusReporter } from './status-report.ts';

export const STATUS_PAGE_PATH = '/kube-cache-proxy/';
export const STATUS_JSON_PATH = '/kube-cache-proxy/status';

const PAGE = readFileSync(new URL('./page.html', import.meta.url));

/** 'sha256-…' of each inline <tag> block's content, as CSP hashes them. */
function inlineHashes(html: string, tag: 'script' | 'style'): string {
  const hashes: string[] = [];
  for (const match of html.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))) {
    hashes.push(
      `'sha256-${createHash('sha256')
        .update(match[1] ?? '')
        .digest('base64')}'`,
    );
  }
  return hashes.join(' ');
}

const PAGE_TEXT = PAGE.toString('utf8');
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': [
    "default-src 'none'",
    `script-src ${inlineHashes(PAGE_TEXT, 'script')}`,
    `style-src ${inlineHashes(PAGE_TEXT, 'style')}`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export function installStatusRoutes(app: FastifyInstance, reporter: StatusReporter): void {
  app.addHook('onReady', (done) => {
    reporter.start();
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    reporter.stop();
    done();
  });
  app.get(STATUS_PAGE_PATH.slice(0, -1), (_request, reply) => reply.code(301).header('location', STATUS_PAGE_PATH).send());
  app.get(STATUS_PAGE_PATH, (_request, reply) => reply.code(200).headers(PAGE_HEADERS).send(PAGE));
  app.get(STATUS_JSON_PATH, async (_request, reply) =>
    reply
      .code(200)
      .headers({ 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' })
      .send(`${JSON.stringify(await reporter.report(), null, 2)}\n`),
  );
}
