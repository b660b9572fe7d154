import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { SIDECAR_PLACEHOLDER_TOKEN, appKubeconfig, writeFileAtomically } from '../../../src/proxy/app-kubeconfig.ts';
import { LOOPBACK_NAMES, generateServingCertificate } from '../../../src/server/tls/serving-certificate.ts';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-kubeconfig-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

test('app kubeconfig: client-node reads the server, the CA and a context, with TLS verification on', async () => {
  const { ca } = generateServingCertificate(LOOPBACK_NAMES);
  const kc = new KubeConfig();
  kc.loadFromString(appKubeconfig({ server: 'https://127.0.0.1:8001', ca, namespace: 'team-a' }));
  assert.equal(kc.getCurrentContext(), 'kube-cache-proxy');
  const cluster = kc.getCurrentCluster();
  assert.equal(cluster?.server, 'https://127.0.0.1:8001');
  assert.equal(Buffer.from(cluster.caData ?? '', 'base64').toString(), ca);
  assert.notEqual(cluster.skipTLSVerify, true);
  assert.equal(kc.getContextObject('kube-cache-proxy')?.namespace, 'team-a');
  // What client-node hands its HTTPS agent: the CA, verification on, the placeholder token only.
  const options: { ca?: unknown; rejectUnauthorized?: boolean; headers?: Record<string, string> } = {};
  await kc.applyToHTTPSOptions(options);
  assert.equal(String(options.ca), ca);
  assert.notEqual(options.rejectUnauthorized, false);
  assert.equal(options.headers?.Authorization, `Bearer ${SIDECAR_PLACEHOLDER_TOKEN}`);
  // No namespace: the context has none (the client's own default applies).
  const plain = new KubeConfig();
  plain.loadFromString(appKubeconfig({ server: 'https://[::1]:9443', ca }));
  assert.equal(plain.getContextObject('kube-cache-proxy')?.namespace, undefined);
  assert.equal(plain.getCurrentCluster()?.server, 'https://[::1]:9443');
});

test('app kubeconfig: written atomically, replacing the old file, readable by all whatever the umask', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'kubeconfig');
  writeFileSync(path, 'old', { mode: 0o600 });
  const umask = process.umask(0o077);
  try {
    writeFileAtomically(path, 'new');
  } finally {
    process.umask(umask);
  }
  assert.equal(readFileSync(path, 'utf8'), 'new');
  assert.equal(statSync(path).mode & 0o777, 0o644);
  assert.deepEqual(readdirSync(dir), ['kubeconfig'], 'no temporary file left');
  assert.throws(() => {
    writeFileAtomically(join(dir, 'missing', 'kubeconfig'), 'x');
  }, /ENOENT/);
  assert.deepEqual(readdirSync(dir), ['kubeconfig']);
});
