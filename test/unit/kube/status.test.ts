/** The Status catalogue: byte-identical bodies (recorded from kube-apiserver v1.37.2) and headers. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fieldForbidden } from '../../../src/kube/field-error.ts';
import { goJsonString } from '../../../src/kube/go-json.ts';
import {
  StatusError,
  expiredContinue,
  internalError,
  invalidListOptions,
  methodNotSupported,
  notAcceptable,
  notFound,
  resourceVersionTooLarge,
  statusBody,
  tooManyRequests,
  tooOldResourceVersion,
} from '../../../src/kube/status.ts';

test('Status: notFound for a core and a grouped resource', () => {
  assert.equal(
    notFound('configmaps', 'missing').body().toString(),
    '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \\"missing\\" not found","reason":"NotFound","details":{"name":"missing","kind":"configmaps"},"code":404}\n',
  );
  assert.equal(
    notFound({ group: 'apps', resource: 'deployments' }, 'missing').body().toString(),
    '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \\"missing\\" not found","reason":"NotFound","details":{"name":"missing","group":"apps","kind":"deployments"},"code":404}\n',
  );
});

test('Status: Go escaping of < > & in messages', () => {
  assert.equal(goJsonString('a<b>&c\u2028'), '"a\\u003cb\\u003e\\u0026c\\u2028"');
  assert.match(internalError('x < y & z').body().toString(), /"Internal error occurred: x \\u003c y \\u0026 z"/);
});

test('Status: resourceVersionTooLarge is a 504 Timeout with the cause, retryAfterSeconds 1 and Retry-After', () => {
  const e = resourceVersionTooLarge(99999999, 214);
  assert.equal(e.code, 504);
  assert.deepEqual(e.headers, { 'Retry-After': '1' });
  assert.equal(
    e.body().toString(),
    '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 99999999, current: 214","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}\n',
  );
});

test('Status: invalidListOptions aggregates several causes in brackets', () => {
  const e = invalidListOptions([fieldForbidden('a', 'x'), fieldForbidden('b', 'y'), fieldForbidden('a', 'x')]);
  assert.equal(e.status.message, 'ListOptions.meta.k8s.io "" is invalid: [a: Forbidden: x, b: Forbidden: y]');
  assert.equal(e.status.details?.causes?.length, 3);
});

test('Status: notAcceptable is indented with no trailing newline', () => {
  const body = notAcceptable().body().toString();
  assert.ok(body.startsWith('{\n  "kind": "Status",\n'));
  assert.ok(body.endsWith('  "details": {},\n  "code": 406\n}'));
});

test('Status: expired continue carries the fresh token in metadata.continue', () => {
  const e = expiredContinue('tok');
  assert.equal(e.code, 410);
  assert.ok(
    e
      .body()
      .toString()
      .startsWith(
        '{"kind":"Status","apiVersion":"v1","metadata":{"continue":"tok"},"status":"Failure","message":"The provided continue parameter is too old',
      ),
  );
  assert.equal(expiredContinue().status.metadata.continue, undefined);
});

test('Status: watch-cache 410, 429 and 405 shapes', () => {
  assert.equal(tooOldResourceVersion(1, 3171407).status.message, 'too old resource version: 1 (3171407)');
  assert.deepEqual(tooManyRequests('slow down', 2).headers, { 'Retry-After': '2' });
  assert.equal(
    methodNotSupported('deployments.apps', 'watch').status.message,
    'watch is not supported on resources of kind "deployments.apps"',
  );
});

test('Status: StatusError serialises to its Status; empty fields are left out', () => {
  const e = notFound('pods', 'p');
  assert.ok(e instanceof Error);
  assert.ok(e instanceof StatusError);
  assert.deepEqual(JSON.parse(JSON.stringify(e)), e.status);
  assert.equal(
    statusBody({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 0 }).toString(),
    '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}\n',
  );
});
