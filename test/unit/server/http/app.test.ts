import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newProxyServer } from '../../../../src/server/http/app.ts';
import type { CacheCheck, CacheStatus } from '../../../../src/cache/cache-source.ts';
import type { CachedReads } from '../../../../src/server/serving/cached-reads.ts';
import { newCompressions } from '../../../../src/server/serving/gzipped-response.ts';
import { newFakeUpstream } from '../../../helpers/fake-upstream-client.ts';

/** A check as a status: the health answers read only the check's fields. */
function asStatus(check: CacheCheck): CacheStatus {
  const type = check.name.slice('cache-'.length);
  return { ...check, type, version: 'v1', namespace: undefined, phase: 'watching', objects: 0, resourceVersion: '9', heardAgoMs: 0 };
}

function readsChecking(checks: () => CacheCheck[]): CachedReads {
  return {
    start: () => undefined,
    synced: () => checks().every((c) => c.failure === undefined),
    checks: () => checks().map(asStatus),
    stop: () => Promise.resolve(),
    tryServe: () => Promise.resolve('uncached'),
    compressions: newCompressions(),
    tryWatch: () => Promise.resolve('uncached'),
    observeWrite: () => undefined,
    observeRead: () => undefined,
    observesWrites: false,
  };
}

test('app: /livez and /healthz answer the proxy\'s own "ok"', async (t) => {
  const app = newProxyServer({ client: newFakeUpstream().client });
  t.after(() => app.close());
  for (const url of ['/livez', '/healthz']) {
    const res = await app.inject({ method: 'GET', url });
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, 'ok');
    assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  }
});

test('app: /readyz fails (500, reasons withheld) until the caches have synced, then answers ok; ?verbose, ?exclude and /readyz/<check> as the apiserver', async (t) => {
  let synced = false;
  const checks = (): CacheCheck[] => [
    {
      name: 'cache-pods',
      failure: synced ? undefined : 'not synced yet',
      state: synced ? 'watching, 3 objects at RV 9, heard from 0 s ago' : 'listing',
    },
    { name: 'cache-configmaps', failure: undefined, state: 'watching, 1 objects at RV 9, heard from 0 s ago' },
  ];
  const upstream = newFakeUpstream();
  const app = newProxyServer({ client: upstream.client, cachedReads: readsChecking(checks) });
  t.after(() => app.close());
  const get = (url: string) => app.inject({ method: 'GET', url });

  const before = await get('/readyz');
  assert.equal(before.statusCode, 500);
  assert.equal(before.headers['content-type'], 'text/plain; charset=utf-8');
  assert.equal(before.headers['x-content-type-options'], 'nosniff');
  assert.equal(
    before.body,
    '[+]ping ok\n[-]cache-pods failed: reason withheld\n[+]cache-configmaps ok: watching, 1 objects at RV 9, heard from 0 s ago\nreadyz check failed\n',
  );
  const one = await get('/readyz/cache-pods');
  assert.equal(one.statusCode, 500);
  assert.equal(one.body, 'internal server error: not synced yet\n');
  const excluded = await get('/readyz?exclude=cache-pods&exclude=nope');
  assert.equal(excluded.statusCode, 200);
  assert.equal(excluded.body, 'ok');
  const excludedVerbose = await get('/readyz?verbose&exclude=cache-pods&exclude=nope');
  assert.match(
    excludedVerbose.body,
    /^\[\+\]ping ok\n\[\+\]cache-pods excluded: ok\n.*\nwarn: some health checks cannot be excluded: no matches for "nope"\nreadyz check passed\n$/s,
  );

  synced = true;
  const after = await get('/readyz');
  assert.equal(after.statusCode, 200);
  assert.equal(after.body, 'ok');
  const verbose = await get('/readyz?verbose=1');
  assert.equal(
    verbose.body,
    '[+]ping ok\n[+]cache-pods ok: watching, 3 objects at RV 9, heard from 0 s ago\n[+]cache-configmaps ok: watching, 1 objects at RV 9, heard from 0 s ago\nreadyz check passed\n',
  );
  const passing = await get('/readyz/cache-pods');
  assert.equal(passing.statusCode, 200);
  assert.equal(passing.body, 'ok');
  assert.deepEqual(upstream.paths, [], 'all answered by the proxy');
  // A check the proxy does not have is the apiserver's own (/readyz/etcd, ...).
  // (this fake upstream refuses pass-through: the answer is the proxy's Status for that).
  const passed = await get('/readyz/etcd');
  assert.equal(passed.headers['content-type'], 'application/json', passed.body);
  assert.match(passed.body, /"kind":"Status"/);
});

test('app: /livez?verbose lists the ping check', async (t) => {
  const app = newProxyServer({ client: newFakeUpstream().client });
  t.after(() => app.close());
  const res = await app.inject({ method: 'GET', url: '/livez?verbose' });
  assert.equal(res.statusCode, 200);
  assert.equal(res.body, '[+]ping ok\nlivez check passed\n');
});

test('app: /readyz?verbose says how full the memory budget is, a check that always passes', async (t) => {
  let state = 'limit 160.0 MiB (test); cached objects ~1.0 MiB of 25.6 MiB';
  const app = newProxyServer({
    client: newFakeUpstream().client,
    cachedReads: readsChecking(() => []),
    memoryState: () => state,
  });
  t.after(() => app.close());
  const verbose = await app.inject({ method: 'GET', url: '/readyz?verbose' });
  assert.equal(verbose.body, `[+]ping ok\n[+]memory ok: ${state}\nreadyz check passed\n`);
  state = 'limit 160.0 MiB (test); cached objects ~24.9 MiB of 25.6 MiB: new caches refused, their reads passed through';
  const pressed = await app.inject({ method: 'GET', url: '/readyz/memory' });
  assert.equal(pressed.statusCode, 200, 'short of memory, reads pass through: still ready');
  assert.match((await app.inject({ method: 'GET', url: '/readyz?verbose' })).body, /\[\+\]memory ok: .*new caches refused/);
});
