import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { SERVICE_ACCOUNT_ROOT, locateKubeconfig, needsClientNode, readKubeconfig } from '../../../src/upstream/kubeconfig.ts';
import type { User } from '@kubernetes/client-node';

const run = promisify(execFile);

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-kubeconfig-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

function kubeconfig(user: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443', 'certificate-authority': 'ca.crt' } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });
}

test('kubeconfig: found where client-node looks (--kubeconfig, the in-cluster prefix, $KUBECONFIG, ~/.kube/config)', (t) => {
  const home = tempDir(t);
  assert.deepEqual(locateKubeconfig({ kubeconfig: '/k', inClusterPathPrefix: '/p', env: { KUBECONFIG: '/e' } }), {
    kind: 'file',
    path: '/k',
    source: '/k',
  });
  assert.equal(locateKubeconfig({ inClusterPathPrefix: '/p', env: { KUBECONFIG: '/e' } }).kind, 'in-cluster');
  assert.deepEqual(locateKubeconfig({ env: { KUBECONFIG: `${delimiter}/e${delimiter}` } }), {
    kind: 'file',
    path: '/e',
    source: 'default kubeconfig',
  });
  assert.equal(locateKubeconfig({ env: { KUBECONFIG: `/a${delimiter}/b` } }).kind, 'merged');
  assert.equal(locateKubeconfig({ env: { HOME: home } }).kind, existsSync(`${SERVICE_ACCOUNT_ROOT}/token`) ? 'in-cluster' : 'none');
  mkdirSync(join(home, '.kube'));
  writeFileSync(join(home, '.kube', 'config'), kubeconfig({ token: 't' }));
  assert.deepEqual(locateKubeconfig({ env: { HOME: home } }), {
    kind: 'file',
    path: join(home, '.kube', 'config'),
    source: 'default kubeconfig',
  });
  assert.equal(locateKubeconfig({ env: { HOME: home }, platform: 'win32' }).kind, 'windows');
});

test('kubeconfig: relative files are made absolute against the kubeconfig directory, as loadFromFile does', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'config');
  writeFileSync(file, kubeconfig({ 'client-certificate': 'c.crt', 'client-key': '/abs/c.key' }));
  const config = await readKubeconfig({ kind: 'file', path: file, source: file });
  assert.ok(config !== undefined);
  const [cluster] = config.clusters;
  const [user] = config.users;
  assert.equal(cluster?.caFile, join(dir, 'ca.crt'));
  assert.equal(user?.certFile, join(dir, 'c.crt'));
  assert.equal(user.keyFile, '/abs/c.key');
});

test('kubeconfig: only plugins need client-node (exec, auth providers other than a token file)', () => {
  const user = (fields: Partial<User>): User => ({ name: 'u', ...fields });
  assert.equal(needsClientNode(undefined), false);
  assert.equal(needsClientNode(user({ token: 't' })), false);
  assert.equal(needsClientNode(user({ certData: 'x', keyData: 'y' })), false);
  assert.equal(needsClientNode(user({ authProvider: { name: 'tokenFile', config: { tokenFile: '/t' } } })), false);
  assert.equal(needsClientNode(user({ exec: { command: 'aws' } })), true);
  assert.equal(needsClientNode(user({ authProvider: { name: 'oidc', config: { 'id-token': 'x' } } })), true);
  assert.equal(needsClientNode(user({ authProvider: { name: 'gcp', config: { tokenFile: '/t' } } })), true);
  assert.equal(needsClientNode(user({ authProvider: { name: 'tokenFile', config: { tokenFile: '/t', exec: 'x' } } })), true);
});

/**
 * Loads the upstream config of `file` in a fresh Node process that records every module it
 * loads; returns the Authorization header and whether client-node's KubeConfig module and its
 * generated API client were among them.
 */
async function loadInChild(file: string): Promise<{ authorization: string; kubeConfigLoaded: boolean; generatedLoaded: boolean }> {
  writeFileSync(join(dirname(file), 'ca.crt'), 'a CA, read as bytes only');
  const config = new URL('../../../src/upstream/config.ts', import.meta.url).href;
  const script = `
    import { registerHooks } from 'node:module';
    const loaded = [];
    registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
    const { loadUpstreamConfig } = await import(${JSON.stringify(config)});
    const upstream = await loadUpstreamConfig({ kubeconfig: ${JSON.stringify(file)} });
    console.log(JSON.stringify({
      authorization: await upstream.authorization(),
      kubeConfigLoaded: loaded.some((u) => u.endsWith('/@kubernetes/client-node/dist/config.js')),
      generatedLoaded: loaded.some((u) => u.includes('/@kubernetes/client-node/dist/gen/')),
    }));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script]);
  return JSON.parse(stdout) as { authorization: string; kubeConfigLoaded: boolean; generatedLoaded: boolean };
}

test('kubeconfig: a token user is read without loading client-node’s KubeConfig or its API client', async (t) => {
  const file = join(tempDir(t), 'config');
  writeFileSync(file, kubeconfig({ token: 'plain-token' }));
  assert.deepEqual(await loadInChild(file), { authorization: 'Bearer plain-token', kubeConfigLoaded: false, generatedLoaded: false });
});

test('kubeconfig: an exec plugin loads client-node’s KubeConfig, which runs it', async (t) => {
  const file = join(tempDir(t), 'config');
  const credential = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'exec-token' } };
  writeFileSync(
    file,
    kubeconfig({
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: process.execPath,
        args: ['-e', `console.log(${JSON.stringify(JSON.stringify(credential))})`],
        interactiveMode: 'Never',
      },
    }),
  );
  assert.deepEqual(await loadInChild(file), { authorization: 'Bearer exec-token', kubeConfigLoaded: true, generatedLoaded: true });
});
