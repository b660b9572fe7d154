/**
 * Read-your-writes and conflict marks (consistency.ts states the modes; the delegator applies
 * both to each RV-unset read): what the proxy's own writes oblige its later reads of the type to see.
 *
 * Read-your-writes learns only from the apiserver's own answers about the object written
 * (lessonOf), and only for a type a cache holds (a write of another changes no read the cache
 * answers):
 * - an RV is learnt from a 2xx answer to the type's own create, update, patch or delete, or to
 *   the subresources whose answer is the object itself (status, ephemeralcontainers, resize,
 *   approval, finalize) or a Scale carrying its RV (scale); and only when the answer's kind is
 *   the type's (Scale for scale), its namespace the request's (none for a cluster-scoped type)
 *   and, for a named write, its name the request's;
 * - a 2xx answer that names no RV or another object (a Status, a list, a body unread or of
 *   another kind), a write of binding or eviction (answered with a Status), and a collection
 *   delete make the object (or namespace) doubted instead; so do a 409, and a 404 to an update or
 *   delete of the object itself;
 * - a collection delete answered with an empty list of the type deleted nothing (its answer is
 *   the list of what it deleted, registry/generic/registry/store.go DeleteCollection): nothing
 *   is learnt, and the reads after it are the cache's (a namespace's deletion deletes every
 *   type's collection in it, most of them empty);
 * - nothing else is learnt from: not proxy, exec, attach, portforward or log (their bodies and
 *   status codes are a pod's, a node's or a service's), nor the legacy `/proxy/` verb, nor any
 *   other subresource (serviceaccounts/token, ...);
 * - an RV is never waited on that the upstream cannot have: when the cache does not reach a
 *   written RV within the read's wait, the apiserver's current RV is probed, and a written RV past
 *   it is forgotten (`unreachable`): the next reads do not wait for it.
 * Doubts are kept per type within MAX_DOUBTS and MAX_DOUBT_BYTES (their namespace and name
 * copied, never a slice of a client's path); past either, the whole type is doubted, which one
 * probe settles.
 */
import { LRUCache } from 'lru-cache';

/** What a write through the proxy touched: one object, or all of a namespace's (name ''), or the type's (both ''). */
export interface WriteTarget {
  readonly group: string;
  readonly resource: string;
  /** '' for a cluster-scoped type, or a write across namespaces. */
  readonly namespace: string;
  /** '' for a collection (create, deletecollection). */
  readonly name: string;
}

/** What a read covers: a GET of one object (name set) or a LIST or WATCH of a namespace's or all ('' each). */
export type ReadTarget = WriteTarget;

/**
 * A part of a type that reads must see at least at `need`: learnt from a probe sent after the
 * write that made it doubtful; undefined until such a probe answered.
 */
interface Doubt {
  readonly namespace: string;
  readonly name: string;
  /** The tracker's sequence when the doubt arose: a probe requested after it can settle it. */
  readonly seq: number;
  need: bigint | undefined;
  /** A read's answer could not settle it (unsettledBy): a probe must. */
  probeOnly?: true;
}

interface TypeWrites {
  /** The newest RV a write of this type through the proxy was answered with. */
  written: bigint;
  doubts: Doubt[];
  /** What `doubts` hold, as MAX_DOUBT_BYTES counts it. */
  doubtBytes: number;
}

function doubtBytes(namespace: string, name: string): number {
  return 2 * (namespace.length + name.length) + DOUBT_OVERHEAD_BYTES;
}

/**
 * A copy of `s` that holds only its own characters: a name read from a request's path may be a
 * slice of the whole path (V8 keeps the parent of a sliced string alive).
 */
function own(s: string): string {
  return s === '' ? '' : Buffer.from(s, 'utf16le').toString('utf16le');
}

/** What a read must wait for before the cache may answer it. */
export interface ReadRequirement {
  /** The cache must reach this RV (the proxy's own writes); the events are a watch delivery away. */
  readonly written: bigint;
  /** The cache must reach this RV (learnt from a probe); 0n when nothing is doubted. */
  readonly caughtUp: bigint;
  /** A doubt covers the read but no probe has named its RV yet: probe first. */
  readonly probe: boolean;
  /** Such a doubt was read by a read whose answer could not settle it (unsettledBy): only a probe may. */
  readonly probeOnly: boolean;
  /**
   * Every such doubt names the one object read (a GET's): the object's own RV, from the
   * apiserver's answer to the GET, settles them (settleObject) as a probe's RV would.
   */
  readonly objectOnly: boolean;
}

export interface ReadYourWrites {
  /** A write of the type answered with an object at `rv`. */
  written(group: string, resource: string, rv: bigint): void;
  /** The apiserver is at `upstreamRv`: a written RV past it is none it can have, and is forgotten. */
  unreachable(group: string, resource: string, upstreamRv: bigint): void;
  /**
   * A write whose answer names no RV (a delete answered with a Status, a collection delete), or
   * that shows the cache behind (a conflict): reads of the target wait for a probe.
   */
  doubt(target: WriteTarget): void;
  /** What a read of `target` must see. */
  requirement(target: ReadTarget): ReadRequirement;
  /** Whether some doubt of the type waits for an RV (a probe's, or a consistent LIST's answer). */
  unsettled(group: string, resource: string): boolean;
  /**
   * The current sequence: pass it to settle() with the RV of a probe, or of a consistent LIST,
   * sent to the apiserver after this call.
   */
  sequence(): number;
  /** A probe (or consistent LIST) requested at `seq` answered `rv`: the doubts that arose before it need `rv`. */
  settle(group: string, resource: string, seq: number, rv: bigint): void;
  /**
   * A consistent GET of `target` requested at `seq` answered the object at `rv` (its own RV, the
   * revision of its last change): the doubts naming that object that arose before it need `rv`
   * (a cache at `rv` holds the object as the GET read it). Doubts of more than the object are
   * left: the object's RV says nothing of its namespace's other objects.
   */
  settleObject(target: ReadTarget, seq: number, rv: bigint): void;
  /**
   * A consistent read of `target` requested at `seq`, passed through to settle doubts, was
   * answered without an RV that could (a 404, a refusal, a form not read: a custom resource's
   * list in JSON): the doubts it read that arose before it are settled by a probe from now on
   * (the reads would otherwise all go to the apiserver).
   */
  unsettledBy(target: ReadTarget, seq: number): void;
  /** The cache of the type is at `rv`: the doubts it has reached are forgotten. */
  reached(group: string, resource: string, rv: bigint): void;
}

/** Types tracked at once (only cached types are: a bound on what the registry runs, kept as a backstop). */
const MAX_TYPES = 1024;
/** Doubts kept per type; past this the whole type is doubted (one probe settles it). */
const MAX_DOUBTS = 256;
/**
 * Bytes of doubts kept per type (their strings, UTF-16, and DOUBT_OVERHEAD_BYTES each); past this
 * the whole type is doubted. 256 doubts of typical names (~40 characters of namespace and name)
 * take ~40 KiB; a write to a path of a 1 MiB name doubts the whole type at once.
 */
export const MAX_DOUBT_BYTES = 64 * 1024;
/** A doubt's record, array slot and fields beside its strings. */
const DOUBT_OVERHEAD_BYTES = 64;

const NOTHING: ReadRequirement = { written: 0n, caughtUp: 0n, probe: false, probeOnly: false, objectOnly: false };

export function newReadYourWrites(): ReadYourWrites {
  const types = new LRUCache<string, TypeWrites>({ max: MAX_TYPES });
  let seq = 0;
  const entry = (group: string, resource: string): TypeWrites => {
    const key = `${group}/${resource}`;
    let writes = types.get(key);
    if (writes === undefined) {
      writes = { written: 0n, doubts: [], doubtBytes: 0 };
      types.set(own(key), writes);
    }
    return writes;
  };
  return {
    written(group, resource, rv) {
      const writes = entry(group, resource);
      if (rv > writes.written) writes.written = rv;
    },
    unreachable(group, resource, upstreamRv) {
      const writes = types.get(`${group}/${resource}`);
      if (writes !== undefined && writes.written > upstreamRv) writes.written = 0n;
    },
    doubt(target) {
      const writes = entry(target.group, target.resource);
      seq++;
      const bytes = doubtBytes(target.namespace, target.name);
      if (writes.doubts.length >= MAX_DOUBTS || writes.doubtBytes + bytes > MAX_DOUBT_BYTES) {
        writes.doubts = [{ namespace: '', name: '', seq, need: undefined }];
        writes.doubtBytes = doubtBytes('', '');
      } else {
        writes.doubts.push({ namespace: own(target.namespace), name: own(target.name), seq, need: undefined });
        writes.doubtBytes += bytes;
      }
    },
    requirement(target) {
      const writes = types.get(`${target.group}/${target.resource}`);
      if (writes === undefined) return NOTHING;
      let caughtUp = 0n;
      let probe = false;
      let probeOnly = false;
      let objectOnly = true;
      for (const doubt of writes.doubts) {
        if (!covers(target, doubt)) continue;
        if (doubt.need === undefined) {
          probe = true;
          if (doubt.probeOnly === true) probeOnly = true;
          if (!names(target, doubt)) objectOnly = false;
        } else if (doubt.need > caughtUp) caughtUp = doubt.need;
      }
      return { written: writes.written, caughtUp, probe, probeOnly, objectOnly: probe && objectOnly };
    },
    unsettled(group, resource) {
      return types.get(`${group}/${resource}`)?.doubts.some((d) => d.need === undefined) ?? false;
    },
    sequence() {
      return seq;
    },
    settle(group, resource, at, rv) {
      const writes = types.get(`${group}/${resource}`);
      if (writes === undefined) return;
      for (const doubt of writes.doubts) if (doubt.need === undefined && doubt.seq <= at) doubt.need = rv;
    },
    settleObject(target, at, rv) {
      const writes = types.get(`${target.group}/${target.resource}`);
      if (writes === undefined) return;
      for (const doubt of writes.doubts) if (doubt.need === undefined && doubt.seq <= at && names(target, doubt)) doubt.need = rv;
    },
    unsettledBy(target, at) {
      const writes = types.get(`${target.group}/${target.resource}`);
      if (writes === undefined) return;
      const read = target.name === '' ? covers : names;
      for (const doubt of writes.doubts) if (doubt.need === undefined && doubt.seq <= at && read(target, doubt)) doubt.probeOnly = true;
    },
    reached(group, resource, rv) {
      const writes = types.get(`${group}/${resource}`);
      if (writes === undefined || writes.doubts.length === 0) return;
      writes.doubts = writes.doubts.filter((d) => d.need === undefined || d.need > rv);
      writes.doubtBytes = writes.doubts.reduce((n, d) => n + doubtBytes(d.namespace, d.name), 0);
    },
  };
}

/**
 * Whether `doubt` is of the one object a GET of `target` reads. A cluster-scoped type's reads
 * have no namespace (its doubts may: request-info gives `namespaces/NAME/finalize` the
 * namespace NAME).
 */
function names(target: ReadTarget, doubt: Doubt): boolean {
  return target.name !== '' && doubt.name === target.name && (target.namespace === '' || doubt.namespace === target.namespace);
}

/** Whether a read of `target` reads what `doubt` covers. */
function covers(target: ReadTarget, doubt: Doubt): boolean {
  if (doubt.namespace !== '' && target.namespace !== '' && doubt.namespace !== target.namespace) return false;
  return doubt.name === '' || target.name === '' || doubt.name === target.name;
}

/** What a write's request says, from its path (RequestInfo). */
export interface WriteRequest {
  readonly group: string;
  readonly resource: string;
  /** create, update, patch, delete, deletecollection; anything else (the legacy `proxy` verb) teaches nothing. */
  readonly verb: string;
  readonly subresource: string;
  readonly namespace: string;
  /** '' for a create or a collection delete. */
  readonly name: string;
}

/** The object a write was answered with, as read from its body. */
export interface AnsweredObject {
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  /** Undefined when the answer names none. */
  readonly resourceVersion: bigint | undefined;
  /** A list's number of items (a collection delete's answer: what it deleted); undefined for an object. */
  readonly items?: number;
}

/** The cached type's kind and scope, from its cache (undefined: no cache holds the type). */
export interface CachedKind {
  readonly kind: string;
  readonly namespaced: boolean;
}

/** What read-your-writes learns from one write's answer (the rule at the top of this file). */
export type WriteLesson =
  | { readonly kind: 'written'; readonly resourceVersion: bigint }
  | { readonly kind: 'doubt'; readonly target: WriteTarget }
  | { readonly kind: 'nothing' };

/** Whether a collection delete's answer is an empty list of the type (its own, or as metadata). */
function deletedNothing(answer: AnsweredObject | undefined, cached: CachedKind): boolean {
  if (answer?.items !== 0) return false;
  return answer.kind === `${cached.kind}List` || answer.kind === 'PartialObjectMetadataList';
}

/** Subresources whose answer is the object itself: its kind, name and RV. */
const OBJECT_SUBRESOURCES: ReadonlySet<string> = new Set(['', 'status', 'ephemeralcontainers', 'resize', 'approval', 'finalize']);
/** Subresources that change the object and answer a Status (pods/binding sets its node, pods/eviction deletes it). */
const STATUS_SUBRESOURCES: ReadonlySet<string> = new Set(['binding', 'eviction']);
const WRITE_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
const NOTHING_LEARNT: WriteLesson = { kind: 'nothing' };

/**
 * What a write through the proxy, answered `statusCode` with `answer` (undefined: no object could
 * be read from the body), teaches the reads of a type cached as `cached`.
 */
export function lessonOf(
  request: WriteRequest,
  statusCode: number,
  answer: AnsweredObject | undefined,
  cached: CachedKind | undefined,
): WriteLesson {
  if (cached === undefined || !WRITE_VERBS.has(request.verb)) return NOTHING_LEARNT;
  const { subresource } = request;
  const objectAnswer = OBJECT_SUBRESOURCES.has(subresource) || subresource === 'scale';
  if (!objectAnswer && !STATUS_SUBRESOURCES.has(subresource)) return NOTHING_LEARNT;
  const doubt: WriteLesson = {
    kind: 'doubt',
    target: { group: request.group, resource: request.resource, namespace: request.namespace, name: request.name },
  };
  if (statusCode >= 200 && statusCode <= 299) {
    // A collection delete answers with the list of what it deleted: none, and it wrote nothing.
    if (request.verb === 'deletecollection') return deletedNothing(answer, cached) ? NOTHING_LEARNT : doubt;
    if (!objectAnswer || answer?.resourceVersion === undefined) return doubt;
    const kind = subresource === 'scale' ? 'Scale' : cached.kind;
    const sameObject =
      answer.kind === kind &&
      answer.namespace === (cached.namespaced ? request.namespace : '') &&
      (request.name === '' || answer.name === request.name);
    return sameObject ? { kind: 'written', resourceVersion: answer.resourceVersion } : doubt;
  }
  // The cache may be behind for this object: the client wrote from a state older than the
  // apiserver's (Conflict), created what exists (AlreadyExists), or changed what is gone.
  if (statusCode === 409) return doubt;
  if (statusCode === 404 && request.verb !== 'create' && subresource === '' && request.name !== '') return doubt;
  return NOTHING_LEARNT;
}

/**
 * The RV of the object a consistent GET of `target` was answered with (undefined: the answer is
 * not that object: another kind, name or namespace): the revision of its last change, which
 * settles the doubts naming it (settleObject). Its kind is the type's, or PartialObjectMetadata
 * for a metadata client.
 */
export function objectAnswered(target: ReadTarget, answer: AnsweredObject | undefined, cached: CachedKind): bigint | undefined {
  if (answer === undefined || (answer.kind !== cached.kind && answer.kind !== 'PartialObjectMetadata')) return undefined;
  if (answer.name !== target.name || answer.namespace !== (cached.namespaced ? target.namespace : '')) return undefined;
  return answer.resourceVersion;
}
