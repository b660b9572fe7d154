/**
 * A byte-level JSON scanner: finds where values start and end without building them, so that
 * list items keep the exact bytes the apiserver sent (the HTTP layer serves those bytes; a
 * JSON.parse + JSON.stringify round trip would change them: Go escapes <, > and & as \u003c...).
 *
 * The input is assumed to be valid JSON (it comes from the apiserver); on malformed input the
 * functions throw rather than guess.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

function isSpace(b: number | undefined): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

function skipSpace(buf: Buffer, i: number): number {
  while (isSpace(buf[i])) i++;
  return i;
}

/** Given the index of an opening quote, returns the index just past the closing quote. */
function skipString(buf: Buffer, i: number): number {
  for (i++; i < buf.length; i++) {
    const b = buf[i];
    if (b === BACKSLASH) i++;
    else if (b === QUOTE) return i + 1;
  }
  throw new SyntaxError('unterminated JSON string');
}

/** Returns the index just past the value that starts at `i` (after whitespace). */
export function skipValue(buf: Buffer, i: number): number {
  i = skipSpace(buf, i);
  const first = buf[i];
  if (first === QUOTE) return skipString(buf, i);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    for (; i < buf.length; i++) {
      const b = buf[i];
      if (b === QUOTE) {
        i = skipString(buf, i) - 1;
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        depth++;
      } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) return i + 1;
      }
    }
    throw new SyntaxError('unterminated JSON object or array');
  }
  // number, true, false, null
  while (i < buf.length) {
    const b = buf[i];
    if (b === COMMA || b === CLOSE_BRACE || b === CLOSE_BRACKET || isSpace(b)) break;
    i++;
  }
  return i;
}

export interface Span {
  readonly start: number;
  readonly end: number;
}

/** The members of the object in `buf` that starts at `at` (default: the top-level one): key -> byte span of its value. */
export function objectMembers(buf: Buffer, at = 0): Map<string, Span> {
  const members = new Map<string, Span>();
  let i = skipSpace(buf, at);
  if (buf[i] !== OPEN_BRACE) throw new SyntaxError('expected a JSON object');
  i = skipSpace(buf, i + 1);
  if (buf[i] === CLOSE_BRACE) return members;
  for (;;) {
    if (buf[i] !== QUOTE) throw new SyntaxError(`expected a member name at byte ${i}`);
    const keyEnd = skipString(buf, i);
    const key = JSON.parse(buf.toString('utf8', i, keyEnd)) as string;
    i = skipSpace(buf, keyEnd);
    if (buf[i] !== COLON) throw new SyntaxError(`expected ':' at byte ${i}`);
    const start = skipSpace(buf, i + 1);
    const end = skipValue(buf, start);
    members.set(key, { start, end });
    i = skipSpace(buf, end);
    if (buf[i] === COMMA) {
      i = skipSpace(buf, i + 1);
      continue;
    }
    if (buf[i] === CLOSE_BRACE) return members;
    throw new SyntaxError(`expected ',' or '}' at byte ${i}`);
  }
}

/** The byte spans of the elements of the array that occupies `span` of `buf`. */
export function arrayElements(buf: Buffer, span: Span): Span[] {
  const elements: Span[] = [];
  let i = skipSpace(buf, span.start);
  if (buf[i] !== OPEN_BRACKET) throw new SyntaxError('expected a JSON array');
  i = skipSpace(buf, i + 1);
  if (buf[i] === CLOSE_BRACKET) return elements;
  for (;;) {
    const start = i;
    const end = skipValue(buf, start);
    elements.push({ start, end });
    i = skipSpace(buf, end);
    if (buf[i] === COMMA) {
      i = skipSpace(buf, i + 1);
      continue;
    }
    if (buf[i] === CLOSE_BRACKET) return elements;
    throw new SyntaxError(`expected ',' or ']' at byte ${i}`);
  }
}
