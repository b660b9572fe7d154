/**
 * BOOKMARK objects as the apiserver writes them: the type's empty object with only
 * metadata.resourceVersion set (cacher.go: c.newFunc() plus versioner.UpdateObject), and for the
 * end of a WatchList's initial events the k8s.io/initial-events-end annotation
 * (storage.AnnotateInitialEventsEndBookmark). An empty object's JSON depends on the Go type
 * (a Pod's has `"spec":{"containers":null},"status":{}`), so the template is learned from the
 * apiserver's own bookmarks on the informer's watch; until one arrives, the bare form is used
 * (exact for types without spec or status, such as ConfigMap).
 */
import { watchFrame } from './window-event.ts';

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';
/** Stands for the RV digits while a template is built. */
const PLACEHOLDER = 'KCP_RESOURCE_VERSION_PLACEHOLDER';

interface Template {
  readonly head: string;
  readonly tail: string;
}

export interface BookmarkFrames {
  /** The BOOKMARK watch frame at `rv`, annotated when it ends a WatchList's initial events. */
  frame(rv: bigint, initialEventsEnd: boolean): Buffer;
  /** Learns the type's bookmark object from one the apiserver sent (either form). */
  learn(object: Buffer): void;
}

function split(json: string): Template {
  const at = json.indexOf(PLACEHOLDER);
  return { head: json.slice(0, at), tail: json.slice(at + PLACEHOLDER.length) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Both forms from one object: metadata keeps its members in the order the apiserver wrote them;
 * the annotation goes last in a typed object's metadata (ObjectMeta field order) and first in an
 * unstructured one's (sorted keys: annotations < resourceVersion).
 */
function templates(object: Record<string, unknown>, unstructured: boolean): { plain: Template; annotated: Template } {
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  const rest = Object.fromEntries(Object.entries(metadata).filter(([k]) => k !== 'annotations' && k !== 'resourceVersion'));
  const plainMeta = { ...rest, resourceVersion: PLACEHOLDER };
  const annotations = { [INITIAL_EVENTS_END]: 'true' };
  const annotatedMeta = unstructured
    ? { annotations, ...rest, resourceVersion: PLACEHOLDER }
    : { ...rest, resourceVersion: PLACEHOLDER, annotations };
  return {
    plain: split(JSON.stringify({ ...object, metadata: plainMeta })),
    annotated: split(JSON.stringify({ ...object, metadata: annotatedMeta })),
  };
}

export function newBookmarkFrames(kind: string, apiVersion: string, unstructured: boolean): BookmarkFrames {
  const bare = unstructured ? { apiVersion, kind, metadata: {} } : { kind, apiVersion, metadata: {} };
  let forms = templates(bare, unstructured);
  let learned = false;
  return {
    frame(rv, initialEventsEnd) {
      const t = initialEventsEnd ? forms.annotated : forms.plain;
      return watchFrame('BOOKMARK', Buffer.from(`${t.head}${String(rv)}${t.tail}`));
    },
    learn(object) {
      if (learned) return;
      try {
        const parsed: unknown = JSON.parse(object.toString('utf8'));
        if (!isRecord(parsed) || !isRecord(parsed.metadata)) return;
        forms = templates(parsed, unstructured);
        learned = true;
      } catch {
        // not JSON: keep the bare form
      }
    },
  };
}
