/**
 * BOOKMARK objects as the apiserver writes them: the type's empty object with only
 * metadata.resourceVersion set (cacher.go: c.newFunc() plus versioner.UpdateObject), and for the
 * end of a WatchList's initial events the k8s.io/initial-events-end annotation
 * (storage.AnnotateInitialEventsEndBookmark). An empty object's JSON depends on the Go type
 * (a Pod's has `"spec":{"containers":null},"status":{}`), so the template is learned from the
 * apiserver's own bookmarks on the informer's watch; until one arrives, the bare form is used
 * (exact for types without spec or status, such as ConfigMap).
 *
 * For a watch that asked (a proxy in front of this one, protocol/proof-age.ts), a bookmark also
 * carries the proof age of its RV, an annotation the apiserver never writes: only such a watch
 * gets those bytes.
 */
import { PROOF_AGE_ANNOTATION, formatProofAge } from '../protocol/proof-age.ts';
import { watchFrame } from './window-event.ts';

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';
/** Stands for the RV digits while a template is built. */
const PLACEHOLDER = 'KCP_RESOURCE_VERSION_PLACEHOLDER';
/** Stands for the proof age's digits in the aged forms (replaced after the RV). */
const AGE_PLACEHOLDER = 'KCP_PROOF_AGE_PLACEHOLDER';

interface Template {
  readonly head: string;
  readonly tail: string;
}

export interface BookmarkFrames {
  /**
   * The BOOKMARK watch frame at `rv`, annotated when it ends a WatchList's initial events, and
   * with the proof age of `rv` when one is given (only for a watch that asked for it).
   */
  frame(rv: bigint, initialEventsEnd: boolean, proofAgeMs?: number): Buffer;
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

interface Forms {
  readonly plain: Template;
  readonly annotated: Template;
  /** The same with the proof age annotation (AGE_PLACEHOLDER in the template). */
  readonly aged: Template;
  readonly annotatedAged: Template;
}

/**
 * Every form from one object: metadata keeps its members in the order the apiserver wrote them;
 * the annotations go last in a typed object's metadata (ObjectMeta field order) and first in an
 * unstructured one's (sorted keys: annotations < resourceVersion), in key order as Go writes a
 * map (k8s.io/... < kube-cache-proxy.io/...).
 */
function templates(object: Record<string, unknown>, unstructured: boolean): Forms {
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  const rest = Object.fromEntries(Object.entries(metadata).filter(([k]) => k !== 'annotations' && k !== 'resourceVersion'));
  const form = (annotations: Record<string, string> | undefined): Template => {
    const meta =
      annotations === undefined
        ? { ...rest, resourceVersion: PLACEHOLDER }
        : unstructured
          ? { annotations, ...rest, resourceVersion: PLACEHOLDER }
          : { ...rest, resourceVersion: PLACEHOLDER, annotations };
    return split(JSON.stringify({ ...object, metadata: meta }));
  };
  return {
    plain: form(undefined),
    annotated: form({ [INITIAL_EVENTS_END]: 'true' }),
    aged: form({ [PROOF_AGE_ANNOTATION]: AGE_PLACEHOLDER }),
    annotatedAged: form({ [INITIAL_EVENTS_END]: 'true', [PROOF_AGE_ANNOTATION]: AGE_PLACEHOLDER }),
  };
}

export function newBookmarkFrames(kind: string, apiVersion: string, unstructured: boolean): BookmarkFrames {
  const bare = unstructured ? { apiVersion, kind, metadata: {} } : { kind, apiVersion, metadata: {} };
  let forms = templates(bare, unstructured);
  let learned = false;
  return {
    frame(rv, initialEventsEnd, proofAgeMs) {
      if (proofAgeMs === undefined) {
        const t = initialEventsEnd ? forms.annotated : forms.plain;
        return watchFrame('BOOKMARK', Buffer.from(`${t.head}${String(rv)}${t.tail}`));
      }
      const t = initialEventsEnd ? forms.annotatedAged : forms.aged;
      const json = `${t.head}${String(rv)}${t.tail}`.replace(AGE_PLACEHOLDER, formatProofAge(proofAgeMs));
      return watchFrame('BOOKMARK', Buffer.from(json));
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
