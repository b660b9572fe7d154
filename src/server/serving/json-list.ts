/**
 * JSON answers from the cache, byte for byte the apiserver's (endpoints/handlers/get.go over its
 * JSON serializer): a GET's object as stored, and a LIST's typed list (built-in types) or
 * unstructured list (custom resources), whole LISTs shared by their readers (shared-lists.ts).
 *
 * HOT PATH: a LIST body is the concatenation of a head, each item's stored bytes, and a tail; no
 * object is parsed or serialized per request, and the key order is sorted once per RV.
 */
import type { KubeObject } from '../../informer/object.ts';
import { objectBytes } from '../../informer/object.ts';
import type { ListRequest, Page, ReadPlan } from '../../cache/cacher.ts';
import { getList, namespaceRange, objectKey, wholeListScope } from '../../cache/cacher.ts';
import type { CachedResourceSpec } from '../../cache/cached-resources.ts';
import type { PassReason } from '../../cache/pass-reason.ts';
import { PieceWriter } from '../../cache/piece-writer.ts';
import type { PiecePool } from '../../cache/piece-writer.ts';
import type { WatchCache } from '../../cache/watch-cache.ts';
import { listItemBytes } from '../../cache/watch-cache.ts';
import { groupVersionString } from '../../kube/group-resource.ts';
import type { ListMeta } from '../../kube/list-meta.ts';
import { listMetaJson, unstructuredListMetaJson } from '../../kube/list-meta.ts';
import { notFound } from '../../kube/status.ts';
import type { BodyRoom, CachedResponse, NoRoom } from './cached-response.ts';
import { JSON_HEADERS, NEWLINE, noRoom, pooledResponse, whole } from './cached-response.ts';
import type { SharedLists } from './shared-lists.ts';

/** A GET: the object as stored, or the apiserver's 404 Status. */
export function serveGet(cache: WatchCache, namespace: string, name: string): CachedResponse {
  const obj = cache.get(objectKey(cache, namespace, name));
  if (obj === undefined) {
    const status = notFound({ group: cache.spec.group, resource: cache.spec.resource }, name);
    return whole(404, [status.body()]);
  }
  return whole(200, [objectBytes(obj), NEWLINE]);
}

/**
 * A LIST body's items: `count` objects, read once as the body is made (a lazy range of a
 * snapshot, or a page's array), and their bytes as list items when the store already knows them
 * (undefined: summed from the items, which must then be an array to be read twice).
 */
interface ListItems extends Omit<Page, 'items'> {
  readonly items: Iterable<KubeObject>;
  readonly count: number;
  readonly itemBytes: number | undefined;
}

export function serveList(
  cache: WatchCache,
  list: ListRequest,
  plan: ReadPlan,
  shared: SharedLists,
  room: BodyRoom,
): CachedResponse | NoRoom | PassReason {
  // Whole LISTs share their bodies (shared-lists.ts); the rest are made per request, in pooled pieces.
  const scope = wholeListScope(list, plan);
  const rv = cache.resourceVersion();
  if (scope !== undefined && rv !== undefined) {
    const kept = shared.find(cache, scope, rv, list.options.resourceVersion === '0');
    if (kept !== undefined) return { statusCode: 200, headers: JSON_HEADERS, length: kept.length, body: kept, written: kept.acquire() };
    // HOT PATH: the whole range of the current state, read lazily as the body is written; its
    // length from the store's weights, so a 100,000-object LIST holds the loop for no walk of it.
    const view = cache.current();
    const { start, end } = namespaceRange(view, cache, list.namespace);
    const items = { items: view.values(start, end), count: end - start, itemBytes: view.weight(start, end) };
    const body = listBody(cache.spec, { ...items, resourceVersion: rv, continue: '', remainingItemCount: undefined }, room.pool);
    const made = shared.keep(cache, scope, rv, body.length, body.pieces, (bytes) => room.fit(bytes));
    if (made !== undefined) return { statusCode: 200, headers: JSON_HEADERS, length: body.length, body: made, written: made.acquire() };
    return room.fit(body.length) ? pooledResponse(body.length, body.pieces, room) : noRoom(body.length);
  }
  const page = getList(cache, list, plan);
  if (typeof page === 'string') return page;
  const body = listBody(cache.spec, { ...page, count: page.items.length, itemBytes: undefined }, room.pool);
  return room.fit(body.length) ? pooledResponse(body.length, body.pieces, room) : noRoom(body.length);
}

/** Per type, computed once: the JSON strings of its list's kind and apiVersion. */
interface ListShape {
  readonly apiVersion: string;
  readonly listKind: string;
}

const shapes = new WeakMap<CachedResourceSpec, ListShape>();

function shapeOf(spec: CachedResourceSpec): ListShape {
  let shape = shapes.get(spec);
  if (shape === undefined) {
    shape = {
      apiVersion: JSON.stringify(groupVersionString(spec.group, spec.version)),
      listKind: JSON.stringify(`${spec.kind}List`),
    };
    shapes.set(spec, shape);
  }
  return shape;
}

const COMMA_BYTE = 0x2c;

/**
 * The list's bytes, as the apiserver writes them: a typed list (built-in types) has its fields
 * in declaration order and items without kind and apiVersion; an unstructured list (custom
 * resources) has its keys sorted and items as stored. The length is summed first (the items are
 * chosen already); the pieces are copied as they are taken.
 */
function listBody(spec: CachedResourceSpec, page: ListItems, pool: PiecePool): { length: number; pieces: Iterable<Buffer> } {
  const { apiVersion, listKind } = shapeOf(spec);
  const meta: ListMeta = {
    resourceVersion: String(page.resourceVersion),
    continue: page.continue,
    remainingItemCount: page.remainingItemCount,
  };
  const typed = !spec.unstructured;
  let head: Buffer;
  let tail: Buffer;
  if (typed) {
    head = Buffer.from(`{"kind":${listKind},"apiVersion":${apiVersion},"metadata":{${listMetaJson(meta)}},"items":[`);
    tail = Buffer.from(']}\n');
  } else {
    head = Buffer.from(`{"apiVersion":${apiVersion},"items":[`);
    tail = Buffer.from(`],"kind":${listKind},"metadata":{${unstructuredListMetaJson(meta)}}}\n`);
  }
  const { items, count } = page;
  let length = head.length + tail.length + Math.max(0, count - 1);
  if (page.itemBytes !== undefined) length += page.itemBytes;
  else {
    const itemBytes = listItemBytes(spec);
    for (const obj of items) length += itemBytes(obj);
  }
  function* pieces(): Generator<Buffer> {
    const out = new PieceWriter({ pool });
    out.bytes(head);
    let first = true;
    for (const obj of items) {
      if (!first) out.byte(COMMA_BYTE);
      first = false;
      out.object(obj, !typed);
      if (out.ready()) yield* out.take();
    }
    out.bytes(tail);
    yield* out.end();
  }
  return { length, pieces: pieces() };
}
