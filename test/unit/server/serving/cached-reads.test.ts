import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newCachedReads } from '../../../../src/server/serving/cached-reads.ts';
import type { CachedReads, CachedResponse } from '../../../../src/server/serving/cached-reads.ts';
import { parseRequest } from '../../../../src/request/parsed-request.ts';
import type { ReadConsistency } from '../../../../src/cache/consistency.ts';
import { newConsistencyPolicy } from '../../../../src/cache/consistency.ts';
import { newReadYourWrites } from '../../../../src/cache/read-your-writes.ts';
import { delegatorFactory } from '../../../../src/cache/delegator.ts';
import type { ProofOutcome } from '../../../../src/cache/freshness-keeper.ts';
import type { OrderedView } from '../../../../src/cache/ordered-map.ts';
import { newOrderedMap } from '../../../../src/cache/ordered-map.ts';
import { decodeContinue } from '../../../../src/request/continue-token.ts';
import { selectableFieldsFor } from '../../../../src/cache/selectable-fields.ts';
import type { WatchCache } from '../../../../src/cache/watch-cache.ts';
import type { CachedResourceSpec } from '../../../../src/cache/cached-resources.ts';
import { listItemBytes } from '../../../../src/cache/watch-cache.ts';
import type { KubeObject } from '../../../../src/informer/object.ts';
import { decodeObject } from '../../../../src/informer/object.ts';
import { newSharedLists } from '../../../../src/server/serving/shared-lists.ts';
import { newByteBudget, newMemoryBudget } from '../../../../src/memory/memory-budget.ts';
import type { MemoryBudget as Budget } from '../../../../src/memory/memory-budget.ts';
import { FakeClock } from '../../../helpers/fake-clock.ts';
import { isConsistencyProbe, jsonResponse, listAt, newFakeUpstream } from '../../../helpers/fake-upstream-client.ts';
import { CONFIGMAPS } from '../../../helpers/resource-specs.ts';
import { recordProofOutcomes } from '../../../helpers/proof-outcomes.ts';
import type { PassReason } from '../../../../src/cache/pass-reason.ts';
import { PROOF_AGE_HEADER, parseProofAge } from '../../../../src/protocol/proof-age.ts';
import { realClock } from '../../../../src/clock/clock.ts';

function configMap(namespace: string, name: string, labels: Record<string, string> = {}): KubeObject {
  const json = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace, resourceVersion: '5', labels } };
  return decodeObject(Buffer.from(JSON.stringify(json)));
}

/** A watch cache over a fixed list at a settable RV; snapshots are kept of every RV it was at. */
interface FakeCache extends WatchCache {
  rv: bigint;
  /** The upstream watch is open. */
  open: boolean;
  /** When the watch last said anything / last brought a change (performance.now() ms). */
  progressAt: number;
  changeAt: number;
}

function fakeCache(objects: KubeObject[], rv: bigint, spec: CachedResourceSpec = CONFIGMAPS): FakeCache {
  // Weighed as a watch cache weighs its objects: by their bytes as list items.
  const ordered = newOrderedMap<KubeObject>(listItemBytes(spec));
  ordered.replace(objects.map((o) => [o.key, o] as const));
  const kept = new Map<bigint, OrderedView<KubeObject>>();
  const cache: FakeCache = {
    rv,
    open: true,
    progressAt: performance.now(),
    changeAt: Number.NEGATIVE_INFINITY,
    spec,
    fields: selectableFieldsFor(spec.group, spec.resource, spec.namespaced),
    namespace: undefined,
    selectors: undefined,
    store: undefined as unknown as WatchCache['store'],
    hasSynced: () => true,
    resourceVersion: () => cache.rv,
    waitUntilFresh: (want) => Promise.resolve(cache.rv >= want ? cache.rv : undefined),
    get: (key) => ordered.get(key),
    current: () => {
      const view = ordered.snapshot();
      kept.set(cache.rv, view);
      return view;
    },
    snapshot: (want) => (want === cache.rv ? cache.current() : kept.get(want)),
    indexed: () => undefined,
    lastProgressAt: () => cache.progressAt,
    lastChangeAt: () => cache.changeAt,
    upstreamAt: () => undefined,
    proven: (rv, at) => {
      if (rv > cache.rv) cache.rv = rv;
      if (at > cache.progressAt) cache.progressAt = at;
    },
    watching: () => cache.open,
    addListener: () => () => undefined,
    bookmarkFrame: () => Buffer.alloc(0),
    since: () => ({ kind: 'events', events: [] }),
    windowStats: () => ({ capacity: 0, size: 0, oldest: undefined }),
    held: () => ({ objects: ordered.size, bytes: ordered.weight() }),
    inUse: () => false,
    close: () => undefined,
    isClosed: () => false,
    savedState: () => undefined,
    restore: () => undefined,
  };
  return cache;
}

interface Reads {
  readonly reads: CachedReads;
  /** Paths of the consistency probes sent (one-key consistent LISTs). */
  readonly probes: readonly string[];
  /** Freshness proofs: their outcomes so far, and the next one's. */
  readonly proofs: { readonly outcomes: readonly ProofOutcome[]; readonly paths: readonly string[]; next(): Promise<ProofOutcome> };
  /** The cache's answer to a GET of `url` (with `accept` when given), or undefined when the read is passed through. */
  readonly serve: (url: string, accept?: string) => Promise<CachedResponse | undefined>;
  /** Why the read is passed through; 'cache' when the cache answers. */
  readonly reason: (url: string) => Promise<PassReason | 'cache'>;
  /** A write through the proxy answered `statusCode` with `body` (JSON). */
  readonly wrote: (method: string, url: string, statusCode: number, body: unknown) => void;
  /** A read passed through (GET `url`) answered `statusCode` with `body` (JSON), as the server tells the reads. */
  readonly passed: (url: string, statusCode: number, body: unknown) => void;
}

/** A BOOKMARK watch line at `rv` (a freshness proof's watch). */
function bookmarkLine(rv: string): string {
  return `${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: rv } } })}\n`;
}

/**
 * Reads from `cache` through a delegator whose apiserver is at `probeRv` with no change of the
 * type since the cache's RV: its probes answer `probeRv`, and a freshness proof's watch answers a
 * bookmark at it (`proofs: 'refused'`: the probes and watches are refused, 503).
 */
function readsOver(
  cache: WatchCache,
  probeRv: string,
  mode: ReadConsistency = 'bounded',
  maxStalenessMs = 75_000,
  proofs: 'quiet' | 'refused' = 'quiet',
  memory?: MemoryBudget,
): Reads {
  const probes: string[] = [];
  const proofPaths: string[] = [];
  const unavailable = jsonResponse(503, { kind: 'Status', code: 503, reason: 'ServiceUnavailable' });
  const upstream = newFakeUpstream({
    respond: (request) => {
      assert.ok(isConsistencyProbe(request.path), `only probes are LISTs here: ${request.path}`);
      probes.push(request.path);
      return proofs === 'refused' ? unavailable : listAt(probeRv);
    },
    refuseWatch: (request) => {
      proofPaths.push(request.path);
      return proofs === 'refused' ? unavailable : undefined;
    },
    onWatch: (stream) => {
      stream.write(bookmarkLine(probeRv));
    },
  });
  const recorded = recordProofOutcomes();
  const writes = newReadYourWrites();
  const delegate = delegatorFactory({
    client: upstream.client,
    policy: newConsistencyPolicy({ mode, maxStalenessMs }),
    writes,
    freshnessWaitMs: 0,
    metrics: recorded.metrics,
  });
  const delegator = delegate(cache);
  const source = {
    cacheFor: () => delegator,
    cacheWhenSynced: () => Promise.resolve(delegator),
    start: () => undefined,
    synced: () => true,
    checks: () => [],
    held: () => ({ objects: 0, bytes: 0, windowEvents: 0 }),
    cachedKind: (group: string, resource: string) =>
      group === '' && resource === 'configmaps' ? { kind: 'ConfigMap', namespaced: true } : undefined,
    stop: () => Promise.resolve(),
  };
  const reads = newCachedReads({ source, writes, ...(memory === undefined ? {} : { memory, clock: memory.clock }) });
  return {
    reads,
    probes,
    proofs: { outcomes: recorded.outcomes, paths: proofPaths, next: recorded.next },
    serve: async (url, accept) => {
      const answer = await reads.tryServe(parseRequest('GET', url), accept === undefined ? {} : { accept });
      return typeof answer === 'string' ? undefined : answer;
    },
    reason: async (url) => {
      const answer = await reads.tryServe(parseRequest('GET', url), {});
      if (typeof answer === 'string') return answer;
      answer.written?.(true);
      return 'cache';
    },
    wrote: (method, url, statusCode, body) => {
      reads.observeWrite(parseRequest(method, url), {
        statusCode,
        contentType: 'application/json',
        contentEncoding: '',
        body: Buffer.from(JSON.stringify(body)),
      });
    },
    passed: (url, statusCode, body) => {
      reads.observeRead(parseRequest('GET', url))?.(statusCode, 'application/json', '', Buffer.from(JSON.stringify(body)));
    },
  };
}

/** A memory budget whose response bodies may hold `bodiesBytes`, waits on `clock` (which the shared bodies' ages read too). */
interface MemoryBudget extends Budget {
  readonly clock: FakeClock;
}

function bodiesBudget(bodiesBytes: number, clock: FakeClock): MemoryBudget {
  return { ...newMemoryBudget({ limit: undefined, clock }), bodies: newByteBudget(bodiesBytes, clock), clock };
}

interface ListJson {
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: { metadata: { name: string; namespace: string } }[];
}

/** The body's pieces, taken; their length is checked against the Content-Length announced. */
function piecesOf(res: CachedResponse): Buffer[] {
  const pieces = [...res.body];
  assert.equal(
    pieces.reduce((n, p) => n + p.length, 0),
    res.length,
    'the length announced',
  );
  return pieces;
}

function listOf(res: CachedResponse | undefined): ListJson {
  assert.ok(res !== undefined, 'served from the cache');
  assert.equal(res.statusCode, 200);
  return JSON.parse(Buffer.concat(piecesOf(res)).toString()) as ListJson;
}

const names = (list: ListJson): string[] => list.items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`);

const FIVE = [
  configMap('b', 'x', { app: 'web' }),
  configMap('a', 'z'),
  configMap('a', 'y', { app: 'web' }),
  configMap('b', 'w'),
  configMap('a', 'x'),
];

test('cached reads: pages follow key order with the apiserver continue token and remainingItemCount', async () => {
  const cache = fakeCache(FIVE, 100n);
  const { serve } = readsOver(cache, '100');
  const first = listOf(await serve('/api/v1/configmaps?limit=2'));
  assert.deepEqual(names(first), ['a/x', 'a/y']);
  assert.equal(first.metadata.resourceVersion, '100');
  assert.equal(first.metadata.remainingItemCount, 3);
  const token = first.metadata.continue ?? '';
  assert.deepEqual(decodeContinue(token, '/'), { fromKey: '/a/y\u0000', resourceVersion: 100 });
  // The cache moves on; the next pages still read the state at 100.
  cache.rv = 101n;
  const second = listOf(await serve(`/api/v1/configmaps?limit=2&continue=${token}`));
  assert.deepEqual(names(second), ['a/z', 'b/w']);
  assert.equal(second.metadata.resourceVersion, '100');
  const third = listOf(await serve(`/api/v1/configmaps?limit=2&continue=${second.metadata.continue ?? ''}`));
  assert.deepEqual(names(third), ['b/x']);
  assert.equal(third.metadata.continue, undefined, 'the last page has no continue');
  assert.equal(third.metadata.remainingItemCount, undefined);
});

test('cached reads: a namespace pages within its own keys; a selector gives no remainingItemCount', async () => {
  const { serve } = readsOver(fakeCache(FIVE, 100n), '100');
  const ns = listOf(await serve('/api/v1/namespaces/a/configmaps?limit=2'));
  assert.deepEqual(names(ns), ['a/x', 'a/y']);
  assert.equal(ns.metadata.remainingItemCount, 1);
  assert.deepEqual(decodeContinue(ns.metadata.continue ?? '', '/a/'), { fromKey: '/a/y\u0000', resourceVersion: 100 });
  const rest = listOf(await serve(`/api/v1/namespaces/a/configmaps?limit=2&continue=${ns.metadata.continue ?? ''}`));
  assert.deepEqual(names(rest), ['a/z']);
  const selected = listOf(await serve('/api/v1/configmaps?limit=1&labelSelector=app%3Dweb'));
  assert.deepEqual(names(selected), ['a/y']);
  assert.equal(selected.metadata.remainingItemCount, undefined, 'unknown with a selector (PrepareContinueToken)');
  assert.ok(selected.metadata.continue !== undefined, 'more items follow, matching or not');
});

test('cached reads: RV=0 ignores the limit; Exact and unknown snapshots are passed through', async () => {
  const { serve, reason } = readsOver(fakeCache(FIVE, 100n), '100');
  const all = listOf(await serve('/api/v1/configmaps?resourceVersion=0&limit=2'));
  assert.equal(all.items.length, 5);
  assert.equal(all.metadata.continue, undefined);
  assert.equal(await reason('/api/v1/configmaps?resourceVersion=99&resourceVersionMatch=Exact'), 'no-snapshot');
  assert.equal(await reason('/api/v1/configmaps?resourceVersion=99&limit=2'), 'no-snapshot', 'RV=N + limit is Exact');
  assert.ok((await serve('/api/v1/configmaps?resourceVersion=100&resourceVersionMatch=Exact')) !== undefined);
  assert.ok((await serve('/api/v1/configmaps?resourceVersion=99')) !== undefined, 'not older than 99');
  assert.equal(await reason('/api/v1/configmaps?resourceVersion=101'), 'rv-not-reached', 'ahead of the cache');
  const foreign = Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: 42, start: 'a/x' })).toString('base64url');
  assert.equal(await reason(`/api/v1/configmaps?limit=2&continue=${foreign}`), 'no-snapshot', 'no snapshot at 42');
  assert.equal(await reason('/api/v1/configmaps?continue=garbage'), 'bad-continue', 'the apiserver words it');
});

test('cached reads: a LIST larger than a piece is joined in 64 KiB pieces, items without their TypeMeta', async () => {
  const many = Array.from({ length: 300 }, (_, i) => {
    const json = {
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name: `cm-${String(i).padStart(3, '0')}`, namespace: 'a', resourceVersion: '5' },
      data: { v: 'x'.repeat(500) },
    };
    return decodeObject(Buffer.from(JSON.stringify(json)));
  });
  const { serve } = readsOver(fakeCache(many, 100n), '100');
  const res = await serve('/api/v1/configmaps?resourceVersion=0');
  assert.ok(res !== undefined);
  const pieces = piecesOf(res);
  assert.ok(pieces.length >= 3 && pieces.length <= 4, `${String(pieces.length)} pieces for ${String(res.length)} bytes`);
  const text = Buffer.concat(pieces).toString();
  const list = JSON.parse(text) as { items: { kind?: string; metadata: { name: string } }[] };
  assert.equal(list.items.length, 300);
  assert.equal(list.items[299]?.metadata.name, 'cm-299');
  assert.ok(
    list.items.every((item) => item.kind === undefined),
    'typed list items carry no kind',
  );
  assert.ok(
    text.startsWith('{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[{"metadata":{"name":"cm-000"'),
  );
});

test('cached reads: whole LISTs at one RV share one body; a new RV, a selector or a page gets its own', async () => {
  const cache = fakeCache(FIVE, 100n);
  const { serve } = readsOver(cache, '100');
  const first = await serve('/api/v1/configmaps');
  const second = await serve('/api/v1/configmaps');
  assert.ok(first !== undefined && second !== undefined);
  assert.equal(piecesOf(first)[0], piecesOf(second)[0], 'the same bytes, not a copy');
  assert.equal(piecesOf((await serve('/api/v1/configmaps?resourceVersion=0')) ?? first)[0], piecesOf(first)[0], 'RV=0 too');
  const inA = await serve('/api/v1/namespaces/a/configmaps');
  assert.ok(inA !== undefined);
  assert.deepEqual(names(listOf(inA)), ['a/x', 'a/y', 'a/z']);
  assert.equal(piecesOf(inA)[0], piecesOf((await serve('/api/v1/namespaces/a/configmaps')) ?? first)[0], 'per namespace');
  assert.notEqual(piecesOf(inA)[0], piecesOf(first)[0]);
  // The next RV: a body of its own, at that RV, for an RV-unset LIST.
  cache.rv = 101n;
  const later = await serve('/api/v1/configmaps');
  assert.equal(listOf(later).metadata.resourceVersion, '101');
  assert.notEqual(piecesOf(later ?? first)[0], piecesOf(first)[0]);
  // Selected or paged: made for the request, in pooled pieces.
  for (const url of [
    '/api/v1/configmaps?labelSelector=app%3Dweb',
    '/api/v1/configmaps?limit=2',
    '/api/v1/configmaps?fieldSelector=metadata.name%3Dx',
  ]) {
    const one = await serve(url);
    const two = await serve(url);
    assert.ok(one !== undefined && two !== undefined, url);
    assert.notEqual(piecesOf(one)[0], piecesOf(two)[0], url);
  }
});

const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
const TABLE = 'application/json;as=Table;g=meta.k8s.io;v=v1';

test('cached reads: whole LISTs as PartialObjectMetadata, and as a Table within one second, share one body per RV; a page or a selector gets its own', async () => {
  const clock = new FakeClock();
  const cache = fakeCache(FIVE, 100n);
  const { serve } = readsOver(cache, '100', 'bounded', 75_000, 'quiet', bodiesBudget(1 << 30, clock));
  const first = await serve('/api/v1/configmaps', METADATA_LIST);
  const second = await serve('/api/v1/configmaps', METADATA_LIST);
  assert.ok(first !== undefined && second !== undefined);
  const firstPieces = piecesOf(first);
  assert.equal(piecesOf(second)[0], firstPieces[0], 'metadata: the same bytes, not a copy');
  const list = JSON.parse(Buffer.concat(firstPieces).toString()) as {
    kind: string;
    items: { kind: string; metadata: { name: string; namespace: string } }[];
  };
  assert.equal(list.kind, 'PartialObjectMetadataList');
  assert.deepEqual(
    list.items.map((i) => `${i.kind} ${i.metadata.namespace}/${i.metadata.name}`),
    ['a/x', 'a/y', 'a/z', 'b/w', 'b/x'].map((n) => `PartialObjectMetadata ${n}`),
  );
  // A page is made for its request, with the same items' bytes as the whole list's.
  const page = await serve('/api/v1/configmaps?limit=2', METADATA_LIST);
  const again = await serve('/api/v1/configmaps?limit=2', METADATA_LIST);
  assert.ok(page !== undefined && again !== undefined);
  const pagePieces = piecesOf(page);
  assert.notEqual(pagePieces[0], piecesOf(again)[0]);
  const paged = JSON.parse(Buffer.concat(pagePieces).toString()) as { items: unknown[] };
  assert.deepEqual(paged.items, list.items.slice(0, 2));
  // The next RV: a body of its own.
  cache.rv = 101n;
  const later = await serve('/api/v1/configmaps', METADATA_LIST);
  assert.ok(later !== undefined);
  assert.notEqual(piecesOf(later)[0], firstPieces[0]);

  const table = await serve('/api/v1/configmaps', TABLE);
  const sameSecond = await serve('/api/v1/configmaps', TABLE);
  assert.ok(table !== undefined && sameSecond !== undefined);
  const tablePieces = piecesOf(table);
  assert.equal(piecesOf(sameSecond)[0], tablePieces[0], 'a Table: the same bytes within the second');
  const rows = (JSON.parse(Buffer.concat(tablePieces).toString()) as { kind: string; rows: unknown[] }).rows;
  assert.equal(rows.length, FIVE.length);
  clock.step(1_000);
  const nextSecond = await serve('/api/v1/configmaps', TABLE);
  assert.ok(nextSecond !== undefined);
  assert.notEqual(piecesOf(nextSecond)[0], tablePieces[0], 'a Table of the next second is printed again');
  const selected = await serve('/api/v1/configmaps?labelSelector=app%3Dweb', TABLE);
  const selectedAgain = await serve('/api/v1/configmaps?labelSelector=app%3Dweb', TABLE);
  assert.ok(selected !== undefined && selectedAgain !== undefined);
  assert.notEqual(piecesOf(selected)[0], piecesOf(selectedAgain)[0], 'a selected Table is made per request');
});

test('pooled pieces: a per-request body goes back to the pool once written whole; a shared body once dropped and written by all its readers; never after a write cut short', async () => {
  const cache = fakeCache(FIVE, 100n);
  const { serve } = readsOver(cache, '100');
  const buffersOf = (res: CachedResponse | undefined): Set<ArrayBufferLike> => {
    assert.ok(res !== undefined);
    return new Set(piecesOf(res).map((p) => p.buffer));
  };
  /** Whether the next per-request body is made in memory from `buffers` (the pool gives the last piece given back first). */
  const reused = async (buffers: Set<ArrayBufferLike>): Promise<boolean> => {
    const next = await serve('/api/v1/configmaps?limit=2');
    const hit = [...buffersOf(next)].some((b) => buffers.has(b));
    next?.written?.(false);
    return hit;
  };

  const cut = await serve('/api/v1/configmaps?labelSelector=app%3Dweb');
  const cutBuffers = buffersOf(cut);
  cut?.written?.(false);
  assert.equal(await reused(cutBuffers), false, 'a write cut short may still hold its pieces');
  const whole = await serve('/api/v1/configmaps?labelSelector=app%3Dweb');
  const wholeBuffers = buffersOf(whole);
  whole?.written?.(true);
  assert.equal(await reused(wholeBuffers), true, 'written whole: back to the pool');

  const reader = await serve('/api/v1/configmaps');
  const other = await serve('/api/v1/configmaps');
  const sharedBuffers = buffersOf(reader);
  assert.ok(reader !== undefined && other !== undefined);
  reader.written?.(true);
  other.written?.(true);
  assert.equal(await reused(sharedBuffers), false, 'kept for the next readers');
  const last = await serve('/api/v1/configmaps');
  cache.rv = 101n;
  await serve('/api/v1/configmaps'); // a body at the next RV replaces it
  assert.equal(await reused(sharedBuffers), false, 'dropped, but a response still writes it');
  last?.written?.(true);
  assert.equal(await reused(sharedBuffers), true, 'dropped and written by all: back to the pool');

  const cutShared = await serve('/api/v1/namespaces/a/configmaps');
  const cutSharedBuffers = buffersOf(cutShared);
  cutShared?.written?.(false);
  cache.rv = 102n;
  await serve('/api/v1/namespaces/a/configmaps');
  assert.equal(await reused(cutSharedBuffers), false, 'a shared body one write cut short is left to the collector');
});

test('shared LIST bodies: an RV=0 LIST may get one up to a second old, labelled with its own RV; an RV-unset LIST never; bodies are made lazily, once', () => {
  const clock = new FakeClock();
  const shared = newSharedLists({ clock, maxBytes: 1_000 });
  const cache = fakeCache(FIVE, 100n);
  let made = 0;
  const pieces = function* (): Generator<Buffer> {
    for (const text of ['{"a":', '1}']) {
      made++;
      yield Buffer.from(text);
    }
  };
  const body = shared.keep(cache, '', 100n, 7, pieces());
  assert.ok(body !== undefined);
  assert.equal(made, 0, 'nothing made before it is read');
  const reader: Iterator<Buffer> = body[Symbol.iterator]();
  const firstPiece = reader.next();
  assert.equal(firstPiece.done === true ? undefined : firstPiece.value.toString(), '{"a":');
  assert.equal(made, 1);
  assert.equal(Buffer.concat([...body]).toString(), '{"a":1}', 'a second reader reads what the first made, and makes the rest');
  assert.equal(Buffer.concat([...body]).toString(), '{"a":1}');
  assert.equal(made, 2, 'each piece made once');
  assert.equal(shared.find(cache, '', 100n, false), body);
  assert.equal(shared.find(cache, '', 101n, false), undefined, 'RV unset: the current RV only');
  assert.equal(shared.find(cache, '', 101n, true), body, 'RV=0: any RV, if recent');
  clock.step(1_001);
  assert.equal(shared.find(cache, '', 101n, true), undefined, 'older than a second');
  assert.equal(shared.keep(cache, '', 102n, 2_000, pieces()), undefined, 'larger than all bodies may hold: made per request');
  assert.equal(shared.find(cache, 'ns', 100n, false), undefined, 'per scope');
});

test('shared LIST bodies: a body is kept while a response reads it, and dropped a second after its last use', () => {
  const clock = new FakeClock();
  const shared = newSharedLists({ clock });
  const cache = fakeCache(FIVE, 100n);
  const pieces = Array.from({ length: 200 }, (_, i) => Buffer.from(String(i)));
  const body = shared.keep(cache, '', 100n, 490, pieces);
  assert.ok(body !== undefined);
  const reader = body[Symbol.iterator]();
  // A slow response: 10 pieces a second, for longer than the idle time.
  for (let i = 0; i < 150; i++) {
    reader.next();
    clock.step(100);
  }
  assert.equal(shared.find(cache, '', 100n, false), body, 'still in use after 15 s of reading');
  while (reader.next().done !== true) clock.step(100);
  clock.step(900);
  assert.equal(shared.find(cache, '', 100n, false), body, 'within a second of the last read');
  clock.step(1_100);
  assert.equal(shared.find(cache, '', 100n, false), undefined, 'a second after its last use');
});

test('cached reads: a path the apiserver would not route as written is passed through', async () => {
  const { serve } = readsOver(fakeCache(FIVE, 100n), '100');
  assert.equal((await serve('/api/v1/configmaps'))?.statusCode, 200, 'the premise: the clean path is served');
  for (const path of [
    '//api/v1/configmaps',
    '/api//v1/configmaps',
    '/api/v1/configmaps/',
    '/api/v1/./configmaps',
    '/api/v1/namespaces/a/configmaps/x/..',
  ]) {
    assert.equal(await serve(path), undefined, path);
  }
});

test('cached reads, strong: an RV-unset GET or LIST is served once the probe shows the cache fresh', async () => {
  const cache = fakeCache(FIVE, 100n);
  const fresh = readsOver(cache, '100', 'strong');
  assert.equal((await fresh.serve('/api/v1/namespaces/a/configmaps/x'))?.statusCode, 200, "a GET at the apiserver's RV: probed, and fresh");
  assert.equal(fresh.probes.length, 1);
  assert.equal((await fresh.serve('/api/v1/configmaps'))?.statusCode, 200, "a quiet type at the apiserver's RV: probed, and fresh");
  assert.equal(fresh.probes.length, 2);
  assert.match(
    fresh.probes[1] ?? '',
    /^\/api\/v1\/namespaces\/default\/configmaps\?labelSelector=[^&]+&fieldSelector=metadata.name%3Dkube-cache-proxy-probe$/,
  );
  cache.changeAt = performance.now();
  assert.equal((await fresh.serve('/api/v1/configmaps'))?.statusCode, 200, 'changes in flight: probed, and fresh');
  assert.equal(fresh.probes.length, 3);
  const behind = readsOver(cache, '120', 'strong');
  assert.equal(await behind.serve('/api/v1/configmaps'), undefined, 'the apiserver is ahead: passed through');
  assert.equal(behind.probes.length, 1);
});

test('cached reads, strong: concurrent RV-unset LISTs share probes', async () => {
  const cache = fakeCache(FIVE, 100n);
  cache.changeAt = performance.now();
  const { serve, probes } = readsOver(cache, '100', 'strong');
  const answers = await Promise.all(Array.from({ length: 50 }, () => serve('/api/v1/configmaps')));
  assert.ok(answers.every((a) => a?.statusCode === 200));
  assert.ok(probes.length <= 2, `50 reads, ${String(probes.length)} probes`);
});

test('cached reads, bounded: served without a probe while the watch is open and recently heard from', async () => {
  const cache = fakeCache(FIVE, 100n);
  const { serve, probes, proofs } = readsOver(cache, '100', 'bounded', 1000);
  assert.equal((await serve('/api/v1/namespaces/a/configmaps/x'))?.statusCode, 200);
  assert.equal((await serve('/api/v1/configmaps'))?.statusCode, 200);
  cache.open = false;
  assert.equal(await serve('/api/v1/configmaps'), undefined, 'the watch is down: passed through');
  assert.equal((await serve('/api/v1/configmaps?resourceVersion=0'))?.statusCode, 200, 'RV=0 reads any state, as from the apiserver');
  cache.open = true;
  assert.deepEqual(probes, []);
  assert.deepEqual(proofs.outcomes, [], 'heard from within the bound: no proof');
});

test('cached reads, bounded: fifty reads past the bound go to the apiserver at once, none waiting; one proof starts for the reads that follow', async () => {
  const cache = fakeCache(FIVE, 100n);
  const { serve, probes, proofs } = readsOver(cache, '100', 'bounded', 1000);
  cache.progressAt = performance.now() - 2000;
  const proof = proofs.next();
  const answers = await Promise.all(Array.from({ length: 50 }, () => serve('/api/v1/namespaces/a/configmaps/x')));
  assert.ok(
    answers.every((a) => a === undefined),
    'all passed through, as without the proxy: no read waits for a proof',
  );
  assert.equal(await proof, 'proven');
  assert.deepEqual(proofs.outcomes, ['proven'], 'one proof for the reads that come often');
  assert.equal(probes.length, 1, 'its consistency probe');
  assert.equal(proofs.paths.length, 0, 'the cache was at the apiserver RV: the probe alone proved it');
  assert.equal((await serve('/api/v1/namespaces/a/configmaps/x'))?.statusCode, 200, 'the next read: from the cache');
});

test('cached reads, bounded: a failed proof is not retried before PROOF_RETRY_MS, however often the reads past the bound come', async () => {
  const cache = fakeCache(FIVE, 100n);
  const { serve, proofs } = readsOver(cache, '100', 'bounded', 1000, 'refused');
  cache.progressAt = performance.now() - 2000;
  assert.equal(await serve('/api/v1/namespaces/a/configmaps/x'), undefined, 'read rarely: passed through');
  assert.deepEqual(proofs.outcomes, [], 'no proof for a rare read');
  const proof = proofs.next();
  assert.equal(await serve('/api/v1/namespaces/a/configmaps/x'), undefined, 'passed through; a proof starts');
  assert.equal(await proof, 'read-failed');
  assert.equal(await serve('/api/v1/namespaces/a/configmaps/x'), undefined);
  assert.deepEqual(proofs.outcomes, ['read-failed'], 'right after a failed proof: no second one');
});

test("cached reads, bounded: reads wait for the proxy's own writes, whatever the answer's form", async () => {
  const cache = fakeCache(FIVE, 100n);
  const { serve, wrote, passed, probes, proofs } = readsOver(cache, '105');
  wrote('POST', '/api/v1/namespaces/a/configmaps', 201, {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name: 'n', namespace: 'a', resourceVersion: '105' },
  });
  assert.equal(await serve('/api/v1/configmaps'), undefined, 'the write is not in the cache yet');
  assert.equal(probes.length, 1, 'not reached within the wait: a probe checks the apiserver can have it (it can, at 105)');
  assert.equal(await serve('/api/v1/configmaps'), undefined, 'still waited for');
  cache.rv = 105n;
  assert.equal((await serve('/api/v1/configmaps'))?.statusCode, 200);
  assert.equal(probes.length, 2, 'the answer named the RV: no probe once the cache has it');
  // A delete answered with a Status names no RV: the object is doubted until the cache shows it caught up.
  wrote('DELETE', '/api/v1/namespaces/a/configmaps/x', 200, { kind: 'Status', apiVersion: 'v1', status: 'Success' });
  assert.equal((await serve('/api/v1/namespaces/b/configmaps/w'))?.statusCode, 200, 'another object: not doubted');
  assert.equal(await serve('/api/v1/namespaces/a/configmaps/x'), undefined, 'a quiet type: passed through at once');
  assert.equal(probes.length, 2, 'nobody waits on the doubt: no probe, no proof');
  // Near the bound, a read asks for a proof (reads of the type come often), which settles the doubt too.
  cache.progressAt = performance.now() - 70_000;
  const proof = proofs.next();
  assert.equal(await serve('/api/v1/namespaces/a/configmaps/x'), undefined, 'still doubted: passed through');
  assert.equal(await proof, 'proven', 'the proof for the bound settles the doubt meanwhile');
  assert.equal(probes.length, 3, "the proof's probe, none for the read");
  assert.equal((await serve('/api/v1/namespaces/a/configmaps/x'))?.statusCode, 200, 'settled: from the cache again');
  // With changes of the type in flight, a GET of the object doubted alone is its own probe
  // (passed through at once, its answer settles the doubt); answered without the object (a 404),
  // it leaves the doubt to a probe, and the next read probes and waits briefly.
  wrote('DELETE', '/api/v1/namespaces/a/configmaps/y', 200, { kind: 'Status', apiVersion: 'v1', status: 'Success' });
  cache.changeAt = performance.now();
  assert.equal(await serve('/api/v1/namespaces/a/configmaps/y'), undefined, 'its own probe: passed through');
  assert.equal(probes.length, 3, 'no probe for it');
  passed('/api/v1/namespaces/a/configmaps/y', 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 });
  assert.equal((await serve('/api/v1/namespaces/a/configmaps/y'))?.statusCode, 200, 'the probe finds the cache fresh');
  assert.equal(probes.length, 4);
  assert.equal((await serve('/api/v1/namespaces/a/configmaps/y'))?.statusCode, 200);
  assert.equal(probes.length, 4, 'settled: no second probe');
});

test('cached reads, bounded: a written RV the apiserver cannot have is forgotten once a read has waited for it', async () => {
  const cache = fakeCache(FIVE, 100n);
  const { serve, reason, wrote, probes } = readsOver(cache, '110');
  // However it was learnt, an RV past the apiserver's own is never reached by the cache.
  wrote('PUT', '/api/v1/namespaces/a/configmaps/x', 200, {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name: 'x', namespace: 'a', resourceVersion: '18446744073709551615' },
  });
  assert.equal(await serve('/api/v1/configmaps'), undefined, 'the first read waits, then passes through');
  assert.equal(probes.length, 1, "and probes the apiserver's RV: 110, below the written one");
  assert.equal(await reason('/api/v1/configmaps'), 'cache', 'forgotten: the next reads do not wait for it');
  assert.equal(probes.length, 1);
});

test('cached reads, bounded: after a conflict, reads of the object wait for the cache to catch up or pass through', async () => {
  const cache = fakeCache(FIVE, 100n);
  // Changes of the type in flight: doubted reads probe and wait (a quiet type's pass at once, above).
  cache.changeAt = performance.now();
  const { serve, wrote, passed, probes } = readsOver(cache, '110');
  wrote('PUT', '/api/v1/namespaces/a/configmaps/x', 409, {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    reason: 'Conflict',
    code: 409,
  });
  assert.equal((await serve('/api/v1/namespaces/a/configmaps/y'))?.statusCode, 200, 'another object is not doubted');
  assert.equal(await serve('/api/v1/namespaces/a/configmaps/x'), undefined, 'a GET of the object: its own probe, passed through');
  assert.equal(await serve('/api/v1/namespaces/a/configmaps'), undefined, "a LIST of the object's namespace too (a small one)");
  assert.equal((await serve('/api/v1/namespaces/b/configmaps'))?.statusCode, 200, 'another namespace is not');
  assert.equal(probes.length, 0, 'each read its own probe');
  // The GET's answer, the object at 110, names the RV to reach; later reads wait for it without probing.
  const x = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'x', namespace: 'a', uid: 'u', resourceVersion: '110' } };
  passed('/api/v1/namespaces/a/configmaps/x', 200, x);
  assert.equal(await serve('/api/v1/namespaces/a/configmaps/x'), undefined, 'the cache at 100, the object at 110');
  assert.equal(probes.length, 0);
  cache.rv = 110n;
  assert.equal((await serve('/api/v1/namespaces/a/configmaps/x'))?.statusCode, 200, 'caught up');
  // A create of what exists, and an update of what is gone, say the same.
  wrote('POST', '/api/v1/namespaces/b/configmaps', 409, { kind: 'Status', reason: 'AlreadyExists', code: 409 });
  wrote('PUT', '/api/v1/namespaces/b/configmaps/w', 404, { kind: 'Status', reason: 'NotFound', code: 404 });
  assert.equal(
    (await serve('/api/v1/namespaces/b/configmaps/w'))?.statusCode,
    200,
    'under a doubt of its namespace: probed, the cache is at the probe',
  );
  assert.equal(probes.length, 1);
});

test('cached reads, bounded: read-your-writes learns only from the apiserver’s own answers about the object written', async () => {
  const cache = fakeCache(FIVE, 100n);
  const { serve, wrote, probes } = readsOver(cache, '100');
  const huge = '18446744073709551615';
  const claim = (name: string, namespace = 'a', kind = 'ConfigMap'): unknown => ({
    kind,
    apiVersion: 'v1',
    metadata: { name, namespace, resourceVersion: huge },
  });
  // What a pod (or a node, a service) writes through the apiserver's proxy is its own body: no
  // method of a proxy path, nor exec, attach, portforward or log, teaches anything.
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
    wrote(method, '/api/v1/namespaces/a/configmaps/x/proxy/anything', 200, claim('x'));
    wrote(method, '/api/v1/proxy/namespaces/a/configmaps/x', 200, claim('x'));
  }
  for (const sub of ['exec', 'attach', 'portforward', 'log', 'token'])
    wrote('POST', `/api/v1/namespaces/a/configmaps/x/${sub}`, 200, claim('x'));
  // Nor does a 409 or 404 a pod answers through a proxy path: no doubt either.
  wrote('PUT', '/api/v1/namespaces/a/configmaps/x/proxy/y', 409, { kind: 'Status', code: 409, reason: 'Conflict' });
  // The type's own write answered with another object (kind, name or namespace): doubted, never waited for.
  wrote('PUT', '/api/v1/namespaces/b/configmaps/w', 200, claim('w', 'b', 'Secret'));
  wrote('PUT', '/api/v1/namespaces/b/configmaps/w', 200, claim('other', 'b'));
  wrote('POST', '/api/v1/namespaces/b/configmaps', 201, claim('new', 'a'));
  // A write of a type no cache holds teaches nothing, whatever it says.
  wrote('PUT', '/api/v1/namespaces/a/secrets/s', 200, claim('s', 'a', 'Secret'));
  assert.equal((await serve('/api/v1/namespaces/a/configmaps'))?.statusCode, 200, 'no read waits for the claimed RV');
  assert.equal((await serve('/api/v1/namespaces/a/configmaps/x'))?.statusCode, 200);
  assert.equal(probes.length, 0, 'nothing doubted in namespace a');
  assert.equal(await serve('/api/v1/namespaces/b/configmaps/w'), undefined, 'doubted: another object answered its write');
  // The type's own answers teach: status (the object itself) and scale (a Scale carrying its RV).
  wrote('PUT', '/api/v1/namespaces/a/configmaps/x/status', 200, {
    ...(claim('x') as object),
    metadata: { name: 'x', namespace: 'a', resourceVersion: '103' },
  });
  assert.equal(await serve('/api/v1/namespaces/a/configmaps'), undefined, 'waits for 103');
  cache.rv = 103n;
  wrote('PATCH', '/api/v1/namespaces/a/configmaps/x/scale', 200, {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name: 'x', namespace: 'a', resourceVersion: '104' },
  });
  assert.equal(await serve('/api/v1/namespaces/a/configmaps'), undefined, 'waits for 104');
  cache.rv = 104n;
  assert.equal((await serve('/api/v1/namespaces/a/configmaps'))?.statusCode, 200);
});

/** Lets every pending promise of the reads run (they reach their wait for room). */
async function settled(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
}

test('cached reads, memory: a body that finds no room waits for it, first come first served, else is passed through; room comes back once written', async () => {
  const cache = fakeCache(FIVE, 100n);
  const path = '/api/v1/configmaps?labelSelector=app%3Dweb';
  const size = (await readsOver(cache, '100').serve(path))?.length ?? 0;
  assert.ok(size > 0);
  const clock = new FakeClock();
  const memory = bodiesBudget(size + 10, clock);
  const { serve } = readsOver(cache, '100', 'bounded', 75_000, 'quiet', memory);
  const first = await serve(path);
  assert.ok(first !== undefined);
  assert.equal(first.length, size);
  assert.equal(memory.bodies.used(), size, 'a body takes its length');

  let second: CachedResponse | undefined | 'waiting' = 'waiting';
  const waiting = serve(path).then((res) => (second = res));
  await settled();
  assert.equal(second, 'waiting', 'no room: it waits');
  first.written?.(true);
  const served = await waiting;
  assert.ok(served !== undefined, 'served once the first body was written');
  assert.equal(listOf(served).items.length, 2);
  assert.equal(memory.bodies.used(), size);

  const starved = serve(path);
  await settled();
  clock.step(2_000);
  assert.equal(await starved, undefined, 'passed through after the wait');
  assert.equal(memory.passedThrough(), 1);
  served.written?.(false);
  assert.equal(memory.bodies.used(), 0, 'a body cut short gives its room back too');

  // A body larger than all the room is passed through at once; a whole LIST that fits shares
  // one body, which takes its length once, whatever its readers.
  assert.equal(await serve('/api/v1/configmaps?resourceVersion=0'), undefined);
  const wholeSize = (await readsOver(cache, '100').serve('/api/v1/configmaps?resourceVersion=0'))?.length ?? 0;
  const roomy = bodiesBudget(wholeSize, new FakeClock());
  const wide = readsOver(cache, '100', 'bounded', 75_000, 'quiet', roomy);
  const whole = await wide.serve('/api/v1/configmaps?resourceVersion=0');
  const shared = await wide.serve('/api/v1/configmaps?resourceVersion=0');
  assert.equal(whole?.length, wholeSize);
  assert.equal(shared?.length, wholeSize);
  assert.equal(roomy.bodies.used(), wholeSize);
});

test('cached reads: every answer from a cache carries its proof age, for a proxy in front (protocol/proof-age.ts)', async () => {
  const cache = fakeCache([configMap('a', 'x')], 10n);
  cache.progressAt = realClock.now() - 4_000;
  const { serve } = readsOver(cache, '10');
  for (const url of [
    '/api/v1/configmaps?resourceVersion=0',
    '/api/v1/configmaps',
    '/api/v1/namespaces/a/configmaps/x',
    '/api/v1/namespaces/a/configmaps/y',
  ]) {
    const res = await serve(url);
    assert.ok(res !== undefined, `${url}: from the cache`);
    res.written?.(true);
    const age = parseProofAge(res.headers[PROOF_AGE_HEADER]);
    assert.ok(age !== undefined && age >= 4_000 && age < 5_000, `${url}: ${String(age)}`);
  }
});
