/**
 * client-go's util/jsonpath (k8s.io/client-go@v0.37.2/util/jsonpath: parser.go, jsonpath.go, and
 * the comparisons of third_party/forked/golang/template) as CRD printer columns use it:
 * `jsonpath.New(name)`, `Parse("{" + col.JSONPath + "}")`, `AllowMissingKeys(true)`,
 * `FindResults(obj)`, and `PrintResults` of one value.
 *
 * The parser is ported whole, so that a path is rejected exactly where Go rejects it (the
 * apiserver then drops that column and every later one). Evaluation is ported whole too, but
 * for `range`/`end`, which keep state in the JSONPath object across rows: a path naming them is
 * reported unsupported, and so is a quoted string with a `\x80`-`\xff` escape (a byte string
 * that is not UTF-8, which a JS string cannot hold).
 *
 * Values are the object's JSON as the apiserver holds it after decoding (unstructured, via
 * sigs.k8s.io/json with int64 kept): a JSON number is an int64 when it is an integer in int64's
 * range, else a float64. The apiserver writes a float64 with an integral value below 1e21 as an
 * integer literal, which it reads back as int64, so this is the type Go sees on every read from
 * its cache; -0 reads back as int64 0. Values Go makes that JSON cannot hold (the path's number
 * literals, a string's bytes under `*`) are `GoScalar`s.
 *
 * Go's map iteration order is random: where `*` or `..` walks a map with more than one key, the
 * apiserver's first result varies from call to call. Here maps are walked in Go's sorted key
 * order, one of the orders the apiserver may produce.
 */
import { compareGoStrings } from '../kube/go-format.ts';

/** A value of a Go type that JSON data does not produce. */
export class GoScalar {
  /** int: a path's integer literal; float64: its decimal literal; uint8: a byte of a string under `*` or `..`. */
  readonly kind: 'int' | 'float64' | 'uint8';
  readonly value: number;
  constructor(kind: 'int' | 'float64' | 'uint8', value: number) {
    this.kind = kind;
    this.value = value;
  }
}

/** Results of FindResults: one list per top-level node of the template, or Go's error. */
export type FindResults =
  { readonly ok: true; readonly results: readonly (readonly unknown[])[] } | { readonly ok: false; readonly error: string };

export interface JsonPath {
  /** JSONPath.FindResults(data) with AllowMissingKeys(true). */
  findResults(data: unknown): FindResults;
}

/** Parse(text) failed: Go's Parse returns this error. */
export class JsonPathParseError extends Error {}

/** Go parses the template, but this port cannot evaluate it as Go does (range/end, non-UTF-8 literals). */
export class JsonPathUnsupportedError extends Error {}

// ---- parse tree (node.go) ----

interface ListNode {
  readonly type: 'list';
  readonly nodes: Node[];
}
interface ParamsEntry {
  value: number;
  known: boolean;
  derived: boolean;
}
type Node =
  | ListNode
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'field'; readonly value: string }
  | { readonly type: 'identifier'; readonly name: string }
  | { readonly type: 'array'; readonly params: readonly [ParamsEntry, ParamsEntry, ParamsEntry] }
  | { readonly type: 'filter'; readonly left: ListNode; readonly right: ListNode; readonly operator: string }
  | { readonly type: 'int'; readonly value: number }
  | { readonly type: 'float'; readonly value: number }
  | { readonly type: 'wildcard' }
  | { readonly type: 'recursive' }
  | { readonly type: 'union'; readonly nodes: readonly ListNode[] }
  | { readonly type: 'bool'; readonly value: boolean };

function newList(): ListNode {
  return { type: 'list', nodes: [] };
}

// ---- parser.go ----

const EOF = -1;
const LEFT_DELIM = '{';
const RIGHT_DELIM = '}';
const DICT_KEY = /^'([^']*)'$/;
const SLICE_OPERATOR = /^(-?\d*)(:-?\d*)?(:-?\d*)?$/;
// Go's `.` stops only at \n, where JS's also stops at \r, U+2028 and U+2029: hence [^\n].
const FILTER = /^([^!<>=]+)([!<>=]+)([^\n]+?)$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** unicode.IsDigit / unicode.IsLetter. */
const DIGIT = /^\p{Nd}$/u;
const LETTER = /^\p{L}$/u;

function isDigit(r: number): boolean {
  return r >= 0 && DIGIT.test(String.fromCodePoint(r));
}
function isAlphaNumeric(r: number): boolean {
  return r === 0x5f || (r >= 0 && LETTER.test(String.fromCodePoint(r))) || isDigit(r);
}
function isSpace(r: number): boolean {
  return r === 0x20 || r === 0x09;
}
function isEndOfLine(r: number): boolean {
  return r === 0x0d || r === 0x0a;
}
/** isTerminator: what may follow an identifier. */
function isTerminator(r: number): boolean {
  if (isSpace(r) || isEndOfLine(r) || r === EOF) return true;
  return '.,[]$@{}'.includes(String.fromCodePoint(r));
}

/** strconv.Atoi on a 64-bit platform: ASCII digits with an optional sign, in int64's range. */
function atoi(s: string): number | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n < INT64_MIN || n > INT64_MAX ? undefined : Number(n);
}

/** strconv.ParseFloat(s, 64) on what parseNumber collects (sign, digits and dots only). */
function parseFloat64(s: string): number | undefined {
  return /^[+-]?(?:\d+\.?\d*|\.\d+)$/.test(s) ? Number(s) : undefined;
}

class Parser {
  readonly root: ListNode = newList();
  readonly #input: string;
  #pos = 0;
  #start = 0;
  #width = 0;

  constructor(input: string) {
    // A Go string from JSON never holds a lone surrogate: its decoder writes U+FFFD instead.
    this.#input = input.toWellFormed();
  }

  parse(): ListNode {
    this.#parseText(this.root);
    return this.root;
  }

  #rest(): string {
    return this.#input.slice(this.#pos);
  }

  #consumeText(): string {
    const value = this.#input.slice(this.#start, this.#pos);
    this.#start = this.#pos;
    return value;
  }

  #next(): number {
    if (this.#pos >= this.#input.length) {
      this.#width = 0;
      return EOF;
    }
    const r = this.#input.codePointAt(this.#pos) ?? EOF;
    this.#width = r > 0xffff ? 2 : 1;
    this.#pos += this.#width;
    return r;
  }

  #peek(): number {
    const r = this.#next();
    this.#backup();
    return r;
  }

  #backup(): void {
    this.#pos -= this.#width;
  }

  /** The character two before pos: parser.go's `p.input[p.pos-2]` right after reading a quote. */
  #beforeLast(): string {
    return this.#input.charAt(this.#pos - 2);
  }

  #parseText(cur: ListNode): void {
    for (;;) {
      if (this.#rest().startsWith(LEFT_DELIM)) {
        if (this.#pos > this.#start) cur.nodes.push({ type: 'text', text: this.#consumeText() });
        this.#parseLeftDelim(cur);
        return;
      }
      if (this.#next() === EOF) break;
    }
    if (this.#pos > this.#start) cur.nodes.push({ type: 'text', text: this.#consumeText() });
  }

  #parseLeftDelim(cur: ListNode): void {
    this.#pos += LEFT_DELIM.length;
    this.#consumeText();
    const node = newList();
    cur.nodes.push(node);
    this.#parseInsideAction(node);
  }

  /** parseInsideAction; Go recurses once per token, which is a loop here. */
  #parseInsideAction(cur: ListNode): void {
    for (;;) {
      const rest = this.#rest();
      // Go tries these prefixes in map order; none is a prefix of another, so the order is moot.
      if (rest.startsWith(RIGHT_DELIM)) {
        this.#pos += RIGHT_DELIM.length;
        this.#consumeText();
        this.#parseText(this.root);
        return;
      }
      if (rest.startsWith('[?(')) {
        this.#parseFilter(cur);
        continue;
      }
      if (rest.startsWith('..')) {
        this.#parseRecursive(cur);
        continue;
      }
      const r = this.#next();
      if (r === EOF || isEndOfLine(r)) throw new JsonPathParseError('unclosed action');
      if (r === 0x20 || r === 0x40 /* @ */ || r === 0x24 /* $ */) {
        this.#consumeText();
      } else if (r === 0x5b /* [ */) {
        this.#parseArray(cur);
      } else if (r === 0x22 || r === 0x27) {
        this.#parseQuote(cur, r);
      } else if (r === 0x2e /* . */) {
        this.#parseField(cur);
      } else if (r === 0x2b || r === 0x2d || isDigit(r)) {
        this.#backup();
        this.#parseNumber(cur);
      } else if (isAlphaNumeric(r)) {
        this.#backup();
        this.#parseIdentifier(cur);
      } else {
        throw new JsonPathParseError(`unrecognized character in action: U+${r.toString(16).toUpperCase().padStart(4, '0')}`);
      }
    }
  }

  /** parseIdentifier: `true`/`false` are booleans, anything else an identifier (range, end, or an error when evaluated). */
  #parseIdentifier(cur: ListNode): void {
    while (!isTerminator(this.#next()));
    this.#backup();
    const value = this.#consumeText();
    if (value === 'true' || value === 'false') cur.nodes.push({ type: 'bool', value: value === 'true' });
    else cur.nodes.push({ type: 'identifier', name: value });
  }

  #parseRecursive(cur: ListNode): void {
    if (cur.nodes.at(-1)?.type === 'recursive') throw new JsonPathParseError('invalid multiple recursive descent');
    this.#pos += 2;
    this.#consumeText();
    cur.nodes.push({ type: 'recursive' });
    if (isAlphaNumeric(this.#peek())) this.#parseField(cur);
  }

  #parseNumber(cur: ListNode): void {
    const r = this.#peek();
    if (r === 0x2b || r === 0x2d) this.#next();
    for (;;) {
      const c = this.#next();
      if (c !== 0x2e && !isDigit(c)) {
        this.#backup();
        break;
      }
    }
    const value = this.#consumeText();
    const i = atoi(value);
    if (i !== undefined) {
      cur.nodes.push({ type: 'int', value: i });
      return;
    }
    const d = parseFloat64(value);
    if (d !== undefined) {
      cur.nodes.push({ type: 'float', value: d });
      return;
    }
    throw new JsonPathParseError(`cannot parse number ${value}`);
  }

  #parseArray(cur: ListNode): void {
    for (;;) {
      const r = this.#next();
      if (r === EOF || r === 0x0a) throw new JsonPathParseError('unterminated array');
      if (r === 0x5d /* ] */) break;
    }
    let text = this.#consumeText().slice(1, -1);
    if (text === '*') text = ':';

    // union operator
    const strs = text.split(',');
    if (strs.length > 1) {
      cur.nodes.push({ type: 'union', nodes: strs.map((s) => parseAction(`[${trimSpaces(s)}]`)) });
      return;
    }

    // dict key: parsed again as a field, so `['a.b']` is the fields a and b
    const key = DICT_KEY.exec(text);
    if (key !== null) {
      cur.nodes.push(...parseAction(`.${key[1] ?? ''}`).nodes);
      return;
    }

    // slice operator
    const m = SLICE_OPERATOR.exec(text);
    if (m === null) throw new JsonPathParseError(`invalid array index ${text}`);
    const params: [ParamsEntry, ParamsEntry, ParamsEntry] = [
      { value: 0, known: false, derived: false },
      { value: 0, known: false, derived: false },
      { value: 0, known: false, derived: false },
    ];
    for (let i = 0; i < 3; i++) {
      let v = m[i + 1] ?? '';
      const p = params[i] as ParamsEntry;
      if (v !== '') {
        if (i > 0) v = v.slice(1);
        if (i > 0 && v === '') {
          p.known = false;
        } else {
          const n = atoi(v);
          if (n === undefined) throw new JsonPathParseError(`array index ${v} is not a number`);
          p.known = true;
          p.value = n;
        }
      } else if (i === 1) {
        p.known = true;
        p.value = params[0].value + 1;
        p.derived = true;
      }
    }
    cur.nodes.push({ type: 'array', params });
  }

  #parseFilter(cur: ListNode): void {
    this.#pos += 3;
    this.#consumeText();
    let begin = false;
    let end = false;
    let pair = 0;
    loop: for (;;) {
      const r = this.#next();
      switch (r) {
        case EOF:
        case 0x0a:
          throw new JsonPathParseError('unterminated filter');
        case 0x22:
        case 0x27:
          if (!begin) {
            begin = true;
            pair = r;
            continue;
          }
          if (this.#beforeLast() !== '\\' && r === pair) end = true;
          break;
        case 0x29 /* ) */:
          // quotes appear zero times or once, paired, on the right of the comparison
          if (begin === end) break loop;
          break;
      }
    }
    if (this.#next() !== 0x5d) throw new JsonPathParseError('unclosed array expect ]');
    const text = this.#consumeText().slice(0, -2);
    const m = FILTER.exec(text);
    if (m === null) {
      cur.nodes.push({ type: 'filter', left: parseAction(text), right: newList(), operator: 'exists' });
    } else {
      const [, left = '', operator = '', right = ''] = m;
      cur.nodes.push({ type: 'filter', left: parseAction(left), right: parseAction(right), operator });
    }
  }

  #parseQuote(cur: ListNode, end: number): void {
    for (;;) {
      const r = this.#next();
      if (r === EOF || r === 0x0a) throw new JsonPathParseError('unterminated quoted string');
      if (r === end && this.#beforeLast() !== '\\') break;
    }
    const value = this.#consumeText();
    cur.nodes.push({ type: 'text', text: unquoteExtend(value) });
  }

  #parseField(cur: ListNode): void {
    this.#consumeText();
    while (this.#advance());
    const value = this.#consumeText();
    if (value === '*') cur.nodes.push({ type: 'wildcard' });
    else cur.nodes.push({ type: 'field', value: value.replaceAll('\\', '') });
  }

  /** advance: one rune, a backslash taking the next with it; false at a terminator. */
  #advance(): boolean {
    const r = this.#next();
    if (r === 0x5c) {
      this.#next();
    } else if (isTerminator(r)) {
      this.#backup();
      return false;
    }
    return true;
  }
}

function trimSpaces(s: string): string {
  return s.replace(/^ +| +$/g, '');
}

/** parseAction: the list node of `{text}`. */
function parseAction(text: string): ListNode {
  const root = new Parser(`${LEFT_DELIM}${text}${RIGHT_DELIM}`).parse();
  return root.nodes[0] as ListNode;
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\' };

/** UnquoteExtend (strconv.Unquote, single quotes allowed), with strconv.UnquoteChar's escapes. */
function unquoteExtend(s: string): string {
  const syntax = (): JsonPathParseError => new JsonPathParseError(`unquote string ${s} error invalid syntax`);
  if (s.length < 2) throw syntax();
  const quote = s.charAt(0);
  if (quote !== s.charAt(s.length - 1) || (quote !== '"' && quote !== "'")) throw syntax();
  const body = s.slice(1, -1);
  let out = '';
  let i = 0;
  while (i < body.length) {
    const c = body.charAt(i);
    if (c === quote) throw syntax();
    if (c !== '\\') {
      out += c;
      i++;
      continue;
    }
    if (i + 1 >= body.length) throw syntax();
    const e = body.charAt(i + 1);
    i += 2;
    const simple = SIMPLE_ESCAPES[e];
    if (simple !== undefined) {
      out += simple;
    } else if (e === 'x' || e === 'u' || e === 'U') {
      const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const hex = body.slice(i, i + n);
      if (hex.length < n || !/^[0-9a-fA-F]+$/.test(hex)) throw syntax();
      i += n;
      const v = parseInt(hex, 16);
      if (e === 'x' && v >= 0x80) throw new JsonPathUnsupportedError(`byte escape \\x${hex} in ${s}`);
      if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) throw syntax();
      out += String.fromCodePoint(v);
    } else if (e >= '0' && e <= '7') {
      const oct = body.slice(i, i + 2);
      if (!/^[0-7]{2}$/.test(oct)) throw syntax();
      i += 2;
      const v = parseInt(e + oct, 8);
      if (v > 255) throw syntax();
      if (v >= 0x80) throw new JsonPathUnsupportedError(`byte escape \\${e}${oct} in ${s}`);
      out += String.fromCharCode(v);
    } else if (e === "'" || e === '"') {
      if (e !== quote) throw syntax();
      out += e;
    } else {
      throw syntax();
    }
  }
  return out;
}

/** Identifiers that change the JSONPath's state (FindResults' range loop), which this port does not keep. */
function assertSupported(node: Node): void {
  switch (node.type) {
    case 'identifier':
      if (node.name === 'range' || node.name === 'end') throw new JsonPathUnsupportedError(`${node.name} is not supported`);
      return;
    case 'list':
      node.nodes.forEach(assertSupported);
      return;
    case 'filter':
      assertSupported(node.left);
      assertSupported(node.right);
      return;
    case 'union':
      node.nodes.forEach(assertSupported);
      return;
    default:
      return;
  }
}

// ---- values (reflect kinds as the evaluator sees them) ----

const TWO_63 = 2 ** 63;

/** The Go type of a JSON number as the apiserver decodes it (see the file comment). */
export function isInt64(n: number): boolean {
  return Number.isInteger(n) && n >= -TWO_63 && n < TWO_63;
}

type Kind = 'nil' | 'bool' | 'int' | 'uint' | 'float' | 'string' | 'slice' | 'map' | 'invalid';

function isMap(v: unknown): v is Readonly<Record<string, unknown>> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof GoScalar);
}

function kindOf(v: unknown): Kind {
  if (v === null) return 'nil';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return isInt64(v) ? 'int' : 'float';
  if (v instanceof GoScalar) return v.kind === 'float64' ? 'float' : v.kind === 'uint8' ? 'uint' : 'int';
  if (Array.isArray(v)) return 'slice';
  if (isMap(v)) return 'map';
  return 'invalid';
}

function numberOf(v: unknown): number {
  return v instanceof GoScalar ? v.value : (v as number);
}

/** Map keys in Go's sorted order (Go's own iteration order is random). */
function sortedKeys(m: Readonly<Record<string, unknown>>): string[] {
  return Object.keys(m).sort(compareGoStrings);
}

/** The children evalWildcard and evalRecursive visit: map values, slice elements, a string's bytes. */
function children(v: unknown): unknown[] {
  if (Array.isArray(v)) return v as unknown[];
  if (typeof v === 'string') return [...Buffer.from(v, 'utf8')].map((b) => new GoScalar('uint8', b));
  if (isMap(v)) return sortedKeys(v).map((k) => v[k]);
  return [];
}

// ---- comparisons (third_party/forked/golang/template/funcs.go) ----

class ComparisonError extends Error {}

type Comparable = { kind: 'bool'; v: boolean } | { kind: 'int' | 'uint' | 'float'; v: number } | { kind: 'string'; v: string };

/** basicKind: bool, int, uint, float or string; anything else (nil, maps, slices) cannot be compared. */
function basic(v: unknown): Comparable {
  const k = kindOf(v);
  switch (k) {
    case 'bool':
      return { kind: k, v: v as boolean };
    case 'string':
      return { kind: k, v: v as string };
    case 'int':
    case 'uint':
    case 'float':
      return { kind: k, v: numberOf(v) };
    default:
      throw new ComparisonError('invalid type for comparison');
  }
}

function isIntegerKind(k: string): boolean {
  return k === 'int' || k === 'uint';
}

function equal(a: unknown, b: unknown): boolean {
  const x = basic(a);
  const y = basic(b);
  if (x.kind !== y.kind) {
    // int and uint compare by value; any other mix is an error
    if (isIntegerKind(x.kind) && isIntegerKind(y.kind)) return x.v === y.v;
    throw new ComparisonError('incompatible types for comparison');
  }
  return x.v === y.v;
}

function less(a: unknown, b: unknown): boolean {
  const x = basic(a);
  const y = basic(b);
  if (x.kind !== y.kind) {
    if (isIntegerKind(x.kind) && isIntegerKind(y.kind)) return (x.v as number) < (y.v as number);
    throw new ComparisonError('incompatible types for comparison');
  }
  if (x.kind === 'bool') throw new ComparisonError('invalid type for comparison');
  if (x.kind === 'string') return compareGoStrings(x.v, y.v as string) < 0;
  return x.v < (y.v as number);
}

function compare(operator: string, a: unknown, b: unknown): boolean {
  switch (operator) {
    case '<':
      return less(a, b);
    case '>':
      return !(less(a, b) || equal(a, b));
    case '==':
      return equal(a, b);
    case '!=':
      return !equal(a, b);
    case '<=':
      return less(a, b) || equal(a, b);
    case '>=':
      return !less(a, b);
    default:
      throw new ComparisonError(`unrecognized filter operator ${operator}`);
  }
}

// ---- evaluation (jsonpath.go) ----

/** A walk's values and Go's error: the Go functions return both, and a filter's `exists` reads the values of a failed walk. */
interface Walk {
  readonly values: readonly unknown[];
  readonly error?: string;
}

function ok(values: readonly unknown[]): Walk {
  return { values };
}

function walk(input: readonly unknown[], node: Node): Walk {
  switch (node.type) {
    case 'list':
      return evalList(input, node);
    case 'text':
      return ok([node.text]);
    case 'field':
      return ok(evalField(input, node.value));
    case 'array':
      return evalArray(input, node.params);
    case 'filter':
      return evalFilter(input, node);
    case 'int':
      return ok(input.map(() => new GoScalar('int', node.value)));
    case 'float':
      return ok(input.map(() => new GoScalar('float64', node.value)));
    case 'bool':
      return ok(input.map(() => node.value));
    case 'wildcard':
      return ok(input.flatMap((v) => (v === null ? [] : children(v))));
    case 'recursive':
      return ok(evalRecursive(input));
    case 'union':
      return evalUnion(input, node.nodes);
    case 'identifier':
      // range and end are refused at parse time
      return { values: input, error: `unrecognized identifier ${node.name}` };
  }
}

function evalList(input: readonly unknown[], node: ListNode): Walk {
  let cur: Walk = ok(input);
  for (const n of node.nodes) {
    cur = walk(cur.values, n);
    if (cur.error !== undefined) return cur;
  }
  return cur;
}

/** evalField on maps (a JSON object has no struct fields); AllowMissingKeys(true), so never an error. */
function evalField(input: readonly unknown[], key: string): unknown[] {
  const results: unknown[] = [];
  for (const v of input) {
    if (isMap(v) && Object.hasOwn(v, key)) results.push(v[key]);
  }
  return results;
}

function evalArray(input: readonly unknown[], nodeParams: readonly [ParamsEntry, ParamsEntry, ParamsEntry]): Walk {
  const result: unknown[] = [];
  for (const value of input) {
    if (value === null) continue;
    if (!Array.isArray(value)) return { values: input, error: `${kindOf(value)} is not array or slice` };
    const list = value as readonly unknown[];
    const len = list.length;
    const [p0, p1, p2] = nodeParams.map((p) => ({ ...p }));
    if (p0 === undefined || p1 === undefined || p2 === undefined) throw new Error('unreachable');
    if (!p0.known) p0.value = 0;
    if (p0.value < 0) p0.value += len;
    if (!p1.known) p1.value = len;
    if (p1.value < 0 || (p1.value === 0 && p1.derived)) p1.value += len;
    if (p1.value === p0.value) return ok(result); // zero elements asked for: Go returns at once, skipping later inputs
    if (p0.value >= len || p0.value < 0) return { values: input, error: `array index out of bounds: index ${p0.value}, length ${len}` };
    if (p1.value > len || p1.value < 0) return { values: input, error: `array index out of bounds: index ${p1.value - 1}, length ${len}` };
    if (p0.value > p1.value) return { values: input, error: `starting index ${p0.value} is greater than ending index ${p1.value}` };
    const slice = list.slice(p0.value, p1.value);
    let step = 1;
    if (p2.known) {
      if (p2.value <= 0) return { values: input, error: 'step must be > 0' };
      step = p2.value;
    }
    for (let i = 0; i < slice.length; i += step) result.push(slice[i]);
  }
  return ok(result);
}

function evalUnion(input: readonly unknown[], nodes: readonly ListNode[]): Walk {
  const result: unknown[] = [];
  for (const list of nodes) {
    const w = evalList(input, list);
    if (w.error !== undefined) return { values: input, error: w.error };
    result.push(...w.values);
  }
  return ok(result);
}

/** evalRecursive: each value that has children, then its descendants, depth first. */
function evalRecursive(input: readonly unknown[]): unknown[] {
  const result: unknown[] = [];
  for (const value of input) {
    if (value === null) continue;
    const kids = children(value);
    if (kids.length !== 0) {
      result.push(value);
      result.push(...evalRecursive(kids));
    }
  }
  return result;
}

function evalFilter(
  input: readonly unknown[],
  node: { readonly left: ListNode; readonly right: ListNode; readonly operator: string },
): Walk {
  const results: unknown[] = [];
  for (const value of input) {
    if (!Array.isArray(value)) return { values: input, error: `${kindOf(value)} is not array or slice and cannot be filtered` };
    for (const item of value as readonly unknown[]) {
      const lefts = evalList([item], node.left);
      if (node.operator === 'exists') {
        if (lefts.values.length > 0) results.push(item);
        continue;
      }
      if (lefts.error !== undefined) return { values: input, error: lefts.error };
      if (lefts.values.length === 0) continue;
      if (lefts.values.length > 1) return { values: input, error: 'can only compare one element at a time' };
      const rights = evalList([item], node.right);
      if (rights.error !== undefined) return { values: input, error: rights.error };
      if (rights.values.length === 0) continue;
      if (rights.values.length > 1) return { values: input, error: 'can only compare one element at a time' };
      try {
        if (compare(node.operator, lefts.values[0], rights.values[0])) results.push(item);
      } catch (err) {
        if (err instanceof ComparisonError) return { values: results, error: err.message };
        throw err;
      }
    }
  }
  return ok(results);
}

class CompiledJsonPath implements JsonPath {
  readonly #root: ListNode;
  constructor(root: ListNode) {
    this.#root = root;
  }

  findResults(data: unknown): FindResults {
    const results: (readonly unknown[])[] = [];
    for (const node of this.#root.nodes) {
      const w = walk([data], node);
      if (w.error !== undefined) return { ok: false, error: w.error };
      results.push(w.values);
    }
    return { ok: true, results };
  }
}

/**
 * jsonpath.New(name).Parse(template) with AllowMissingKeys(true). Throws JsonPathParseError where
 * Go's Parse fails, JsonPathUnsupportedError where Go parses what this port cannot evaluate.
 */
export function parseJsonPath(template: string): JsonPath {
  const root = new Parser(template).parse();
  assertSupported(root);
  return new CompiledJsonPath(root);
}

// ---- PrintResults of one value ----

/**
 * fmt's %v of a float64: strconv 'g' with the shortest digits, %e when the exponent is below -4
 * or at least 6 (ftoa.go formatDigits: "if precision was the shortest possible, use precision 6
 * for this decision"), the exponent written with a sign and at least two digits.
 */
export function goFormatFloat(f: number): string {
  if (Object.is(f, -0)) return '-0';
  if (f === 0) return '0';
  const [mantissa = '', exp = ''] = f.toExponential().split('e');
  const e = Number(exp);
  if (e < -4 || e >= 6) return `${mantissa}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  // Within these exponents ECMAScript's Number::toString writes the same shortest digits in fixed notation.
  return String(f);
}

const GO_EXTRA_ESCAPES = /[<>&\u2028\u2029]/g;

/** encoding/json's string: JSON.stringify's escapes plus HTML-safe < > & and U+2028/U+2029 (encode.go appendString). */
function goJsonString(s: string): string {
  return JSON.stringify(s.toWellFormed()).replace(GO_EXTRA_ESCAPES, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * json.Marshal of a decoded JSON value: map keys sorted, int64 in decimal, float64 as
 * encoding/json's floatEncoder writes it, which is ECMAScript's Number::toString (the same
 * shortest digits, %e from 1e21 and below 1e-6, `e-07` trimmed to `e-7`) except for -0, which a
 * decoded value never is (it reads back as int64 0).
 */
function goMarshalValue(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'string') return goJsonString(v);
  if (typeof v === 'number') return isInt64(v) ? String(v === 0 ? 0 : v) : String(v);
  if (v instanceof GoScalar) return String(v.value);
  if (Array.isArray(v)) return `[${(v as readonly unknown[]).map(goMarshalValue).join(',')}]`;
  if (isMap(v))
    return `{${sortedKeys(v)
      .map((k) => `${goJsonString(k)}:${goMarshalValue(v[k])}`)
      .join(',')}}`;
  return 'null';
}

/**
 * PrintResults(w, []reflect.Value{reflect.ValueOf(value)}), as the CRD table convertor calls it
 * on results[0][0].Interface(): maps and slices as compact JSON, other values with fmt.Fprint
 * (int64 in decimal, float64 as %v, bools as true/false), and a JSON null (an invalid
 * reflect.Value by then) as text/template's `<no value>`.
 */
export function printResult(value: unknown): string {
  if (value === null) return '<no value>';
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return isInt64(value) ? String(value === 0 ? 0 : value) : goFormatFloat(value);
  if (value instanceof GoScalar) return value.kind === 'float64' ? goFormatFloat(value.value) : String(value.value);
  return goMarshalValue(value);
}
