/**
 * Label selectors (`labelSelector=`), parsed and matched exactly as kube-apiserver does: a copy of
 * apimachinery pkg/labels/selector.go (Lexer, Parser, NewRequirement, Requirement.Matches) at the
 * version the tests run against (v0.37.2). Parse errors carry the apiserver's 400 message.
 *
 *   <selector>    ::= <requirement> | <requirement> "," <selector>
 *   <requirement> ::= [!] KEY [ ("in" | "notin") "(" VALUES ")" | ("=" | "==" | "!=" | ">" | "<") VALUE ]
 *
 * Pure and synchronous: used by the LIST path and, per event, by the watch cache.
 */
import { compareGoStrings, goQuote } from '../kube/go-format.ts';
import { isLabelKey, isLabelValue } from './label-validation.ts';
import { SelectorParseError } from './selector-error.ts';

/** apimachinery pkg/selection/operator.go, with Go's spellings (`exists`, `!`, `gt`, `lt`). */
export type LabelOperator = 'exists' | '!' | '=' | '==' | '!=' | 'in' | 'notin' | 'gt' | 'lt';

export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  /** Sorted (Go byte order) and without duplicates, as sets.String.List() leaves them; empty for exists / `!`. */
  readonly values: readonly string[];
}

export type Labels = Readonly<Record<string, string>>;

export interface LabelSelector {
  /** Sorted by key (labels.ByKey), ANDed. */
  readonly requirements: readonly LabelRequirement[];
  matches(labels: Labels): boolean;
  /** True when the selector does not restrict anything (an empty or blank string). */
  empty(): boolean;
  /**
   * labels.Selector.RequiresExactMatch: the value `key` must have, when the first requirement on
   * `key` is `=`, `==` or an `in` of one value.
   */
  requiresExactMatch(key: string): string | undefined;
  /**
   * Values of the Indexer's `label` index (`key=value`) whose union holds every object this
   * selector can match, from its most selective `=`, `==` or `in` requirement; undefined when no
   * requirement allows a lookup. Callers still filter the candidates with `matches`.
   */
  labelIndexValues(): readonly string[] | undefined;
  /** labels.Selector.String(): requirements joined with `,`, e.g. `a in (b,c),!d,e=f`. */
  toString(): string;
}

/** Parses `text` as the apiserver does; throws SelectorParseError with the apiserver's message. */
export function parseLabelSelector(text: string): LabelSelector {
  const requirements = new Parser(text).parse();
  // labels.parse: sort.Sort(ByKey(items)). Stable here; Go's order of equal keys does not change matching.
  requirements.sort((a, b) => compareGoStrings(a.key, b.key));
  return new InternalSelector(requirements);
}

/** The selector of an absent or empty `labelSelector` (labels.Everything). */
export function everythingLabelSelector(): LabelSelector {
  return EVERYTHING;
}

// ---------------------------------------------------------------------------------------------
// Matching (selector.go Requirement.Matches, internalSelector)

/** strconv.ParseInt(s, 10, 64): optional sign, ASCII digits, within int64. */
function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  if (n < -(2n ** 63n) || n > 2n ** 63n - 1n) return undefined;
  return n;
}

function requirementMatches(r: LabelRequirement, labels: Labels): boolean {
  const has = Object.hasOwn(labels, r.key);
  switch (r.operator) {
    case 'in':
    case '=':
    case '==':
      return has && r.values.includes(labels[r.key] ?? '');
    case 'notin':
    case '!=':
      return !has || !r.values.includes(labels[r.key] ?? '');
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      if (!has) return false;
      const value = parseInt64(labels[r.key] ?? '');
      if (value === undefined || r.values.length !== 1) return false;
      const bound = parseInt64(r.values[0] ?? '');
      if (bound === undefined) return false;
      return r.operator === 'gt' ? value > bound : value < bound;
    }
  }
}

const OPERATOR_TEXT: Readonly<Record<LabelOperator, string>> = {
  exists: '',
  '!': '',
  '=': '=',
  '==': '==',
  '!=': '!=',
  in: ' in ',
  notin: ' notin ',
  gt: '>',
  lt: '<',
};

/** Requirement.String(). */
function requirementString(r: LabelRequirement): string {
  if (r.operator === 'exists') return r.key;
  if (r.operator === '!') return `!${r.key}`;
  const values = r.values.join(',');
  const set = r.operator === 'in' || r.operator === 'notin';
  return `${r.key}${OPERATOR_TEXT[r.operator]}${set ? `(${values})` : values}`;
}

class InternalSelector implements LabelSelector {
  readonly requirements: readonly LabelRequirement[];

  constructor(requirements: readonly LabelRequirement[]) {
    this.requirements = requirements;
  }

  matches(labels: Labels): boolean {
    for (const r of this.requirements) if (!requirementMatches(r, labels)) return false;
    return true;
  }

  empty(): boolean {
    return this.requirements.length === 0;
  }

  requiresExactMatch(key: string): string | undefined {
    const r = this.requirements.find((req) => req.key === key);
    if (r === undefined) return undefined;
    if ((r.operator === '=' || r.operator === '==' || r.operator === 'in') && r.values.length === 1) return r.values[0];
    return undefined;
  }

  labelIndexValues(): readonly string[] | undefined {
    let best: LabelRequirement | undefined;
    for (const r of this.requirements) {
      if (r.operator !== '=' && r.operator !== '==' && r.operator !== 'in') continue;
      if (best === undefined || r.values.length < best.values.length) best = r;
    }
    return best?.values.map((v) => `${best.key}=${v}`);
  }

  toString(): string {
    return this.requirements.map(requirementString).join(',');
  }
}

const EVERYTHING: LabelSelector = new InternalSelector([]);

// ---------------------------------------------------------------------------------------------
// Lexer (selector.go Lexer): works on UTF-16 units where Go works on bytes; every special
// symbol and blank is ASCII, so tokens and literals are the same.

type Token =
  | 'Error'
  | 'EndOfString'
  | 'ClosedPar'
  | 'Comma'
  | 'DoesNotExist'
  | 'DoubleEquals'
  | 'Equals'
  | 'GreaterThan'
  | 'Identifier'
  | 'In'
  | 'LessThan'
  | 'NotEquals'
  | 'NotIn'
  | 'OpenPar';

const STRING_TO_TOKEN: ReadonlyMap<string, Token> = new Map<string, Token>([
  [')', 'ClosedPar'],
  [',', 'Comma'],
  ['!', 'DoesNotExist'],
  ['==', 'DoubleEquals'],
  ['=', 'Equals'],
  ['>', 'GreaterThan'],
  ['in', 'In'],
  ['<', 'LessThan'],
  ['!=', 'NotEquals'],
  ['notin', 'NotIn'],
  ['(', 'OpenPar'],
]);

/** selector.go binaryOperators, as parseOperator lists them in its error. */
const BINARY_OPERATORS = 'in, notin, =, ==, !=, gt, lt';

interface ScannedItem {
  readonly tok: Token;
  readonly literal: string;
}

/** A keyword's token, or an identifier. */
const word = (literal: string): ScannedItem => ({ tok: STRING_TO_TOKEN.get(literal) ?? 'Identifier', literal });
const isWhitespace = (ch: string): boolean => ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
const isSpecialSymbol = (ch: string): boolean =>
  ch === '=' || ch === '!' || ch === '(' || ch === ')' || ch === ',' || ch === '>' || ch === '<';
/** Go's lexer reads byte 0 both at the end and for a NUL in the input: both end a token. */
const NUL = '\0';

class Lexer {
  readonly #s: string;
  #pos = 0;

  constructor(s: string) {
    this.#s = s;
  }

  /** Lexer.read: the next character, NUL past the end (without moving). */
  #read(): string {
    if (this.#pos < this.#s.length) return this.#s[this.#pos++] ?? NUL;
    return NUL;
  }

  #unread(): void {
    this.#pos--;
  }

  /** By position, one slice per identifier (a character at a time, a 1 MiB one took ~1 s). */
  #scanIDOrKeyword(): ScannedItem {
    const s = this.#s;
    const start = this.#pos;
    let end = start;
    while (end < s.length) {
      const ch = s[end] ?? NUL;
      if (isSpecialSymbol(ch) || isWhitespace(ch)) break;
      if (ch === NUL) {
        // read() took the NUL: the next token starts after it.
        this.#pos = end + 1;
        return word(s.slice(start, end));
      }
      end++;
    }
    this.#pos = end;
    return word(s.slice(start, end));
  }

  #scanSpecialSymbol(): ScannedItem {
    let last: ScannedItem | undefined;
    let buffer = '';
    for (;;) {
      const ch = this.#read();
      if (ch === NUL) break;
      if (!isSpecialSymbol(ch)) {
        this.#unread();
        break;
      }
      buffer += ch;
      const tok = STRING_TO_TOKEN.get(buffer);
      if (tok !== undefined) {
        last = { tok, literal: buffer };
      } else if (last !== undefined) {
        this.#unread();
        break;
      }
    }
    return last ?? { tok: 'Error', literal: `error expected: keyword found '${buffer}'` };
  }

  lex(): ScannedItem {
    let ch = this.#read();
    while (isWhitespace(ch)) ch = this.#read();
    if (ch === NUL) return { tok: 'EndOfString', literal: '' };
    this.#unread();
    return isSpecialSymbol(ch) ? this.#scanSpecialSymbol() : this.#scanIDOrKeyword();
  }
}

// ---------------------------------------------------------------------------------------------
// Parser (selector.go Parser)

/** In the Values context `in` and `notin` are plain identifiers (`x in (in)`). */
type ParserContext = 'KeyAndOperator' | 'Values';

function fail(message: string): never {
  throw new SelectorParseError('labelSelector', message);
}

/** A field.Error rendered as its Error() (util/validation/field/errors.go): `path: Invalid value: "v": detail`. */
function invalid(path: string, value: string, detail: string): string {
  return `${path}: Invalid value: ${goQuote(value)}: ${detail}`;
}

/** field.ErrorList.ToAggregate().Error(): duplicates dropped; one as is, several as `[a, b]`. */
function aggregate(errs: readonly string[]): string | undefined {
  const unique = [...new Set(errs)];
  if (unique.length === 0) return undefined;
  return unique.length === 1 ? unique[0] : `[${unique.join(', ')}]`;
}

class Parser {
  readonly #lexer: Lexer;
  readonly #items: ScannedItem[] = [];
  #position = 0;

  constructor(text: string) {
    this.#lexer = new Lexer(text);
  }

  #item(context: ParserContext, index: number): ScannedItem {
    const item = this.#items[index] ?? { tok: 'EndOfString', literal: '' };
    if (context === 'Values' && (item.tok === 'In' || item.tok === 'NotIn')) return { tok: 'Identifier', literal: item.literal };
    return item;
  }

  #lookahead(context: ParserContext): ScannedItem {
    return this.#item(context, this.#position);
  }

  #consume(context: ParserContext): ScannedItem {
    return this.#item(context, this.#position++);
  }

  parse(): LabelRequirement[] {
    for (;;) {
      const item = this.#lexer.lex();
      this.#items.push(item);
      if (item.tok === 'EndOfString') break;
    }
    const requirements: LabelRequirement[] = [];
    for (;;) {
      const { tok, literal } = this.#lookahead('Values');
      switch (tok) {
        case 'Identifier':
        case 'DoesNotExist': {
          requirements.push(this.#parseRequirement());
          const next = this.#consume('Values');
          if (next.tok === 'EndOfString') return requirements;
          if (next.tok === 'Comma') {
            const after = this.#lookahead('Values');
            if (after.tok !== 'Identifier' && after.tok !== 'DoesNotExist') {
              fail(`found '${after.literal}', expected: identifier after ','`);
            }
            break;
          }
          return fail(`found '${next.literal}', expected: ',' or 'end of string'`);
        }
        case 'EndOfString':
          return requirements;
        default:
          return fail(`found '${literal}', expected: !, identifier, or 'end of string'`);
      }
    }
  }

  #parseRequirement(): LabelRequirement {
    try {
      const [key, inferred] = this.#parseKeyAndInferOperator();
      if (inferred !== undefined) return newRequirement(key, inferred, []);
      const operator = this.#parseOperator();
      const values = operator === 'in' || operator === 'notin' ? this.#parseValues() : this.#parseExactValue();
      // sets.String.List(): sorted, unique.
      return newRequirement(key, operator, [...values].sort(compareGoStrings));
    } catch (err) {
      if (err instanceof SelectorParseError) fail(`unable to parse requirement: ${err.message}`);
      throw err;
    }
  }

  /** Returns the key and `exists` / `!` when no binary operator follows. */
  #parseKeyAndInferOperator(): [string, 'exists' | '!' | undefined] {
    let operator: '!' | undefined;
    let item = this.#consume('Values');
    if (item.tok === 'DoesNotExist') {
      operator = '!';
      item = this.#consume('Values');
    }
    if (item.tok !== 'Identifier') fail(`found '${item.literal}', expected: identifier`);
    const keyErrs = isLabelKey(item.literal);
    // validateLabelKey(literal, p.path) with the parser's nil path: Go prints a nil *Path as "<nil>".
    if (keyErrs.length > 0) fail(invalid('<nil>', item.literal, keyErrs.join('; ')));
    const next = this.#lookahead('Values').tok;
    if (operator === undefined && (next === 'EndOfString' || next === 'Comma')) return [item.literal, 'exists'];
    return [item.literal, operator];
  }

  #parseOperator(): LabelOperator {
    const { tok, literal } = this.#consume('KeyAndOperator');
    switch (tok) {
      case 'In':
        return 'in';
      case 'Equals':
        return '=';
      case 'DoubleEquals':
        return '==';
      case 'GreaterThan':
        return 'gt';
      case 'LessThan':
        return 'lt';
      case 'NotIn':
        return 'notin';
      case 'NotEquals':
        return '!=';
      default:
        return fail(`found '${literal}', expected: ${BINARY_OPERATORS}`);
    }
  }

  #parseValues(): Set<string> {
    const open = this.#consume('Values');
    if (open.tok !== 'OpenPar') fail(`found '${open.literal}' expected: '('`);
    const { tok, literal } = this.#lookahead('Values');
    switch (tok) {
      case 'Identifier':
      case 'Comma': {
        const values = this.#parseIdentifiersList();
        // Go reports the literal seen before the list here; unreachable in practice.
        if (this.#consume('Values').tok !== 'ClosedPar') fail(`found '${literal}', expected: ')'`);
        return values;
      }
      case 'ClosedPar':
        this.#consume('Values');
        return new Set(['']);
      default:
        return fail(`found '${literal}', expected: ',', ')' or identifier`);
    }
  }

  #parseIdentifiersList(): Set<string> {
    const values = new Set<string>();
    for (;;) {
      const { tok, literal } = this.#consume('Values');
      switch (tok) {
        case 'Identifier': {
          values.add(literal);
          const next = this.#lookahead('Values');
          if (next.tok === 'Comma') continue;
          if (next.tok === 'ClosedPar') return values;
          return fail(`found '${next.literal}', expected: ',' or ')'`);
        }
        case 'Comma': {
          if (values.size === 0) values.add(''); // "(,"
          const next = this.#lookahead('Values').tok;
          if (next === 'ClosedPar') {
            values.add(''); // ",)"
            return values;
          }
          if (next === 'Comma') values.add(''); // ",,"
          continue;
        }
        default:
          return fail(`found '${literal}', expected: ',', or identifier`);
      }
    }
  }

  #parseExactValue(): Set<string> {
    const next = this.#lookahead('Values').tok;
    if (next === 'EndOfString' || next === 'Comma') return new Set(['']);
    const { tok, literal } = this.#consume('Values');
    if (tok === 'Identifier') return new Set([literal]);
    return fail(`found '${literal}', expected: identifier`);
  }
}

/**
 * NewRequirement's checks as the parser reaches them: the key was validated already and the
 * value counts are right by construction, which leaves `gt`/`lt` integers and label values.
 * Paths are the parser's: `values[i]`, `values[i][key]`.
 */
function newRequirement(key: string, operator: LabelOperator, values: readonly string[]): LabelRequirement {
  const errs: string[] = [];
  if (operator === 'gt' || operator === 'lt') {
    values.forEach((v, i) => {
      if (parseInt64(v) === undefined) errs.push(invalid(`values[${i}]`, v, "for 'Gt', 'Lt' operators, the value must be an integer"));
    });
  }
  values.forEach((v, i) => {
    const valueErrs = isLabelValue(v);
    if (valueErrs.length > 0) errs.push(invalid(`values[${i}][${key}]`, v, valueErrs.join('; ')));
  });
  if (errs.length > 0) fail(aggregate(errs) ?? '');
  return { key, operator, values };
}
