/**
 * A ListerWatcher whose answers a test scripts (client-go tools/cache/testing/fake_controller_source.go,
 * but driven step by step): every list() and watch() call is recorded with its options; list()
 * answers from a queue of scripted pages or errors (or stays pending until the test answers the
 * call); watch() throws the next scripted error or opens a ScriptedWatch the test feeds events to.
 *
 * Tests await the reflector's progress through nextList()/nextWatch() and flushUntil(), which
 * turn the event loop (setImmediate, no timers): the code under test runs on promises and a
 * FakeClock only, so if a call has not happened once everything pending has run, it never will,
 * and the helper fails at once instead of hanging.
 */
import type { ListOptions, ListPage, ListerWatcher, Watch, WatchEvent } from '../../src/informer/lister-watcher.ts';
import type { FieldExtractor, KubeObject } from '../../src/informer/object.ts';
import { decodeObject, metadataFields } from '../../src/informer/object.ts';
import type { ReflectorStore } from '../../src/informer/store.ts';
import { ApiStatusError } from '../../src/upstream/api-error.ts';

/** Event-loop turns to wait for something before giving up (each turn runs every pending promise). */
const MAX_TURNS = 50;

/** Lets every pending promise callback run (one event-loop turn per `turns`). */
export async function flush(turns = 1): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Turns the event loop until `check()` holds; throws (naming `what`) once nothing more can happen. */
export async function flushUntil(what: string, check: () => boolean, turns = MAX_TURNS): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (check()) return;
    await flush();
  }
  if (!check()) throw new Error(`still waiting for ${what} after ${turns} event-loop turns`);
}

/** Awaits `promise`, failing (naming `what`) if it does not settle while the loop has work left. */
export async function settles<T>(promise: Promise<T>, what: string): Promise<T> {
  let settled = false;
  const observed = promise.finally(() => {
    settled = true;
  });
  void observed.catch(() => undefined);
  await flushUntil(what, () => settled);
  return observed;
}

/** True if `promise` is still pending once everything runnable has run. */
export async function isPending(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  await flush(2);
  return !settled;
}

/** metadata fields plus `spec.nodeName` when the object has one (a pod-like selectable field). */
export const podFields: FieldExtractor = (object) => {
  const spec = object.spec as { nodeName?: unknown } | undefined;
  const fields = { ...metadataFields(object) };
  if (typeof spec?.nodeName === 'string') fields['spec.nodeName'] = spec.nodeName;
  return fields;
};

/** A Pod as the apiserver would send it; namespace '' makes it cluster-scoped. */
export function obj(
  namespace: string,
  name: string,
  resourceVersion: string,
  labels: Record<string, string> = {},
  spec: Record<string, unknown> = {},
): KubeObject {
  const metadata: Record<string, unknown> = { name, resourceVersion, uid: `uid-${name}` };
  if (namespace !== '') metadata.namespace = namespace;
  if (Object.keys(labels).length > 0) metadata.labels = labels;
  return decodeObject(Buffer.from(JSON.stringify({ kind: 'Pod', apiVersion: 'v1', metadata, spec })), podFields);
}

export function page(resourceVersion: string, items: readonly KubeObject[], continueToken = ''): ListPage {
  return { items, resourceVersion, continue: continueToken };
}

export const added = (o: KubeObject): WatchEvent => ({ type: 'ADDED', object: o });
export const modified = (o: KubeObject): WatchEvent => ({ type: 'MODIFIED', object: o });
export const deleted = (o: KubeObject): WatchEvent => ({ type: 'DELETED', object: o });
export const bookmark = (resourceVersion: string, initialEventsEnd = false): WatchEvent => ({
  type: 'BOOKMARK',
  resourceVersion,
  initialEventsEnd,
});
export const errorEvent = (code: number, reason: string): WatchEvent => ({
  type: 'ERROR',
  status: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message: `${reason} (scripted)` },
});

/** An apiserver error (what the ListerWatcher throws for a non-2xx answer). */
export function apiError(code: number, reason: string, retryAfterSeconds?: number): ApiStatusError {
  return new ApiStatusError(code, { kind: 'Status', status: 'Failure', code, reason, message: `${reason} (scripted)` }, retryAfterSeconds);
}

/** A network error as Node reports it (`connect ECONNREFUSED`). */
export function connectionError(code = 'ECONNREFUSED'): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:6443`), { code });
}

type WatchItem = { readonly event: WatchEvent } | { readonly error: Error } | { readonly end: true };

/** An open watch the test feeds: emit() events, then close() (server ends it) or fail() (stream breaks). */
export class ScriptedWatch implements Watch {
  readonly options: ListOptions;
  #items: WatchItem[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  #stopped = false;
  #rerouted = false;

  constructor(options: ListOptions) {
    this.options = options;
  }

  /** The proxy ends the stream because its route moved (routed-lister-watcher.ts). */
  reroute(): void {
    this.#rerouted = true;
    this.close();
  }

  readonly rerouted = (): boolean => this.#rerouted;

  emit(...events: WatchEvent[]): void {
    for (const event of events) this.#push({ event });
  }

  /** The server ends the stream after what was emitted (a timeout, a restart). */
  close(): void {
    this.#push({ end: true });
  }

  /** next() throws `error` after what was emitted (a broken connection, an undecodable line). */
  fail(error: Error): void {
    this.#push({ error });
  }

  /** True once the reflector called stop(). */
  isStopped(): boolean {
    return this.#stopped;
  }

  async next(): Promise<WatchEvent | undefined> {
    for (;;) {
      if (this.#stopped || this.#ended) return undefined;
      const item = this.#items.shift();
      if (item !== undefined) {
        if ('event' in item) return item.event;
        this.#ended = true;
        if ('error' in item) throw item.error;
        return undefined;
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#wakeUp();
  }

  #push(item: WatchItem): void {
    this.#items.push(item);
    this.#wakeUp();
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

export interface ListCall {
  readonly options: ListOptions;
  /** Answers a call that found nothing scripted (it stays pending until then). */
  respond(answer: ListPage | Error): void;
}

export interface WatchCall {
  readonly options: ListOptions;
  /** The scripted error this call threw, if any. */
  readonly error: Error | undefined;
  /** The watch handed out (never used when `error` is set). */
  readonly watch: ScriptedWatch;
}

export class ScriptedListerWatcher implements ListerWatcher {
  readonly listCalls: ListCall[] = [];
  readonly watchCalls: WatchCall[] = [];
  #listAnswers: (ListPage | Error)[] = [];
  #watchErrors: Error[] = [];
  #listCursor = 0;
  #watchCursor = 0;

  /** Answers for the next list() calls, in order; a call beyond them waits for ListCall.respond(). */
  scriptList(...answers: (ListPage | Error)[]): this {
    this.#listAnswers.push(...answers);
    return this;
  }

  /** Errors for the next watch() calls to throw, in order; a call beyond them opens a watch. */
  scriptWatchErrors(...errors: Error[]): this {
    this.#watchErrors.push(...errors);
    return this;
  }

  list(options: ListOptions): Promise<ListPage> {
    let answer: ((value: ListPage | Error) => void) | undefined;
    const result = new Promise<ListPage>((resolve, reject) => {
      answer = (value) => {
        if (value instanceof Error) reject(value);
        else resolve(value);
      };
    });
    const respond = answer as (value: ListPage | Error) => void;
    this.listCalls.push({ options, respond });
    const scripted = this.#listAnswers.shift();
    if (scripted !== undefined) respond(scripted);
    return result;
  }

  watch(options: ListOptions): Promise<Watch> {
    const watch = new ScriptedWatch(options);
    const error = this.#watchErrors.shift();
    this.watchCalls.push({ options, error, watch });
    return error === undefined ? Promise.resolve(watch) : Promise.reject(error);
  }

  /** The next list() call not yet returned by nextList(), once the code under test makes it. */
  async nextList(): Promise<ListCall> {
    const index = this.#listCursor++;
    await flushUntil(`list() call #${index + 1}`, () => this.listCalls.length > index);
    return this.listCalls[index] as ListCall;
  }

  /** The next watch() call not yet returned by nextWatch(), once the code under test makes it. */
  async nextWatch(): Promise<WatchCall> {
    const index = this.#watchCursor++;
    await flushUntil(`watch() call #${index + 1}`, () => this.watchCalls.length > index);
    return this.watchCalls[index] as WatchCall;
  }
}

export type StoreCall =
  | { readonly op: 'add' | 'update' | 'delete'; readonly key: string; readonly rv: string }
  | { readonly op: 'replace'; readonly keys: readonly string[]; readonly rv: string }
  | { readonly op: 'rv'; readonly rv: string };

/** A ReflectorStore that records the calls it gets, in order. */
export class RecordingStore implements ReflectorStore {
  readonly calls: StoreCall[] = [];

  add(o: KubeObject): void {
    this.calls.push({ op: 'add', key: o.key, rv: o.resourceVersion });
  }

  update(o: KubeObject): void {
    this.calls.push({ op: 'update', key: o.key, rv: o.resourceVersion });
  }

  delete(o: KubeObject): void {
    this.calls.push({ op: 'delete', key: o.key, rv: o.resourceVersion });
  }

  replace(list: readonly KubeObject[], resourceVersion: string): void {
    this.calls.push({ op: 'replace', keys: list.map((o) => o.key), rv: resourceVersion });
  }

  updateResourceVersion(resourceVersion: string): void {
    this.calls.push({ op: 'rv', rv: resourceVersion });
  }

  /** The watch states told (watchConnected), in order, apart from the calls. */
  readonly #connections: boolean[] = [];

  watchConnected(connected: boolean): void {
    this.#connections.push(connected);
  }

  /** The calls other than resourceVersion updates. */
  changes(): StoreCall[] {
    return this.calls.filter((c) => c.op !== 'rv');
  }

  connections(): boolean[] {
    return [...this.#connections];
  }
}
