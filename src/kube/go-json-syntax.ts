/**
 * Go's encoding/json syntax check (scanner.go, checkValid) reduced to its error messages: a
 * client's bad continue token is answered with them verbatim, e.g. `invalid character '\u0081'
 * looking for beginning of value`, `unexpected end of JSON input` or, nested past Go's limit,
 * `invalid character '[' exceeded max depth`. Iterative: linear in the input, whatever its depth.
 */
import { goQuote } from './go-format.ts';

/** scanner.go quoteChar: the offending byte as Go prints it, `'x'`, `'\u0081'`. */
export function goQuoteChar(byte: number): string {
  if (byte === 0x27) return "'\\''";
  if (byte === 0x22) return `'"'`;
  // string(c) of a byte is the rune U+00XX.
  return `'${goQuote(String.fromCharCode(byte)).slice(1, -1)}'`;
}

class SyntaxFailure extends Error {}

/** encoding/json scanner.go maxNestingDepth: objects and arrays open at once, at most. */
export const MAX_NESTING_DEPTH = 10_000;

/** Returns Go's syntax error message for `data`, or undefined when it is one valid JSON value. */
export function goJsonSyntaxError(data: Uint8Array): string | undefined {
  let i = 0;
  const end = (): never => {
    throw new SyntaxFailure('unexpected end of JSON input');
  };
  const bad = (context: string): never => {
    throw new SyntaxFailure(`invalid character ${goQuoteChar(data[i] ?? 0)} ${context}`);
  };
  const peek = (): number | undefined => data[i];
  const skipSpace = (): void => {
    for (let c = peek(); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = peek()) i++;
  };
  const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;
  const isHex = (c: number): boolean => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

  const literal = (word: string): void => {
    for (let k = 1; k < word.length; k++) {
      i++;
      const c = peek();
      if (c === undefined) end();
      if (c !== word.charCodeAt(k)) bad(`in literal ${word} (expecting '${word[k] ?? ''}')`);
    }
    i++;
  };
  const string = (): void => {
    i++;
    for (;;) {
      const c = peek();
      if (c === undefined) return end();
      if (c === 0x22) {
        i++;
        return;
      }
      if (c < 0x20) bad('in string literal');
      if (c === 0x5c) {
        i++;
        const e = peek();
        if (e === undefined) return end();
        if (e === 0x75) {
          for (let k = 0; k < 4; k++) {
            i++;
            const h = peek();
            if (h === undefined) return end();
            if (!isHex(h)) bad('in \\u hexadecimal character escape');
          }
        } else if (!'"\\/bfnrt'.includes(String.fromCharCode(e))) {
          bad('in string escape code');
        }
      }
      i++;
    }
  };
  const number = (): void => {
    if (peek() === 0x2d) {
      i++;
      if (peek() === undefined) end();
      if (!isDigit(peek())) bad('in numeric literal');
    }
    if (peek() === 0x30) i++;
    else while (isDigit(peek())) i++;
    if (peek() === 0x2e) {
      i++;
      if (peek() === undefined) end();
      if (!isDigit(peek())) bad('after decimal point in numeric literal');
      while (isDigit(peek())) i++;
    }
    if (peek() === 0x65 || peek() === 0x45) {
      i++;
      if (peek() === 0x2b || peek() === 0x2d) i++;
      if (peek() === undefined) end();
      if (!isDigit(peek())) bad('in exponent of numeric literal');
      while (isDigit(peek())) i++;
    }
  };
  /** After `{` (spaces skipped, not `}`): a key string and its colon. */
  const objectKey = (): void => {
    skipSpace();
    if (peek() === undefined) end();
    if (peek() !== 0x22) bad('looking for beginning of object key string');
    string();
    skipSpace();
    if (peek() === undefined) end();
    if (peek() !== 0x3a) bad('after object key');
    i++;
  };
  /**
   * One value, with the objects and arrays it opens on a stack rather than the call stack: a
   * client's value nested 5,000 deep would overflow a recursive reader. Go's scanner refuses
   * the opening past maxNestingDepth (pushParseState), and so does this.
   */
  const value = (): void => {
    // HOT PATH (a client's token, up to Go's 10,000 levels): the bytes read in place, the open
    // brackets on a byte stack, no call per byte but for a scalar's own reader.
    const open = new Uint8Array(Math.min(MAX_NESTING_DEPTH, data.length));
    let depth = 0;
    let expectValue = true;
    for (;;) {
      // The value is complete: what follows it is the caller's to read.
      if (!expectValue && depth === 0) return;
      let c = data[i];
      while (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) c = data[++i];
      if (c === undefined) return end();
      if (expectValue) {
        if (c === 0x7b || c === 0x5b) {
          if (depth >= MAX_NESTING_DEPTH) bad('exceeded max depth');
          open[depth++] = c;
          let next = data[++i];
          while (next === 0x20 || next === 0x09 || next === 0x0a || next === 0x0d) next = data[++i];
          if (next === (c === 0x7b ? 0x7d : 0x5d)) {
            i++;
            depth--;
            expectValue = false;
          } else if (c === 0x7b) {
            objectKey();
          }
          continue;
        }
        if (c === 0x22) string();
        else if (c === 0x2d || isDigit(c)) number();
        else if (c === 0x74) literal('true');
        else if (c === 0x66) literal('false');
        else if (c === 0x6e) literal('null');
        else bad('looking for beginning of value');
        expectValue = false;
        continue;
      }
      const top = open[depth - 1];
      if (c === (top === 0x7b ? 0x7d : 0x5d)) {
        i++;
        depth--;
        continue;
      }
      if (c !== 0x2c) bad(top === 0x7b ? 'after object key:value pair' : 'after array element');
      i++;
      if (top === 0x7b) objectKey();
      expectValue = true;
    }
  };

  try {
    value();
    skipSpace();
    if (i < data.length) bad('after top-level value');
    return undefined;
  } catch (e) {
    if (e instanceof SyntaxFailure) return e.message;
    throw e;
  }
}
