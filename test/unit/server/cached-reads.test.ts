import assert from 'node:assert/strict';
import { test } from 'node:test';
import { acceptsPlainJson, servable } from '../../../src/server/cached-reads.ts';
import { parseListOptions } from '../../../src/server/list-options.ts';

test('cached reads: plain JSON is acceptable; Table conversions and other media types are not', () => {
  assert.equal(acceptsPlainJson(undefined), true);
  assert.equal(acceptsPlainJson('application/json'), true);
  assert.equal(acceptsPlainJson('*/*'), true);
  assert.equal(acceptsPlainJson('application/vnd.kubernetes.protobuf, application/json'), true);
  // kubectl get prefers a Table: passed through, so that the apiserver prints it.
  assert.equal(
    acceptsPlainJson('application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json'),
    false,
  );
  assert.equal(acceptsPlainJson('application/json;as=Table;v=v1;g=meta.k8s.io'), false);
  assert.equal(acceptsPlainJson('application/vnd.kubernetes.protobuf'), false);
  assert.equal(acceptsPlainJson('application/yaml'), false);
  assert.equal(acceptsPlainJson('application/json;q=0'), false);
});

test('cached reads: which resourceVersion rules the cache answers', () => {
  const opts = (query: string): ReturnType<typeof parseListOptions> => parseListOptions(query);
  assert.equal(servable(opts('resourceVersion=0'), 'list', '100'), true, 'any state');
  assert.equal(servable(opts('resourceVersion=0&limit=5'), 'list', '100'), true, 'limit ignored at RV=0, as the apiserver does');
  assert.equal(servable(opts(''), 'list', '100'), false, 'most recent: passed through for now');
  assert.equal(servable(opts('resourceVersion=100'), 'list', '100'), true, 'not older than 100');
  assert.equal(servable(opts('resourceVersion=101'), 'list', '100'), false, 'the cache is older');
  assert.equal(servable(opts('resourceVersion=99&limit=5'), 'list', '100'), false, 'RV=N with a limit is an exact read');
  assert.equal(servable(opts('resourceVersion=99&limit=5&resourceVersionMatch=NotOlderThan'), 'list', '100'), true);
  assert.equal(servable(opts('resourceVersion=99&resourceVersionMatch=Exact'), 'list', '100'), false);
  assert.equal(servable(opts('resourceVersion=99'), 'get', '100'), true);
  assert.equal(servable(opts('resourceVersion=99&limit=5'), 'get', '100'), true, 'a GET has no pages');
});
