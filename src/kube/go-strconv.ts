/**
 * Go's strconv as the apiserver's error messages show it: `strconv.ParseInt: parsing "abc":
 * invalid syntax` reaches clients verbatim (runtime/conversion.go, Convert_Slice_string_To_int64;
 * APIObjectVersioner.ParseResourceVersion uses ParseUint).
 */

import { goQuote } from './go-format.ts';

/** A *strconv.NumError: its message is what the apiserver sends. */
export class GoNumError extends Error {
  constructor(func: 'ParseInt' | 'ParseUint', num: string, kind: 'invalid syntax' | 'value out of range') {
    super(`strconv.${func}: parsing ${goQuote(num)}: ${kind}`);
    this.name = 'GoNumError';
  }
}

const MAX_UINT64 = (1n << 64n) - 1n;

/** strconv.ParseUint(s, 10, 64), returning a bigint or the NumError Go would return. */
export function goParseUint64(s: string, func: 'ParseInt' | 'ParseUint' = 'ParseUint', num: string = s): bigint | GoNumError {
  if (s === '') return new GoNumError(func, num, 'invalid syntax');
  const cutoff = MAX_UINT64 / 10n + 1n;
  let n = 0n;
  for (const ch of s) {
    if (ch < '0' || ch > '9') return new GoNumError(func, num, 'invalid syntax');
    // Go stops at the first overflow, before looking at the rest (strconv/atoi.go).
    if (n >= cutoff) return new GoNumError(func, num, 'value out of range');
    n = n * 10n + BigInt(ch.charCodeAt(0) - 48);
    if (n > MAX_UINT64) return new GoNumError(func, num, 'value out of range');
  }
  return n;
}

/** strconv.ParseInt(s, 10, 64): an optional sign then ParseUint's digits. */
export function goParseInt64(s: string): bigint | GoNumError {
  if (s === '') return new GoNumError('ParseInt', s, 'invalid syntax');
  const neg = s.startsWith('-');
  const digits = neg || s.startsWith('+') ? s.slice(1) : s;
  const un = goParseUint64(digits, 'ParseInt', s);
  if (un instanceof GoNumError) {
    // A range error from ParseUint is re-checked below against int64's cutoff, as Go does.
    if (!un.message.endsWith('value out of range')) return un;
    return new GoNumError('ParseInt', s, 'value out of range');
  }
  const cutoff = 1n << 63n;
  if (!neg && un >= cutoff) return new GoNumError('ParseInt', s, 'value out of range');
  if (neg && un > cutoff) return new GoNumError('ParseInt', s, 'value out of range');
  return neg ? -un : un;
}
