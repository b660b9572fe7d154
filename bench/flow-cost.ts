/**
 * What one client costs a shared proxy at its per-flow limits (figures, never assertions):
 * `node bench/flow-cost.ts [--dir DIR] [--attempts N] [--concurrent] [-- PROXY_FLAGS...]`.
 *
 * On the control plane of DIR (`dev-cluster up --dir DIR`, default /tmp/kcp-flow-cost, started and
 * stopped here when it has none), a shared proxy over TLS (`proxy --shared`, --resources
 * configmaps, the given flags added, MALLOC_MMAP_THRESHOLD_ as the image sets it) and one
 * ServiceAccount allowed to read configmaps and secrets of its namespace. In turn, that one
 * identity opens N (default 1,000) watches from the cache (configmaps, twice: the first round pays
 * the proxy's first-use growth), N watches passed through (secrets, not cached), and N LISTs the
 * apiserver holds 3 s (a resourceVersion it waits for), each on its own connection: the watches
 * one after another (--concurrent: all at once), the LISTs all at once (read 1.5 s in). Per phase
 * it prints the answers by status and the proxy's RSS (VmRSS) before, with them open, and after
 * they closed.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { readState } from '../src/cli/dev-cluster/control-plane.ts';
import { newUpstreamClient } from '../src/upstream/client.ts';
import { loadUpstreamConfig } from '../src/upstream/config.ts';
import { runCli } from '../test/helpers/cli.ts';
import { grantInNamespace, kube, serviceAccountToken } from '../test/helpers/kube.ts';
import { startSharedProxy } from '../test/helpers/shared-proxy.ts';
import { MALLOC_MMAP_THRESHOLD_BYTES } from '../src/memory/memory-budget.ts';

/** Left alone before each reading, so that what closed is closed. */
const SETTLE_MS = 3_000;

const { values, positionals } = parseArgs({
  options: { dir: { type: 'string' }, attempts: { type: 'string' }, concurrent: { type: 'boolean' }, help: { type: 'boolean' } },
  allowPositionals: true,
});
if (values.help === true) {
  process.stdout.write(
    `${(/\/\*\*([\s\S]*?)\*\//.exec(readFileSync(new URL(import.meta.url), 'utf8'))?.[1] ?? '').replace(/^ \* ?/gm, '')}\n`,
  );
  process.exit(0);
}
const dir = values.dir ?? '/tmp/kcp-flow-cost';
const attempts = Number(values.attempts ?? '1000');
process.env.MALLOC_MMAP_THRESHOLD_ ??= String(MALLOC_MMAP_THRESHOLD_BYTES);

const cleanups: (() => void | Promise<void>)[] = [];
const t = { after: (fn: () => void | Promise<void>): void => void cleanups.push(fn) };
/** Stops what was started here (the proxy, a control plane), once, also when the run fails. */
let cleaned = false;
async function cleanUp(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  for (const fn of cleanups.reverse()) await fn();
}
process.on('uncaughtException', (error) => {
  process.stderr.write(`${String(error)}\n`);
  void cleanUp().finally(() => process.exit(1));
});
process.on('unhandledRejection', (error) => {
  process.stderr.write(`${String(error)}\n`);
  void cleanUp().finally(() => process.exit(1));
});
let cp = readState(dir);
if (cp === undefined) {
  const up = await runCli(['dev-cluster', 'up', '--dir', dir]);
  if (up.code !== 0) throw new Error(`dev-cluster up failed:\n${up.stderr}`);
  cleanups.push(async () => {
    await runCli(['dev-cluster', 'down', '--dir', dir]);
  });
  cp = readState(dir);
  if (cp === undefined) throw new Error(`no control plane in ${dir}`);
}
const admin = newUpstreamClient(await loadUpstreamConfig({ kubeconfig: cp.kubeconfig }));
const ns = `flow-cost-${Date.now().toString(36)}`;
await kube(admin, 'POST', '/api/v1/namespaces', { metadata: { name: ns } });
for (let i = 0; i < 20; i++) {
  await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `cm-${String(i)}` }, data: { a: 'x'.repeat(500) } });
}
const token = await serviceAccountToken(admin, ns, 'client');
await grantInNamespace(admin, ns, 'reader', [{ apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['get', 'list', 'watch'] }], {
  kind: 'ServiceAccount',
  name: 'client',
  namespace: ns,
});
const proxy = await startSharedProxy(t, cp, ['--resources', 'configmaps', ...positionals]);
const rssMiB = (): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${String(proxy.cli.child.pid)}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const dispatcher = new Agent({ connect: { ca: proxy.ca }, connections: null });
const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };

// Warm: the token reviewed, the reads authorized, the cache synced.
for (const path of [`/api/v1/namespaces/${ns}/configmaps`, `/api/v1/namespaces/${ns}/secrets`]) {
  for (;;) {
    const res = await request(`${proxy.url}${path}`, { dispatcher, headers });
    await res.body.dump();
    if (res.statusCode === 200) break;
    await sleep(500);
  }
}

/** While a held LIST is executing upstream. */
const HELD_READING_MS = 1_500;

/** Opens `attempts` requests of `path`, and keeps the watches answered 200 open until measured. */
async function phase(name: string, path: string): Promise<void> {
  const watch = path.includes('watch=1');
  await sleep(SETTLE_MS);
  const before = rssMiB();
  const statuses: Record<string, number> = {};
  const aborts: AbortController[] = [];
  const one = async (): Promise<void> => {
    const abort = new AbortController();
    aborts.push(abort);
    try {
      const res = await request(`${proxy.url}${path}`, { dispatcher, headers, signal: abort.signal });
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
      res.body.on('error', () => undefined);
      // A watch stays open; anything else is read to its end.
      if (res.statusCode !== 200 || !watch) await res.body.dump();
    } catch {
      statuses.failed = (statuses.failed ?? 0) + 1;
    }
  };
  let open: number;
  if (!watch) {
    const all = Promise.all(Array.from({ length: attempts }, one));
    await sleep(HELD_READING_MS);
    open = rssMiB();
    await all;
  } else {
    if (values.concurrent === true) await Promise.all(Array.from({ length: attempts }, one));
    else for (let i = 0; i < attempts; i++) await one();
    open = rssMiB();
  }
  for (const abort of aborts) abort.abort();
  await sleep(SETTLE_MS);
  const after = rssMiB();
  const row = [name, JSON.stringify(statuses), before.toFixed(1), `${open.toFixed(1)} (+${(open - before).toFixed(1)})`, after.toFixed(1)];
  process.stdout.write(`| ${row.join(' | ')} |\n`);
}

process.stdout.write(
  `${String(attempts)} attempts per phase, ${values.concurrent === true ? 'all at once' : 'one after another'}; proxy flags: ${positionals.join(' ') || '(defaults)'}\n`,
);
process.stdout.write('| phase | answers | RSS before, MiB | with them open | after they closed |\n| --- | --- | ---: | ---: | ---: |\n');
await phase('watches from the cache', `/api/v1/namespaces/${ns}/configmaps?watch=1`);
await phase('watches from the cache, again', `/api/v1/namespaces/${ns}/configmaps?watch=1`);
await phase('watches passed through', `/api/v1/namespaces/${ns}/secrets?watch=1`);
await phase('LISTs held 3 s upstream', `/api/v1/namespaces/${ns}/secrets?resourceVersion=999999999999`);
await dispatcher.close();
await admin.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}` });
await admin.close();
await cleanUp();
