/**
 * The library as a user gets it: `npm pack` (whose prepack builds dist/), the tarball installed
 * into a fresh project outside the repository (from the local npm cache where it can), the
 * three parts imported from TypeScript type-checked with `tsc --strict` against the shipped
 * .d.ts files, and from plain JavaScript; both programs run on Node 22 and Node 24 against the
 * real apiserver: an informer syncs, feeds a workqueue, and a leader election on a Lease decides
 * who reads the queue (fixtures/consumer.ts, fixtures/plain-javascript.mjs).
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';
import { mustRun, npmEnv, run } from '../deploy/run.ts';
import { node22 } from './node22.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const shared = useSharedAdmin();

interface Seen {
  readonly node: string;
  readonly key: string;
  readonly data: Record<string, string> | undefined;
  readonly createdIsDate: boolean;
  readonly led: boolean;
}

test(
  'library: the packed tarball installs in a fresh project; TypeScript (tsc --strict) and JavaScript import the three parts and run an informer, a workqueue and an election on Node 22 and 24',
  { timeout: 300_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'kcp-library-'));
    t.after(() => {
      rmSync(dir, { recursive: true, force: true });
    });
    const env = npmEnv();
    const node22Bin = await node22();

    await mustRun('npm', ['pack', '--pack-destination', dir, '--silent'], { cwd: ROOT, env, timeoutMs: 120_000 });
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball !== undefined, 'npm pack made a tarball');
    const listing = await mustRun('tar', ['-tzf', join(dir, tarball)]);
    for (const part of ['informer', 'workqueue', 'leaderelection']) {
      assert.ok(listing.includes(`package/dist/library/${part}.js`), `${part}: compiled JavaScript is packed`);
      assert.ok(listing.includes(`package/dist/library/${part}.d.ts`), `${part}: its types are packed`);
    }

    const app = join(dir, 'app');
    await mustRun('mkdir', [app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'library-consumer', private: true, type: 'module' }));
    const clientNode = (
      JSON.parse(readFileSync(join(ROOT, 'node_modules/@kubernetes/client-node/package.json'), 'utf8')) as { version: string }
    ).version;
    await mustRun(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        join(dir, tarball),
        `@kubernetes/client-node@${clientNode}`,
        // client-node's own declarations import `ws` (through isomorphic-ws), which has no types of
        // its own: a project that checks every declaration file, as this one does, installs them.
        '@types/ws@8',
      ],
      { cwd: app, env, timeoutMs: 240_000 },
    );
    assert.ok(!existsSync(join(app, 'node_modules', 'kube-cache-proxy', 'node_modules', 'typescript')), 'no dev dependency comes along');
    copyFileSync(join(FIXTURES, 'consumer.ts'), join(app, 'consumer.ts'));
    copyFileSync(join(FIXTURES, 'plain-javascript.mjs'), join(app, 'plain-javascript.mjs'));

    // tsc --strict against what was installed: the packed .d.ts files (no source condition here),
    // every declaration file checked (no skipLibCheck).
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          noEmit: true,
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', app, '--listFiles'], { cwd: app });
    assert.equal(tsc.code, 0, `tsc --strict:\n${tsc.stdout}\n${tsc.stderr}`);
    const checked = tsc.stdout.split('\n');
    for (const part of ['informer', 'workqueue', 'leaderelection']) {
      assert.ok(
        checked.some((f) => f.endsWith(`/node_modules/kube-cache-proxy/dist/library/${part}.d.ts`)),
        `${part}: its shipped .d.ts was checked`,
      );
    }
    assert.ok(!checked.some((f) => f.includes('/kube-cache-proxy/src/')), 'no source file of the package was read');

    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings' },
      data: { greeting: 'hello' },
    });
    const runs: Seen[] = [];
    for (const [node, label] of [
      [node22Bin, 'Node 22'],
      [process.execPath, 'Node 24'],
    ] as const) {
      for (const program of ['consumer.ts', 'plain-javascript.mjs']) {
        const result = await run(node, [program, ns], {
          cwd: app,
          env: { ...process.env, KUBECONFIG: shared.cp.kubeconfig },
          timeoutMs: 60_000,
        });
        assert.equal(result.code, 0, `${label} ${program}:\n${result.stdout}\n${result.stderr}`);
        const seen = JSON.parse(result.stdout.trim().split('\n').at(-1) ?? 'null') as Seen | null;
        assert.ok(seen !== null, `${label} ${program} printed what it saw: ${result.stdout}`);
        assert.deepEqual(
          { ...seen, node: seen.node.split('.')[0] },
          { node: label === 'Node 22' ? 'v22' : 'v24', key: `${ns}/settings`, data: { greeting: 'hello' }, createdIsDate: true, led: true },
          `${label} ${program}`,
        );
        runs.push(seen);
      }
    }
    // Each run acquired the Lease and released it; the next took it over at once.
    const lease = await kube<{ spec: { holderIdentity?: string; leaseTransitions?: number } }>(
      shared.admin,
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/consumer`,
    );
    assert.equal(lease.spec.holderIdentity ?? '', '', 'released by the last run');
    assert.equal(lease.spec.leaseTransitions, runs.length - 1);
  },
);
