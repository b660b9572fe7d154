/**
 * The dev-cluster command end to end, as a person types it: a real etcd + kube-apiserver, used
 * through the project's own upstream client and the built kubectl, then stopped with no process
 * left behind. Each test starts a control plane of its own (the shared one is not theirs to stop).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readState } from '../../../src/cli/dev-cluster/control-plane.ts';
import { isRunning } from '../../../src/cli/dev-cluster/processes.ts';
import { loadUpstreamConfig } from '../../../src/upstream/config.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { runCli, runCommand } from '../../helpers/cli.ts';
import { eventually } from '../../helpers/eventually.ts';

function tokenOf(tokensCsv: string, user: string): string {
  const line = tokensCsv.split('\n').find((l) => l.split(',')[1] === user);
  assert.ok(line, `${user} is in tokens.csv`);
  return line.split(',')[0] ?? '';
}

test('dev-cluster: up, admin reads its ConfigMap, alice is Forbidden, a second up is refused, down leaves no process', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-dev-cluster-'));
  t.after(async () => {
    await runCli(['dev-cluster', 'down', '--dir', dir]);
  });

  const started = await runCli(['dev-cluster', 'up', '--dir', dir, '--owner-pid', String(process.pid)]);
  assert.equal(started.code, 0, started.stderr);
  assert.match(started.stdout, new RegExp(`export KUBECONFIG=${join(dir, 'kubeconfig')}`));
  const state = readState(dir);
  assert.ok(state, 'state.json is written');
  assert.deepEqual(
    state.processes.map((p) => p.name),
    ['etcd', 'kube-apiserver', 'reaper'],
  );
  for (const p of state.processes) assert.ok(isRunning(p), `${p.name} (pid ${p.pid}) runs`);

  // The project's own code, over HTTPS, verifying the apiserver against the generated CA.
  const adminConfig = await loadUpstreamConfig({ kubeconfig: join(dir, 'kubeconfig') });
  assert.equal(adminConfig.server.origin, state.server);
  const admin = newUpstreamClient(adminConfig);
  const tokens = readFileSync(join(dir, 'tokens.csv'), 'utf8');
  const alice = newUpstreamClient({ ...adminConfig, authorization: () => Promise.resolve(`Bearer ${tokenOf(tokens, 'alice')}`) });
  t.after(async () => {
    await admin.close();
    await alice.close();
  });

  const ns = 'dev-cluster-test';
  const createNs = await admin.request({ method: 'POST', path: '/api/v1/namespaces', body: JSON.stringify({ metadata: { name: ns } }) });
  assert.equal(createNs.statusCode, 201, createNs.body.toString());
  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'greeting', namespace: ns }, data: { hello: 'world' } };
  const create = await admin.request({ method: 'POST', path: `/api/v1/namespaces/${ns}/configmaps`, body: JSON.stringify(configMap) });
  assert.equal(create.statusCode, 201, create.body.toString());

  const read = await admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps/greeting` });
  assert.equal(read.statusCode, 200);
  const got = JSON.parse(read.body.toString()) as { metadata: { name: string; uid: string }; data: Record<string, string> };
  assert.equal(got.metadata.name, 'greeting');
  assert.deepEqual(got.data, { hello: 'world' });

  const forbidden = await alice.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps/greeting` });
  assert.equal(forbidden.statusCode, 403);
  assert.deepEqual(JSON.parse(forbidden.body.toString()), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `configmaps "greeting" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "${ns}"`,
    reason: 'Forbidden',
    details: { name: 'greeting', kind: 'configmaps' },
    code: 403,
  });

  // The built kubectl, with the kubeconfig `up` wrote.
  const kubectl = await runCommand(state.binaries.kubectl, [
    '--kubeconfig',
    join(dir, 'kubeconfig'),
    '--cache-dir',
    join(dir, 'kubectl-cache'),
    'get',
    'configmap',
    'greeting',
    '-n',
    ns,
    '-o',
    'json',
  ]);
  assert.equal(kubectl.code, 0, kubectl.stderr);
  assert.equal((JSON.parse(kubectl.stdout) as { metadata: { uid: string } }).metadata.uid, got.metadata.uid);

  const env = await runCli(['dev-cluster', 'env', '--dir', dir]);
  assert.equal(env.code, 0, env.stderr);
  assert.match(env.stdout, new RegExp(`^export KUBECONFIG=${join(dir, 'kubeconfig')}$`, 'm'));

  const again = await runCli(['dev-cluster', 'up', '--dir', dir]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /already running/);
  assert.doesNotMatch(again.stderr, /\n\s+at /, 'no stack trace');
  assert.deepEqual(readState(dir)?.processes, state.processes, 'the second up started nothing');

  const stopped = await runCli(['dev-cluster', 'down', '--dir', dir]);
  assert.equal(stopped.code, 0, stopped.stderr);
  for (const p of state.processes) assert.ok(!isRunning(p), `${p.name} (pid ${p.pid}) is gone`);
  assert.ok(!existsSync(join(dir, 'state.json')), 'state removed');
  assert.ok(!existsSync(join(dir, 'etcd')), 'etcd data removed');
});

test('dev-cluster: the control plane is stopped when its owner process dies', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-dev-cluster-'));
  const owner = spawn('sleep', ['600'], { stdio: 'ignore' });
  t.after(async () => {
    owner.kill('SIGKILL');
    await runCli(['dev-cluster', 'down', '--dir', dir]);
  });
  assert.ok(owner.pid);

  const started = await runCli(['dev-cluster', 'up', '--dir', dir, '--owner-pid', String(owner.pid)]);
  assert.equal(started.code, 0, started.stderr);
  const state = readState(dir);
  assert.ok(state);
  for (const p of state.processes) assert.ok(isRunning(p), `${p.name} runs`);

  owner.kill('SIGKILL');
  await eventually('every control-plane process to exit', () => !state.processes.some(isRunning));
  await eventually('the state to be removed', () => !existsSync(join(dir, 'state.json')));
});
