import assert from 'node:assert/strict';
import { test } from 'node:test';
import { indentJson } from '../../../src/kube/json-indent.ts';
import { seededRandom } from '../../helpers/prng.ts';

/** JSON.stringify(value, null, 2) is json.MarshalIndent's layout for the same compact text. */
function indentOf(compact: string, pieceSize = 7): string {
  const bytes = Buffer.from(compact);
  const pieces: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += pieceSize) pieces.push(bytes.subarray(i, i + pieceSize));
  return indentJson(pieces, bytes.length).toString();
}

test('indentJson: Go json.Indent layout: two spaces, ": " after keys, empty {} and [] kept on one line', () => {
  const value = { kind: 'List', items: [], metadata: {}, nested: { a: [1, { b: null }], s: 'x, y: {z}' }, n: -1.5e3 };
  assert.equal(indentOf(JSON.stringify(value)), JSON.stringify(value, null, 2));
});

test('indentJson: strings are copied as they are, escapes and punctuation included, across piece boundaries', () => {
  const compact = '{"a":"q\\"uo,te:{[","b":"\\\\","c":"\\u003chtml\\u003e","d":"ü€"}';
  for (const size of [1, 2, 3, 5, 64]) {
    assert.equal(indentOf(compact, size), JSON.stringify(JSON.parse(compact) as unknown, null, 2).replace('<html>', '\\u003chtml\\u003e'));
  }
});

test('indentJson: random documents indent as JSON.stringify(…, null, 2) does', () => {
  const random = seededRandom(42);
  const make = (depth: number): unknown => {
    const r = random();
    if (depth > 4 || r < 0.3) return r < 0.1 ? null : r < 0.2 ? Math.floor(random() * 1000) : `s${String(Math.floor(random() * 100))},:{}`;
    if (r < 0.65) return Array.from({ length: Math.floor(random() * 4) }, () => make(depth + 1));
    return Object.fromEntries(Array.from({ length: Math.floor(random() * 4) }, (_, i) => [`k${String(i)}`, make(depth + 1)]));
  };
  for (let i = 0; i < 200; i++) {
    const value = make(0);
    assert.equal(indentOf(JSON.stringify(value), 1 + (i % 9)), JSON.stringify(value, null, 2));
  }
});
