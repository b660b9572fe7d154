import assert from 'node:assert/strict';
import { test } from 'node:test';
import { selectionOf } from '../../../src/cache/cacher.ts';
import { parseFieldSelector } from '../../../src/selector/field-selector.ts';
import { parseLabelSelector } from '../../../src/selector/label-selector.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import { MAX_SELECTOR_BYTES, MAX_SELECTOR_TERMS, selectionTerms, selectorTooLong } from '../../../src/selector/selector-bounds.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import { parseListOptions } from '../../../src/request/list-options.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';

const pods = newWatchCache({
  spec: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, unstructured: false },
  fields: selectableFieldsFor('', 'pods', true),
  clock: new FakeClock(),
});
const select = (query: string): ReturnType<typeof selectionOf> => selectionOf(pods, 'ns', parseListOptions(query));
const q = (parameter: string, text: string): string => `${parameter}=${encodeURIComponent(text)}`;

test('selector bounds: a selector up to MAX_SELECTOR_BYTES (UTF-8) is the cache’s, a longer one the apiserver’s, before it is parsed', () => {
  const at = (n: number): string => `a=${'b'.repeat(n - 2)}`;
  assert.equal(selectorTooLong({ labelSelector: at(MAX_SELECTOR_BYTES), fieldSelector: '' }), false);
  assert.equal(selectorTooLong({ labelSelector: at(MAX_SELECTOR_BYTES + 1), fieldSelector: '' }), true);
  assert.equal(
    selectorTooLong({ labelSelector: '', fieldSelector: `metadata.name=${'é'.repeat(MAX_SELECTOR_BYTES / 2)}` }),
    true,
    'bytes, not characters',
  );
  // A 1 MiB selector, valid to the apiserver, is not parsed by the proxy: its read goes upstream.
  const huge = Array.from({ length: 100_000 }, (_, i) => `k${String(i)}`).join(',');
  assert.ok(huge.length > 2 ** 19);
  assert.equal(select(q('labelSelector', huge)), 'selector-too-large');
  assert.equal(select(q('fieldSelector', `metadata.name=${'x'.repeat(MAX_SELECTOR_BYTES)}`)), 'selector-too-large');
});

test('selector bounds: more than MAX_SELECTOR_TERMS terms (label requirements, each value of an in or notin, field terms) go to the apiserver', () => {
  const keys = (n: number): string => Array.from({ length: n }, (_, i) => `k${String(i)}`).join(',');
  const values = (n: number): string => `app in (${Array.from({ length: n }, (_, i) => `v${String(i)}`).join(',')})`;
  assert.equal(selectionTerms(parseLabelSelector(keys(3)), parseFieldSelector('', { allowed: new Set(), notSupported: String })), 3);
  assert.equal(selectionTerms(parseLabelSelector(values(5)), parseFieldSelector('', { allowed: new Set(), notSupported: String })), 5);
  assert.equal(typeof select(q('labelSelector', keys(MAX_SELECTOR_TERMS))), 'object');
  assert.equal(select(q('labelSelector', keys(MAX_SELECTOR_TERMS + 1))), 'selector-too-large');
  assert.equal(typeof select(q('labelSelector', values(MAX_SELECTOR_TERMS))), 'object');
  assert.equal(select(q('labelSelector', values(MAX_SELECTOR_TERMS + 1))), 'selector-too-large');
  const names = (n: number): string => Array.from({ length: n }, (_, i) => `metadata.name!=n${String(i)}`).join(',');
  assert.equal(
    select(`${q('labelSelector', keys(MAX_SELECTOR_TERMS / 2))}&${q('fieldSelector', names(MAX_SELECTOR_TERMS / 2))}`).constructor,
    Object,
  );
  assert.equal(
    select(`${q('labelSelector', keys(MAX_SELECTOR_TERMS / 2))}&${q('fieldSelector', names(MAX_SELECTOR_TERMS / 2 + 1))}`),
    'selector-too-large',
  );
  // A selector the apiserver refuses stays bad-selector: its 400 is the apiserver's to word.
  assert.equal(select(q('labelSelector', 'a in (')), 'bad-selector');
});
