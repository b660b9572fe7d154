/**
 * The library as a user gets it: `npm pack` in packages/client (whose prepack builds its ES module
 * and CommonJS builds, scripts/build-library.mjs), the tarball installed into two fresh projects
 * outside the repository (from the local npm cache where it can), an ES module one and a CommonJS
 * one, each with @kubernetes/client-node as the peer dependency it asks for. In each, `npm ls`
 * finds no module of the proxy's server (fastify, pino, prom-client), and loading each entry point
 * loads none. The ES module project type-checks a program with `tsc --strict` against the shipped
 * types and runs it and a plain JavaScript one; the CommonJS project type-checks against the
 * CommonJS types and runs a require() program and a Jest test; each runs on Node 22 and 24 against
 * the real apiserver: an informer syncs, feeds a workqueue, and a leader election on a Lease
 * decides who reads the queue (fixtures/). Then the CommonJS project installs prom-client, and the
 * optional prometheus entry point's providers report a named informer's and queue's metrics with
 * component-base's names. The package's compiled examples run in both projects.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';
import { mustRun, npmEnv, run } from '../deploy/run.ts';
import { node22 } from './node22.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PACKAGE = join(ROOT, 'packages', 'client');
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const ENTRY_POINTS = ['informer', 'workqueue', 'leaderelection'] as const;
/** What a library user must not receive: the proxy's HTTP server, its logger, its metrics library. */
const SERVER_PACKAGES = ['fastify', 'pino', 'pino-pretty', 'prom-client'] as const;
const shared = useSharedAdmin();

interface Seen {
  readonly node: string;
  readonly key: string;
  readonly data: Record<string, string> | undefined;
  readonly createdIsDate: boolean;
  readonly led: boolean;
}

/** A fresh project in `dir` with `packages` installed (from the npm cache where it can). */
async function freshProject(dir: string, manifest: Record<string, unknown>, packages: readonly string[]): Promise<void> {
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, ...manifest }));
  await mustRun('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', ...packages], {
    cwd: dir,
    env: npmEnv(),
    timeoutMs: 240_000,
  });
}

/** Every package installed in `dir`, as `npm ls --all --parseable` lists their folders. */
async function installedPackages(dir: string): Promise<string[]> {
  const listed = await run('npm', ['ls', '--all', '--parseable'], { cwd: dir, env: npmEnv() });
  assert.equal(listed.code, 0, `npm ls:\n${listed.stdout}\n${listed.stderr}`);
  return listed.stdout
    .split('\n')
    .filter((line) => line.includes('/node_modules/'))
    .map((line) => line.slice(line.lastIndexOf('/node_modules/') + '/node_modules/'.length));
}

/** The server packages among `paths` (node_modules paths or file URLs). */
function serverPackagesIn(paths: readonly string[]): string[] {
  return paths.filter((p) => SERVER_PACKAGES.some((name) => p === name || p.includes(`/node_modules/${name}/`)));
}

/** tsc --strict on `file` in `dir`, every declaration file checked (no skipLibCheck); the files it read. */
async function typeCheck(dir: string, file: string): Promise<string[]> {
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', noEmit: true, types: ['node'] },
      files: [file],
    }),
  );
  const tsc = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir, '--listFiles'], { cwd: dir });
  assert.equal(tsc.code, 0, `tsc --strict ${file}:\n${tsc.stdout}\n${tsc.stderr}`);
  return tsc.stdout.split('\n');
}

test(
  'library: @kube-cache-proxy/client packed and installed in fresh ES module and CommonJS projects brings no server package, and TypeScript (tsc --strict), JavaScript, require(), Jest and the examples run an informer, a workqueue and an election on Node 22 and 24',
  { timeout: 600_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'kcp-library-'));
    t.after(() => {
      rmSync(dir, { recursive: true, force: true });
    });
    const node22Bin = await node22();

    await mustRun('npm', ['pack', '--pack-destination', dir, '--silent'], { cwd: PACKAGE, env: npmEnv(), timeoutMs: 120_000 });
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball !== undefined, 'npm pack made a tarball');
    const listing = (await mustRun('tar', ['-tzf', join(dir, tarball)])).split('\n');
    for (const part of [...ENTRY_POINTS, 'prometheus']) {
      for (const build of ['esm', 'cjs']) {
        assert.ok(listing.includes(`package/dist/${build}/library/${part}.js`), `${part}: ${build} JavaScript is packed`);
        assert.ok(listing.includes(`package/dist/${build}/library/${part}.d.ts`), `${part}: ${build} types are packed`);
      }
    }
    for (const file of ['LICENSE', 'README.md', 'CHANGELOG.md', 'examples/configmap-controller.mjs', 'examples/configmap-controller.cjs']) {
      assert.ok(listing.includes(`package/${file}`), `${file} is packed`);
    }
    assert.ok(!listing.some((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')), 'no TypeScript source is packed');
    assert.match(readFileSync(join(PACKAGE, 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0, January 2004/);

    const clientNode = (
      JSON.parse(readFileSync(join(ROOT, 'node_modules/@kubernetes/client-node/package.json'), 'utf8')) as { version: string }
    ).version;
    const promClient = (JSON.parse(readFileSync(join(ROOT, 'node_modules/prom-client/package.json'), 'utf8')) as { version: string })
      .version;
    const esm = join(dir, 'esm');
    const cjs = join(dir, 'cjs');
    const library = join(dir, tarball);
    // client-node's own declarations import `ws` (through isomorphic-ws), which has no types of its
    // own: a project that checks every declaration file, as these do, installs them.
    await freshProject(esm, { name: 'esm-consumer', type: 'module' }, [library, `@kubernetes/client-node@${clientNode}`, '@types/ws@8']);
    await freshProject(cjs, { name: 'cjs-consumer' }, [library, `@kubernetes/client-node@${clientNode}`, '@types/ws@8', 'jest@30']);

    for (const [project, label] of [
      [esm, 'ES module project'],
      [cjs, 'CommonJS project'],
    ] as const) {
      const installed = await installedPackages(project);
      assert.ok(installed.includes('@kube-cache-proxy/client'), `${label}: the library is installed`);
      assert.deepEqual(serverPackagesIn(installed), [], `${label}: npm ls lists no server package`);
      assert.equal(installed.filter((p) => p === '@kubernetes/client-node').length, 1, `${label}: one client-node, the peer`);
      copyFileSync(join(FIXTURES, 'loaded-modules.mjs'), join(project, 'loaded-modules.mjs'));
      for (const part of ENTRY_POINTS) {
        const how = project === esm ? 'import' : 'require';
        const result = await run(process.execPath, ['loaded-modules.mjs', how, `@kube-cache-proxy/client/${part}`], { cwd: project });
        assert.equal(result.code, 0, `${label} ${how} ${part}:\n${result.stdout}\n${result.stderr}`);
        const loaded = JSON.parse(result.stdout) as string[];
        const build = project === esm ? 'esm' : 'cjs';
        assert.ok(
          loaded.some((url) => url.endsWith(`/@kube-cache-proxy/client/dist/${build}/library/${part}.js`)),
          `${label}: ${how} ${part} loads the ${build} build: ${loaded.join(', ')}`,
        );
        assert.deepEqual(serverPackagesIn(loaded), [], `${label}: ${how} ${part} loads no server package`);
      }
    }

    // tsc --strict against what was installed: the ES module types from the ES module project, the
    // CommonJS types from the CommonJS one (no source condition here).
    copyFileSync(join(FIXTURES, 'consumer.ts'), join(esm, 'consumer.ts'));
    copyFileSync(join(FIXTURES, 'plain-javascript.mjs'), join(esm, 'plain-javascript.mjs'));
    copyFileSync(join(FIXTURES, 'cjs-types.ts'), join(cjs, 'cjs-types.ts'));
    copyFileSync(join(FIXTURES, 'require-consumer.cjs'), join(cjs, 'require-consumer.cjs'));
    copyFileSync(join(FIXTURES, 'consumer.test.cjs'), join(cjs, 'consumer.test.cjs'));
    for (const [project, file, build] of [
      [esm, 'consumer.ts', 'esm'],
      [cjs, 'cjs-types.ts', 'cjs'],
    ] as const) {
      const checked = await typeCheck(project, file);
      for (const part of ENTRY_POINTS) {
        assert.ok(
          checked.some((f) => f.endsWith(`/node_modules/@kube-cache-proxy/client/dist/${build}/library/${part}.d.ts`)),
          `${file}: the shipped ${build} .d.ts of ${part} was checked`,
        );
      }
    }

    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings' },
      data: { greeting: 'hello' },
    });
    const env = { ...process.env, KUBECONFIG: shared.cp.kubeconfig };
    const expected = (node: string): Seen => ({ node, key: `${ns}/settings`, data: { greeting: 'hello' }, createdIsDate: true, led: true });
    const lastLine = (stdout: string): Seen | null => JSON.parse(stdout.trim().split('\n').at(-1) ?? 'null') as Seen | null;
    let consumers = 0;
    for (const [node, label] of [
      [node22Bin, 'Node 22'],
      [process.execPath, 'Node 24'],
    ] as const) {
      for (const [project, program] of [
        [esm, 'consumer.ts'],
        [esm, 'plain-javascript.mjs'],
        [cjs, 'require-consumer.cjs'],
      ] as const) {
        const result = await run(node, [program, ns], { cwd: project, env, timeoutMs: 60_000 });
        assert.equal(result.code, 0, `${label} ${program}:\n${result.stdout}\n${result.stderr}`);
        const seen = lastLine(result.stdout);
        assert.ok(seen !== null, `${label} ${program} printed what it saw: ${result.stdout}`);
        assert.deepEqual({ ...seen, node: seen.node.split('.')[0] }, expected(label === 'Node 22' ? 'v22' : 'v24'), `${label} ${program}`);
        consumers++;
      }
    }

    // Jest requires client-node's ES modules only with Node's VM modules (Jest's docs: require of ESM).
    const jest = await run(process.execPath, [join(cjs, 'node_modules/jest/bin/jest.js'), '--ci', 'consumer.test.cjs'], {
      cwd: cjs,
      env: { ...env, CONSUMER_NAMESPACE: ns, NODE_OPTIONS: '--experimental-vm-modules' },
      timeoutMs: 120_000,
    });
    assert.equal(jest.code, 0, `jest:\n${jest.stdout}\n${jest.stderr}`);
    assert.match(jest.stderr, /Tests:\s+1 passed, 1 total/, 'jest ran the test and it passed');
    consumers++;

    // Each run acquired the Lease and released it; the next took it over at once.
    const lease = await kube<{ spec: { holderIdentity?: string; leaseTransitions?: number } }>(
      shared.admin,
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/consumer`,
    );
    assert.equal(lease.spec.holderIdentity ?? '', '', 'released by the last run');
    assert.equal(lease.spec.leaseTransitions, consumers - 1);

    // The optional prometheus entry point, once the application installs prom-client: a named
    // factory's informer and a named queue report with component-base's names to its Registry.
    await mustRun('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', `prom-client@${promClient}`], {
      cwd: cjs,
      env: npmEnv(),
      timeoutMs: 240_000,
    });
    copyFileSync(join(FIXTURES, 'prometheus-consumer.cjs'), join(cjs, 'prometheus-consumer.cjs'));
    const metrics = await run(process.execPath, ['prometheus-consumer.cjs', ns], { cwd: cjs, env, timeoutMs: 60_000 });
    assert.equal(metrics.code, 0, `prometheus-consumer.cjs:\n${metrics.stdout}\n${metrics.stderr}`);
    const labels = 'name="consumer",group="",version="v1",resource="configmaps"';
    assert.match(metrics.stdout, new RegExp(`^informer_store_resource_version\\{${labels}\\} [1-9]\\d*$`, 'm'), metrics.stdout);
    assert.match(
      metrics.stdout,
      new RegExp(`^informer_processing_latency_seconds_count\\{${labels}\\} 1$`, 'm'),
      'one ConfigMap processed',
    );
    assert.match(metrics.stdout, new RegExp(`^informer_queued_items\\{${labels}\\} 0$`, 'm'));
    assert.match(metrics.stdout, /^workqueue_adds_total\{name="configmaps"\} 1$/m);

    // The compiled examples, as their header says to run them from an install.
    for (const [project, example] of [
      [esm, 'configmap-controller.mjs'],
      [cjs, 'configmap-controller.cjs'],
    ] as const) {
      const result = await run(process.execPath, [join(project, 'node_modules/@kube-cache-proxy/client/examples', example), ns, '--once'], {
        cwd: project,
        env,
        timeoutMs: 60_000,
      });
      assert.equal(result.code, 0, `${example}:\n${result.stdout}\n${result.stderr}`);
      assert.match(result.stdout, /^leading$/m, `${example} led`);
      assert.match(result.stdout, new RegExp(`^${ns}/settings: 1 data keys, created \\d{4}-`, 'm'), `${example} reconciled the ConfigMap`);
    }
  },
);
