/**
 * packages/client/package.json, the library's package, says what its build makes and what its code
 * needs: an `import` and a `require` condition with types for each entry point, built from the
 * entry point's source (tsconfig.library.json); the root package's versions of what it shares with
 * the proxy; client-node (and prom-client, optional) as peers; nothing of the proxy's server.
 * That the compiled closure imports nothing else is checked by the build (scripts/build-library.mjs)
 * and test/e2e/library/packed-library.test.ts.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Manifest {
  readonly name: string;
  readonly license: string;
  readonly engines: Record<string, string>;
  readonly exports: Record<string, unknown>;
  readonly dependencies?: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Partial<Record<string, { optional?: boolean }>>;
}

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const client = JSON.parse(read('packages/client/package.json')) as Manifest;
const root = JSON.parse(read('package.json')) as Manifest;
const ENTRY_POINTS = ['informer', 'workqueue', 'leaderelection', 'prometheus'];

test('client package: each entry point has an import and a require condition, types first, from its source in tsconfig.library.json', () => {
  assert.equal(client.name, '@kube-cache-proxy/client');
  assert.deepEqual(Object.keys(client.exports).sort(), [...ENTRY_POINTS.map((e) => `./${e}`), './package.json'].sort());
  const built = (JSON.parse(read('tsconfig.library.json').replace(/^\s*\/\/.*$/gm, '')) as { files: string[] }).files;
  for (const entry of ENTRY_POINTS) {
    assert.deepEqual(
      client.exports[`./${entry}`],
      {
        import: { types: `./dist/esm/library/${entry}.d.ts`, default: `./dist/esm/library/${entry}.js` },
        require: { types: `./dist/cjs/library/${entry}.d.ts`, default: `./dist/cjs/library/${entry}.js` },
      },
      entry,
    );
    assert.ok(existsSync(join(ROOT, 'src/library', `${entry}.ts`)), `${entry}: its source exists`);
    assert.ok(built.includes(`src/library/${entry}.ts`), `${entry}: tsconfig.library.json builds it`);
  }
});

test("client package: its dependencies are the root package's versions; client-node and prom-client are peers; no server package", () => {
  const dependencies = client.dependencies ?? {};
  for (const [name, range] of Object.entries(dependencies)) {
    assert.equal(range, root.dependencies?.[name], `${name}: the root package's range`);
  }
  for (const name of ['fastify', 'pino', 'pino-pretty', 'prom-client', '@kubernetes/client-node', 'lru-cache']) {
    assert.ok(!(name in dependencies), `${name} is not a dependency`);
  }
  assert.equal(client.peerDependencies?.['@kubernetes/client-node'], root.dependencies?.['@kubernetes/client-node']);
  assert.equal(client.peerDependencies?.['prom-client'], root.dependencies?.['prom-client']);
  assert.equal(client.peerDependenciesMeta?.['prom-client']?.optional, true, 'prom-client only for the prometheus entry point');
  assert.ok(!('@kubernetes/client-node' in (client.peerDependenciesMeta ?? {})), 'client-node is required');
  assert.equal(client.devDependencies, undefined);
  assert.deepEqual(client.engines, root.engines);
});

test('client package: Apache-2.0, with the license text, a changelog and a README', () => {
  assert.equal(client.license, 'Apache-2.0');
  assert.equal(root.license, 'Apache-2.0');
  const license = read('packages/client/LICENSE');
  assert.match(license, /^\s+Apache License\n\s+Version 2\.0, January 2004/);
  assert.match(license, /END OF TERMS AND CONDITIONS/);
  assert.equal(read('LICENSE'), license, "the root package's LICENSE is the same text");
  assert.match(read('packages/client/CHANGELOG.md'), /^# Changelog/);
  assert.match(read('packages/client/README.md'), /npm install @kube-cache-proxy\/client @kubernetes\/client-node/);
});

test('client package: in this repository, @kube-cache-proxy/client/<part> is the source of src/library/<part>.ts (test/helpers/library-sources.ts)', async () => {
  await import('../../helpers/library-sources.ts');
  const packaged = await import('@kube-cache-proxy/client/workqueue');
  const source = await import('../../../src/library/workqueue.ts');
  assert.equal(packaged.newRateLimitingQueue, source.newRateLimitingQueue, 'the same module');
});
