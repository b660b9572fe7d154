/** LIST/WATCH query decoding, defaulting and validation, with the apiserver's messages. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listStart, parseListOptions, parseResourceVersion } from '../../../src/request/list-options.ts';
import { StatusError } from '../../../src/kube/status.ts';

function failure(query: string, forceWatch = false): { code: number; message: string } {
  try {
    listStart(parseListOptions(query, { forceWatch }), '/registry/configmaps/ns/');
  } catch (e) {
    assert.ok(e instanceof StatusError);
    return { code: e.code, message: e.message };
  }
  return { code: 200, message: '' };
}

test('ListOptions: defaults and typed values', () => {
  const o = parseListOptions('limit=%2B5&timeoutSeconds=-1&allowWatchBookmarks=abc&labelSelector=a%3Db&limit=abc');
  assert.equal(o.limit, 5);
  assert.equal(o.timeoutSeconds, -1);
  assert.equal(o.allowWatchBookmarks, true);
  assert.equal(o.labelSelector, 'a=b');
  assert.equal(o.watch, false);
  assert.equal(o.sendInitialEvents, undefined);
});

test('ListOptions: a watch from "" or "0" defaults to sendInitialEvents + NotOlderThan; a legacy watch path does not', () => {
  assert.deepEqual(
    (({ sendInitialEvents, resourceVersionMatch }) => ({ sendInitialEvents, resourceVersionMatch }))(parseListOptions('watch=1')),
    { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' },
  );
  assert.equal(parseListOptions('watch=1&resourceVersion=5').sendInitialEvents, undefined);
  const legacy = parseListOptions('', { forceWatch: true });
  assert.equal(legacy.watch, true);
  assert.equal(legacy.sendInitialEvents, undefined);
  assert.equal(parseListOptions('watch=').watch, true);
});

test('ListOptions: bad integers are 400 with strconv messages, first field in declaration order', () => {
  assert.deepEqual(failure('limit=abc'), { code: 400, message: 'strconv.ParseInt: parsing "abc": invalid syntax' });
  assert.deepEqual(failure('limit='), { code: 400, message: 'strconv.ParseInt: parsing "": invalid syntax' });
  assert.deepEqual(failure('limit=99999999999999999999'), {
    code: 400,
    message: 'strconv.ParseInt: parsing "99999999999999999999": value out of range',
  });
  assert.deepEqual(failure('limit=abc&timeoutSeconds=x'), { code: 400, message: 'strconv.ParseInt: parsing "x": invalid syntax' });
  assert.deepEqual(failure('limit=abc&resourceVersionMatch=foo').code, 400);
  assert.equal(failure('limit=2&limit=abc').code, 200);
  assert.equal(failure('limit=-1').code, 200);
});

test('ListOptions: forbidden combinations are 422 Invalid', () => {
  assert.equal(
    failure('resourceVersionMatch=Exact&resourceVersion=0').message,
    'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
  );
  assert.equal(
    failure('sendInitialEvents=false').message,
    'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list',
  );
  assert.equal(
    failure('watch=true&sendInitialEvents=true').message,
    'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
  );
  assert.equal(
    failure('watch=true&resourceVersionMatch=NotOlderThan').message,
    'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
  );
  assert.equal(
    failure('continue=x&resourceVersionMatch=Exact&resourceVersion=5').message,
    'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided',
  );
  // A legacy /watch/ path is validated as a list.
  assert.equal(
    failure('resourceVersionMatch=NotOlderThan', true).message,
    'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided',
  );
  assert.equal(failure('watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan').code, 200);
});

test('ListOptions: the storage checks: continue token, then resourceVersion beside it, then the resourceVersion', () => {
  assert.deepEqual(failure('resourceVersion=abc&continue=garbage'), {
    code: 400,
    message: "invalid continue token: continue key is not valid: invalid character '\\u0081' looking for beginning of value",
  });
  const token = Buffer.from('{"v":"meta.k8s.io/v1","rv":5,"start":"a"}').toString('base64url');
  assert.deepEqual(failure(`continue=${token}&resourceVersion=7`), {
    code: 400,
    message: 'specifying resource version is not allowed when using continue',
  });
  assert.equal(failure(`continue=${token}&resourceVersion=0`).code, 200);
  assert.deepEqual(failure('resourceVersion=%2B1'), {
    code: 400,
    message: 'invalid resource version: resourceVersion: Invalid value: "+1": strconv.ParseUint: parsing "+1": invalid syntax',
  });
  assert.equal(parseResourceVersion('01'), 1);
  assert.equal(parseResourceVersion(''), 0);
});
