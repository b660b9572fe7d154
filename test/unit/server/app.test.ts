import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newProxyServer } from '../../../src/server/app.ts';
import type { CachedReads } from '../../../src/server/cached-reads.ts';
import { newFakeUpstream } from '../../helpers/fake-upstream-client.ts';

function readsSynced(synced: () => boolean): CachedReads {
  return {
    start: () => undefined,
    synced,
    stop: () => Promise.resolve(),
    tryServe: () => Promise.resolve(undefined),
    tryWatch: () => Promise.resolve(false),
    observeWrite: () => undefined,
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

test('app: /readyz is 503 until the caches have synced, then 200', async (t) => {
  let synced = false;
  const app = newProxyServer({ client: newFakeUpstream().client, cachedReads: readsSynced(() => synced) });
  t.after(() => app.close());
  const before = await app.inject({ method: 'GET', url: '/readyz' });
  assert.equal(before.statusCode, 503);
  synced = true;
  const after = await app.inject({ method: 'GET', url: '/readyz' });
  assert.equal(after.statusCode, 200);
  assert.equal(after.body, 'ok');
});
