import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forbiddenFor, forbiddenMessage } from '../../../src/auth/forbidden.ts';
import {
  DEFAULT_ALLOWED_TTL_MS,
  DEFAULT_DENIED_TTL_MS,
  newSubjectAccessReviewAuthorizer,
} from '../../../src/auth/subject-access-review.ts';
import { DEFAULT_TOKEN_CACHE_TTL_MS, newTokenAuthenticator } from '../../../src/auth/token-review.ts';
import type { RequestAttributes } from '../../../src/auth/user-info.ts';
import type { UpstreamRequest } from '../../../src/upstream/client.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';

const alice = { username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: {} };

function attributes(overrides: Partial<RequestAttributes> = {}): RequestAttributes {
  return {
    user: alice,
    verb: 'list',
    resourceRequest: true,
    namespace: 'default',
    apiGroup: '',
    apiVersion: 'v1',
    resource: 'configmaps',
    subresource: '',
    name: '',
    path: '/api/v1/namespaces/default/configmaps',
    ...overrides,
  };
}

test('token review: kept for the TTL under a hash of the token, one review for concurrent requests, failed reviews not kept', async () => {
  const clock = new FakeClock();
  const bodies: string[] = [];
  let fail = false;
  const upstream = newFakeUpstream({
    respond: (request: UpstreamRequest) => {
      bodies.push(String(request.body));
      if (fail) return jsonResponse(500, {});
      const token = (JSON.parse(String(request.body)) as { spec: { token: string } }).spec.token;
      return token === 'good'
        ? jsonResponse(201, {
            status: { authenticated: true, user: { username: 'alice', uid: 'u-1', groups: ['dev'] }, audiences: ['api'] },
          })
        : jsonResponse(201, { status: { authenticated: false, error: 'invalid bearer token' } });
    },
  });
  const authn = newTokenAuthenticator({ client: upstream.client, clock, audiences: ['api'] });
  const [a, b] = await Promise.all([authn.authenticate('good'), authn.authenticate('good')]);
  assert.deepEqual(a, { authenticated: true, user: { username: 'alice', uid: 'u-1', groups: ['dev'], extra: {} } });
  assert.deepEqual(b, a);
  assert.equal(authn.reviews(), 1, 'one review for two concurrent requests');
  assert.deepEqual(JSON.parse(bodies[0] ?? ''), {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    spec: { token: 'good', audiences: ['api'] },
  });
  assert.deepEqual(await authn.authenticate('bad'), { authenticated: false, reason: 'invalid bearer token' });
  await authn.authenticate('bad');
  assert.equal(authn.reviews(), 2, 'a refusal is kept too');
  clock.step(DEFAULT_TOKEN_CACHE_TTL_MS + 1);
  fail = true;
  await assert.rejects(authn.authenticate('good'), /TokenReview answered 500/);
  await assert.rejects(authn.authenticate('good'), /TokenReview answered 500/);
  assert.equal(authn.reviews(), 4, 'a failed review is asked again');
});

test('token review: a token authenticated for none of the accepted audiences is refused', async () => {
  const upstream = newFakeUpstream({
    respond: () => jsonResponse(201, { status: { authenticated: true, user: { username: 'x' }, audiences: ['other'] } }),
  });
  const authn = newTokenAuthenticator({ client: upstream.client, audiences: ['api'] });
  assert.equal((await authn.authenticate('t')).authenticated, false);
});

test('subject access review: allowed kept 5 minutes, denied 30 seconds, keyed by the whole spec', async () => {
  const clock = new FakeClock();
  const specs: unknown[] = [];
  let allow = true;
  const upstream = newFakeUpstream({
    respond: (request) => {
      specs.push((JSON.parse(String(request.body)) as { spec: unknown }).spec);
      return jsonResponse(201, { status: { allowed: allow, reason: allow ? 'RBAC: allowed' : '' } });
    },
  });
  const authz = newSubjectAccessReviewAuthorizer({ client: upstream.client, clock });
  assert.deepEqual(await authz.authorize(attributes()), { allowed: true, reason: 'RBAC: allowed' });
  assert.deepEqual(specs[0], {
    resourceAttributes: { namespace: 'default', verb: 'list', group: '', version: 'v1', resource: 'configmaps', subresource: '', name: '' },
    user: 'alice',
    groups: ['dev', 'system:authenticated'],
    extra: {},
    uid: 'u-1',
  });
  clock.step(DEFAULT_ALLOWED_TTL_MS - 1);
  await authz.authorize(attributes());
  assert.equal(authz.reviews(), 1);
  // Another verb is another decision.
  allow = false;
  assert.equal((await authz.authorize(attributes({ verb: 'watch' }))).allowed, false);
  assert.equal(authz.reviews(), 2);
  clock.step(DEFAULT_DENIED_TTL_MS - 1);
  await authz.authorize(attributes({ verb: 'watch' }));
  assert.equal(authz.reviews(), 2, 'a denial is kept 30 s');
  clock.step(2);
  allow = true;
  assert.equal((await authz.authorize(attributes({ verb: 'watch' }))).allowed, true, 'then asked again');
  assert.equal(authz.reviews(), 3);
  assert.equal((await authz.authorize(attributes({ resourceRequest: false, verb: 'get', path: '/version' }))).allowed, true);
  assert.deepEqual(specs[3], {
    nonResourceAttributes: { path: '/version', verb: 'get' },
    user: 'alice',
    groups: alice.groups,
    extra: {},
    uid: 'u-1',
  });
});

test("forbidden: the apiserver's words for namespaced, cluster-scoped, named, subresource and non-resource requests", () => {
  assert.equal(
    forbiddenFor(attributes(), '').status.message,
    'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default"',
  );
  assert.equal(
    forbiddenFor(attributes({ namespace: '', apiGroup: 'apps', resource: 'deployments', verb: 'watch' }), '').status.message,
    'deployments.apps is forbidden: User "alice" cannot watch resource "deployments" in API group "apps" at the cluster scope',
  );
  const named = forbiddenFor(attributes({ verb: 'get', name: 'cm', subresource: 'status' }), 'RBAC: role "x" not found');
  assert.equal(
    named.status.message,
    'configmaps "cm" is forbidden: User "alice" cannot get resource "configmaps/status" in API group "" in the namespace "default": RBAC: role "x" not found',
  );
  assert.deepEqual(named.status.details, { name: 'cm', group: '', kind: 'configmaps' });
  assert.equal(
    forbiddenMessage(attributes({ resourceRequest: false, verb: 'get', path: '/metrics' })),
    'User "alice" cannot get path "/metrics"',
  );
  // The sanitizer: nothing that reads as HTML.
  assert.match(forbiddenFor(attributes({ user: { ...alice, username: '<b>&' } }), '').status.message ?? '', /User "&lt;b&gt;&amp;"/);
});
