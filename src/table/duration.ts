/**
 * Durations as the printers write them: k8s.io/apimachinery pkg/util/duration (HumanDuration,
 * ShortHumanDuration) and printers.go's translateTimestampSince. Durations are in milliseconds
 * here (Go's time.Duration in nanoseconds, truncated the same way: int(d.Seconds()) and d/unit
 * truncate toward zero).
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

function trunc(x: number): number {
  return Math.trunc(x);
}

/** duration.HumanDuration: ~2-3 significant figures (`45s`, `3m20s`, `5h10m`, `3d4h`, `2y30d`). */
export function humanDuration(ms: number): string {
  const seconds = trunc(ms / SECOND);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${String(seconds)}s`;
  const minutes = trunc(ms / MINUTE);
  if (minutes < 10) {
    const s = trunc(ms / SECOND) % 60;
    return s === 0 ? `${String(minutes)}m` : `${String(minutes)}m${String(s)}s`;
  }
  if (minutes < 60 * 3) return `${String(minutes)}m`;
  const hours = trunc(ms / HOUR);
  if (hours < 8) {
    const m = trunc(ms / MINUTE) % 60;
    return m === 0 ? `${String(hours)}h` : `${String(hours)}h${String(m)}m`;
  }
  if (hours < 48) return `${String(hours)}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${String(trunc(hours / 24))}d` : `${String(trunc(hours / 24))}d${String(h)}h`;
  }
  if (hours < 24 * 365 * 2) return `${String(trunc(hours / 24))}d`;
  if (hours < 24 * 365 * 8) {
    const dy = trunc(hours / 24) % 365;
    return dy === 0 ? `${String(trunc(hours / 24 / 365))}y` : `${String(trunc(hours / 24 / 365))}y${String(dy)}d`;
  }
  return `${String(trunc(hours / 24 / 365))}y`;
}

/** duration.ShortHumanDuration: one unit (`45s`, `3m`, `5h`, `3d`, `2y`). */
export function shortHumanDuration(ms: number): string {
  const seconds = trunc(ms / SECOND);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60) return `${String(seconds)}s`;
  const minutes = trunc(ms / MINUTE);
  if (minutes < 60) return `${String(minutes)}m`;
  const hours = trunc(ms / HOUR);
  if (hours < 24) return `${String(hours)}h`;
  if (hours < 24 * 365) return `${String(trunc(hours / 24))}d`;
  return `${String(trunc(ms / HOUR / 24 / 365))}y`;
}

/** A metav1.Time or MicroTime as JSON (RFC 3339) in ms since the epoch; undefined for the zero time (absent or empty). */
export function parseTime(value: unknown): number | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** translateTimestampSince (and translateMicroTimestampSince): `<unknown>` for the zero time. */
export function translateTimestampSince(value: unknown, now: number): string {
  const t = parseTime(value);
  return t === undefined ? '<unknown>' : humanDuration(now - t);
}
