import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { knowsSpecial } from '../../../src/protobuf/encode-object.ts';
import { protobufSchema } from '../../../src/protobuf/schema.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');

test(
  'protobuf schema: the committed schema.json is what tools/protogen writes from the pinned Kubernetes modules',
  { timeout: 900_000 },
  () => {
    const generated = execFileSync('go', ['run', '.'], {
      cwd: join(ROOT, 'tools', 'protogen'),
      env: { ...process.env, GOTOOLCHAIN: 'local', GOWORK: 'off', GOFLAGS: '-mod=readonly' },
      maxBuffer: 64 * 1024 * 1024,
    });
    const committed = readFileSync(join(ROOT, 'src', 'protobuf', 'schema.json'));
    assert.ok(generated.equals(committed), 'run `cd tools/protogen && go run . > ../../src/protobuf/schema.json` and commit the result');
  },
);

test('protobuf schema: every type with a form of its own has a rule in the encoder', () => {
  const unknown = protobufSchema().special.filter((name) => !knowsSpecial(name));
  assert.deepEqual(unknown, []);
});
