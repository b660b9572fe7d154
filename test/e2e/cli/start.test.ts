/**
 * `kube-cache-proxy start` (what `npm start` runs), as a person uses it: with no cluster
 * configured it brings up a control plane, serves the proxy in front of it in the foreground,
 * and Ctrl-C (SIGINT) stops everything it started; with one configured, `npm start` on a fresh
 * clone serves it without Go. And the bare command and `--version`.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { request } from 'undici';
import { cacheRoot } from '../../../src/cli/dev-cluster/build.ts';
import { ETCD_VERSION, KUBERNETES_VERSION } from '../../../src/cli/dev-cluster/versions.ts';
import { readState } from '../../../src/cli/dev-cluster/control-plane.ts';
import { isRunning } from '../../../src/cli/dev-cluster/processes.ts';
import { loadUpstreamConfig } from '../../../src/upstream/config.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { runCli, spawnCli } from '../../helpers/cli.ts';
import { testControlPlane } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';

test('start: with no cluster configured, proxies a local control plane until SIGINT, then stops both', { timeout: 120_000 }, async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'kcp-start-'));
  const dir = join(root, 'dev-cluster');
  // No cluster configured: an empty HOME (no ~/.kube/config), no $KUBECONFIG, not in a pod; the
  // binaries' cache stays where it is.
  const env: NodeJS.ProcessEnv = { ...process.env, KCP_DEV_CLUSTER_DIR: dir, KCP_PORT: '0', HOME: root, KCP_CACHE_DIR: cacheRoot() };
  for (const name of ['KUBECONFIG', 'KUBERNETES_SERVICE_HOST', 'KCP_KUBECONFIG', 'KCP_UNIX_SOCKET']) env[name] = '';
  const cli = spawnCli(['start'], env);
  t.after(() => cli.child.kill('SIGKILL'));
  const { child, exited } = cli;

  await eventually('the start banner', () => cli.output().includes('Press Ctrl-C to stop'), 90_000);
  assert.match(cli.output(), new RegExp(`export KUBECONFIG=${join(dir, 'kubeconfig')}`));
  const state = readState(dir);
  assert.ok(state);
  assert.equal(child.exitCode, null, 'still running in the foreground');

  const client = newUpstreamClient(await loadUpstreamConfig({ kubeconfig: join(dir, 'kubeconfig') }));
  const res = await client.request({ method: 'GET', path: '/api/v1/namespaces/default' });
  await client.close();
  assert.equal(res.statusCode, 200);

  const proxy = /Starting to serve on (127\.0\.0\.1:\d+)/.exec(cli.output())?.[1];
  assert.ok(proxy !== undefined, cli.output());
  assert.match(cli.output(), new RegExp(`kubectl --server http://${proxy} get ns`));
  assert.match(cli.output(), new RegExp(`curl http://${proxy}/api/v1/namespaces`));
  const viaProxy = await request(`http://${proxy}/api/v1/namespaces/default`);
  assert.equal(viaProxy.statusCode, 200);
  assert.equal(((await viaProxy.body.json()) as { metadata: { name: string } }).metadata.name, 'default');
  // The status page's address, printed with the kubectl and curl lines, serves the page.
  const page = new RegExp(`Status page .*: (http://${proxy}/kube-cache-proxy/)`).exec(cli.output())?.[1];
  assert.ok(page !== undefined, cli.output());
  const pageRes = await request(page);
  assert.equal(pageRes.statusCode, 200);
  assert.match(await pageRes.body.text(), /<title>kube-cache-proxy status<\/title>/);

  child.kill('SIGINT');
  assert.equal(await exited, 0);
  for (const p of state.processes) assert.ok(!isRunning(p), `${p.name} (pid ${p.pid}) stopped`);
  assert.match(cli.output(), /proxy stopped/);
  assert.match(cli.output(), /stopped etcd, kube-apiserver, reaper/);
});

/** A copy of the checkout as a fresh clone holds it: tracked and new files, not what git ignores. */
function freshCopy(root: string): string {
  const repo = fileURLToPath(new URL('../../../', import.meta.url));
  const copy = join(root, 'clone');
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: repo }).toString().split('\0');
  for (const file of files) {
    // node_modules is no file of the clone (a symlink to it is not ignored by `node_modules/`).
    if (file === '' || file === 'node_modules' || !existsSync(join(repo, file))) continue; // '' or deleted in the working tree
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    cpSync(join(repo, file), join(copy, file));
  }
  // The set-up step's `npm ci` is the registry's business, not this test's: the checkout's own
  // node_modules, linked. Its package-lock.json is made older than what is installed, so the step
  // finds it installed: an `npm ci` through the link would empty the checkout's node_modules.
  const installed = statSync(join(repo, 'node_modules', '.package-lock.json')).mtime;
  const older = new Date(installed.getTime() - 60_000);
  utimesSync(join(copy, 'package-lock.json'), older, older);
  symlinkSync(join(repo, 'node_modules'), join(copy, 'node_modules'));
  return copy;
}

test(
  'npm start on a fresh clone with KUBECONFIG set and no Go on the PATH: serves the cluster in seconds, builds nothing',
  { timeout: 120_000 },
  async (t) => {
    const cp = await testControlPlane();
    const root = mkdtempSync(join(tmpdir(), 'kcp-npm-start-'));
    t.after(() => {
      rmSync(root, { recursive: true, force: true });
    });
    const copy = freshCopy(root);
    const noGo = (process.env.PATH ?? '')
      .split(delimiter)
      .filter((dir) => dir !== '' && !existsSync(join(dir, 'go')))
      .join(delimiter);
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')));
    Object.assign(env, {
      PATH: noGo,
      HOME: root,
      KUBECONFIG: cp.kubeconfig,
      KCP_PORT: '0',
      // An empty binary cache: were the control plane built or started, it would show.
      KCP_CACHE_DIR: join(root, 'cache'),
      KCP_DEV_CLUSTER_DIR: join(root, 'dev-cluster'),
    });
    const child = spawn('npm', ['start'], { cwd: copy, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<void>((resolve) =>
      child.on('exit', () => {
        resolve();
      }),
    );
    const group = child.pid;
    assert.ok(group !== undefined);
    t.after(() => {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // already gone
      }
    });

    await eventually('the start banner', () => output.includes('Press Ctrl-C to stop') || child.exitCode !== null, 60_000);
    assert.match(output, new RegExp(`Proxying the cluster of \\$KUBECONFIG \\(${cp.kubeconfig}\\)`), output);
    const proxy = /Starting to serve on (127\.0\.0\.1:\d+)/.exec(output)?.[1];
    assert.ok(proxy !== undefined, output);
    const res = await request(`http://${proxy}/api/v1/namespaces/default`);
    assert.equal(res.statusCode, 200);
    assert.equal(((await res.body.json()) as { metadata: { name: string } }).metadata.name, 'default');
    assert.doesNotMatch(output, /build|control plane/i, 'nothing built, no control plane started');
    assert.doesNotMatch(output, /npm ci/, 'node_modules found installed');
    assert.equal(existsSync(join(root, 'cache')), false, 'the binary cache untouched');

    process.kill(-group, 'SIGINT');
    await exited;
    assert.match(output, /Starting to serve on/);
  },
);

test('a bare kube-cache-proxy prints its usage and starts nothing; --version names the Kubernetes version it is tested against', async () => {
  const bare = await runCli([], 30_000);
  assert.equal(bare.code, 0, bare.stderr);
  assert.match(bare.stdout, /^Usage: kube-cache-proxy <command>/);
  assert.match(bare.stdout, /^ {2}start /m);
  for (const args of [['--version'], ['version']]) {
    const version = await runCli(args, 30_000);
    assert.equal(version.code, 0, version.stderr);
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
    assert.equal(
      version.stdout,
      `kube-cache-proxy v${pkg.version}\ntested against Kubernetes ${KUBERNETES_VERSION} (kube-apiserver, kubectl; etcd ${ETCD_VERSION})\n`,
    );
  }
});
