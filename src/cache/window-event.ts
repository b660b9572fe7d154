/**
 * One change in the event window, with its watch-event bytes built at most once per event type
 * (kube-apiserver's cachingObject: "cache its serializations so that each of those is computed
 * exactly once"). Every watcher the event goes to is written the same Buffer.
 *
 * HOT PATH: frame() is called once per watcher per event; it returns a cached Buffer after the
 * first call. No object is parsed or serialized per watcher.
 */
import { objectMembers } from '../json/json-scan.ts';
import type { KubeObject } from '../informer/object.ts';
import { objectBytes } from '../informer/object.ts';
import type { PieceWriter } from './piece-writer.ts';

/** One change, as the watch cache saw it (watchCacheEvent). */
export interface WatchCacheEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly key: string;
  /** The new state; for DELETED, the object's final state as the apiserver sent it. */
  readonly object: KubeObject;
  /** The state before the change, if the cache held one: selectors are checked against both. */
  readonly prevObject: KubeObject | undefined;
  readonly resourceVersion: bigint;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

const ADDED_HEAD = Buffer.from('{"type":"ADDED","object":');
const MODIFIED_HEAD = Buffer.from('{"type":"MODIFIED","object":');
const DELETED_HEAD = Buffer.from('{"type":"DELETED","object":');
const TAIL = Buffer.from('}\n');

/**
 * `{"type":T,"object":OBJ}\n`, the apiserver's JSON watch framing, as its three pieces: written
 * in a row (corked), they cost no copy of the object.
 */
export function watchFramePieces(type: WatchEventType | 'BOOKMARK' | 'ERROR', object: Buffer): readonly [Buffer, Buffer, Buffer] {
  return [frameHead(type), object, TAIL];
}

function frameHead(type: WatchEventType | 'BOOKMARK' | 'ERROR'): Buffer {
  return type === 'ADDED'
    ? ADDED_HEAD
    : type === 'MODIFIED'
      ? MODIFIED_HEAD
      : type === 'DELETED'
        ? DELETED_HEAD
        : Buffer.from(`{"type":"${type}","object":`);
}

/** Appends the watch frame of a stored object to `out` (one copy of its bytes, no allocation per object). */
export function writeWatchFrame(out: PieceWriter, type: WatchEventType, obj: KubeObject): void {
  out.bytes(frameHead(type));
  out.object(obj, true);
  out.bytes(TAIL);
}

/** The object of a frame built by watchFrame (the bytes between `"object":` and the closing `}\n`). */
export function frameObject(frame: Buffer): Buffer {
  const head = frame.indexOf('"object":') + '"object":'.length;
  return frame.subarray(head, frame.length - TAIL.length);
}

/**
 * A watcher's own rendering of objects, for a representation other than the stored JSON (a
 * Table for `kubectl get -w`): called per watcher per event, so it suits the few watchers that
 * ask for it; it may keep state (the first event's column definitions).
 */
export interface WatchRepresentation {
  /**
   * Set when the rendering depends on nothing but the object (metadata-only): every watcher with
   * the same key gets the same bytes, so each event renders once per key and encoding, as its
   * plain frames do. Absent: rendered per watcher (a Table's first event carries its columns).
   */
  readonly key?: string;
  /** The event object as this watcher sends it, from the object's JSON as a plain stream would carry it. */
  object(raw: Buffer): Buffer;
  /** The same of a stored object (a watch's initial state), if the representation can make it without the object's whole bytes. */
  stored?(obj: KubeObject): Buffer;
  /** A bookmark's object, from the bookmark object's JSON. */
  bookmark(raw: Buffer, initialEventsEnd: boolean): Buffer;
  /** The Content-Type of the stream; none: JSON. */
  readonly contentType?: string;
  /** An ERROR event's object, from the Status's JSON; none: the Status's JSON. */
  status?(raw: Buffer): Buffer;
  /** One watch frame of an object as rendered (protobuf's length-prefixed WatchEvent); none: a JSON line. */
  frame?(type: WatchEventType | 'BOOKMARK' | 'ERROR', object: Buffer): Buffer;
}

/** The frame of a represented object: the representation's own framing, or the JSON line. */
export function representedWatchFrame(
  representation: WatchRepresentation,
  type: WatchEventType | 'BOOKMARK' | 'ERROR',
  object: Buffer,
): Buffer {
  return representation.frame === undefined ? watchFrame(type, object) : representation.frame(type, object);
}

/** The same framing as one Buffer: built once per event, then written to every watcher. */
export function watchFrame(type: WatchEventType | 'BOOKMARK' | 'ERROR', object: Buffer): Buffer {
  return Buffer.concat(watchFramePieces(type, object));
}

/**
 * The object's JSON with metadata.resourceVersion set to `rv` (versioner.UpdateObject): the
 * apiserver sends an object leaving a watcher's selection as its previous state at the event's
 * RV. The member is found by scanning, not by searching for the text (a label could be named
 * resourceVersion).
 */
export function withResourceVersion(raw: Buffer, rv: bigint): Buffer {
  const metadata = objectMembers(raw).get('metadata');
  if (metadata === undefined) return raw;
  const inner = objectMembers(raw.subarray(metadata.start, metadata.end)).get('resourceVersion');
  const value = Buffer.from(`"${String(rv)}"`);
  if (inner === undefined) return raw;
  const start = metadata.start + inner.start;
  const end = metadata.start + inner.end;
  return Buffer.concat([raw.subarray(0, start), value, raw.subarray(end)]);
}

/**
 * `pieces` joined in memory of their own. What an event keeps for the life of the event window
 * (its frames) is never carved from Node's shared allocation pool (Buffer.concat and
 * Buffer.allocUnsafe below half of Buffer.poolSize, a 64 KiB slab since Node 24): a kept slice
 * pins its whole slab, and with short-lived buffers made between two events (one client's flood
 * of reads) every event pinned a slab of its own, 64 KiB for a frame of ~3 KiB.
 */
function keptConcat(pieces: readonly Buffer[]): Buffer {
  let length = 0;
  for (const piece of pieces) length += piece.length;
  const out = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for (const piece of pieces) at += piece.copy(out, at);
  return out;
}

export class WindowEvent {
  readonly type: WatchCacheEvent['type'];
  readonly key: string;
  readonly object: KubeObject;
  readonly prevObject: KubeObject | undefined;
  readonly resourceVersion: bigint;
  #added: Buffer | undefined;
  #modified: Buffer | undefined;
  #deleted: Buffer | undefined;
  #deletedObject: Buffer | undefined;
  /** Frames in keyed representations (metadata-only), each built once. */
  #represented:
    { readonly key: string; readonly encoding: WatchEncoding; readonly type: WatchEventType; readonly bytes: Buffer }[] | undefined;
  /** The frames as wrapped by encodings other than the identity, each built once. */
  #encoded: { readonly encoding: WatchEncoding; readonly type: WatchEventType; readonly bytes: Buffer }[] | undefined;

  constructor(event: WatchCacheEvent) {
    this.type = event.type;
    this.key = event.key;
    this.object = event.object;
    this.prevObject = event.prevObject;
    this.resourceVersion = event.resourceVersion;
  }

  /**
   * The frame of this event as a watcher sees it (cache_watcher.go convertToWatchEvent): ADDED
   * and MODIFIED carry the new object; DELETED the previous object at the event's RV. Wrapped by
   * the connection's `encoding` (built once per encoding too, as caching_object.go keeps one
   * serialization per encoder).
   */
  frame(type: WatchEventType, encoding: WatchEncoding = IDENTITY_ENCODING): Buffer {
    if (encoding === IDENTITY_ENCODING) return this.#frame(type);
    // HOT PATH (once per watcher per event): a plain loop over at most a few entries, no closure.
    this.#encoded ??= [];
    for (const e of this.#encoded) if (e.encoding === encoding && e.type === type) return e.bytes;
    // Straight from the object's bytes: the identity frame is not built and kept beside it (an
    // HTTP/1.1 server's watchers all get the chunked one), which halves the window's frames.
    const bytes = keptConcat(encoding.wrap(watchFramePieces(type, this.objectBytes(type))));
    this.#encoded.push({ encoding, type, bytes });
    return bytes;
  }

  /**
   * The frame of this event in a keyed representation (see WatchRepresentation.key), rendered
   * once per key, type and encoding for every watcher that shares them.
   */
  representedFrame(type: WatchEventType, encoding: WatchEncoding, key: string, representation: WatchRepresentation): Buffer {
    // HOT PATH (once per watcher per event): a plain loop over at most a few entries.
    this.#represented ??= [];
    for (const r of this.#represented) if (r.key === key && r.encoding === encoding && r.type === type) return r.bytes;
    const bytes = keptConcat(encoding.wrap([representedWatchFrame(representation, type, representation.object(this.objectBytes(type)))]));
    this.#represented.push({ key, encoding, type, bytes });
    return bytes;
  }

  /**
   * The object a watcher is sent for this event: the new state, or for DELETED the previous state
   * at the event's RV. The new state's bytes are made for the caller (who frames them once per
   * event and encoding): the event keeps its frames, not a second copy of its object.
   */
  objectBytes(type: WatchEventType): Buffer {
    if (type !== 'DELETED') return objectBytes(this.object);
    return (this.#deletedObject ??= keptConcat([withResourceVersion(objectBytes(this.prevObject ?? this.object), this.resourceVersion)]));
  }

  #frame(type: WatchEventType): Buffer {
    switch (type) {
      case 'ADDED':
        return (this.#added ??= keptConcat(watchFramePieces('ADDED', objectBytes(this.object))));
      case 'MODIFIED':
        return (this.#modified ??= keptConcat(watchFramePieces('MODIFIED', objectBytes(this.object))));
      case 'DELETED':
        return (this.#deleted ??= keptConcat(watchFramePieces('DELETED', this.objectBytes('DELETED'))));
    }
  }
}

/**
 * How a watch stream's frames are carried on its connection, for encodings the server defines
 * (HTTP/1.1 chunks: server/http-chunked.ts). The cache frames watch events; the connection's
 * framing is not its concern, but it keeps each event's encoded bytes once per encoding so that
 * every watcher costs one write per event.
 */
export interface WatchEncoding {
  /** The bytes that carry `pieces` (one frame, in order) on the connection. */
  wrap(pieces: readonly Buffer[]): readonly Buffer[];
  /** What ends the stream, if anything. */
  readonly end: Buffer | undefined;
}

/** Frames as they are: the connection adds nothing (a plain stream, or one the server frames itself). */
export const IDENTITY_ENCODING: WatchEncoding = { wrap: (pieces) => pieces, end: undefined };
