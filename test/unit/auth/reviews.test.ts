import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forbiddenFor, forbiddenMessage } from '../../../src/auth/forbidden.ts';
import {
  DEFAULT_ALLOWED_TTL_MS,
  DEFAULT_DENIED_TTL_MS,
  newSubjectAccessReviewAuthorizer,
} from '../../../src/auth/subject-access-review.ts';
import { DEFAULT_TOKEN_CACHE_TTL_MS, jwtExpiry, newTokenAuthenticator } from '../../../src/auth/token-review.ts';
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

test('subject access review: the selectors go in the spec as webhook.go writes them, and are part of the key', async () => {
  const specs: { resourceAttributes?: Record<string, unknown> }[] = [];
  const upstream = newFakeUpstream({
    respond: (request) => {
      specs.push((JSON.parse(String(request.body)) as { spec: { resourceAttributes?: Record<string, unknown> } }).spec);
      return jsonResponse(201, { status: { allowed: false } });
    },
  });
  const authz = newSubjectAccessReviewAuthorizer({ client: upstream.client, clock: new FakeClock() });
  const selectors: Partial<RequestAttributes> = {
    resource: 'pods',
    fieldSelector: [
      { field: 'spec.nodeName', operator: '=', value: 'n1' },
      { field: 'status.phase', operator: '!=', value: 'Failed' },
    ],
    labelSelector: [
      { key: 'a', operator: 'in', values: ['x', 'y'] },
      { key: 'b', operator: '!', values: [] },
      { key: 'c', operator: 'gt', values: ['1'] },
      { key: 'd', operator: 'exists', values: [] },
      { key: 'e', operator: '==', values: ['z'] },
      { key: 'f', operator: 'notin', values: ['w'] },
    ],
  };
  await authz.authorize(attributes(selectors));
  assert.deepEqual(specs[0]?.resourceAttributes, {
    namespace: 'default',
    verb: 'list',
    group: '',
    version: 'v1',
    resource: 'pods',
    subresource: '',
    name: '',
    fieldSelector: {
      requirements: [
        { key: 'spec.nodeName', operator: 'In', values: ['n1'] },
        { key: 'status.phase', operator: 'NotIn', values: ['Failed'] },
      ],
    },
    // `>` and `<` are left out: requirements are ANDed, so the review only gets broader.
    labelSelector: {
      requirements: [
        { key: 'a', operator: 'In', values: ['x', 'y'] },
        { key: 'b', operator: 'DoesNotExist' },
        { key: 'd', operator: 'Exists' },
        { key: 'e', operator: 'In', values: ['z'] },
        { key: 'f', operator: 'NotIn', values: ['w'] },
      ],
    },
  });
  // The same request again is the kept decision; another node's selector is another review.
  await authz.authorize(attributes(selectors));
  assert.equal(authz.reviews(), 1);
  await authz.authorize(attributes({ ...selectors, fieldSelector: [{ field: 'spec.nodeName', operator: '=', value: 'n2' }] }));
  assert.equal(authz.reviews(), 2);
  // Only `>`/`<`, or no selector at all: no selector in the spec, the unrestricted action.
  await authz.authorize(attributes({ resource: 'pods', labelSelector: [{ key: 'c', operator: 'lt', values: ['1'] }] }));
  await authz.authorize(attributes({ resource: 'pods', fieldSelector: [], labelSelector: [] }));
  assert.equal(authz.reviews(), 3, 'both are the same review');
  assert.equal(specs[2]?.resourceAttributes?.['labelSelector'], undefined);
  assert.equal(specs[2]?.resourceAttributes?.['fieldSelector'], undefined);
});

test('subject access review: decisions held in bytes; a ~1 MiB name is not kept; expired decisions dropped while idle', async () => {
  const clock = new FakeClock();
  const upstream = newFakeUpstream({ respond: () => jsonResponse(201, { status: { allowed: false, reason: '' } }) });
  const maxBytes = 1024 * 1024;
  const authz = newSubjectAccessReviewAuthorizer({ client: upstream.client, clock, maxBytes });
  // 100 GETs with ~1 MiB names: each reviewed (its sender's cost), none kept.
  const long = 'n'.repeat(1024 * 1024 - 100);
  for (let i = 0; i < 100; i++)
    assert.equal((await authz.authorize(attributes({ verb: 'get', name: `${long}${String(i)}` }))).allowed, false);
  await authz.authorize(attributes({ verb: 'get', name: `${long}0` }));
  assert.equal(authz.reviews(), 101, 'a large key is asked again');
  assert.equal(authz.cachedBytes(), 0);
  // A flood of distinct small denials: the least recently used go, the bytes stay within the bound.
  for (let i = 0; i < 10_000; i++) await authz.authorize(attributes({ verb: 'get', name: `cm-${String(i)}` }));
  assert.ok(authz.cachedBytes() <= maxBytes, String(authz.cachedBytes()));
  assert.ok(authz.cachedBytes() > maxBytes / 2, 'and the cache is used');
  const reviews = authz.reviews();
  await authz.authorize(attributes({ verb: 'get', name: 'cm-9999' }));
  assert.equal(authz.reviews(), reviews, 'the newest are kept');
  // Nobody asks for a while: the denials expire and their bytes are given back.
  clock.step(DEFAULT_DENIED_TTL_MS + 30_001);
  assert.equal(authz.cachedBytes(), 0);
});

/** A JWT-shaped token with `claims` (its signature is not what the proxy reads). */
function jwt(claims: Record<string, unknown>): string {
  const part = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'RS256', kid: 'k' })}.${part(claims)}.c2lnbmF0dXJl`;
}

test("token review: a JWT's exp caps how long its acceptance is kept; a token that is not a JWT keeps the TTL", async () => {
  const clock = new FakeClock();
  const upstream = newFakeUpstream({
    respond: (request) => {
      const token = (JSON.parse(String(request.body)) as { spec: { token: string } }).spec.token;
      return token.startsWith('refused')
        ? jsonResponse(201, { status: { authenticated: false, error: 'invalid bearer token' } })
        : jsonResponse(201, { status: { authenticated: true, user: { username: 'u' } } });
    },
  });
  const authn = newTokenAuthenticator({ client: upstream.client, clock });
  const nowSeconds = clock.wallNow() / 1000;
  // Valid 30 s more: kept 30 s, not the 2 minutes.
  const short = jwt({ sub: 'system:serviceaccount:ns:sa', exp: nowSeconds + 30 });
  assert.equal(jwtExpiry(short), (nowSeconds + 30) * 1000);
  assert.equal((await authn.authenticate(short)).authenticated, true);
  clock.step(30_000);
  await authn.authenticate(short);
  assert.equal(authn.reviews(), 1, 'kept until its exp');
  clock.step(1);
  await authn.authenticate(short);
  assert.equal(authn.reviews(), 2, 'reviewed again past its exp');
  // Past its exp already (the apiserver's clock a little behind): asked every time.
  const expired = jwt({ exp: clock.wallNow() / 1000 - 1 });
  await authn.authenticate(expired);
  await authn.authenticate(expired);
  assert.equal(authn.reviews(), 4);
  // Valid for a day: the TTL.
  const long = jwt({ exp: clock.wallNow() / 1000 + 86_400 });
  await authn.authenticate(long);
  clock.step(DEFAULT_TOKEN_CACHE_TTL_MS);
  await authn.authenticate(long);
  assert.equal(authn.reviews(), 5);
  clock.step(1);
  await authn.authenticate(long);
  assert.equal(authn.reviews(), 6);
  // Not JWTs (a static token, three parts that are not JSON, no numeric exp): the TTL.
  for (const token of ['static-token', 'a.b.c', jwt({ exp: 'soon' }), jwt({ sub: 'x' })]) {
    assert.equal(jwtExpiry(token), undefined, token);
    const before = authn.reviews();
    await authn.authenticate(token);
    clock.step(DEFAULT_TOKEN_CACHE_TTL_MS);
    await authn.authenticate(token);
    assert.equal(authn.reviews(), before + 1, `${token} kept for the TTL`);
    clock.step(1);
  }
  // A refusal is kept for the TTL whatever its exp says (the token stays refused).
  const refused = `refused.${jwt({ exp: clock.wallNow() / 1000 - 100 }).split('.')[1] ?? ''}.x`;
  const before = authn.reviews();
  await authn.authenticate(refused);
  await authn.authenticate(refused);
  assert.equal(authn.reviews(), before + 1);
});

test('token review: results held in bytes, and dropped once expired while idle', async () => {
  const clock = new FakeClock();
  const upstream = newFakeUpstream({
    respond: () => jsonResponse(201, { status: { authenticated: false, error: 'invalid bearer token' } }),
  });
  const maxBytes = 256 * 1024;
  const authn = newTokenAuthenticator({ client: upstream.client, clock, maxBytes });
  for (let i = 0; i < 5_000; i++) await authn.authenticate(`junk-${String(i)}`);
  assert.ok(authn.cachedBytes() <= maxBytes && authn.cachedBytes() > maxBytes / 2, String(authn.cachedBytes()));
  clock.step(DEFAULT_TOKEN_CACHE_TTL_MS + 30_001);
  assert.equal(authn.cachedBytes(), 0);
});
