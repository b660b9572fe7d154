import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadUpstreamConfig } from '../../../src/upstream/config.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

function writeKubeconfig(t: { after(fn: () => void): void }, config: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-kubeconfig-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const file = join(dir, 'kubeconfig');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

const CA_PEM = '-----BEGIN CERTIFICATE-----\nnot-parsed-here\n-----END CERTIFICATE-----\n';

function kubeconfig(): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'one', cluster: { server: 'https://127.0.0.1:6443/', 'certificate-authority-data': Buffer.from(CA_PEM).toString('base64') } },
      { name: 'two', cluster: { server: 'https://127.0.0.2:7443/prefix', 'insecure-skip-tls-verify': true } },
    ],
    users: [
      { name: 'u1', user: { token: 'token-one' } },
      { name: 'u2', user: { token: 'token-two' } },
    ],
    contexts: [
      { name: 'first', context: { cluster: 'one', user: 'u1' } },
      { name: 'second', context: { cluster: 'two', user: 'u2' } },
    ],
    'current-context': 'first',
  };
}

test('upstream config: server, CA and bearer token of the current context', async (t) => {
  const config = await loadUpstreamConfig({ kubeconfig: writeKubeconfig(t, kubeconfig()) });
  assert.equal(config.server.href, 'https://127.0.0.1:6443/');
  assert.equal(config.tls.ca?.toString(), CA_PEM);
  assert.equal(config.tls.rejectUnauthorized, true);
  assert.equal(await config.authorization(), 'Bearer token-one');
  assert.match(config.source, /context first/);
});

test('upstream config: --context picks another context; insecure-skip-tls-verify turns verification off', async (t) => {
  const config = await loadUpstreamConfig({ kubeconfig: writeKubeconfig(t, kubeconfig()), context: 'second' });
  assert.equal(config.server.href, 'https://127.0.0.2:7443/prefix');
  assert.equal(config.tls.rejectUnauthorized, false);
  assert.equal(config.tls.ca, undefined);
  assert.equal(await config.authorization(), 'Bearer token-two');
});

test('upstream config: an unknown context is an error', async (t) => {
  await assert.rejects(loadUpstreamConfig({ kubeconfig: writeKubeconfig(t, kubeconfig()), context: 'nope' }));
});

test('upstream config: in-cluster, the token file is read again after 60 s (client-go’s period), the CA from ca.crt', async (t) => {
  const prefix = mkdtempSync(join(tmpdir(), 'kcp-in-cluster-'));
  t.after(() => {
    rmSync(prefix, { recursive: true, force: true });
  });
  const dir = join(prefix, 'var/run/secrets/kubernetes.io/serviceaccount');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'token'), 'first');
  writeFileSync(join(dir, 'ca.crt'), CA_PEM);
  const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
  process.env.KUBERNETES_SERVICE_HOST = 'fd00::1';
  process.env.KUBERNETES_SERVICE_PORT = '443';
  t.after(() => {
    for (const [name, value] of [
      ['KUBERNETES_SERVICE_HOST', saved.host],
      ['KUBERNETES_SERVICE_PORT', saved.port],
    ] as const) {
      if (value === undefined) Reflect.deleteProperty(process.env, name);
      else process.env[name] = value;
    }
  });
  // Two clocks: the proxy's reuse of the header (injected), and client-node's FileAuth's own 60 s (Date).
  const clock = new FakeClock();
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const config = await loadUpstreamConfig({ inClusterPathPrefix: prefix, clock });
  assert.equal(config.server.href, 'https://[fd00::1]/');
  assert.equal(config.tls.ca?.toString(), CA_PEM);
  assert.equal(await config.authorization(), 'Bearer first');
  writeFileSync(join(dir, 'token'), 'second');
  clock.step(30_000);
  t.mock.timers.tick(30_000);
  assert.equal(await config.authorization(), 'Bearer first', 'within the period: the token read before');
  clock.step(31_000);
  t.mock.timers.tick(31_000);
  assert.equal(await config.authorization(), 'Bearer second', 'past it: read again');
});
