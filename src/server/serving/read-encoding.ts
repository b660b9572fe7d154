/**
 * One seam for every encoding of GET and LIST answers from the cache, as the apiserver's: its
 * `GetList` returns one selection that every serializer encodes, and `cachingObject` keeps one
 * serialization per encoder. The cacher selects once (cache/cacher.ts selectRead: the object, a
 * whole list or a page); an encoding only encodes (JSON, protobuf, metadata in JSON or protobuf,
 * Table: json-list.ts, cached-protobuf.ts, cached-metadata.ts, table-reads.ts); serveRead makes
 * the answer the same way for all of them: a GET's object or its 404, a whole LIST shared by its
 * readers (shared-lists.ts, one body per encoding, scope and RV), a page made per request, each
 * body's size taken from the memory budget before it is made.
 */
import type { ReadPlan } from '../../cache/cacher.ts';
import { selectRead } from '../../cache/cacher.ts';
import type { ReadRequest } from '../../cache/delegator.ts';
import type { PassReason } from '../../cache/pass-reason.ts';
import type { PiecePool } from '../../cache/piece-writer.ts';
import type { WatchCache } from '../../cache/watch-cache.ts';
import type { KubeObject } from '../../informer/object.ts';
import type { ListMeta } from '../../kube/list-meta.ts';
import type { BodyRoom, CachedResponse, NoRoom } from './cached-response.ts';
import { isNoRoom, madeWhole, noRoom, pooledResponse } from './cached-response.ts';
import type { SharedBody, SharedLists } from './shared-lists.ts';

/**
 * A LIST's items, read once as its body is made (a lazy range of the current state, or a
 * page's array), and their bytes as JSON list items when the store knows them already.
 */
export interface ListItems {
  readonly items: Iterable<KubeObject>;
  readonly count: number;
  /** The items' JSON list-item bytes (the store's weights); undefined: the encoding sums what it needs. */
  readonly itemBytes: number | undefined;
}

/**
 * A LIST's body as an encoding makes it: `streamed`, its length known before any piece is made
 * (JSON, protobuf, metadata: the pieces are made as they are written); or `made` whole in one
 * turn (Tables, printed at their second), room taken for an estimate first.
 */
export type EncodedList =
  | { readonly kind: 'streamed'; readonly length: number; readonly pieces: Iterable<Buffer> }
  | {
      readonly kind: 'made';
      readonly items: readonly KubeObject[];
      readonly itemBytes: (obj: KubeObject) => number;
      readonly make: () => Buffer[];
    };

export interface ReadEncoding {
  /** The answers' Content-Type. */
  readonly headers: Readonly<Record<string, string>>;
  /** The shared-lists key of this encoding's whole LIST of `scope` (shared-lists.ts: one body per key and RV). */
  sharedKey(scope: string): string;
  /**
   * Whether an RV=0 LIST may take a body kept at an older RV (shared-lists.ts find's anyRv): not
   * a Table's, printed at its second.
   */
  readonly anyRv: boolean;
  /** A GET's answer: the object held. */
  object(obj: KubeObject): CachedResponse;
  /** A GET of an object the cache does not hold: the apiserver's 404 in this encoding, or why the apiserver words it. */
  missing(cache: WatchCache, name: string): CachedResponse | PassReason;
  /** A LIST's body of `items` with `meta`, in pieces of `pool`. */
  list(items: ListItems, meta: ListMeta, pool: PiecePool): EncodedList;
}

/** A GET or LIST of `cache` as `plan` reads it, in `encoding` (see the top of this file). */
export function serveRead(
  cache: WatchCache,
  read: ReadRequest,
  plan: ReadPlan,
  encoding: ReadEncoding,
  shared: SharedLists,
  room: BodyRoom,
): CachedResponse | NoRoom | PassReason {
  const selection = selectRead(cache, read, plan);
  if (typeof selection === 'string') return selection;
  switch (selection.kind) {
    case 'object':
      return selection.object === undefined ? encoding.missing(cache, read.name) : encoding.object(selection.object);
    case 'page': {
      const { page } = selection;
      const meta = { resourceVersion: String(page.resourceVersion), continue: page.continue, remainingItemCount: page.remainingItemCount };
      return answer(encoding, encoding.list({ items: page.items, count: page.items.length, itemBytes: undefined }, meta, room.pool), room);
    }
    case 'whole': {
      const { scope, resourceVersion: rv } = selection;
      const key = encoding.sharedKey(scope);
      const kept = shared.find(cache, key, rv, encoding.anyRv && read.options.resourceVersion === '0');
      if (kept !== undefined) return sharedAnswer(encoding, kept);
      const body = encoding.list(selection.list(), wholeMeta(rv), room.pool);
      return answer(encoding, body, room, (length, pieces, take) => shared.keep(cache, key, rv, length, pieces, take));
    }
  }
}

function wholeMeta(rv: bigint): ListMeta {
  return { resourceVersion: String(rv), continue: '', remainingItemCount: undefined };
}

function sharedAnswer(encoding: ReadEncoding, body: SharedBody): CachedResponse {
  return { statusCode: 200, headers: encoding.headers, length: body.length, body, written: body.acquire() };
}

type Keep = (length: number, pieces: Iterable<Buffer>, take: (bytes: number) => boolean) => SharedBody | undefined;

/** A LIST's answer: offered to the shared lists when `keep` is given, else this request's own. */
function answer(encoding: ReadEncoding, body: EncodedList, room: BodyRoom, keep?: Keep): CachedResponse | NoRoom {
  if (body.kind === 'made') {
    const made = madeWhole(body.items, body.itemBytes, room, body.make, keep);
    return isNoRoom(made) ? made : { ...made, headers: encoding.headers };
  }
  if (keep !== undefined) {
    const kept = keep(body.length, body.pieces, (bytes) => room.fit(bytes));
    if (kept !== undefined) return sharedAnswer(encoding, kept);
  }
  return room.fit(body.length) ? { ...pooledResponse(body.length, body.pieces, room), headers: encoding.headers } : noRoom(body.length);
}
