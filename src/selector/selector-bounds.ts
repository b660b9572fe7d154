/**
 * How much selection a read from the cache may carry; past it, the apiserver answers the read
 * (pass reason `selector-too-large`), as it answers every read: nothing is refused.
 *
 * The apiserver bounds a selector's parts (a label key at most 317 bytes, a value 63:
 * label-validation.ts) but not their number: a 1 MiB labelSelector of 100,000 requirements is
 * parsed, held for the life of a watch (whose timeoutSeconds it does not cap either) and matched
 * against every event. In a cache shared by many clients, a selection is held once per distinct
 * filter while its watches last (cacher.ts), and is matched against each event of its namespace
 * once per event: unbounded, one client's 1 MiB selector pinned ~14 MiB and cost 10-14 ms per
 * object per filter. Bounded so that a filter costs about what its watcher's own frame writing
 * does, and well past what controllers send (kubelet, kube-controller-manager and client-go
 * informers: one to three requirements; `kubectl get -l` a few):
 *
 *   MAX_SELECTOR_BYTES   4 KiB per selector (labelSelector, fieldSelector), checked before it
 *                        is parsed: a dozen requirements on the longest label keys (317 bytes),
 *                        the 64 below on keys such as `app.kubernetes.io/name`
 *   MAX_SELECTOR_TERMS   64 label requirements and field terms together, an `in` or `notin`
 *                        counting one per value
 *
 * Measured at the bounds (2,000 distinct filters of each worst shape, a loaded 2-core machine): a
 * filter holds 9-17 KiB (its parsed selection and the cacher's key for it; a one-requirement
 * filter 0.7 KiB) and is matched in 1.4-8 µs per object (one requirement: 1.6 µs).
 */
import type { FieldSelector } from './field-selector.ts';
import type { LabelSelector } from './label-selector.ts';

/** Bytes (UTF-8) of one selector parameter, at most. */
export const MAX_SELECTOR_BYTES = 4096;
/** Label requirements (an `in`/`notin` one per value) and field terms of one selection, at most. */
export const MAX_SELECTOR_TERMS = 64;

/** The request's selectors as sent, before parsing. */
export interface SelectorTexts {
  readonly labelSelector: string;
  readonly fieldSelector: string;
}

/** True when either selector is longer than the cache takes: checked before anything is parsed. */
export function selectorTooLong(selectors: SelectorTexts): boolean {
  return tooLong(selectors.labelSelector) || tooLong(selectors.fieldSelector);
}

function tooLong(text: string): boolean {
  // A UTF-16 unit is 1 to 3 UTF-8 bytes: only the texts between the two bounds are measured.
  if (text.length <= MAX_SELECTOR_BYTES / 3) return false;
  if (text.length > MAX_SELECTOR_BYTES) return true;
  return Buffer.byteLength(text, 'utf8') > MAX_SELECTOR_BYTES;
}

/** The terms of a parsed selection (MAX_SELECTOR_TERMS counts them). */
export function selectionTerms(labels: LabelSelector, fields: FieldSelector): number {
  let terms = fields.requirements.length;
  for (const r of labels.requirements) terms += Math.max(1, r.values.length);
  return terms;
}
