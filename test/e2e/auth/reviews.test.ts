/**
 * The shared mode's authentication and authorization pieces against the real apiserver with RBAC:
 * for a matrix of identities x namespaces x verbs x types, what TokenReview and SubjectAccessReview
 * decide is what the apiserver does with the same token, and a refusal's Status is the
 * apiserver's, byte for byte.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { forbiddenFor, unauthorized } from '../../../src/auth/forbidden.ts';
import { newSubjectAccessReviewAuthorizer } from '../../../src/auth/subject-access-review.ts';
import { newTokenAuthenticator } from '../../../src/auth/token-review.ts';
import type { RequestAttributes, UserInfo } from '../../../src/auth/user-info.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube, serviceAccountToken } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

/** The apiserver's answer to `path` with `token`: status and body (a watch's body is not read). */
async function asUser(t: TestContext, token: string, path: string): Promise<{ status: number; body: string }> {
  const cp = shared.cp;
  const client = newUpstreamClient({ ...(await upstreamConfigFor(cp)), authorization: () => Promise.resolve(`Bearer ${token}`) });
  t.after(() => client.close());
  const abort = new AbortController();
  const res = await client.stream({ method: 'GET', path, signal: abort.signal, headers: { accept: 'application/json' } });
  if (res.statusCode === 200) {
    abort.abort();
    res.body.resume();
    return { status: 200, body: '' };
  }
  return { status: res.statusCode, body: await res.body.text() };
}

test(
  'reviews: for admin, a namespaced Role, a get-only ClusterRole, nothing, and service accounts, SAR decides as the apiserver and a refusal is its Status word for word',
  { timeout: 120_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns1 = await testNamespace(t, admin);
    const ns2 = await testNamespace(t, admin);
    const suffix = randomBytes(3).toString('hex');
    await kube(admin, 'POST', `/api/v1/namespaces/${ns1}/configmaps`, { metadata: { name: 'cm' } });
    await kube(admin, 'POST', `/api/v1/namespaces/${ns2}/configmaps`, { metadata: { name: 'cm' } });
    // alice: read configmaps in ns1 only (a Role).
    await kube(admin, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns1}/roles`, {
      metadata: { name: 'reader' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    });
    await kube(admin, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns1}/rolebindings`, {
      metadata: { name: 'alice-reads' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
      subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }],
    });
    // A service account allowed only `get` on configmaps, everywhere (a ClusterRole).
    const getter = await serviceAccountToken(admin, ns1, 'getter');
    const role = `kcp-get-cm-${suffix}`;
    await kube(admin, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      metadata: { name: role },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    });
    await kube(admin, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: role },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: 'getter', namespace: ns1 }],
    });
    t.after(async () => {
      await admin.request({ method: 'DELETE', path: `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${role}` });
      await admin.request({ method: 'DELETE', path: `/apis/rbac.authorization.k8s.io/v1/clusterroles/${role}` });
    });
    const nobody = await serviceAccountToken(admin, ns2, 'nobody');
    const identities: Record<string, string> = {
      admin: cp.users.admin.token,
      alice: cp.users.alice.token,
      bob: cp.users.bob.token,
      getter,
      nobody,
    };

    const authn = newTokenAuthenticator({ client: admin });
    const authz = newSubjectAccessReviewAuthorizer({ client: admin });
    // RBAC objects are read by the apiserver's authorizer from its informers: wait until they are in force.
    await eventually('the RBAC grants to be in force', async () => {
      const a = await asUser(t, identities['alice'] ?? '', `/api/v1/namespaces/${ns1}/configmaps`);
      const g = await asUser(t, getter, `/api/v1/namespaces/${ns2}/configmaps/cm`);
      return a.status === 200 && g.status === 200;
    });

    const types = [
      { apiGroup: '', apiVersion: 'v1', resource: 'configmaps', prefix: '/api/v1' },
      { apiGroup: 'apps', apiVersion: 'v1', resource: 'deployments', prefix: '/apis/apps/v1' },
    ];
    let cells = 0;
    let refused = 0;
    for (const [who, token] of Object.entries(identities)) {
      const authentication = await authn.authenticate(token);
      assert.ok(authentication.authenticated, `${who} is authenticated`);
      const user: UserInfo = authentication.user;
      for (const type of types) {
        for (const ns of [ns1, ns2, '']) {
          for (const verb of ['get', 'list', 'watch']) {
            if (verb === 'get' && ns === '') continue;
            const name = verb === 'get' ? 'cm' : '';
            const base = ns === '' ? `${type.prefix}/${type.resource}` : `${type.prefix}/namespaces/${ns}/${type.resource}`;
            const path = verb === 'get' ? `${base}/${name}` : verb === 'watch' ? `${base}?watch=1` : base;
            const attributes: RequestAttributes = {
              user,
              verb,
              resourceRequest: true,
              namespace: ns,
              apiGroup: type.apiGroup,
              apiVersion: type.apiVersion,
              resource: type.resource,
              subresource: '',
              name,
              path,
            };
            const decision = await authz.authorize(attributes);
            const apiserver = await asUser(t, token, path);
            const cell = `${who} ${verb} ${path}`;
            cells++;
            if (decision.allowed) {
              // Allowed: the apiserver serves it (a 404 for a deployment named cm is still served).
              assert.ok(
                apiserver.status === 200 || apiserver.status === 404,
                `${cell}: allowed by SAR, the apiserver says ${String(apiserver.status)}`,
              );
            } else {
              refused++;
              assert.equal(apiserver.status, 403, `${cell}: denied by SAR`);
              assert.equal(forbiddenFor(attributes, decision.reason).body().toString(), apiserver.body, cell);
            }
          }
        }
      }
    }
    assert.ok(cells >= 60 && refused >= 20, `a matrix with refusals: ${String(cells)} cells, ${String(refused)} refused`);

    // A token the apiserver does not know: 401, its Status word for word.
    const bad = await authn.authenticate('not-a-token');
    assert.equal(bad.authenticated, false);
    const apiserver = await asUser(t, 'not-a-token', `/api/v1/namespaces/${ns1}/configmaps`);
    assert.equal(apiserver.status, 401);
    assert.equal(unauthorized().body().toString(), apiserver.body);
    // Each decision was asked once: the rest came from the caches.
    const before = { tokens: authn.reviews(), decisions: authz.reviews() };
    await authn.authenticate(identities['alice'] ?? '');
    await authz.authorize({
      user: { username: 'alice', uid: '', groups: ['system:authenticated'], extra: {} },
      verb: 'list',
      resourceRequest: true,
      namespace: ns1,
      apiGroup: '',
      apiVersion: 'v1',
      resource: 'configmaps',
      subresource: '',
      name: '',
      path: '',
    });
    assert.equal(authn.reviews(), before.tokens, 'a known token is not reviewed again');
  },
);

test(
  'reviews: a token whose ServiceAccount is deleted is refused no later than the token cache TTL after the apiserver refuses it',
  { timeout: 60_000 },
  async (t) => {
    const { admin } = shared;
    const ns = await testNamespace(t, admin);
    const token = await serviceAccountToken(admin, ns, 'doomed');
    const ttlMs = 2_000;
    const authn = newTokenAuthenticator({ client: admin, ttlMs });
    assert.equal((await authn.authenticate(token)).authenticated, true);
    await kube(admin, 'DELETE', `/api/v1/namespaces/${ns}/serviceaccounts/doomed`);
    // The apiserver keeps its own token decisions for 10 s (pkg/kubeapiserver/authenticator
    // config.go: tokencache.New(..., 10*time.Second, 10*time.Second)): the proxy's TTL counts
    // from when the apiserver itself refuses the token.
    let apiserverRefused: number | undefined;
    let proxyRefused: number | undefined;
    await eventually(
      'the apiserver and the proxy to refuse the revoked token',
      async () => {
        if (apiserverRefused === undefined && (await asUser(t, token, `/api/v1/namespaces/${ns}/configmaps`)).status === 401) {
          apiserverRefused = performance.now();
        }
        if (proxyRefused === undefined && !(await authn.authenticate(token)).authenticated) proxyRefused = performance.now();
        return apiserverRefused !== undefined && proxyRefused !== undefined;
      },
      30_000,
    );
    const lag = (proxyRefused ?? 0) - (apiserverRefused ?? 0);
    assert.ok(lag <= ttlMs + 500, `refused ${String(Math.round(lag))} ms after the apiserver (TTL ${String(ttlMs)} ms)`);
  },
);
