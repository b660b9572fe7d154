/**
 * Go's json.Indent(dst, src, "", "  "), which is what the apiserver's pretty JSON is (its pretty
 * serializer is json.MarshalIndent: the compact encoding, indented). Applied to the compact bytes
 * the cache holds, it gives the apiserver's indented answer byte for byte: `{}` and `[]` stay
 * empty on one line, `": "` after keys, strings copied as they are. Off the hot path: only curl,
 * browsers and `?pretty=true` get it.
 */

const INDENT = 0x20;
const NEWLINE = 0x0a;

export function indentJson(pieces: Iterable<Buffer>, length: number): Buffer {
  // Indenting at most triples a compact document's size in practice (deep nesting of short values).
  let out = Buffer.allocUnsafe(Math.max(64, length * 3));
  let at = 0;
  const room = (n: number): void => {
    if (at + n <= out.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(out.length * 2, at + n));
    out.copy(bigger, 0, 0, at);
    out = bigger;
  };
  const newline = (depth: number): void => {
    room(1 + depth * 2);
    out[at++] = NEWLINE;
    out.fill(INDENT, at, at + depth * 2);
    at += depth * 2;
  };
  let depth = 0;
  let needIndent = false;
  let inString = false;
  let escaped = false;
  for (const piece of pieces) {
    for (let i = 0; i < piece.length; i++) {
      const c = piece[i] as number;
      if (inString) {
        room(1);
        out[at++] = c;
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) inString = false;
        continue;
      }
      // Insignificant whitespace between tokens is dropped.
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
      const closing = c === 0x7d || c === 0x5d;
      if (needIndent && !closing) {
        needIndent = false;
        depth++;
        newline(depth);
      }
      switch (c) {
        case 0x7b: // {
        case 0x5b: // [
          needIndent = true;
          room(1);
          out[at++] = c;
          break;
        case 0x2c: // ,
          room(1);
          out[at++] = c;
          newline(depth);
          break;
        case 0x3a: // :
          room(2);
          out[at++] = c;
          out[at++] = INDENT;
          break;
        case 0x7d: // }
        case 0x5d: // ]
          if (needIndent) needIndent = false;
          else {
            depth--;
            newline(depth);
          }
          room(1);
          out[at++] = c;
          break;
        case 0x22: // "
          inString = true;
          room(1);
          out[at++] = c;
          break;
        default:
          room(1);
          out[at++] = c;
      }
    }
  }
  return out.subarray(0, at);
}
