/**
 * The proxy's HTTPS as an operator runs it: the certificate and key files replaced on disk (a
 * cert-manager renewal) are served to new connections within a minute while a watch opened
 * before keeps its events; and the apiserver's --tls-min-version and --tls-cipher-suites.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { connect } from 'node:tls';
import type { ConnectionOptions } from 'node:tls';
import { Agent, request } from 'undici';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { startProxy } from '../../../src/proxy/proxy.ts';
import type { RunningProxy } from '../../../src/proxy/proxy.ts';
import { LOOPBACK_NAMES, generateServingCertificate } from '../../../src/server/tls/serving-certificate.ts';
import type { ServingCertificate } from '../../../src/server/tls/serving-certificate.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';

/** A watch whose lines are collected as they come. */
async function watchLines(url: string, dispatcher: Agent): Promise<{ lines(): string[]; ended(): boolean; close(): void }> {
  const controller = new AbortController();
  const res = await request(url, { dispatcher, signal: controller.signal });
  assert.equal(res.statusCode, 200);
  const lines: string[] = [];
  let ended = false;
  let pending = '';
  res.body.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    lines.push(...parts);
  });
  res.body.on('end', () => (ended = true));
  res.body.on('error', () => (ended = true));
  return {
    lines: () => lines,
    ended: () => ended,
    close: () => {
      controller.abort();
    },
  };
}

const shared = useSharedAdmin();

interface Served {
  readonly dir: string;
  readonly certFile: string;
  readonly keyFile: string;
}

/** Files as a Secret volume holds them, written anew the way it updates them (a rename). */
function writeServing(served: Served, pair: ServingCertificate): void {
  for (const [path, text] of [
    [served.certFile, `${pair.cert}${pair.ca}`],
    [served.keyFile, pair.key],
  ] as const) {
    writeFileSync(`${path}.new`, text);
    renameSync(`${path}.new`, path);
  }
}

async function startTlsProxy(t: TestContext, first: ServingCertificate, ...flags: string[]): Promise<RunningProxy & { url: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-serving-tls-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const served = { dir, certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
  writeServing(served, first);
  const options = parseProxyOptions([
    '--port',
    '0',
    '--resources',
    'configmaps',
    '--log-level',
    'warn',
    '--tls-cert-file',
    served.certFile,
    '--tls-private-key-file',
    served.keyFile,
    ...flags,
  ]);
  const proxy = await startProxy(options, await upstreamConfigFor(shared.cp));
  t.after(() => proxy.stop(1_000));
  const url = proxy.url;
  assert.ok(url !== undefined);
  return Object.assign(proxy, { url, files: served });
}

/** The certificate a new connection is served, and the protocol and cipher it agreed on. */
function handshake(
  url: string,
  options: ConnectionOptions = {},
): Promise<{ fingerprint: string; protocol: string; cipher: string } | Error> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port), servername: 'localhost', rejectUnauthorized: false, ...options }, () => {
      const peer = socket.getPeerX509Certificate();
      resolve({ fingerprint: peer?.fingerprint256 ?? '', protocol: socket.getProtocol() ?? '', cipher: socket.getCipher().standardName });
      socket.end();
    });
    socket.on('error', resolve);
  });
}

test(
  'certificate rotation: new files are served to new connections within a minute; a watch opened before goes on with its events',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const first = generateServingCertificate(LOOPBACK_NAMES);
    const proxy = await startTlsProxy(t, first);
    const { url } = proxy;
    const firstTrust = new Agent({ connect: { ca: first.ca } });
    t.after(() => firstTrust.close());
    await eventually('the cache to sync', async () => (await request(`${url}/readyz`, { dispatcher: firstTrust })).statusCode === 200);

    // A watch over the first certificate's connection.
    const watch = await watchLines(`${url}/api/v1/namespaces/${ns}/configmaps?watch=true`, firstTrust);
    t.after(() => {
      watch.close();
    });
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'before' } });
    await eventually('the event before the rotation', () => watch.lines().some((l) => l.includes('"name":"before"')));

    const second = generateServingCertificate(LOOPBACK_NAMES);
    const files = (proxy as unknown as { files: Served }).files;
    const renewedAt = Date.now();
    writeServing(files, second);
    const expected = new X509Certificate(second.cert).fingerprint256;
    await eventually(
      'new connections to be served the new certificate',
      async () => {
        const served = await handshake(url);
        return !(served instanceof Error) && served.fingerprint === expected;
      },
      60_000,
    );
    const tookMs = Date.now() - renewedAt;
    assert.ok(tookMs < 60_000, `served within a minute (${String(tookMs)} ms)`);
    t.diagnostic(`the renewed certificate served ${(tookMs / 1000).toFixed(1)} s after its files were replaced`);
    // Clients that trust the new CA read; the old watch's connection is the one it began with.
    const secondTrust = new Agent({ connect: { ca: second.ca } });
    t.after(() => secondTrust.close());
    const read = await request(`${url}/api/v1/namespaces/${ns}/configmaps`, { dispatcher: secondTrust });
    assert.equal(read.statusCode, 200);
    await read.body.dump();

    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'after' } });
    await eventually('the event after the rotation, on the watch opened before it', () =>
      watch.lines().some((l) => l.includes('"name":"after"')),
    );
    assert.equal(watch.ended(), false, 'the watch is still open');
  },
);

test('--tls-min-version VersionTLS13 refuses a TLS 1.2 client; --tls-cipher-suites serves the suite named and refuses a client offering only others', async (t) => {
  const pair = generateServingCertificate(LOOPBACK_NAMES);
  const tls13 = await startTlsProxy(t, pair, '--tls-min-version', 'VersionTLS13');
  assert.ok((await handshake(tls13.url, { maxVersion: 'TLSv1.2' })) instanceof Error, 'a TLS 1.2 client is refused');
  const ok13 = await handshake(tls13.url);
  assert.ok(!(ok13 instanceof Error) && ok13.protocol === 'TLSv1.3');

  const suites = await startTlsProxy(
    t,
    pair,
    '--tls-cipher-suites',
    'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305',
  );
  const agreed = await handshake(suites.url, { maxVersion: 'TLSv1.2' });
  assert.ok(!(agreed instanceof Error), agreed instanceof Error ? agreed.message : '');
  assert.equal(agreed.cipher, 'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384');
  const refused = await handshake(suites.url, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' });
  assert.ok(refused instanceof Error, 'no suite in common');
  // TLS 1.3 is on whatever the list, as in Go.
  const ok = await handshake(suites.url);
  assert.ok(!(ok instanceof Error) && ok.protocol === 'TLSv1.3');
});
