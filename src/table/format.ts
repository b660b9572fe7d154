/**
 * Go's formatting that several printers lean on (printers.go helpers and the Go standard library
 * they call), shared by the printer files.
 */
import { compareGoStrings } from '../kube/go-format.ts';
import { translateTimestampSince } from './duration.ts';
import { at, str } from './model.ts';

/** Go's `a < b` on strings: byte order of their UTF-8, which is code point order. */
export function goLess(a: string, b: string): boolean {
  return compareGoStrings(a, b) < 0;
}

/** sort.Strings / slices.Sort on strings. */
export function goSorted(list: readonly string[]): string[] {
  return [...list].sort(compareGoStrings);
}

/** The string values of a string array (Go's []string); anything else is skipped. */
export function goStrings(list: readonly unknown[]): string[] {
  return list.filter((v): v is string => typeof v === 'string');
}

/**
 * strings.TrimSpace: unicode.IsSpace at both ends. Not String.prototype.trim, which also trims
 * U+FEFF and keeps U+0085 (NEL), the other way round from Go.
 */
const GO_SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const GO_TRIM = new RegExp(`^${GO_SPACE}+|${GO_SPACE}+$`, 'g');

export function goTrimSpace(s: string): string {
  return s.replace(GO_TRIM, '');
}

/** labels.FormatLabels: `k=v` pairs sorted as whole strings, joined by ','; `<none>` when empty. */
export function formatLabels(labels: Readonly<Record<string, unknown>>): string {
  const pairs = goSorted(Object.entries(labels).map(([k, v]) => `${k}=${typeof v === 'string' ? v : ''}`));
  return pairs.length === 0 ? '<none>' : pairs.join(',');
}

/** layoutContainerCells (printers.go): container names and images, each joined by ','. */
export function layoutContainerCells(containers: readonly unknown[]): [names: string, images: string] {
  return [containers.map((c) => str(c, 'name')).join(','), containers.map((c) => str(c, 'image')).join(',')];
}

/** listWithMoreString (printers.go): the first `max` joined by ',', then ` + N more...`; `<unset>` when empty. */
export function listWithMoreString(list: readonly string[], more: boolean, count: number, max: number): string {
  const ret = list.join(',');
  if (more) return `${ret} + ${String(count - max)} more...`;
  return ret === '' ? '<unset>' : ret;
}

/** The object's metadata.name. */
export function name(obj: unknown): string {
  return str(obj, 'metadata', 'name');
}

/** translateTimestampSince(obj.CreationTimestamp): every printer's Age cell. */
export function age(obj: unknown, now: number): string {
  return translateTimestampSince(at(obj, 'metadata', 'creationTimestamp'), now);
}
