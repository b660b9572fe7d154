/**
 * client-go v0.37.2 itself, through the proxy: a Go program built from the pinned module
 * (tools/goclient) reads as in-cluster Go clients do, protobuf first (rest.Config ContentType):
 * typed List and Watch, the metadata client, and shared informers (typed and metadata). Every
 * answer it gets is protobuf, it decodes every one, sees every change, and the proxy answers all
 * its reads from the cache.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { CachingProxy } from '../../helpers/caching-proxy.ts';
import { proxyCounter, startCachingProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';
import { CONFIGMAPS, PODS } from '../../helpers/resource-specs.ts';
import { anonymousKubeconfig } from '../../helpers/anonymous-kubeconfig.ts';
import { buildGoClient } from '../../helpers/go-client.ts';

const shared = useSharedAdmin();

interface Report {
  readonly listed: number;
  readonly events: number;
  readonly decodeErrors: number;
  readonly contentTypes: Readonly<Record<string, number>>;
}

/** Runs the client against `proxy` in `mode`; once it says it synced, `changes` writes what it must see. */
async function run(proxy: CachingProxy, ns: string, mode: string, events: number, changes: () => Promise<void>): Promise<Report> {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-goclient-'));
  const kubeconfig = join(dir, 'kubeconfig');
  // Over TLS (test/e2e/http2/), the control plane's CA signed the proxy's certificate.
  writeFileSync(kubeconfig, anonymousKubeconfig(proxy.url, proxy.url.startsWith('https:') ? shared.cp.caFile : undefined));
  const child = spawn(
    await buildGoClient(),
    [`--kubeconfig=${kubeconfig}`, `--namespace=${ns}`, `--mode=${mode}`, `--events=${String(events)}`, '--duration=30s'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const wrote = new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      const before = stderr;
      stderr += chunk.toString();
      if (!before.includes('synced') && stderr.includes('synced')) changes().then(resolve, reject);
    });
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0, `goclient ${mode}: ${stderr}`);
  await wrote;
  return JSON.parse(stdout) as Report;
}

test(
  'client-go typed, metadata and informer clients read through the proxy in protobuf: every answer from the cache, all decoded',
  { timeout: 600_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    for (let i = 0; i < 3; i++)
      await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
        metadata: { name: `cm-${String(i)}` },
        data: { i: String(i) },
      });
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
    });
    const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS, PODS] });
    let n = 0;
    // Three changes of configmaps: a create, an update, a delete.
    const changes = async (): Promise<void> => {
      const name = `made-${String(n++)}`;
      await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name } });
      await kube(shared.admin, 'PATCH', `/api/v1/namespaces/${ns}/configmaps/${name}`, { data: { changed: 'yes' } });
      await kube(shared.admin, 'DELETE', `/api/v1/namespaces/${ns}/configmaps/${name}`);
    };
    for (const mode of ['typed', 'metadata', 'informer']) {
      const before = await proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { served_from: 'apiserver' });
      const report = await run(proxy, ns, mode, 3, changes);
      t.diagnostic(`${mode}: ${JSON.stringify(report)}`);
      assert.equal(report.decodeErrors, 0, `${mode}: no decode error`);
      assert.ok(report.listed >= 3, `${mode}: listed`);
      assert.ok(report.events >= 3, `${mode}: saw the three changes`);
      const kinds = Object.keys(report.contentTypes);
      assert.ok(
        kinds.length > 0 && kinds.every((k) => k.startsWith('application/vnd.kubernetes.protobuf')),
        `${mode}: protobuf answers only: ${kinds.join(', ')}`,
      );
      assert.equal(
        await proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { served_from: 'apiserver' }),
        before,
        `${mode}: nothing passed through`,
      );
    }
  },
);
