import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { newDiscovery } from '../../../src/upstream/discovery.ts';
import type { ResourceInfo } from '../../../src/upstream/resource-map.ts';
import { isCacheable, resourceKey } from '../../../src/upstream/resource-map.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import type { FakeGroup } from '../../helpers/fake-discovery.ts';
import { fakeResource, newFakeDiscoveryServer } from '../../helpers/fake-discovery.ts';

function cluster(): FakeGroup[] {
  return [
    {
      name: '',
      versions: [
        {
          version: 'v1',
          resources: [
            fakeResource('', 'v1', 'pods', 'Pod', {
              shortNames: ['po'],
              categories: ['all'],
              subresources: [
                { subresource: 'log', responseKind: { group: '', version: 'v1', kind: 'Pod' }, verbs: ['get'] },
                { subresource: 'status', responseKind: { group: '', version: 'v1', kind: 'Pod' }, verbs: ['get', 'patch', 'update'] },
              ],
            }),
            fakeResource('', 'v1', 'namespaces', 'Namespace', { scope: 'Cluster', shortNames: ['ns'] }),
          ],
        },
      ],
    },
    {
      name: 'apps',
      versions: [
        {
          version: 'v1',
          resources: [
            fakeResource('apps', 'v1', 'deployments', 'Deployment', {
              subresources: [
                { subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: ['get'] },
              ],
            }),
          ],
        },
      ],
    },
    {
      name: 'authentication.k8s.io',
      versions: [
        {
          version: 'v1',
          resources: [
            fakeResource('authentication.k8s.io', 'v1', 'selfsubjectreviews', 'SelfSubjectReview', { scope: 'Cluster', verbs: ['create'] }),
          ],
        },
      ],
    },
    {
      name: 'example.com',
      versions: [
        { version: 'v2', resources: [fakeResource('example.com', 'v2', 'widgets', 'Widget')] },
        { version: 'v1', resources: [fakeResource('example.com', 'v1', 'widgets', 'Widget')] },
      ],
    },
  ];
}

const keys = (infos: readonly ResourceInfo[]): string[] => infos.map(resourceKey).sort();

for (const aggregated of [true, false]) {
  const mode = aggregated ? 'aggregated' : 'legacy';

  test(`Discovery (${mode}): resolves kind, scope, verbs, names, subresources and preferred versions`, async () => {
    const server = newFakeDiscoveryServer(cluster());
    server.aggregated = aggregated;
    const discovery = newDiscovery(server.client);
    assert.equal(discovery.hasSynced(), false);
    assert.deepEqual(discovery.all(), []);

    const result = await discovery.refresh();
    assert.equal(result.mode, mode);
    assert.equal(discovery.hasSynced(), true);
    assert.deepEqual(keys(result.added), [
      '/v1/namespaces',
      '/v1/pods',
      'apps/v1/deployments',
      'authentication.k8s.io/v1/selfsubjectreviews',
      'example.com/v1/widgets',
      'example.com/v2/widgets',
    ]);
    assert.deepEqual(keys(discovery.all()), keys(result.added));

    const pods = discovery.resolve('', 'v1', 'pods');
    assert.ok(pods !== undefined);
    assert.equal(pods.kind, 'Pod');
    assert.equal(pods.namespaced, true);
    assert.equal(pods.singular, 'pod');
    assert.deepEqual(pods.shortNames, ['po']);
    assert.deepEqual(pods.categories, ['all']);
    assert.deepEqual(
      pods.subresources.map((s) => s.subresource),
      ['log', 'status'],
    );
    assert.equal(pods.preferredVersion, 'v1');
    assert.equal(isCacheable(pods), true);

    const status = discovery.resolve('', 'v1', 'pods/status');
    assert.ok(status !== undefined);
    assert.equal(status.subresource, 'status');
    assert.equal(status.resource, 'pods');
    assert.deepEqual(status.verbs, ['get', 'patch', 'update']);
    assert.equal(isCacheable(status), false);
    assert.equal(discovery.resolve('', 'v1', 'pods/nope'), undefined);

    assert.equal(discovery.resolve('', 'v1', 'namespaces')?.namespaced, false);
    const scale = discovery.resolve('apps', 'v1', 'deployments/scale');
    assert.deepEqual(scale?.responseKind, { group: 'autoscaling', version: 'v1', kind: 'Scale' });
    const reviews = discovery.resolve('authentication.k8s.io', 'v1', 'selfsubjectreviews');
    assert.ok(reviews !== undefined);
    assert.equal(isCacheable(reviews), false);

    assert.equal(discovery.preferredVersion('example.com'), 'v2');
    assert.equal(discovery.resolve('example.com', 'v1', 'widgets')?.preferredVersion, 'v2');
    assert.equal(discovery.preferredVersion('nope.example.com'), undefined);
    assert.equal(discovery.resolve('apps', 'v2', 'deployments'), undefined);
  });
}

test('Discovery: aggregated discovery is two requests, revalidated with the ETag; 304s keep the same map', async () => {
  const server = newFakeDiscoveryServer(cluster());
  const discovery = newDiscovery(server.client);
  await discovery.refresh();
  assert.deepEqual(
    server.seen.map((s) => [s.path, s.ifNoneMatch, s.status]),
    [
      ['/api', undefined, 200],
      ['/apis', undefined, 200],
    ],
  );
  const map = discovery.current();

  const result = await discovery.refresh();
  assert.deepEqual(result, { added: [], removed: [], notModified: true, mode: 'aggregated' });
  assert.deepEqual(
    server.seen.slice(2).map((s) => [s.path, s.status]),
    [
      ['/api', 304],
      ['/apis', 304],
    ],
  );
  assert.ok(server.seen[2]?.ifNoneMatch?.startsWith('"'));
  assert.equal(discovery.current(), map);

  // /apis changes, /api does not: one 304 and one 200 with the new document.
  server.groups.push({
    name: 'new.example.com',
    versions: [{ version: 'v1', resources: [fakeResource('new.example.com', 'v1', 'gadgets', 'Gadget')] }],
  });
  const changed = await discovery.refresh();
  assert.equal(changed.notModified, false);
  assert.deepEqual(keys(changed.added), ['new.example.com/v1/gadgets']);
  assert.deepEqual(
    server.seen.slice(4).map((s) => [s.path, s.status]),
    [
      ['/api', 304],
      ['/apis', 200],
    ],
  );
  assert.ok(discovery.resolve('', 'v1', 'pods') !== undefined, 'the core group, not modified, is kept');
});

test('Discovery: onChange reports added and removed resources; a changed resource is removed and added', async () => {
  const server = newFakeDiscoveryServer(cluster());
  const discovery = newDiscovery(server.client);
  const changes: [string[], string[]][] = [];
  const unregister = discovery.onChange((added, removed) => {
    changes.push([keys(added), keys(removed)]);
  });
  await discovery.refresh();
  assert.equal(changes.length, 1, 'the first refresh reports everything added');
  assert.equal(changes[0]?.[0].length, 6);

  const example = server.groups.find((g) => g.name === 'example.com');
  assert.ok(example !== undefined);
  example.versions = [{ version: 'v2', resources: [fakeResource('example.com', 'v2', 'widgets', 'Widget', { scope: 'Cluster' })] }];
  server.groups.push({
    name: 'new.example.com',
    versions: [{ version: 'v1', resources: [fakeResource('new.example.com', 'v1', 'gadgets', 'Gadget')] }],
  });
  await discovery.refresh();
  assert.deepEqual(changes[1], [
    ['example.com/v2/widgets', 'new.example.com/v1/gadgets'],
    ['example.com/v1/widgets', 'example.com/v2/widgets'],
  ]);
  assert.equal(discovery.resolve('example.com', 'v2', 'widgets')?.namespaced, false);
  assert.equal(discovery.resolve('example.com', 'v1', 'widgets'), undefined);

  await discovery.refresh();
  assert.equal(changes.length, 2, 'no change, no call');

  unregister();
  server.groups = server.groups.filter((g) => g.name !== 'new.example.com');
  const result = await discovery.refresh();
  assert.deepEqual(keys(result.removed), ['new.example.com/v1/gadgets']);
  assert.equal(changes.length, 2, 'unregistered');
});

test('Discovery: a handler that throws does not stop the others nor the refresh', async () => {
  const server = newFakeDiscoveryServer(cluster());
  const logs: string[] = [];
  const discovery = newDiscovery(server.client, { log: (_level, message) => logs.push(message) });
  let called = false;
  discovery.onChange(() => {
    throw new Error('boom');
  });
  discovery.onChange(() => {
    called = true;
  });
  await discovery.refresh();
  assert.equal(called, true);
  assert.ok(logs.some((l) => l.includes('boom')));
  assert.equal(discovery.hasSynced(), true);
});

test('Discovery: a Stale aggregated group version keeps what was known of it', async () => {
  const server = newFakeDiscoveryServer(cluster());
  const discovery = newDiscovery(server.client);
  await discovery.refresh();
  const example = server.groups.find((g) => g.name === 'example.com');
  assert.ok(example !== undefined);
  example.versions = [{ version: 'v2', resources: [], freshness: 'Stale' }, ...example.versions.slice(1)];
  const result = await discovery.refresh();
  assert.deepEqual(result.removed, []);
  assert.deepEqual(discovery.staleGroupVersions(), ['example.com/v2']);
  assert.equal(discovery.resolve('example.com', 'v2', 'widgets')?.kind, 'Widget');
  // aggregated_discovery.go: the preferred version is the first non-stale one.
  assert.equal(discovery.preferredVersion('example.com'), 'v1');
});

test('Discovery (legacy): a group version that fails is stale and keeps what was known; the others are read', async () => {
  const server = newFakeDiscoveryServer(cluster());
  server.aggregated = false;
  const discovery = newDiscovery(server.client, { log: () => undefined });
  await discovery.refresh();
  server.failures.set('/apis/example.com/v2', 503);
  server.groups.push({
    name: 'new.example.com',
    versions: [{ version: 'v1', resources: [fakeResource('new.example.com', 'v1', 'gadgets', 'Gadget')] }],
  });
  const result = await discovery.refresh();
  assert.equal(result.mode, 'legacy');
  assert.deepEqual(keys(result.added), ['new.example.com/v1/gadgets']);
  assert.deepEqual(result.removed, []);
  assert.deepEqual(discovery.staleGroupVersions(), ['example.com/v2']);
  assert.ok(discovery.resolve('example.com', 'v2', 'widgets') !== undefined);
});

test('Discovery: a failing root rejects refresh() with the status and keeps the previous map', async () => {
  const server = newFakeDiscoveryServer(cluster());
  const discovery = newDiscovery(server.client);
  await assert.rejects(
    (async () => {
      server.failures.set('/apis', 403);
      await discovery.refresh();
    })(),
    { name: 'ApiStatusError', code: 403 },
  );
  assert.equal(discovery.hasSynced(), false);
  server.failures.clear();
  await discovery.refresh();
  const map = discovery.current();
  server.failures.set('/apis', 500);
  await assert.rejects(discovery.refresh(), { code: 500 });
  assert.equal(discovery.current(), map);
});

test('Discovery: refreshes asked while one runs share a single follow-up refresh, which starts after it', async () => {
  const server = newFakeDiscoveryServer(cluster());
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const client = {
    ...server.client,
    request: async (req: Parameters<typeof server.client.request>[0]) => {
      await gate;
      return server.client.request(req);
    },
  };
  const discovery = newDiscovery(client);
  const first = discovery.refresh();
  assert.equal(discovery.refresh(), first, 'not started yet: shared');
  await tick();
  const second = discovery.refresh();
  const third = discovery.refresh();
  assert.notEqual(first, second, 'the first is running: a new one is queued');
  assert.equal(second, third);
  assert.equal(server.seen.length, 0);
  release();
  await Promise.all([first, second, third]);
  assert.equal(server.seen.length, 4, 'two refreshes of two requests each');
});

test('Discovery.start: refreshes at once, every period, and at once on invalidate(); stops on abort', async () => {
  const clock = new FakeClock();
  const server = newFakeDiscoveryServer(cluster());
  const discovery = newDiscovery(server.client, { clock, periodMs: 60_000 });
  const stop = new AbortController();
  const loop = discovery.start(stop.signal);
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await tick();
  };
  await settle();
  assert.equal(server.seen.length, 2);
  assert.equal(discovery.hasSynced(), true);

  clock.step(59_999);
  await settle();
  assert.equal(server.seen.length, 2);
  clock.step(1);
  await settle();
  assert.equal(server.seen.length, 4);

  discovery.invalidate();
  await settle();
  assert.equal(server.seen.length, 6);

  stop.abort();
  await loop;
  assert.equal(clock.waiters(), 0, 'no timer left behind');
});

test('Discovery.start: a failed refresh is retried after retryMs, and logged', async () => {
  const clock = new FakeClock();
  const server = newFakeDiscoveryServer(cluster());
  server.failures.set('/api', 503);
  const logs: string[] = [];
  const discovery = newDiscovery(server.client, { clock, periodMs: 60_000, retryMs: 5_000, log: (_l, m) => logs.push(m) });
  const stop = new AbortController();
  const loop = discovery.start(stop.signal);
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await tick();
  };
  await settle();
  assert.equal(discovery.hasSynced(), false);
  assert.ok(logs.some((l) => l.includes('503')));
  server.failures.clear();
  clock.step(5_000);
  await settle();
  assert.equal(discovery.hasSynced(), true);
  stop.abort();
  await loop;
});
