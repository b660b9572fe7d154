/**
 * The Dockerfile, checked statically (no Docker engine here): dockerfile-utils' linter (the
 * Docker language server's) finds nothing, and its stages have the shape the sidecar needs. What
 * the build stage does is run for real by test/e2e/deploy/packed-install.test.ts.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DockerfileParser } from 'dockerfile-ast';
import type { Dockerfile, Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import { MALLOC_MMAP_THRESHOLD_BYTES } from '../../../src/memory/memory-budget.ts';
import { imageEnv } from '../../helpers/image.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (file: string): string => readFileSync(`${ROOT}${file}`, 'utf8');
const TEXT = read('Dockerfile');
const DOCKERFILE: Dockerfile = DockerfileParser.parse(TEXT);

interface Stage {
  readonly name: string | null;
  readonly image: string | null;
  readonly instructions: readonly Instruction[];
}

/** The instructions of each FROM up to the next. */
function stages(): Stage[] {
  const result: { name: string | null; image: string | null; instructions: Instruction[] }[] = [];
  for (const instruction of DOCKERFILE.getInstructions()) {
    if (instruction.getKeyword() === 'FROM') {
      const from = DOCKERFILE.getFROMs().find((f) => f.getRange().start.line === instruction.getRange().start.line);
      result.push({ name: from?.getBuildStage() ?? null, image: from?.getImage() ?? null, instructions: [] });
    } else {
      const current = result.at(-1);
      assert.ok(current !== undefined, `${instruction.getKeyword()} before any FROM`);
      current.instructions.push(instruction);
    }
  }
  return result;
}

const args = (instruction: Instruction): string[] => instruction.getArguments().map((a) => a.getValue());
const ofKind = (stage: Stage, keyword: string): Instruction[] => stage.instructions.filter((i) => i.getKeyword() === keyword);
/** An exec-form (JSON array) instruction's strings; undefined for the shell form. */
function jsonForm(instruction: Instruction | undefined): string[] | undefined {
  const raw = instruction?.getArgumentsContent();
  if (raw === null || raw === undefined || !raw.trim().startsWith('[')) return undefined;
  return JSON.parse(raw) as string[];
}

test('Dockerfile: the linter of dockerfile-utils reports nothing', () => {
  const diagnostics = validate(TEXT);
  assert.deepEqual(
    diagnostics.map((d) => `line ${d.range.start.line + 1}: ${typeof d.message === 'string' ? d.message : d.message.value}`),
    [],
  );
});

test('Dockerfile: multi-stage, every stage on the official Node image of the version the tests run on', () => {
  const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version?: string }> };
  const nodeVersion = lock.packages['node_modules/node']?.version;
  assert.ok(nodeVersion !== undefined && nodeVersion.startsWith('24.'), `the node@24 devDependency is locked at ${String(nodeVersion)}`);
  const all = stages();
  assert.ok(all.length >= 2, 'a build stage and a runtime stage');
  for (const stage of all) assert.match(stage.image ?? '', new RegExp(`^node:${nodeVersion.replaceAll('.', '\\.')}-(slim|alpine)$`));
  assert.ok(
    all.slice(0, -1).every((s) => s.name !== null),
    'every stage but the last is named, for COPY --from',
  );
});

test('Dockerfile: the build stage packs what package.json "files" lists and installs production dependencies only', () => {
  const all = stages();
  const build = all.slice(0, -1);
  const runs = build.flatMap((s) => ofKind(s, 'RUN').map((i) => args(i).join(' ')));
  assert.ok(
    runs.some((r) => /\bnpm ci\b(?!.*--omit=dev)/.test(r.split('&&')[0] ?? '')),
    'dev dependencies installed to type-check',
  );
  assert.ok(
    runs.some((r) => r.includes('tsc --noEmit')),
    'the sources type-checked',
  );
  assert.ok(
    runs.some((r) => r.includes('npm pack')),
    'npm pack selects the shipped files',
  );
  assert.ok(
    runs.some((r) => /npm ci --omit=dev\b/.test(r)),
    'npm ci --omit=dev installs the runtime dependencies',
  );

  // Everything "files" lists is copied into the build context, or built there from what is
  // (dist/: `npm pack` runs the prepack script, scripts/build.mjs, over src/ and
  // tsconfig.build.json), so the image's `npm pack` packs what the packed-install test packs
  // here; and .dockerignore lets each copied path through.
  const pkg = JSON.parse(read('package.json')) as { files: string[]; scripts: Record<string, string> };
  const copied = build.flatMap((s) => ofKind(s, 'COPY').flatMap((i) => args(i).slice(0, -1)));
  assert.equal(pkg.scripts.prepack, 'npm run build', 'npm pack compiles the sources first');
  assert.equal(pkg.scripts.build, 'node scripts/build.mjs');
  for (const entry of pkg.files) {
    if (entry === 'dist/') {
      for (const input of ['src/', 'tsconfig.build.json', 'scripts/build.mjs'])
        assert.ok(copied.includes(input), `${input} is copied to build dist/`);
    } else {
      assert.ok(copied.includes(entry), `"files" entry ${entry} is copied into the build stage`);
    }
  }
  for (const file of ['package.json', 'package-lock.json']) assert.ok(copied.includes(file), `${file} is copied`);
  const allowed = read('.dockerignore')
    .split('\n')
    .filter((l) => l.startsWith('!'))
    .map((l) => l.slice(1));
  assert.ok(
    read('.dockerignore').split('\n').includes('*'),
    '.dockerignore starts from nothing (no node_modules, .git or test data in the context)',
  );
  for (const source of copied) {
    assert.ok(existsSync(`${ROOT}${source}`), `COPY source ${source} exists`);
    assert.ok(allowed.includes(source), `COPY source ${source} is let through by .dockerignore`);
  }
});

test('Dockerfile: the runtime stage copies the installed app only and runs `kube-cache-proxy proxy` as a numeric non-root user', () => {
  const runtime = stages().at(-1);
  assert.ok(runtime !== undefined);
  assert.deepEqual(ofKind(runtime, 'RUN'), [], 'nothing is run in the runtime stage: no npm, no build tools');
  const copies = DOCKERFILE.getCOPYs().filter((c) => runtime.instructions.includes(c));
  assert.ok(copies.length > 0);
  for (const copy of copies) assert.ok(copy.getFromFlag() !== null, `${copy.getTextContent()}: from the build stage`);
  assert.ok(
    ofKind(runtime, 'ENV').some((i) => args(i).includes('NODE_ENV=production')),
    'NODE_ENV=production',
  );
  assert.equal(
    imageEnv().MALLOC_MMAP_THRESHOLD_,
    String(MALLOC_MMAP_THRESHOLD_BYTES),
    'glibc maps large blocks for themselves, so that freed memory goes back (memory-budget.ts)',
  );

  const users = ofKind(runtime, 'USER');
  assert.equal(users.length, 1);
  const [uid, gid] = (args(users[0] as Instruction)[0] ?? '').split(':');
  assert.match(uid ?? '', /^\d+$/, 'a numeric uid, so that runAsNonRoot can be checked by the kubelet');
  assert.notEqual(Number(uid), 0);
  assert.notEqual(Number(gid ?? uid), 0);

  assert.deepEqual(ofKind(runtime, 'EXPOSE').flatMap(args), ['8001']);
  assert.deepEqual(DOCKERFILE.getHEALTHCHECKs(), [], 'no HEALTHCHECK: Kubernetes probes /livez and /readyz');
  assert.equal(ofKind(runtime, 'VOLUME').length, 0, 'nothing written: a read-only root filesystem needs no volume');

  const entrypoint = jsonForm(ofKind(runtime, 'ENTRYPOINT')[0]);
  const cmd = jsonForm(ofKind(runtime, 'CMD')[0]);
  assert.ok(entrypoint !== undefined && cmd !== undefined, 'ENTRYPOINT and CMD in exec form (signals reach node)');
  assert.equal(entrypoint[0], 'node');
  const main = entrypoint[1] ?? '';
  // The compiled JavaScript (no type stripping in the image), built from the CLI's source.
  assert.match(main, /^dist\/.*\.js$/);
  const source = main.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts');
  assert.ok(existsSync(`${ROOT}${source}`), `${main} is built from ${source}`);
  const pkg = JSON.parse(read('package.json')) as { files: string[] };
  assert.ok(
    pkg.files.some((f) => main.startsWith(f)),
    `${main} is packed ("files")`,
  );
  assert.deepEqual(cmd, ['proxy']);
});
