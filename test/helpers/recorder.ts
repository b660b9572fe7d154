/**
 * An event handler that records what it was told, per object key, to check ordering and that
 * nothing was lost.
 */
import type { DeletedFinalStateUnknown, KubeObject } from '../../src/informer/object.ts';
import { compareResourceVersions, isDeletedFinalStateUnknown } from '../../src/informer/object.ts';
import type { ResourceEventHandler } from '../../src/informer/processor-listener.ts';

export interface RecordedEvent {
  readonly type: 'add' | 'update' | 'delete';
  readonly rv: string;
  /** For deletes: the informer missed the final state (DeletedFinalStateUnknown). */
  readonly finalStateUnknown: boolean;
}

export interface Recorder {
  readonly handler: ResourceEventHandler;
  readonly events: Map<string, RecordedEvent[]>;
  /** Keys whose recorded RVs do not strictly increase (empty when all are in order). */
  outOfOrder(): string[];
  /** The keys present at the end of the recorded history, with their last RV. */
  finalState(): Map<string, string>;
}

export function newRecorder(): Recorder {
  const events = new Map<string, RecordedEvent[]>();
  const record = (key: string, event: RecordedEvent): void => {
    let list = events.get(key);
    if (list === undefined) events.set(key, (list = []));
    list.push(event);
  };
  return {
    events,
    handler: {
      onAdd(obj: KubeObject) {
        record(obj.key, { type: 'add', rv: obj.resourceVersion, finalStateUnknown: false });
      },
      onUpdate(_old: KubeObject, obj: KubeObject) {
        record(obj.key, { type: 'update', rv: obj.resourceVersion, finalStateUnknown: false });
      },
      onDelete(obj: KubeObject | DeletedFinalStateUnknown) {
        const unknown = isDeletedFinalStateUnknown(obj);
        record(obj.key, {
          type: 'delete',
          rv: unknown ? (obj.obj?.resourceVersion ?? '') : obj.resourceVersion,
          finalStateUnknown: unknown,
        });
      },
    },
    outOfOrder() {
      const bad: string[] = [];
      for (const [key, list] of events) {
        for (let i = 1; i < list.length; i++) {
          const prev = list[i - 1] as RecordedEvent;
          const cur = list[i] as RecordedEvent;
          // A DeletedFinalStateUnknown carries the last known state's RV: equal is fine there.
          const ok = cur.finalStateUnknown ? compareResourceVersions(prev.rv, cur.rv) <= 0 : compareResourceVersions(prev.rv, cur.rv) < 0;
          if (!ok) bad.push(key);
        }
      }
      return bad;
    },
    finalState() {
      const state = new Map<string, string>();
      for (const [key, list] of events) {
        const last = list.at(-1);
        if (last !== undefined && last.type !== 'delete') state.set(key, last.rv);
      }
      return state;
    },
  };
}
