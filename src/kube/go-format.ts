/**
 * Go's formatting where the apiserver's messages depend on it: `%q` (strconv.Quote) and
 * byte-wise string order (sort.Strings). Selector error messages quote the offending input, so
 * these must render exactly as Go does for the messages to be byte-identical.
 */

const NAMED_ESCAPES: Readonly<Record<string, string>> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '\\': '\\\\',
  '"': '\\"',
};

/** Go unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u;
/**
 * A string of printable runes and spaces only (a lone surrogate is none): quoted by escaping `\`
 * and `"` alone. One native scan, where the rune loop below costs ~150 ms a MiB (a request's
 * name or selector can be that long, and its 403 quotes it).
 */
const ALL_PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]*$/u;

/**
 * Go `%q` of a string (strconv.Quote, appendEscapedRune in strconv/quote.go): printable runes as
 * they are, named escapes, `\xNN` below a space and for DEL, `\uNNNN` / `\UNNNNNNNN` for other
 * non-printable runes. A lone UTF-16 surrogate, which Go cannot hold, is rendered as U+FFFD.
 */
export function goQuote(s: string): string {
  if (ALL_PRINTABLE.test(s)) return `"${s.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
  let out = '"';
  for (const ch of s) {
    const named = NAMED_ESCAPES[ch];
    if (named !== undefined) {
      out += named;
      continue;
    }
    const cp = ch.codePointAt(0) ?? 0xfffd;
    if (cp === 0x20 || (cp > 0x20 && cp < 0x7f)) {
      out += ch;
    } else if (cp < 0x20 || cp === 0x7f) {
      out += `\\x${cp.toString(16).padStart(2, '0')}`;
    } else if (cp >= 0xd800 && cp <= 0xdfff) {
      out += '\ufffd';
    } else if (PRINTABLE.test(ch)) {
      out += ch;
    } else if (cp < 0x10000) {
      out += `\\u${cp.toString(16).padStart(4, '0')}`;
    } else {
      out += `\\U${cp.toString(16).padStart(8, '0')}`;
    }
  }
  return out + '"';
}

/** Go's `<` on strings: UTF-8 byte order (which is code point order, unlike UTF-16 `<`). */
export function compareGoStrings(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i) ?? 0;
    const y = b.codePointAt(i) ?? 0;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

/** Go len(s): the UTF-8 byte length. */
export function goLen(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}
