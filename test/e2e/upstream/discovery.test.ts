/**
 * Discovery against the real apiserver: built-in resources resolve with the apiserver's kind,
 * scope and verbs; an unchanged refresh is revalidated with 304s; a CRD shows up (reported added)
 * and goes away (reported removed); the legacy documents give the same map as aggregated ones.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UpstreamClient } from '../../../src/upstream/client.ts';
import { newDiscovery } from '../../../src/upstream/discovery.ts';
import type { ResourceInfo } from '../../../src/upstream/resource-map.ts';
import { isCacheable, resourceKey } from '../../../src/upstream/resource-map.ts';
import { useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { testCrd } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

interface Seen {
  readonly path: string;
  readonly accept: string | undefined;
  readonly status: number;
}

/** The admin client, recording each request's path, Accept and answer; `accept` overrides the Accept header. */
function recording(client: UpstreamClient, accept?: string): { client: UpstreamClient; seen: Seen[] } {
  const seen: Seen[] = [];
  return {
    seen,
    client: {
      ...client,
      async request(req) {
        const headers = accept === undefined ? req.headers : { ...req.headers, accept };
        const res = await client.request({ ...req, ...(headers === undefined ? {} : { headers }) });
        seen.push({ path: req.path, accept: headers?.accept, status: res.statusCode });
        return res;
      },
    },
  };
}

function mustResolve(info: ResourceInfo | undefined, what: string): ResourceInfo {
  assert.ok(info !== undefined, `${what} not in discovery`);
  return info;
}

test('discovery: built-in resources resolve with kind, scope, verbs and subresources from aggregated discovery', async () => {
  const { client, seen } = recording(shared.admin);
  const discovery = newDiscovery(client);
  const result = await discovery.refresh();

  assert.equal(result.mode, 'aggregated');
  assert.deepEqual(seen.map((s) => s.path).sort(), ['/api', '/apis'], 'aggregated discovery is two requests');
  assert.equal(result.added.length, discovery.all().length, 'the first refresh reports every resource added');

  const pods = mustResolve(discovery.resolve('', 'v1', 'pods'), 'pods');
  assert.equal(pods.kind, 'Pod');
  assert.equal(pods.namespaced, true);
  assert.equal(pods.singular, 'pod');
  assert.ok(pods.shortNames.includes('po'));
  assert.ok(pods.categories.includes('all'));
  for (const verb of ['get', 'list', 'watch', 'create', 'delete', 'deletecollection']) assert.ok(pods.verbs.includes(verb), verb);
  for (const sub of ['log', 'exec', 'status', 'portforward', 'eviction']) {
    assert.ok(
      pods.subresources.some((s) => s.subresource === sub),
      `pods/${sub}`,
    );
  }
  assert.equal(isCacheable(pods), true);
  const log = mustResolve(discovery.resolve('', 'v1', 'pods/log'), 'pods/log');
  assert.equal(log.subresource, 'log');
  assert.equal(log.namespaced, true);
  assert.equal(isCacheable(log), false);

  const configmaps = mustResolve(discovery.resolve('', 'v1', 'configmaps'), 'configmaps');
  assert.equal(configmaps.kind, 'ConfigMap');
  assert.equal(configmaps.namespaced, true);
  assert.ok(configmaps.shortNames.includes('cm'));
  assert.equal(isCacheable(configmaps), true);

  const namespaces = mustResolve(discovery.resolve('', 'v1', 'namespaces'), 'namespaces');
  assert.equal(namespaces.kind, 'Namespace');
  assert.equal(namespaces.namespaced, false);
  assert.equal(isCacheable(namespaces), true);

  const deployments = mustResolve(discovery.resolve('apps', 'v1', 'deployments'), 'deployments.apps');
  assert.equal(deployments.kind, 'Deployment');
  assert.equal(deployments.namespaced, true);
  assert.deepEqual(deployments.responseKind, { group: 'apps', version: 'v1', kind: 'Deployment' });
  assert.ok(deployments.shortNames.includes('deploy'));
  const scale = mustResolve(discovery.resolve('apps', 'v1', 'deployments/scale'), 'deployments/scale');
  assert.deepEqual(scale.responseKind, { group: 'autoscaling', version: 'v1', kind: 'Scale' });
  assert.equal(isCacheable(scale), false);

  const leases = mustResolve(discovery.resolve('coordination.k8s.io', 'v1', 'leases'), 'leases');
  assert.equal(leases.kind, 'Lease');
  assert.equal(leases.namespaced, true);
  assert.equal(isCacheable(leases), true);

  const reviews = mustResolve(discovery.resolve('authentication.k8s.io', 'v1', 'selfsubjectreviews'), 'selfsubjectreviews');
  assert.equal(reviews.kind, 'SelfSubjectReview');
  assert.equal(reviews.namespaced, false);
  assert.deepEqual(reviews.verbs, ['create']);
  assert.equal(isCacheable(reviews), false);

  assert.equal(discovery.preferredVersion(''), 'v1');
  assert.equal(discovery.preferredVersion('apps'), 'v1');
  assert.equal(discovery.resolve('apps', 'v1', 'nosuchthings'), undefined);
  assert.equal(discovery.resolve('nosuch.example.com', 'v1', 'things'), undefined);
});

test('discovery: an unchanged refresh is revalidated with If-None-Match and answered 304', async () => {
  const { client, seen } = recording(shared.admin);
  const discovery = newDiscovery(client);
  await discovery.refresh();
  assert.deepEqual(
    seen.map((s) => s.status),
    [200, 200],
    'both documents read',
  );
  const before = discovery.current();

  // /apis may change under a shared control plane (other files create CRDs): retry until a quiet moment.
  let result = await discovery.refresh();
  for (let i = 0; i < 10 && !result.notModified; i++) result = await discovery.refresh();
  assert.equal(result.notModified, true);
  assert.deepEqual(result.added, []);
  assert.deepEqual(result.removed, []);
  const last = seen.slice(-2);
  assert.deepEqual(last.map((s) => [s.path, s.status]).sort(), [
    ['/api', 304],
    ['/apis', 304],
  ]);
  assert.equal(
    seen.filter((s) => s.path === '/api').every((s, i) => s.status === (i === 0 ? 200 : 304)),
    true,
    '/api (the core group) never changes: every refresh after the first is a 304',
  );
  if (seen.length === 4) assert.equal(discovery.current(), before, 'a 304 keeps the same map');
});

test('discovery: a CRD appears after invalidate() (reported added) and disappears once deleted (reported removed)', async (t) => {
  const discovery = newDiscovery(shared.admin, { periodMs: 3_600_000 });
  const added: ResourceInfo[] = [];
  const removed: ResourceInfo[] = [];
  discovery.onChange((a, r) => {
    added.push(...a);
    removed.push(...r);
  });
  const stop = new AbortController();
  const loop = discovery.start(stop.signal);
  t.after(async () => {
    stop.abort();
    await loop;
  });
  await eventually('the first discovery', () => discovery.hasSynced());
  added.length = 0;

  const crd = await testCrd(t, shared.admin);
  const key = resourceKey({ group: crd.group, version: crd.version, resource: crd.plural });
  await eventually(`${key} reported added`, () => {
    discovery.invalidate();
    return added.some((r) => resourceKey(r) === key);
  });
  const info = mustResolve(discovery.resolve(crd.group, crd.version, crd.plural), crd.plural);
  assert.equal(info.kind, crd.kind);
  assert.equal(info.namespaced, true);
  assert.equal(info.singular, crd.plural.slice(0, -1));
  assert.equal(discovery.preferredVersion(crd.group), crd.version);
  assert.equal(isCacheable(info), true);
  assert.deepEqual(
    removed.filter((r) => resourceKey(r) === key),
    [],
  );

  const res = await shared.admin.request({
    method: 'DELETE',
    path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.plural}.${crd.group}`,
  });
  assert.equal(res.statusCode, 200, res.body.toString());
  // While the CRD terminates, the apiserver still serves it with fewer verbs (a change: reported
  // removed and added again); it is gone once the deletion completes.
  await eventually(`${key} gone`, () => {
    discovery.invalidate();
    return discovery.resolve(crd.group, crd.version, crd.plural) === undefined;
  });
  assert.ok(
    removed.some((r) => resourceKey(r) === key),
    `${key} reported removed`,
  );
});

test('discovery: the legacy documents (no aggregated Accept) give the same map as aggregated discovery', async () => {
  const aggregated = newDiscovery(shared.admin);
  const legacyClient = recording(shared.admin, 'application/json');
  const legacy = newDiscovery(legacyClient.client);
  const [a, l] = await Promise.all([aggregated.refresh(), legacy.refresh()]);
  assert.equal(a.mode, 'aggregated');
  assert.equal(l.mode, 'legacy');
  assert.ok(legacyClient.seen.some((s) => s.path === '/api/v1'));
  assert.ok(legacyClient.seen.some((s) => s.path === '/apis/apps/v1'));
  assert.deepEqual(legacy.staleGroupVersions(), []);

  // Other test files' CRDs may come and go meanwhile: compare the built-in groups.
  const summary = (all: readonly ResourceInfo[]): unknown[] =>
    all
      .filter((r) => !r.group.endsWith('.test'))
      .map((r) => ({
        key: resourceKey(r),
        kind: r.kind,
        responseKind: r.responseKind,
        namespaced: r.namespaced,
        verbs: [...r.verbs].sort(),
        singular: r.singular,
        shortNames: [...r.shortNames].sort(),
        categories: [...r.categories].sort(),
        subresources: r.subresources.map((s) => s.subresource).sort(),
        preferredVersion: r.preferredVersion,
      }));
  assert.deepEqual(summary(legacy.all()), summary(aggregated.all()));
  assert.ok(aggregated.all().length > 40);
});
