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
import { parseKlogLine } from '../../helpers/klog.ts';

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
    assert.match(cli.output(), /"caches synced" resources=\["configmaps","leases.coordination.k8s.io"\]/);
    assert.match(cli.output(), /"not cached: the apiserver does not serve it; its reads are passed through" resource="nosuchthings"/);
    assert.match(
      cli.output(),
      /"not cached: it cannot be listed and watched; its reads are passed through" resource="selfsubjectreviews.authentication.k8s.io"/,
    );
    const address = /Starting to serve on (127\.0\.0\.1:\d+)/.exec(cli.output())?.[1];
    assert.ok(address !== undefined, cli.output());

    const res = await request(`http://${address}/api/v1/namespaces/kube-system/configmaps?resourceVersion=0`);
    assert.equal(res.statusCode, 200);
    assert.equal(((await res.body.json()) as { kind: string }).kind, 'ConfigMapList');
    await eventually('the request log', () => / servedFrom="cache"/.test(cli.output()));
  } finally {
    child.kill('SIGTERM');
    assert.equal(await exited, 0, cli.output());
  }
});

/** Runs the proxy until it serves, sends a few requests, stops it; its whole output. */
async function outputAround(command: string, args: readonly string[], requests: number, stdoutOnly?: { text: string }): Promise<string> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
    if (stdoutOnly !== undefined) stdoutOnly.text += c.toString();
  });
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
  "proxy: klog's text lines by default, on a terminal or not; one line per request only at -v 4; --logging-format=json is component-base's JSON",
  { timeout: 90_000 },
  async () => {
    const cp = await testControlPlane();
    const bin = fileURLToPath(new URL('../../../bin/kube-cache-proxy.mjs', import.meta.url));
    const args = ['proxy', '--kubeconfig', cp.kubeconfig, '--port', '0', '--resources', 'configmaps'];
    /** The log's lines: all but the serving lines the command prints itself. */
    const logLines = (output: string): string[] =>
      output.split(/\r?\n/).filter((l) => l.trim() !== '' && !l.startsWith('Starting to serve on') && !l.startsWith('Serving metrics'));

    const stdout = { text: '' };
    const info = await outputAround(process.execPath, [bin, ...args], 5, stdout);
    // The log on stderr, as klog's; stdout has the command's own line only (kubectl proxy's).
    assert.match(stdout.text, /^Starting to serve on 127\.0\.0\.1:\d+\n$/);
    const lines = logLines(info);
    assert.ok(lines.length > 0, info);
    for (const line of lines) assert.ok(parseKlogLine(line) !== undefined, `a klog line: ${line}`);
    assert.match(info, /^I\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ kube-cache-proxy\] "proxying to the apiserver" upstream="/m);
    assert.ok(!lines.some((l) => parseKlogLine(l)?.msg === 'request'), `no request lines at -v 0:\n${info}`);

    const debug = await outputAround(process.execPath, [bin, ...args, '-v', '4'], 5);
    const requestLines = logLines(debug).filter((l) => parseKlogLine(l)?.msg === 'request');
    assert.ok(requestLines.length >= 5, `one line per request at -v 4:\n${debug}`);
    assert.ok(
      requestLines.every((l) => !/authorization|bearer/i.test(l)),
      'no credentials',
    );

    const json = await outputAround(process.execPath, [bin, ...args, '--logging-format=json', '--v=4'], 5);
    const entries = logLines(json).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(entries.length > 0, json);
    for (const entry of entries) {
      assert.equal(typeof entry.ts, 'number', JSON.stringify(entry));
      assert.equal(typeof entry.msg, 'string', JSON.stringify(entry));
      // No pino keys: component-base's are ts, v, msg, err and the entry's own.
      for (const key of ['level', 'time', 'pid', 'hostname']) assert.ok(!(key in entry), `${key} in ${JSON.stringify(entry)}`);
    }
    assert.ok(entries.some((e) => e.msg === 'proxying to the apiserver' && e.v === 0));
    assert.ok(entries.some((e) => e.msg === 'request' && e.v === 4));

    // On a terminal (script(1) gives the proxy a pty): the same klog lines.
    const tty = await outputAround('script', ['-qec', [process.execPath, bin, ...args].map((a) => `'${a}'`).join(' '), '/dev/null'], 5);
    assert.match(tty, /^I\d{4} .* kube-cache-proxy\] "proxying to the apiserver"/m, tty);
  },
);
