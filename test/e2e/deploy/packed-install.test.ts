/**
 * The image's steps, reproduced in a temporary directory (there is no Docker engine here): what
 * `npm pack` packs (package.json "files"), unpacked, plus package-lock.json, then
 * `npm ci --omit=dev`, then the Dockerfile's own ENTRYPOINT and CMD started from there against
 * the real apiserver. A runtime dependency declared as a dev one, or a file "files" leaves out,
 * fails here as it would fail in the image.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { useSharedAdmin, testNamespace } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { mustRun, npmEnv } from './run.ts';
import { imageCommand, imageEnv } from '../../helpers/image.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const shared = useSharedAdmin();

test(
  'packed install: npm pack, npm ci --omit=dev, then the image command serves /readyz and lists through the cache',
  { timeout: 300_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'kcp-packed-'));
    t.after(() => {
      rmSync(dir, { recursive: true, force: true });
    });
    const env = npmEnv();

    await mustRun('npm', ['pack', '--pack-destination', dir, '--silent'], { cwd: ROOT, env });
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball !== undefined, 'npm pack made a tarball');
    const app = join(dir, 'app');
    mkdirSync(app);
    await mustRun('tar', ['-xzf', join(dir, tarball), '--strip-components=1', '-C', app]);
    assert.ok(!existsSync(join(app, 'test')), 'tests are not packed');
    assert.ok(existsSync(join(app, 'dist', 'cli', 'main.js')), 'the compiled JavaScript is packed (prepack: scripts/build.mjs)');
    assert.ok(existsSync(join(app, 'dist', 'status', 'page.html')), 'with the files the sources read beside them');
    assert.ok(!existsSync(join(app, 'src')), 'the TypeScript sources are not: the image runs JavaScript');
    copyFileSync(join(ROOT, 'package-lock.json'), join(app, 'package-lock.json'));
    await mustRun('npm', ['ci', '--omit=dev', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: app,
      env,
      timeoutMs: 240_000,
    });
    for (const dev of ['typescript', 'eslint', 'node', 'dockerfile-utils']) {
      assert.ok(!existsSync(join(app, 'node_modules', dev)), `dev dependency ${dev} is not installed`);
    }

    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'packed' },
      data: { a: 'b' },
    });

    const [node, ...args] = imageCommand();
    assert.equal(node, 'node');
    const child = spawn(process.execPath, [...args, '--kubeconfig', shared.cp.kubeconfig, '--port', '0', '--log-level', 'info'], {
      cwd: app,
      env: { ...process.env, ...imageEnv() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    t.after(() => child.kill('SIGKILL'));

    await eventually('the serving line', () => /Starting to serve on \S+/.test(output) || child.exitCode !== null, 60_000);
    const address = /Starting to serve on (127\.0\.0\.1:\d+)/.exec(output)?.[1];
    assert.ok(address !== undefined, output);
    const base = `http://${address}`;

    const ready = await request(`${base}/readyz`);
    assert.equal(ready.statusCode, 200);
    assert.equal(await ready.body.text(), 'ok');
    const live = await request(`${base}/livez`);
    assert.equal(live.statusCode, 200);
    await live.body.dump();

    const path = `/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`;
    await eventually('the configmaps list to be served from the cache', async () => {
      const res = await request(`${base}${path}`);
      const list = (await res.body.json()) as { kind: string; items: { metadata: { name: string } }[] };
      assert.equal(res.statusCode, 200);
      assert.equal(list.kind, 'ConfigMapList');
      assert.deepEqual(
        list.items.map((i) => i.metadata.name),
        ['packed'],
      );
      const metrics = await (await request(`${base}/metrics`)).body.text();
      return /kube_cache_proxy_requests_total\{[^}]*resource="configmaps"[^}]*served_from="cache"[^}]*\} [1-9]/.test(metrics);
    });

    child.kill('SIGTERM');
    assert.equal(await exited, 0, output);

    // The example controller as deploy/example-controller runs it from the image: the shipped
    // examples/ importing the library by its package name, resolved to the compiled dist/.
    const example = spawn(process.execPath, ['examples/pod-counter/main.ts'], {
      cwd: app,
      env: { ...process.env, NODE_ENV: 'production', KUBECONFIG: shared.cp.kubeconfig, POD_NAMESPACE: ns, POD_NAME: 'packed' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let exampleOutput = '';
    example.stdout.on('data', (chunk: Buffer) => (exampleOutput += chunk.toString()));
    example.stderr.on('data', (chunk: Buffer) => (exampleOutput += chunk.toString()));
    const exampleExited = new Promise<number | null>((resolve) => example.on('exit', resolve));
    t.after(() => example.kill('SIGKILL'));
    await eventually(
      'the example to write its ConfigMap',
      () => /"msg":"reconciled".*"action":"created"/.test(exampleOutput) || example.exitCode !== null,
      60_000,
    );
    example.kill('SIGTERM');
    assert.equal(await exampleExited, 0, exampleOutput);
    const counts = await kube<{ data: Record<string, string> }>(shared.admin, 'GET', `/api/v1/namespaces/${ns}/configmaps/pod-counts`);
    assert.equal(counts.data.total, '0');
  },
);
