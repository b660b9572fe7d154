import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asksProofAges, formatProofAge, parseProofAge, parseProofResourceVersion, provenAt } from '../../../src/protocol/proof-age.ts';

test('proof age: absent is the apiserver (undefined), an integer is read, several give the largest', () => {
  assert.equal(parseProofAge(undefined), undefined);
  assert.equal(parseProofAge([]), undefined);
  assert.equal(parseProofAge('0'), 0);
  assert.equal(parseProofAge(' 1234 '), 1234);
  assert.equal(parseProofAge(['5', '90', '7']), 90);
});

test('proof age: a value that is not an age proves nothing (+Infinity)', () => {
  for (const bad of ['', '-1', '1.5', '1e3', 'abc', '0x10', '1234567890123456', 'NaN']) {
    assert.equal(parseProofAge(bad), Number.POSITIVE_INFINITY, JSON.stringify(bad));
  }
  assert.equal(parseProofAge(['3', 'x']), Number.POSITIVE_INFINITY);
});

test('proof age: written as whole ms rounded up, never negative', () => {
  assert.equal(formatProofAge(0), '0');
  assert.equal(formatProofAge(12.1), '13');
  assert.equal(formatProofAge(-5), '0');
  assert.equal(formatProofAge(Number.NaN), '0');
  for (const ms of [0, 1, 999, 75_000]) assert.equal(parseProofAge(formatProofAge(ms)), ms);
});

test('proof age: the proof time is the arrival pulled back by the age, the arrival without one', () => {
  assert.equal(provenAt(10_000, undefined), 10_000);
  assert.equal(provenAt(10_000, 2_500), 7_500);
  assert.equal(provenAt(10_000, Number.POSITIVE_INFINITY), Number.NEGATIVE_INFINITY);
});

test("proof age: the watch head's resourceVersion", () => {
  assert.equal(parseProofResourceVersion(undefined), undefined);
  assert.equal(parseProofResourceVersion('42'), 42n);
  assert.equal(parseProofResourceVersion(['42']), 42n);
  assert.equal(parseProofResourceVersion(['42', '43']), undefined);
  assert.equal(parseProofResourceVersion('0'), undefined);
  assert.equal(parseProofResourceVersion('4x'), undefined);
});

test('proof age: a watch asks for bookmark ages with the request header', () => {
  assert.equal(asksProofAges(undefined), false);
  assert.equal(asksProofAges('bookmarks'), true);
  assert.equal(asksProofAges('other, Bookmarks'), true);
  assert.equal(asksProofAges(['x', 'bookmarks']), true);
  assert.equal(asksProofAges('true'), false);
});
