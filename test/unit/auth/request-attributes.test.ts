import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requestAttributes } from '../../../src/auth/request-attributes.ts';
import { parseRequest } from '../../../src/request/parsed-request.ts';

const user = { username: 'system:node:n1', uid: '', groups: ['system:nodes', 'system:authenticated'], extra: {} };

test("request attributes: a list's or watch's selectors, as GetAuthorizerAttributes parses them", () => {
  const a = requestAttributes(
    user,
    parseRequest('GET', '/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1,status.phase!%3DFailed&labelSelector=b,a%20in%20(y,x)'),
  );
  assert.equal(a.verb, 'watch');
  // fields.ParseSelector: terms sorted as written, no resource's conversion.
  assert.deepEqual(a.fieldSelector, [
    { field: 'spec.nodeName', operator: '=', value: 'n1' },
    { field: 'status.phase', operator: '!=', value: 'Failed' },
  ]);
  // labels.Parse: sorted by key, values sorted.
  assert.deepEqual(a.labelSelector, [
    { key: 'a', operator: 'in', values: ['x', 'y'] },
    { key: 'b', operator: 'exists', values: [] },
  ]);
  // An alias is the authorizer's as written (spec.host is not spec.nodeName to the Node authorizer).
  assert.deepEqual(requestAttributes(user, parseRequest('GET', '/api/v1/pods?fieldSelector=spec.host%3Dn1')).fieldSelector, [
    { field: 'spec.host', operator: '=', value: 'n1' },
  ]);
});

test('request attributes: no selectors for a GET of one object, the /watch/ path form, or a selector that does not parse', () => {
  const get = requestAttributes(user, parseRequest('GET', '/api/v1/namespaces/ns/pods/p?fieldSelector=spec.nodeName%3Dn1'));
  assert.equal(get.verb, 'get');
  assert.deepEqual(get.fieldSelector, []);
  const legacy = requestAttributes(user, parseRequest('GET', '/api/v1/watch/pods?fieldSelector=metadata.name%3Dp&labelSelector=a'));
  assert.equal(legacy.verb, 'watch');
  assert.deepEqual(legacy.fieldSelector, []);
  assert.deepEqual(legacy.labelSelector, []);
  assert.equal(legacy.name, '', 'nor the name it selects');
  const bad = requestAttributes(user, parseRequest('GET', '/api/v1/pods?fieldSelector=spec.nodeName&labelSelector=a%20in%20x'));
  assert.deepEqual(bad.fieldSelector, []);
  assert.deepEqual(bad.labelSelector, []);
});

test('request attributes: a list selecting one metadata.name is authorized as of that name', () => {
  const a = requestAttributes(user, parseRequest('GET', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dcm'));
  assert.equal(a.verb, 'list');
  assert.equal(a.name, 'cm');
  assert.deepEqual(a.fieldSelector, [{ field: 'metadata.name', operator: '=', value: 'cm' }]);
  assert.equal(requestAttributes(user, parseRequest('GET', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3D..')).name, '');
});
