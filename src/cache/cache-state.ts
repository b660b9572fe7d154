/**
 * A watch cache's saved state as bytes (no apiserver counterpart: its watch cache starts from a
 * LIST at every start, cacher.go): what `--state-dir` keeps of each cache across a restart, so
 * that the cache answers `resourceVersion=0` reads at once and resumes its upstream watch from
 * where it stopped instead of listing (state-dir.ts reads and writes the files).
 *
 * Layout (little-endian):
 *   MAGIC (8 bytes) | header length (u32) | header (JSON, UTF-8) | body | SHA-256 of all before (32 bytes)
 * The header names what the state is of (StateIdentity: the cluster, the proxy version, the
 * cache's scope), its RV and when it was saved, and each object's parsed fields (key, RV, labels,
 * selectable fields, TypeMeta) with the length of its bytes; the body is the objects' bytes after
 * their TypeMeta (KubeObject.rest), one after another. Restoring parses the header only: the
 * objects' JSON is never parsed again.
 *
 * The objects are the state's, in key order, then the event window's that the state no longer
 * holds (each object once, however many events name it); the window's events refer to them.
 *
 * A state is refused (StateRefusal), never partly used: a file shorter than its lengths or whose
 * checksum differs (a write cut short, a disk fault), another format, or another identity.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../informer/object.ts';
import { restoredObject } from '../informer/object.ts';
import type { WindowContents } from './event-window.ts';
import type { WatchEventType } from './window-event.ts';
import { WindowEvent } from './window-event.ts';
import type { CacheState } from './watch-cache.ts';

const MAGIC = Buffer.from('KCPSTAT1');
const DIGEST_BYTES = 32;
/** Body bytes copied per piece: each piece is one turn of the event loop (state-dir.ts writes them in turns). */
export const STATE_PIECE_BYTES = 4 * 1024 * 1024;

/** What a state is of: a state is restored only where all of it matches. */
export interface StateIdentity {
  /** The cluster's identity (the kube-system namespace's UID): a state of another cluster holds other objects at the same RVs. */
  readonly cluster: string;
  /** The proxy's version: another version may parse and select objects otherwise. */
  readonly proxyVersion: string;
  /** The cache's scope (factory scopeKey: group, version, resource, namespace, selectors). */
  readonly scope: string;
}

const EVENT_TYPES: readonly WatchEventType[] = ['ADDED', 'MODIFIED', 'DELETED'];

interface Header extends StateIdentity {
  readonly resourceVersion: string;
  /** Wall-clock ms when saved (Date.now()): a state too old to resume is refused. */
  readonly savedAt: number;
  readonly typeMetas: readonly string[];
  readonly labels: readonly Readonly<Record<string, string>>[];
  readonly fields: readonly Readonly<Record<string, string>>[];
  /** [key, resourceVersion, labels index, fields index, typeMeta index, rest length] per object. */
  readonly objects: readonly (readonly [string, string, number, number, number, number])[];
  /** The first `stateObjects` objects are the state, in key order. */
  readonly stateObjects: number;
  readonly window: {
    readonly listResourceVersion: string;
    readonly complete: boolean;
    /** [type index, object index, previous object index or -1, resourceVersion] per event, oldest first. */
    readonly events: readonly (readonly [number, number, number, string])[];
  };
}

/** Why a saved state is not used. */
export class StateRefusal extends Error {}

/** A state as the pieces of its file, made a piece at a time (the body is copied lazily). */
export interface EncodedState {
  /** The file's length in bytes. */
  readonly bytes: number;
  readonly objects: number;
  readonly events: number;
  /** The file's pieces in order, the checksum last; each body piece is copied when reached. */
  pieces(): Generator<Buffer>;
}

/** Encodes `state` for `identity`, saved at `savedAt` (wall-clock ms). The state's objects are read now; their bytes as pieces() goes. */
export function encodeState(state: CacheState, identity: StateIdentity, savedAt: number): EncodedState {
  const indexOf = new Map<KubeObject, number>();
  const objects: KubeObject[] = [];
  const add = (obj: KubeObject): number => {
    let index = indexOf.get(obj);
    if (index === undefined) {
      index = objects.length;
      indexOf.set(obj, index);
      objects.push(obj);
    }
    return index;
  };
  for (const obj of state.objects) add(obj);
  const stateObjects = objects.length;
  const events = state.window.events.map(
    (event) =>
      [
        EVENT_TYPES.indexOf(event.type),
        add(event.object),
        event.prevObject === undefined ? -1 : add(event.prevObject),
        String(event.resourceVersion),
      ] as const,
  );
  const typeMetas = new Table<string>();
  const labels = new Table<Readonly<Record<string, string>>>();
  const fields = new Table<Readonly<Record<string, string>>>();
  let bodyBytes = 0;
  const rows = objects.map((obj) => {
    bodyBytes += obj.rest.length;
    return [
      obj.key,
      obj.resourceVersion,
      labels.index(obj.labels),
      fields.index(obj.fields),
      typeMetas.index(obj.typeMeta),
      obj.rest.length,
    ] as const;
  });
  const header: Header = {
    ...identity,
    resourceVersion: String(state.resourceVersion),
    savedAt,
    typeMetas: typeMetas.values,
    labels: labels.values,
    fields: fields.values,
    objects: rows,
    stateObjects,
    window: { listResourceVersion: String(state.window.listResourceVersion), complete: state.window.complete, events },
  };
  const headerBytes = Buffer.from(JSON.stringify(header));
  const head = Buffer.allocUnsafe(MAGIC.length + 4);
  MAGIC.copy(head);
  head.writeUInt32LE(headerBytes.length, MAGIC.length);
  return {
    bytes: head.length + headerBytes.length + bodyBytes + DIGEST_BYTES,
    objects: stateObjects,
    events: events.length,
    *pieces() {
      const digest = createHash('sha256');
      const out = (piece: Buffer): Buffer => {
        digest.update(piece);
        return piece;
      };
      yield out(head);
      yield out(headerBytes);
      let i = 0;
      while (i < objects.length) {
        let size = 0;
        let j = i;
        while (j < objects.length && (size === 0 || size + (objects[j]?.rest.length ?? 0) <= STATE_PIECE_BYTES)) {
          size += objects[j]?.rest.length ?? 0;
          j++;
        }
        const piece = Buffer.allocUnsafe(size);
        let at = 0;
        for (let k = i; k < j; k++) at += piece.write(objects[k]?.rest ?? '', at, 'latin1');
        i = j;
        yield out(piece);
      }
      yield digest.digest();
    },
  };
}

/** A state read back: what it is of, and the cache state to restore. */
export interface DecodedState {
  readonly identity: StateIdentity;
  readonly savedAt: number;
  readonly state: CacheState;
  readonly objects: number;
}

/** Decodes a state file's bytes; throws StateRefusal naming why it cannot be used. */
export function decodeState(file: Buffer): DecodedState {
  if (file.length < MAGIC.length + 4 + DIGEST_BYTES) throw new StateRefusal(`truncated: ${String(file.length)} bytes`);
  if (!file.subarray(0, MAGIC.length).equals(MAGIC)) throw new StateRefusal('not a state file of this format');
  const content = file.subarray(0, file.length - DIGEST_BYTES);
  const expected = file.subarray(file.length - DIGEST_BYTES);
  if (!createHash('sha256').update(content).digest().equals(expected))
    throw new StateRefusal('checksum mismatch (a write cut short, or a damaged file)');
  const headerLength = file.readUInt32LE(MAGIC.length);
  const bodyStart = MAGIC.length + 4 + headerLength;
  if (bodyStart > content.length) throw new StateRefusal('truncated header');
  let header: Header;
  try {
    header = JSON.parse(content.toString('utf8', MAGIC.length + 4, bodyStart)) as Header;
  } catch (error) {
    throw new StateRefusal(`unreadable header: ${String(error)}`);
  }
  const objects: KubeObject[] = [];
  let at = bodyStart;
  for (const [key, resourceVersion, labels, fields, typeMeta, length] of header.objects) {
    if (at + length > content.length) throw new StateRefusal('truncated body');
    objects.push(
      restoredObject({
        key,
        resourceVersion,
        labels: header.labels[labels] ?? {},
        fields: header.fields[fields] ?? {},
        typeMeta: header.typeMetas[typeMeta] ?? '',
        rest: content.toString('latin1', at, at + length),
      }),
    );
    at += length;
  }
  if (at !== content.length) throw new StateRefusal('body longer than its objects');
  const objectAt = (index: number): KubeObject => {
    const obj = objects[index];
    if (obj === undefined) throw new StateRefusal(`an event names object ${String(index)} of ${String(objects.length)}`);
    return obj;
  };
  const events = header.window.events.map(([type, object, prev, rv]) => {
    const eventType = EVENT_TYPES[type];
    if (eventType === undefined) throw new StateRefusal(`an event of unknown type ${String(type)}`);
    const obj = objectAt(object);
    return new WindowEvent({
      type: eventType,
      key: obj.key,
      object: obj,
      prevObject: prev < 0 ? undefined : objectAt(prev),
      resourceVersion: BigInt(rv),
    });
  });
  const window: WindowContents = {
    listResourceVersion: BigInt(header.window.listResourceVersion),
    complete: header.window.complete,
    events,
  };
  return {
    identity: { cluster: header.cluster, proxyVersion: header.proxyVersion, scope: header.scope },
    savedAt: header.savedAt,
    objects: header.stateObjects,
    state: { resourceVersion: BigInt(header.resourceVersion), objects: objects.slice(0, header.stateObjects), window },
  };
}

/** Values numbered in the order first seen, each once (by identity: records and strings the objects share). */
class Table<V> {
  readonly values: V[] = [];
  readonly #index = new Map<V, number>();

  index(value: V): number {
    let index = this.#index.get(value);
    if (index === undefined) {
      index = this.values.length;
      this.#index.set(value, index);
      this.values.push(value);
    }
    return index;
  }
}
