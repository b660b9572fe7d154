import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { derivedEncodingBytes, noteDerivedEncoding } from '../../../src/cache/derived-encodings.ts';

/** V8's full collection, exposed at run time (as collection-valve.ts does). */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

test('derived encodings: counted as made, taken off once their object is collected', async () => {
  const before = derivedEncodingBytes();
  const kept = { key: 'ns/kept' };
  noteDerivedEncoding(kept, 1_000);
  (() => {
    noteDerivedEncoding({ key: 'ns/dropped' }, 700);
  })();
  assert.equal(derivedEncodingBytes(), before + 1_700);
  // FinalizationRegistry callbacks run after a collection, in a later task.
  for (let i = 0; i < 50 && derivedEncodingBytes() !== before + 1_000; i++) {
    collect();
    await turn();
  }
  assert.equal(derivedEncodingBytes(), before + 1_000);
  assert.equal(kept.key, 'ns/kept'); // alive until here
});
