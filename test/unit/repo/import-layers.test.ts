/**
 * The import rule of `npm run check` (.dependency-cruiser.mjs): imports point down only. The tree
 * passes it, and a small tree with one cycle or one upward import of each kind fails it, with the
 * rule's name in the report.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const CONFIG = join(ROOT, '.dependency-cruiser.mjs');
const DEPCRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruiser.mjs');

function cruise(cwd: string): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [DEPCRUISE, '--config', CONFIG, '--output-type', 'err', 'src'], { cwd, encoding: 'utf8' });
  return { status: result.status, output: result.stdout + result.stderr };
}

/** A throwaway tree: `files` by path under it, and the tsconfig the rule reads. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-layers-'));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true, noEmit: true } }));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

test('import layers: the source tree passes', () => {
  const { status, output } = cruise(ROOT);
  assert.equal(status, 0, output);
});

const BROKEN: readonly { readonly rule: string; readonly files: Record<string, string> }[] = [
  {
    rule: 'layer-kube',
    files: {
      'src/kube/words.ts': "import type { Spec } from '../cache/spec.ts';\nexport type Word = Spec;\n",
      'src/cache/spec.ts': 'export interface Spec { readonly name: string }\n',
    },
  },
  {
    rule: 'no-circular',
    files: {
      'src/cache/a.ts': "import type { B } from './b.ts';\nexport interface A { readonly b: B }\n",
      'src/cache/b.ts': "import type { A } from './a.ts';\nexport interface B { readonly a: A | undefined }\n",
    },
  },
  {
    rule: 'layer-server-serving',
    files: {
      'src/server/serving/reads.ts': "import { pass } from '../pass-through/pass.ts';\nexport const read = pass;\n",
      'src/server/pass-through/pass.ts': 'export const pass = 1;\n',
    },
  },
  {
    rule: 'layer-cache',
    files: {
      'src/cache/delegator.ts': "import { serve } from '../server/http/app.ts';\nexport const decide = serve;\n",
      'src/server/http/app.ts': 'export const serve = 1;\n',
    },
  },
  {
    // The cache never prints a Table: table/ sits beside cache/, not below it.
    rule: 'layer-cache',
    files: {
      'src/cache/cacher.ts': "import { print } from '../table/printer.ts';\nexport const serve = print;\n",
      'src/table/printer.ts': 'export const print = 1;\n',
    },
  },
  {
    rule: 'layer-json',
    files: {
      'src/json/json-scan.ts': "import { decode } from '../informer/object.ts';\nexport const scan = decode;\n",
      'src/informer/object.ts': 'export const decode = 1;\n',
    },
  },
  {
    rule: 'serving-not-to-upstream',
    files: {
      'src/server/serving/cached-watch.ts': "import { HEARTBEAT } from '../../upstream/pool.ts';\nexport const watch = HEARTBEAT;\n",
      'src/upstream/pool.ts': 'export const HEARTBEAT = 1;\n',
    },
  },
  {
    rule: 'library-not-to-proxy',
    files: {
      'src/library/informer.ts': "import { startProxy } from '../proxy/proxy.ts';\nexport const informer = startProxy;\n",
      'src/proxy/proxy.ts': 'export const startProxy = 1;\n',
    },
  },
  {
    rule: 'library-not-to-proxy',
    files: {
      'src/library/informer.ts': "import { cacher } from '../cache/cacher.ts';\nexport const informer = cacher;\n",
      'src/cache/cacher.ts': 'export const cacher = 1;\n',
    },
  },
  {
    rule: 'cli-not-to-cache',
    files: {
      'src/cli/proxy-flags.ts': "import { DEFAULT } from '../cache/consistency.ts';\nexport const flags = DEFAULT;\n",
      'src/cache/consistency.ts': 'export const DEFAULT = 1;\n',
    },
  },
  {
    rule: 'not-in-a-layer',
    files: {
      'src/elsewhere/thing.ts': "import { word } from '../kube/word.ts';\nexport const thing = word;\n",
      'src/kube/word.ts': 'export const word = 1;\n',
    },
  },
];

for (const { rule, files } of BROKEN) {
  test(`import layers: ${rule} fails the check (${Object.keys(files)[0] ?? ''})`, (t) => {
    const dir = tree(files);
    t.after(() => {
      rmSync(dir, { recursive: true, force: true });
    });
    const { status, output } = cruise(dir);
    assert.notEqual(status, 0, output);
    assert.match(output, new RegExp(`error ${rule}:`));
  });
}
