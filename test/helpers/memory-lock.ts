/**
 * An in-memory ResourceLock for leader-election unit tests: a shared store with a version that
 * every write moves, and locks (one per candidate) that write with the version they read, as the
 * Lease lock does against the apiserver (404 when absent, 409 on a stale version or a second
 * create). Faults can be injected per lock: unreachable, hung requests, a one-off error.
 */
import { ApiStatusError } from '../../src/upstream/api-error.ts';
import type { LeaderElectionRecord, ObservedRecord, ResourceLock } from '../../src/leaderelection/resource-lock.ts';
import { recordBytes } from '../../src/leaderelection/resource-lock.ts';
import type { Clock } from '../../src/clock/clock.ts';

export interface MemoryLeaseStore {
  /** The stored record, undefined while the object does not exist. */
  record: LeaderElectionRecord | undefined;
  /** Moves on every write. */
  version: number;
  /**
   * What a read from the apiserver's watch cache returns (get with fromCache), when set: a record
   * and version older than the store's, as a cache that lags would serve. Unset: the store's own.
   */
  cached: { readonly record: LeaderElectionRecord; readonly version: number } | undefined;
  /** Every write that reached the store, in order, with who wrote it. */
  readonly writes: { readonly by: string; readonly record: LeaderElectionRecord }[];
  /** Writes as someone outside the election (no version check), as `kubectl apply` would. */
  put(record: LeaderElectionRecord, by?: string): void;
}

export type LockVerb = 'get' | 'create' | 'update';

export interface MemoryLock extends ResourceLock {
  /** Every call, in order, with the lock clock's time when it was made; a get from the watch cache says so. */
  readonly calls: { readonly verb: LockVerb; readonly at: number; readonly fromCache?: true }[];
  /** While true, every call fails as if the connection were reset. */
  unreachable: boolean;
  /** While true, every call hangs until its signal aborts (a blackholed connection). */
  hung: boolean;
  /** The next call of `verb` fails with `error` instead of reaching the store. */
  failNext(verb: LockVerb, error: Error): void;
}

export function newMemoryLeaseStore(initial?: LeaderElectionRecord): MemoryLeaseStore {
  const store: MemoryLeaseStore = {
    record: initial,
    version: initial === undefined ? 0 : 1,
    cached: undefined,
    writes: [],
    put(record, by = 'test') {
      store.record = record;
      store.version++;
      store.writes.push({ by, record });
    },
  };
  return store;
}

export function newMemoryLock(store: MemoryLeaseStore, identity: string, clock: Clock, name = 'ns/lease'): MemoryLock {
  /** The version this lock last read or wrote; undefined before its first get or create. */
  let readVersion: number | undefined;
  const failures = new Map<LockVerb, Error>();

  const call = async (verb: LockVerb, signal: AbortSignal | undefined, fromCache = false): Promise<void> => {
    lock.calls.push({ verb, at: clock.now(), ...(fromCache ? { fromCache: true as const } : {}) });
    // A request takes a turn of the event loop, so that concurrent candidates interleave.
    await Promise.resolve();
    if (lock.hung) {
      await new Promise<void>((_, reject) => {
        if (signal === undefined) return;
        if (signal.aborted) reject(aborted());
        signal.addEventListener('abort', () => {
          reject(aborted());
        });
      });
    }
    if (signal?.aborted === true) throw aborted();
    if (lock.unreachable) throw Object.assign(new Error('connect ECONNRESET'), { code: 'ECONNRESET' });
    const failure = failures.get(verb);
    if (failure !== undefined) {
      failures.delete(verb);
      throw failure;
    }
  };

  const lock: MemoryLock = {
    calls: [],
    unreachable: false,
    hung: false,
    failNext(verb, error) {
      failures.set(verb, error);
    },
    async get(signal, fromCache = false): Promise<ObservedRecord> {
      await call('get', signal, fromCache);
      const read = fromCache && store.cached !== undefined ? store.cached : { record: store.record, version: store.version };
      if (read.record === undefined) throw notFound(name);
      readVersion = read.version;
      return { record: read.record, raw: recordBytes(read.record) };
    },
    async create(record, signal) {
      await call('create', signal);
      if (store.record !== undefined) throw new ApiStatusError(409, { kind: 'Status', reason: 'AlreadyExists', code: 409 });
      store.put(record, identity);
      readVersion = store.version;
    },
    async update(record, signal) {
      await call('update', signal);
      if (readVersion === undefined) throw new Error('lease not initialized, call get or create first');
      if (store.record === undefined) throw notFound(name);
      if (store.version !== readVersion) {
        throw new ApiStatusError(409, {
          kind: 'Status',
          reason: 'Conflict',
          code: 409,
          message: 'the object has been modified; please apply your changes to the latest version and try again',
        });
      }
      store.put(record, identity);
      readVersion = store.version;
    },
    identity: () => identity,
    describe: () => name,
  };
  return lock;
}

function notFound(name: string): ApiStatusError {
  return new ApiStatusError(404, { kind: 'Status', reason: 'NotFound', code: 404, message: `leases "${name}" not found` });
}

function aborted(): Error {
  return Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });
}
