/**
 * JSON answers from the cache, byte for byte the apiserver's (endpoints/handlers/get.go over its
 * JSON serializer): a GET's object as stored, and a LIST's typed list (built-in types) or
 * unstructured list (custom resources), whole LISTs shared by their readers (read-encoding.ts).
 *
 * HOT PATH: a LIST body is the concatenation of a head, each item's stored bytes, and a tail; no
 * object is parsed or serialized per request, and the key order is sorted once per RV.
 */
import { objectBytes } from '../../informer/object.ts';
import type { CachedResourceSpec } from '../../cache/cached-resources.ts';
import { PieceWriter } from '../../cache/piece-writer.ts';
import type { PiecePool } from '../../cache/piece-writer.ts';
import { listItemBytes } from '../../cache/watch-cache.ts';
import { groupVersionString } from '../../kube/group-resource.ts';
import type { ListMeta } from '../../kube/list-meta.ts';
import { listMetaJson, unstructuredListMetaJson } from '../../kube/list-meta.ts';
import { notFound } from '../../kube/status.ts';
import { JSON_HEADERS, NEWLINE, whole } from './cached-response.ts';
import type { ListItems, ReadEncoding } from './read-encoding.ts';

/**
 * JSON (read-encoding.ts): a GET's object as stored, or the apiserver's 404 Status; a LIST's
 * typed or unstructured list, whole LISTs shared under their scope.
 */
export function jsonEncoding(spec: CachedResourceSpec): ReadEncoding {
  let encoding = encodings.get(spec);
  if (encoding === undefined) {
    encoding = {
      headers: JSON_HEADERS,
      sharedKey: (scope) => scope,
      anyRv: true,
      object: (obj) => whole(200, [objectBytes(obj), NEWLINE]),
      missing: (cache, name) => whole(404, [notFound({ group: cache.spec.group, resource: cache.spec.resource }, name).body()]),
      list: (items, meta, pool) => ({ kind: 'streamed', ...listBody(spec, items, meta, pool) }),
    };
    encodings.set(spec, encoding);
  }
  return encoding;
}

const encodings = new WeakMap<CachedResourceSpec, ReadEncoding>();

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
function listBody(
  spec: CachedResourceSpec,
  page: ListItems,
  meta: ListMeta,
  pool: PiecePool,
): { length: number; pieces: Iterable<Buffer> } {
  const { apiVersion, listKind } = shapeOf(spec);
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
