/**
 * `kube-cache-proxy proxy` as a sidecar runs it: a child process that prints where it serves,
 * answers through the apiserver, and exits 0 on SIGTERM.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { spawnCli } from '../../helpers/cli.ts';
import { eventually } from '../../helpers/eventually.ts';
import { testControlPlane } from '../../helpers/control-plane.ts';

test(
  'proxy: serves the --kubeconfig cluster on --port 0; SIGTERM closes a watch after the grace period and exits 0',
  { timeout: 60_000 },
  async (t) => {
    const cp = await testControlPlane();
    const cli = spawnCli(['proxy', '--kubeconfig', cp.kubeconfig, '--port', '0', '--log-level', 'warn']);
    const { child, exited } = cli;
    t.after(() => child.kill('SIGKILL'));

    await eventually('the serving line', () => /Starting to serve on \S+/.test(cli.output()), 30_000);
    const address = /Starting to serve on (127\.0\.0\.1:\d+)/.exec(cli.output())?.[1];
    assert.ok(address !== undefined, cli.output());

    const res = await request(`http://${address}/api/v1/namespaces/default`);
    assert.equal(res.statusCode, 200);
    assert.equal(((await res.body.json()) as { metadata: { name: string } }).metadata.name, 'default');

    // A watch never ends on its own: shutdown closes it after the grace period (SHUTDOWN_GRACE_MS).
    const watch = await request(`http://${address}/api/v1/namespaces?watch=1`);
    assert.equal(watch.statusCode, 200);
    const watchEnded = watch.body.dump().then(
      () => 'ended',
      () => 'closed',
    );
    child.kill('SIGTERM');
    assert.equal(await exited, 0, cli.output());
    assert.ok(['ended', 'closed'].includes(await watchEnded));
  },
);

test('proxy: a bad flag is a one-line error and exit 1', { timeout: 30_000 }, async () => {
  const cli = spawnCli(['proxy', '--port', '99999']);
  assert.equal(await cli.exited, 1);
  assert.match(cli.output(), /--port "99999": the port must be a number from 0 to 65535/);
});

test('proxy: --resources caches built-in types resolved by discovery, skips the rest with a reason', { timeout: 60_000 }, async () => {
  const cp = await testControlPlane();
  const cli = spawnCli([
    'proxy',
    '--kubeconfig',
    cp.kubeconfig,
    '--port',
    '0',
    '--log-level',
    'debug',
    '--resources',
    'configmaps,leases.coordination.k8s.io,nosuchthings,selfsubjectreviews.authentication.k8s.io',
  ]);
  const { child, exited } = cli;
  try {
    await eventually('the caches to sync', () => cli.output().includes('caches synced'), 30_000);
    assert.match(cli.output(), /"resources":\["configmaps","leases.coordination.k8s.io"\]/);
    assert.match(cli.output(), /"resource":"nosuchthings".*not cached: the apiserver does not serve it/);
    assert.match(cli.output(), /"resource":"selfsubjectreviews.authentication.k8s.io".*not cached: it cannot be listed and watched/);
    const address = /Starting to serve on (127\.0\.0\.1:\d+)/.exec(cli.output())?.[1];
    assert.ok(address !== undefined, cli.output());

    const res = await request(`http://${address}/api/v1/namespaces/kube-system/configmaps?resourceVersion=0`);
    assert.equal(res.statusCode, 200);
    assert.equal(((await res.body.json()) as { kind: string }).kind, 'ConfigMapList');
    await eventually('the request log', () => /"servedFrom":"cache"/.test(cli.output()));
  } finally {
    child.kill('SIGTERM');
    assert.equal(await exited, 0, cli.output());
  }
});

/** Runs the proxy until it serves, sends a few requests, stops it; its whole output. */
async function outputAround(command: string, args: readonly string[], requests: number): Promise<string> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    await eventually('the serving line', () => /Starting to serve on \S+/.test(out), 30_000);
    const address = /Starting to serve on (127\.0\.0\.1:\d+)/.exec(out)?.[1] ?? assert.fail(out);
    for (let i = 0; i < requests; i++) await (await request(`http://${address}/api/v1/namespaces/default`)).body.dump();
    // The requests' debug lines are written when each answer closes; the caches' line when they sync.
    await eventually('the log to settle', () => /caches synced|proxying to the apiserver/.test(out));
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return out;
}

test(
  'proxy: one log line per request only at --log-level debug; JSON lines when not on a terminal, readable lines on one',
  { timeout: 90_000 },
  async () => {
    const cp = await testControlPlane();
    const bin = fileURLToPath(new URL('../../../bin/kube-cache-proxy.mjs', import.meta.url));
    const args = ['proxy', '--kubeconfig', cp.kubeconfig, '--port', '0', '--resources', 'configmaps'];
    const info = await outputAround(process.execPath, [bin, ...args], 5);
    const lines = info.split('\n').filter((l) => l.startsWith('{'));
    assert.ok(lines.length > 0, info);
    assert.ok(
      lines.every((l) => (JSON.parse(l) as { msg?: string }).msg !== 'request'),
      `no request lines at info:\n${info}`,
    );
    assert.ok(!info.includes('incoming request') && !info.includes('request completed'), info);
    const debug = await outputAround(process.execPath, [bin, ...args, '--log-level', 'debug'], 5);
    const requestLines = debug.split('\n').filter((l) => l.startsWith('{') && (JSON.parse(l) as { msg?: string }).msg === 'request');
    assert.ok(requestLines.length >= 5, `one line per request at debug:\n${debug}`);
    assert.ok(
      requestLines.every((l) => !/authorization|bearer/i.test(l)),
      'no credentials',
    );
    // On a terminal (script(1) gives the proxy a pty): readable lines, no JSON.
    const tty = await outputAround('script', ['-qec', [process.execPath, bin, ...args].map((a) => `'${a}'`).join(' '), '/dev/null'], 5);
    assert.match(tty, /INFO.*proxying to the apiserver/, tty);
    assert.ok(!tty.split('\n').some((l) => l.trimStart().startsWith('{"level"')), `no JSON lines on a terminal:\n${tty}`);
  },
);
