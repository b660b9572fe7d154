/**
 * What a watcher should have seen, against what it saw (reflector-watcher.ts): the verdict of the
 * chaos run and of its e2e scenario.
 *
 * A write the apiserver acknowledged at RV r (in the watched scope) is
 *   delivered  when the watcher got its event (same key, same RV, same type);
 *   relisted   when no watch of the watcher covered r and a later LIST was at an RV ≥ r: the
 *              reflector legitimately skipped that version and saw the state after it;
 *   lost       otherwise: skipped inside a watch that proved RVs past r (a gap in the stream),
 *              delivered as another type, or never seen at all.
 * Each key where the watcher's final state differs from the apiserver's also counts as lost.
 * Duplicates and RVs going backwards are counted by the watcher as they arrive.
 *
 * Silence: for each write, from its acknowledgement (or from the moment the upstream answered
 * again, when it was seen after that) to its delivery or relist (or to the audit, when it was
 * never seen); the longest is the figure.
 */
import type { WatchEventType, WatchRecord } from './reflector-watcher.ts';

/** A write the apiserver answered, with the RV of its answer; `at` on the watchers' clock. */
export interface AcknowledgedWrite {
  readonly key: string;
  readonly type: WatchEventType;
  readonly rv: number;
  readonly ackedAt: number;
}

export interface WatchAuditOptions {
  /** Every acknowledged write of the watched scope. */
  readonly writes: readonly AcknowledgedWrite[];
  /** The apiserver's state of the scope once writes stopped (key → RV), read from it directly. */
  readonly final: ReadonlyMap<string, number>;
  /** When the upstream answered again after a fault; undefined without an outage. */
  readonly recoveredAt?: number | undefined;
  /** When the watcher stopped: a write it never saw was waited for until then (default: its last event or LIST). */
  readonly auditedAt?: number;
}

export interface WatchAudit {
  readonly delivered: number;
  readonly relisted: number;
  readonly lost: number;
  readonly duplicated: number;
  readonly reordered: number;
  /** The longest wait for a write (see above), in ms. */
  readonly longestSilenceMs: number;
  /** From the upstream's return to the first event or LIST after it, in ms; undefined without an outage or with none after. */
  readonly firstAfterReturnMs: number | undefined;
  /** The first few problems, described. */
  readonly problems: readonly string[];
}

const MAX_PROBLEMS = 10;

export function auditWatch(record: WatchRecord, options: WatchAuditOptions): WatchAudit {
  const problems = [...record.problems];
  const problem = (text: string): void => {
    if (problems.length < MAX_PROBLEMS) problems.push(text);
  };
  const byId = new Map<string, WatchRecord['events'][number]>();
  for (const event of record.events) {
    const id = `${event.key}@${String(event.rv)}`;
    if (!byId.has(id)) byId.set(id, event);
  }
  let delivered = 0;
  let relisted = 0;
  let lost = 0;
  let longestSilenceMs = 0;
  const { recoveredAt } = options;
  const auditedAt = options.auditedAt ?? Math.max(record.events.at(-1)?.at ?? 0, record.lists.at(-1)?.at ?? 0);
  const waited = (ackedAt: number, seenAt: number): number =>
    seenAt - (recoveredAt !== undefined && seenAt >= recoveredAt ? Math.max(ackedAt, recoveredAt) : ackedAt);
  for (const write of options.writes) {
    const id = `${write.key}@${String(write.rv)}`;
    let seenAt: number | undefined;
    const event = byId.get(id);
    if (event !== undefined) {
      if (event.type === write.type) {
        delivered++;
        seenAt = event.at;
      } else {
        lost++;
        problem(`${id} written as ${write.type}, delivered as ${event.type}`);
      }
    } else {
      const within = record.segments.find((s) => s.from < write.rv && write.rv <= s.to);
      const list = record.lists.find((l) => l.rv >= write.rv);
      if (within !== undefined) {
        lost++;
        problem(`${write.type} ${id} missing from the watch from RV ${String(within.from)}, which went on to RV ${String(within.to)}`);
      } else if (list !== undefined) {
        relisted++;
        seenAt = list.at;
      } else {
        lost++;
        problem(
          `${write.type} ${id} never seen (the watcher's last RV: ${String(record.segments.at(-1)?.to ?? record.lists.at(-1)?.rv ?? 0)})`,
        );
        // Waited for in vain until the end: a silence at least that long.
        longestSilenceMs = Math.max(longestSilenceMs, waited(write.ackedAt, auditedAt));
      }
    }
    if (seenAt !== undefined) longestSilenceMs = Math.max(longestSilenceMs, waited(write.ackedAt, seenAt));
  }
  for (const key of new Set([...options.final.keys(), ...record.store.keys()])) {
    const want = options.final.get(key);
    const have = record.store.get(key);
    if (want !== have) {
      lost++;
      problem(
        `final state of ${key}: the apiserver has ${want === undefined ? 'none' : `RV ${String(want)}`}, the watcher ${have === undefined ? 'none' : `RV ${String(have)}`}`,
      );
    }
  }
  let firstAfterReturnMs: number | undefined;
  if (recoveredAt !== undefined) {
    for (const { at } of [...record.events, ...record.lists]) {
      if (at >= recoveredAt) firstAfterReturnMs = Math.min(firstAfterReturnMs ?? Infinity, at - recoveredAt);
    }
  }
  return {
    delivered,
    relisted,
    lost,
    duplicated: record.counts.duplicated,
    reordered: record.counts.reordered,
    longestSilenceMs,
    firstAfterReturnMs,
    problems,
  };
}

/** True when the watcher's state is the apiserver's (the run waits for it before auditing). */
export function caughtUp(record: Pick<WatchRecord, 'store'>, final: ReadonlyMap<string, number>): boolean {
  if (record.store.size !== final.size) return false;
  for (const [key, rv] of final) if (record.store.get(key) !== rv) return false;
  return true;
}
