import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CheckRecord } from '../../../src/cache/consistency-checker.ts';
import { CHECK_PAGE_SIZE, ConsistencyChecker, Fnv64, METADATA_PROTOBUF } from '../../../src/cache/consistency-checker.ts';
import { newWatchCache } from '../../../src/cache/watch-cache.ts';
import type { WatchCache } from '../../../src/cache/watch-cache.ts';
import { selectableFieldsFor } from '../../../src/cache/selectable-fields.ts';
import type { KubeObject } from '../../../src/informer/object.ts';
import { decodeObject } from '../../../src/informer/object.ts';
import { envelope } from '../../../src/protowire/envelope.ts';
import { readMetadataList } from '../../../src/protowire/metadata-list.ts';
import type { ItemIdentity } from '../../../src/protowire/metadata-list.ts';
import { Writer } from '../../../src/protowire/wire.ts';
import type { UpstreamRequest, UpstreamResponse } from '../../../src/upstream/client.ts';
import { FakeClock } from '../../helpers/fake-clock.ts';
import { jsonResponse, newFakeUpstream } from '../../helpers/fake-upstream-client.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';

/** A metadata-only list in protobuf, as the apiserver writes one. */
function metadataList(resourceVersion: string, items: readonly ItemIdentity[], continueToken = ''): Buffer {
  const list = new Writer();
  const listMeta = new Writer();
  listMeta.string(2, resourceVersion);
  if (continueToken !== '') listMeta.string(3, continueToken);
  list.message(1, listMeta);
  for (const item of items) {
    const meta = new Writer();
    meta.string(1, item.name);
    meta.string(3, item.namespace);
    meta.string(5, 'some-uid');
    meta.string(6, item.resourceVersion);
    const partial = new Writer();
    partial.message(1, meta);
    list.message(2, partial);
  }
  return envelope('meta.k8s.io/v1', 'PartialObjectMetadataList', list.finish());
}

function cm(namespace: string, name: string, rv: number): KubeObject {
  return decodeObject(
    Buffer.from(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace, resourceVersion: String(rv) } })),
  );
}

test("Fnv64 is Go's hash/fnv New64 (FNV-1), printed as %x", () => {
  // Go: h := fnv.New64(); h.Write([]byte(s)); fmt.Printf("%x", h.Sum64())
  const cases: [string, string][] = [
    ['', 'cbf29ce484222325'],
    ['a', 'af63bd4c8601b7be'],
    ['default/pod-1/12345', '50eb213a2ff0e6f6'],
    ['kube-system/coredns-abc/999999', '202b3e7deca84419'],
  ];
  for (const [text, hex] of cases) {
    const hash = new Fnv64();
    hash.write(text);
    assert.equal(hash.hex(), hex, JSON.stringify(text));
  }
  const split = new Fnv64();
  split.write('default/');
  split.write('pod-1/12345');
  assert.equal(split.hex(), '50eb213a2ff0e6f6', 'written in parts, as the apiserver writes namespace, "/", name, "/", RV');
});

test('metadata list: namespace, name and RV of each item in order, the list RV and continue; anything else refused', () => {
  const items = [
    { namespace: 'a', name: 'x', resourceVersion: '5' },
    { namespace: '', name: 'node-1', resourceVersion: '7' },
  ];
  assert.deepEqual(readMetadataList(metadataList('9', items, 'token')), { resourceVersion: '9', continue: 'token', items });
  assert.throws(() => readMetadataList(Buffer.from('{"kind":"List"}')), /magic/);
  assert.throws(() => readMetadataList(metadataList('9', items).subarray(0, 30)), /runs past/);
});

interface Rig {
  readonly cache: WatchCache;
  readonly clock: FakeClock;
  readonly checker: ConsistencyChecker;
  readonly requests: UpstreamRequest[];
  readonly relists: string[];
  readonly records: CheckRecord[];
  readonly logs: string[];
  proofs: number;
  /** What the apiserver holds, by RV; a missing RV answers 410. */
  readonly states: Map<string, ItemIdentity[]>;
}

function rig(objects: KubeObject[], rv: number, pageSize = CHECK_PAGE_SIZE): Rig {
  const clock = new FakeClock();
  const cache = newWatchCache({ spec: CONFIGMAPS, fields: selectableFieldsFor('', 'configmaps', true), clock });
  cache.store.replace(objects, String(rv));
  cache.store.watchConnected?.(true);
  const requests: UpstreamRequest[] = [];
  const states = new Map<string, ItemIdentity[]>();
  const respond = (request: UpstreamRequest): UpstreamResponse => {
    requests.push(request);
    const query = new URLSearchParams(request.path.slice(request.path.indexOf('?') + 1));
    const token = query.get('continue');
    const [at, fromText] = token === null ? [query.get('resourceVersion') ?? '', '0'] : token.split(':');
    const state = states.get(at ?? '');
    if (state === undefined)
      return jsonResponse(410, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410 });
    const from = Number(fromText);
    const limit = Number(query.get('limit'));
    const page = state.slice(from, from + limit);
    const next = from + limit < state.length ? `${at ?? ''}:${String(from + limit)}` : '';
    return {
      statusCode: 200,
      headers: { 'content-type': 'application/vnd.kubernetes.protobuf' },
      body: metadataList(at ?? '', page, next),
    };
  };
  const upstream = newFakeUpstream({ respond });
  const r: Rig = {
    cache,
    clock,
    requests,
    relists: [],
    records: [],
    logs: [],
    proofs: 0,
    states,
    checker: undefined as unknown as ConsistencyChecker,
  };
  const checker = new ConsistencyChecker({
    cache,
    client: upstream.client,
    clock,
    periodMs: 60_000,
    random: () => 0,
    pageSize,
    prove: () => {
      r.proofs++;
      // Nothing changed since: the proof moves the cache to the apiserver's newest RV.
      const newest = [...states.keys()].map(Number).sort((a, b) => b - a)[0];
      if (newest !== undefined) cache.proven(BigInt(newest), clock.now());
      return Promise.resolve();
    },
    relist: (reason) => r.relists.push(reason),
    checked: (record) => r.records.push(record),
    log: (_level, message) => r.logs.push(message),
  });
  return Object.assign(r, { checker });
}

const ids = (objects: KubeObject[]): ItemIdentity[] =>
  objects.map((o) => ({ namespace: o.namespace, name: o.key.slice(o.namespace.length + 1), resourceVersion: o.resourceVersion }));

test('consistency check: the cache and an exact-RV metadata LIST, paged, in protobuf: equal digests pass', async () => {
  const objects = [cm('a', 'x', 3), cm('a', 'y', 4), cm('b', 'z', 5)];
  const r = rig(objects, 10, 2);
  r.states.set('10', ids(objects));
  const record = await r.checker.check();
  assert.equal(record.result, 'success', record.detail);
  assert.equal(record.resourceVersion, '10');
  assert.deepEqual(r.relists, []);
  assert.equal(r.requests.length, 2, 'two pages of two');
  const first = new URLSearchParams(r.requests[0]?.path.split('?')[1]);
  assert.equal(r.requests[0]?.path.split('?')[0], '/api/v1/configmaps');
  assert.equal(first.get('resourceVersion'), '10');
  assert.equal(first.get('resourceVersionMatch'), 'Exact');
  assert.equal(first.get('limit'), '2');
  assert.equal(r.requests.at(0)?.headers?.accept, METADATA_PROTOBUF, 'metadata only, protobuf');
  const second = new URLSearchParams(r.requests[1]?.path.split('?')[1]);
  assert.equal(second.get('continue'), '10:2');
  assert.equal(second.get('resourceVersion'), null, 'the token carries the RV');
});

test('consistency check: a dropped event (an object the apiserver has at another RV, one it has and the cache not) fails, names it and relists', async () => {
  const objects = [cm('a', 'x', 3), cm('a', 'y', 4)];
  const r = rig(objects, 10);
  r.states.set('10', [...ids(objects).slice(0, 1), { namespace: 'a', name: 'y', resourceVersion: '9' }]);
  const changed = await r.checker.check();
  assert.equal(changed.result, 'failure');
  assert.match(changed.detail, /first difference: item 1: the apiserver's a\/y at 9, the cache's a\/y at 4/);
  assert.deepEqual(r.relists, ['inconsistent']);
  assert.match(r.logs[0] ?? '', /configmaps: the cache differs from the apiserver at resourceVersion 10: .*relisting/);

  r.states.set('10', [...ids(objects), { namespace: 'b', name: 'w', resourceVersion: '8' }]);
  const missing = await r.checker.check();
  assert.equal(missing.result, 'failure');
  assert.match(missing.detail, /item 2: the apiserver's b\/w at 8, the cache's none/);
  r.states.set('10', ids(objects).slice(0, 1));
  const extra = await r.checker.check();
  assert.match(extra.detail, /item 1: the apiserver's none, the cache's a\/y at 4/);
  assert.deepEqual(r.relists, ['inconsistent', 'inconsistent', 'inconsistent']);
});

test("consistency check: a quiet cache's RV the upstream no longer keeps (410) is proven current and checked again", async () => {
  const objects = [cm('a', 'x', 3)];
  const r = rig(objects, 10);
  r.states.set('50', ids(objects));
  const record = await r.checker.check();
  assert.equal(r.proofs, 1);
  assert.equal(record.result, 'success', record.detail);
  assert.equal(record.resourceVersion, '50');
  r.states.clear();
  const gone = await r.checker.check();
  assert.equal(gone.result, 'error', 'still 410 after the proof: nothing known');
  assert.match(gone.detail, /410/);
  assert.deepEqual(r.relists, [], 'an error relists nothing');
});

test('consistency check: a cache not watching is an error (nothing relisted); checks run each jittered period, until stopped', async () => {
  const objects = [cm('a', 'x', 3)];
  const r = rig(objects, 10);
  r.states.set('10', ids(objects));
  r.checker.start();
  r.clock.step(59_999);
  assert.equal(r.records.length, 0);
  r.clock.step(1);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(
    r.records.map((c) => c.result),
    ['success'],
    'one period (jitter 0 here) after start',
  );
  r.cache.store.watchConnected?.(false);
  r.clock.step(60_000);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(
    r.records.map((c) => c.result),
    ['success', 'error'],
  );
  assert.equal(r.records[1]?.detail, 'the cache is not ready');
  r.checker.stop();
  r.clock.step(600_000);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(r.records.length, 2, 'stopped: no more checks');
});
