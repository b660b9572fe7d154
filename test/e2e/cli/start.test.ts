/**
 * `kube-cache-proxy start` (what `npm start` runs), as a person uses it: with no cluster
 * configured it brings up a control plane, serves the proxy in front of it in the foreground,
 * and Ctrl-C (SIGINT) stops everything it started.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { cacheRoot } from '../../../src/cli/dev-cluster/build.ts';
import { readState } from '../../../src/cli/dev-cluster/control-plane.ts';
import { isRunning } from '../../../src/cli/dev-cluster/processes.ts';
import { loadUpstreamConfig } from '../../../src/upstream/config.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { spawnCli } from '../../helpers/cli.ts';
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
