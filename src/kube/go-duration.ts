/**
 * Go's `time.ParseDuration` (src/time/format.go), which every duration flag of a Kubernetes
 * component reads (pflag's DurationVar): a sign, then one or more decimal numbers each with a
 * unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), e.g. `75s`, `1m30s`, `1.5h`, `-300ms`;
 * `0` alone needs no unit. Anything else is undefined, where Go returns
 * `time: invalid duration "…"` (or `time: missing unit in duration "…"`).
 */

/** Each unit in milliseconds. */
const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3, // U+00B5 micro sign
  μs: 1e-3, // U+03BC Greek small letter mu
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};

/** One number (digits, a point, digits: at least one digit on a side) and its unit. */
const TERM = /([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)/y;

/** The duration in milliseconds (fractional below one), or undefined when Go would refuse it. */
export function parseGoDurationMs(text: string): number | undefined {
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') return undefined;
  let total = 0;
  TERM.lastIndex = 0;
  while (TERM.lastIndex < rest.length) {
    const match = TERM.exec(rest);
    if (match === null) return undefined;
    const [, number = '', unit = ''] = match;
    if (number === '' || number === '.') return undefined;
    total += Number(number) * (UNIT_MS[unit] ?? Number.NaN);
  }
  // Go's bound: a duration is an int64 of nanoseconds (~292 years).
  if (!Number.isFinite(total) || total * 1e6 > 2 ** 63) return undefined;
  return sign * total;
}
