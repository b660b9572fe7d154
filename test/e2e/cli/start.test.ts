/**
 * `kube-cache-proxy start` (what `npm start` runs), as a person uses it: it stays in the
 * foreground with a working control plane, and Ctrl-C (SIGINT) stops everything it started.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { readState } from '../../../src/cli/dev-cluster/control-plane.ts';
import { isRunning } from '../../../src/cli/dev-cluster/processes.ts';
import { loadUpstreamConfig } from '../../../src/upstream/config.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { eventually } from '../../helpers/eventually.ts';

const BIN = fileURLToPath(new URL('../../../bin/kube-cache-proxy.mjs', import.meta.url));

test('start: runs the local control plane in the foreground until SIGINT, then stops it', { timeout: 120_000 }, async (t) => {
  const dir = join(mkdtempSync(join(tmpdir(), 'kcp-start-')), 'dev-cluster');
  const child = spawn(process.execPath, [BIN, 'start'], {
    env: { ...process.env, KCP_DEV_CLUSTER_DIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));

  await eventually('the start banner', () => output.includes('Press Ctrl-C to stop'), 90_000);
  assert.match(output, new RegExp(`export KUBECONFIG=${join(dir, 'kubeconfig')}`));
  const state = readState(dir);
  assert.ok(state);
  assert.equal(child.exitCode, null, 'still running in the foreground');

  const client = newUpstreamClient(await loadUpstreamConfig({ kubeconfig: join(dir, 'kubeconfig') }));
  const res = await client.request({ method: 'GET', path: '/api/v1/namespaces/default' });
  await client.close();
  assert.equal(res.statusCode, 200);

  child.kill('SIGINT');
  assert.equal(await exited, 0);
  for (const p of state.processes) assert.ok(!isRunning(p), `${p.name} (pid ${p.pid}) stopped`);
  assert.match(output, /stopped etcd, kube-apiserver, reaper/);
});
