/**
 * A suite over HTTP/2 (KCP_TEST_HTTP2=1, test/e2e/http2/): the proxies it starts serve HTTPS with a
 * certificate signed by the control plane's CA, and the test process's undici requests (undici's
 * `request` and Node's `fetch` alike: both read undici's global dispatcher) offer h2 by ALPN and
 * trust that CA, as kubectl and client-go do given it. Each proxy's TLS connections are watched
 * from the server side: the suite's last test fails when it made none, or when any of them
 * settled on HTTP/1.1 (a silent fallback would otherwise pass every comparison).
 */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { connect } from 'node:http2';
import type { Server } from 'node:net';
import { test } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { Agent, setGlobalDispatcher } from 'undici';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';
import { parseProxyOptions } from '../../src/cli/proxy-options.ts';
import { startProxy } from '../../src/proxy/proxy.ts';
import type { RunningProxy } from '../../src/proxy/proxy.ts';
import type { UpstreamConfig } from '../../src/upstream/config.ts';
import type { SignedCertificate } from './certificates.ts';
import { signedCertificate } from './certificates.ts';

/** The suite's proxies serve HTTPS and its clients speak HTTP/2 to them (test/e2e/http2/). */
export const HTTP2_ENV = 'KCP_TEST_HTTP2';

export function overHttp2(): boolean {
  return process.env[HTTP2_ENV] === '1';
}

/** What the proxies of this process negotiated, seen from their side. */
const seen = { protocols: new Map<string, number>(), requests: new Map<string, number>() };

const count = (map: Map<string, number>, key: string): void => {
  map.set(key, (map.get(key) ?? 0) + 1);
};

let serving: SignedCertificate | undefined;
/** The CA the clients trust (the control plane's), once `http2Serving` made the certificate. */
let trustedCa: string | undefined;

/**
 * The serving certificate of every proxy of an h2 suite (127.0.0.1 and localhost, signed by the
 * control plane's CA, made once per test process), and undici's global dispatcher set to offer
 * h2 and trust that CA.
 */
export function http2Serving(cp: ControlPlaneState): SignedCertificate {
  if (serving !== undefined) return serving;
  const files: (() => void)[] = [];
  process.once('exit', () => {
    for (const remove of files) remove();
  });
  serving = signedCertificate({ after: (fn) => files.push(fn) }, cp, { cn: 'kube-cache-proxy', serving: true });
  trustedCa = readFileSync(cp.caFile, 'utf8');
  setGlobalDispatcher(new Agent({ allowH2: true, connect: { ca: trustedCa } }));
  return serving;
}

/** The proxy command's flags that serve `http2Serving`'s certificate; none when the suite is not over h2. */
export function http2ProxyFlags(cp: ControlPlaneState): string[] {
  if (!overHttp2()) return [];
  const { certFile, keyFile } = http2Serving(cp);
  return ['--tls-cert-file', certFile, '--tls-private-key-file', keyFile];
}

/** Records the ALPN protocol of each TLS connection `server` accepts, and the HTTP version of each request. */
export function observeProtocols(server: Server): void {
  server.on('secureConnection', (socket: TLSSocket) => {
    count(seen.protocols, typeof socket.alpnProtocol === 'string' ? socket.alpnProtocol : 'none');
  });
  server.on('request', (req: IncomingMessage) => {
    count(seen.requests, req.httpVersion);
  });
}

const describe = (map: Map<string, number>): string => [...map].map(([k, v]) => `${k}: ${String(v)}`).join(', ') || 'none';

/**
 * The suite's last test, registered after it is imported: its proxies accepted at least one TLS
 * connection, every one negotiated h2, and every request they saw was HTTP/2.0.
 */
export function expectEveryConnectionHttp2(): void {
  test('over HTTP/2: every connection to the proxies negotiated h2 by ALPN, every request was HTTP/2.0', (t) => {
    const connections = `connections by ALPN protocol: ${describe(seen.protocols)}; requests by HTTP version: ${describe(seen.requests)}`;
    assert.ok((seen.protocols.get('h2') ?? 0) > 0, `no h2 connection to a proxy (${connections})`);
    assert.deepEqual([...seen.protocols.keys()], ['h2'], connections);
    assert.deepEqual([...seen.requests.keys()], ['2.0'], connections);
    t.diagnostic(connections);
  });
}

/**
 * The proxy command started with `args` (and, over h2, `http2ProxyFlags`), its connections
 * observed; the caller stops it.
 */
export async function startSuiteProxy(cp: ControlPlaneState, args: readonly string[], upstream: UpstreamConfig): Promise<RunningProxy> {
  const running = await startProxy(parseProxyOptions([...args, ...http2ProxyFlags(cp)]), upstream);
  if (overHttp2()) observeProtocols(running.app.server);
  return running;
}

/** The serving material of a proxy the suite makes itself (newProxyServer): `http2Serving`'s over h2, else none (plain HTTP). */
export function suiteServingTls(cp: ControlPlaneState): SignedCertificate | undefined {
  return overHttp2() ? http2Serving(cp) : undefined;
}

/**
 * Listens on 127.0.0.1 (any port) and returns the base URL: https when the app serves
 * `suiteServingTls` (Fastify names the scheme of its own servers only, not of the Node server it
 * is given), its connections then observed.
 */
export async function listenForSuite(app: FastifyInstance, tls: SignedCertificate | undefined): Promise<string> {
  if (tls !== undefined) observeProtocols(app.server);
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return tls === undefined ? url : url.replace(/^http:/, 'https:');
}

/**
 * kubectl's flags for a sidecar proxy at `url` over HTTPS (`http2Serving`): trust the control
 * plane's CA, and send a token, which the sidecar replaces with its own identity (with no
 * credential at all, kubectl asks its stdin for a basic-auth username over HTTPS). None over HTTP.
 */
export function sidecarKubectlFlags(cp: ControlPlaneState, url: string): string[] {
  return url.startsWith('https:') ? ['--certificate-authority', cp.caFile, '--token', 'replaced-by-the-sidecar'] : [];
}

/** A GET's answer, its body whole. */
export interface WholeAnswer {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** Header blocks node:http2 may send: 2 MiB, past the apiserver's 1 MiB limit (Node's default is 64 KiB). */
const MAX_SEND_HEADER_BLOCK = 2 << 20;

/**
 * A GET over HTTP/2 by node:http2 itself, on a connection of its own, its header fields sent as
 * given: a repeated field as as many fields (undici's h2 client joins them into one) and header
 * blocks past 64 KiB (where undici's, on Node's default, fails the stream). Trusts the CA of
 * `http2Serving`.
 */
export async function http2Get(url: string, headers: Readonly<Record<string, string | readonly string[]>>): Promise<WholeAnswer> {
  const { origin, pathname, search } = new URL(url);
  const session = connect(origin, { ca: trustedCa, maxSendHeaderBlockLength: MAX_SEND_HEADER_BLOCK });
  try {
    return await new Promise<WholeAnswer>((resolve, reject) => {
      session.on('error', reject);
      const stream = session.request({ ':method': 'GET', ':path': `${pathname}${search}`, ...headers });
      const chunks: Buffer[] = [];
      stream.on('response', (head) => {
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const { ':status': status, ...rest } = head;
          resolve({ statusCode: Number(status), headers: rest, body: Buffer.concat(chunks).toString() });
        });
      });
      stream.on('error', reject);
      stream.end();
    });
  } finally {
    session.close();
  }
}
