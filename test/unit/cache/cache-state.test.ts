import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodeState, encodeState, StateRefusal } from '../../../src/cache/cache-state.ts';
import type { StateIdentity } from '../../../src/cache/cache-state.ts';
import { MAX_STATE_AGE_MS, StateDir } from '../../../src/cache/state-dir.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import type { CacheState, WatchCache } from '../../../src/cache/watch-cache.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import type { KubeObject } from '../../../src/informer/object.ts';
import { decodeObject, objectBytes } from '../../../src/informer/object.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { CONFIGMAPS as SPEC } from '../../helpers/resource-specs.ts';

function cm(namespace: string, name: string, rv: number, data = 'v'): KubeObject {
  const json = {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name, namespace, resourceVersion: String(rv), labels: { app: 'a' } },
    data: { k: data },
  };
  return decodeObject(Buffer.from(JSON.stringify(json)), selectableFieldsFor('', 'configmaps', true).extract);
}

function newCache(clock = new FakeClock()): WatchCache {
  return newWatchCache({ spec: SPEC, fields: selectableFieldsFor('', 'configmaps', true), clock });
}

/** A cache listed at 10, then changed: an add, an update, a delete (the window holds 3 events). */
function changedCache(clock = new FakeClock()): WatchCache {
  const cache = newCache(clock);
  cache.store.replace([cm('a', 'x', 5), cm('b', 'y', 6, 'é')], '10');
  cache.store.add(cm('a', 'z', 11));
  cache.store.update(cm('a', 'x', 12, 'changed'));
  cache.store.delete(cm('b', 'y', 13, 'é'));
  return cache;
}

const identity: StateIdentity = { cluster: 'uid-1', proxyVersion: '1.0.0', scope: '|v1|configmaps|||' };

function fileOf(state: CacheState, id = identity, savedAt = Date.now()): Buffer {
  return Buffer.concat([...encodeState(state, id, savedAt).pieces()]);
}

const json = (obj: KubeObject | undefined): string => (obj === undefined ? 'none' : objectBytes(obj).toString('utf8'));

test('cache state: a restored cache holds the same objects, bytes, RV and event window as the one saved', () => {
  const saved = changedCache();
  const state = saved.savedState();
  assert.ok(state !== undefined);
  const decoded = decodeState(fileOf(state));
  assert.deepEqual(decoded.identity, identity);
  const restored = newCache();
  restored.restore(decoded.state);
  assert.equal(restored.resourceVersion(), 13n);
  assert.ok(restored.hasSynced(), 'a restored cache serves at once');
  assert.deepEqual(
    Array.from(restored.current().values(), json),
    Array.from(saved.current().values(), json),
    'each object byte for byte, in key order',
  );
  const restoredObject = restored.get('a/x');
  assert.deepEqual(restoredObject?.fields, saved.get('a/x')?.fields, 'selectable fields kept without a parse');
  assert.deepEqual(restoredObject?.labels, { app: 'a' });
  assert.equal(restoredObject.namespace, 'a');
  const replay = (cache: WatchCache, rv: bigint): string[] => {
    const interval = cache.since(rv);
    assert.equal(interval.kind, 'events');
    return interval.events.map((e) => `${e.type} ${e.key} ${String(e.resourceVersion)} prev=${json(e.prevObject)} obj=${json(e.object)}`);
  };
  assert.deepEqual(replay(restored, 10n), replay(saved, 10n), 'a client watch from the list RV replays the same events');
  assert.deepEqual(replay(restored, 12n), replay(saved, 12n));
  assert.equal(restored.since(9n).kind, 'too-old', 'and one from before the window is 410, as before the restart');
});

test('cache state: a restored cache proves no freshness until a bookmark or a proof', () => {
  const clock = new FakeClock();
  const saved = changedCache(clock).savedState();
  assert.ok(saved !== undefined);
  const cache = newCache(clock);
  cache.restore(decodeState(fileOf(saved)).state);
  assert.equal(cache.lastProgressAt(), Number.NEGATIVE_INFINITY);
  clock.step(1000);
  cache.store.add(cm('a', 'new', 14));
  cache.store.updateResourceVersion?.('14');
  assert.equal(cache.lastProgressAt(), Number.NEGATIVE_INFINITY, 'a replayed event is no proof: it may be minutes old');
  cache.store.observeBookmark?.(Buffer.from('{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"15"}}'));
  cache.store.updateResourceVersion?.('15');
  assert.equal(cache.lastProgressAt(), clock.now(), 'a bookmark is');
  assert.equal(cache.resourceVersion(), 15n);
  clock.step(1000);
  cache.store.add(cm('a', 'newer', 16));
  cache.store.updateResourceVersion?.('16');
  assert.equal(cache.lastProgressAt(), clock.now(), 'and events count again after it');
});

test('cache state: a truncated, altered or foreign file is refused whole', () => {
  const state = changedCache().savedState();
  assert.ok(state !== undefined);
  const file = fileOf(state);
  for (const cut of [0, 8, 20, file.length - 33, file.length - 1]) {
    assert.throws(() => decodeState(file.subarray(0, cut)), StateRefusal, `cut at ${String(cut)}`);
  }
  const altered = Buffer.from(file);
  altered.writeUInt8(altered.readUInt8(altered.length - 40) ^ 1, altered.length - 40);
  assert.throws(() => decodeState(altered), /checksum/);
  assert.throws(() => decodeState(Buffer.concat([Buffer.from('NOTSTATE'), file.subarray(8)])), /format/);
});

test('state dir: restores its own state; refuses and deletes another cluster, version, scope, an old or cut one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-state-'));
  const logs: string[] = [];
  try {
    let now = 1_000_000;
    const open = (cluster = 'uid-1', version = '1.0.0'): StateDir =>
      new StateDir({ dir, cluster, proxyVersion: version, log: (_level, message) => logs.push(message), now: () => now });
    const state = changedCache().savedState();
    assert.ok(state !== undefined);
    const scope = identity.scope;
    const saved = await open().save(scope, state);
    assert.ok(saved.bytes > 0 && saved.objects === 2 && saved.events === 3, JSON.stringify(saved));
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.endsWith('.tmp')),
      [],
      'no temporary file is left',
    );
    assert.equal(open().load(scope)?.state.resourceVersion, 13n);
    assert.equal(open().load('|v1|secrets|||'), undefined, 'no state of another scope');

    const refusedBy = async (dirOf: () => StateDir, expected: RegExp, alter?: (path: string) => void): Promise<void> => {
      await open().save(scope, state);
      if (alter !== undefined) alter(open().path(scope));
      logs.length = 0;
      assert.equal(dirOf().load(scope), undefined);
      assert.match(logs.join('\n'), expected);
      assert.match(logs.join('\n'), /refused, not served/);
      assert.equal(dirOf().load(scope), undefined, 'deleted: refused once');
    };
    await refusedBy(() => open('uid-2'), /another cluster's/);
    await refusedBy(() => open('uid-1', '1.0.1'), /another proxy version's/);
    await refusedBy(
      () => open(),
      /checksum|truncated/,
      (path) => {
        const bytes = readFileSync(path);
        writeFileSync(path, bytes.subarray(0, Math.floor(bytes.length / 2)));
      },
    );
    await refusedBy(() => {
      now += MAX_STATE_AGE_MS + 1;
      return open();
    }, /saved 300 s ago/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
