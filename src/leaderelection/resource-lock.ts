/**
 * The lock a leader election runs on, and the record it stores (client-go
 * tools/leaderelection/resourcelock/interface.go). The elector sees only this interface, so a lock
 * on another kind of object can be added without touching it; `lease-lock.ts` is the one we ship.
 */

/**
 * metav1.MicroTime on the wire: RFC 3339 in UTC with exactly six fraction digits,
 * e.g. 2026-11-22T20:00:00.123456Z.
 */
export type MicroTime = string;

/**
 * interface.go LeaderElectionRecord. Its timestamps are written from the writer's own clock and
 * are for people and monitoring only: the elector never compares them with its clock (see
 * leader-elector.ts, observedTime), it only notices that the record changed.
 */
export interface LeaderElectionRecord {
  /** Who holds the lease; '' when nobody does (after a release): anyone may acquire it at once. */
  readonly holderIdentity: string;
  /** How long, after a candidate last saw the record change, the holder's claim lasts. */
  readonly leaseDurationSeconds: number;
  /** When the current holder acquired it (null when never set). */
  readonly acquireTime: MicroTime | null;
  /** When the holder last renewed it (null when never set). */
  readonly renewTime: MicroTime | null;
  /** How many times the lease changed hands (Lease.spec.leaseTransitions). */
  readonly leaderTransitions: number;
}

/** What `get` returns: the record and its serialized form, compared byte for byte to detect a change. */
export interface ObservedRecord {
  /** The record read. */
  readonly record: LeaderElectionRecord;
  /** Its serialized form (recordBytes for a lock of this package): a change of it restarts the holder's lease on the reader's clock. */
  readonly raw: string;
}

/**
 * interface.go Interface. Errors are the apiserver's (ApiStatusError from src/upstream/api-error.ts):
 * 404 from `get` means "no such object, create it"; 409 from `create` or `update` means another
 * candidate wrote first and this round is lost. Any other rejection is a failed attempt.
 *
 * `update` is a compare-and-swap: it writes over the object as this lock last read or wrote it,
 * carrying that version (a Lease's resourceVersion), so of two candidates that read the same
 * version only one can write. That, not timing, is what keeps two candidates from both winning
 * a round.
 */
export interface ResourceLock {
  /**
   * Reads the record: a quorum read, or with `fromCache` the apiserver's watch cache
   * (resourceVersion=0: no etcd read, possibly a few milliseconds old).
   */
  get(signal?: AbortSignal, fromCache?: boolean): Promise<ObservedRecord>;
  /** Creates the object holding `record`; 409 if it exists. */
  create(record: LeaderElectionRecord, signal?: AbortSignal): Promise<void>;
  /** Replaces the record of the version last read or written; 409 if it changed since. Fails if neither get nor create ran first. */
  update(record: LeaderElectionRecord, signal?: AbortSignal): Promise<void>;
  /** The identity this candidate writes as holderIdentity; unique among candidates. */
  identity(): string;
  /** The lock's object for logs, e.g. `namespace/name`. */
  describe(): string;
}

/**
 * The record's serialized form (client-go: json.Marshal of the record), with a fixed key order so
 * that equal records give equal strings.
 */
export function recordBytes(record: LeaderElectionRecord): string {
  return JSON.stringify({
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    acquireTime: record.acquireTime,
    renewTime: record.renewTime,
    leaderTransitions: record.leaderTransitions,
  });
}

/** Formats a time in epoch milliseconds (fractions kept to the microsecond) as a MicroTime. */
export function formatMicroTime(ms: number): MicroTime {
  const whole = Math.floor(ms);
  const micros = Math.floor((ms - whole) * 1000);
  return new Date(whole).toISOString().replace(/Z$/, `${String(micros).padStart(3, '0')}Z`);
}
