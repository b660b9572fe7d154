/**
 * Field selectors (`fieldSelector=`), parsed, converted and matched exactly as kube-apiserver
 * does: a copy of apimachinery pkg/fields/selector.go (splitTerms, splitTerm, UnescapeValue,
 * hasTerm / notHasTerm) at v0.37.2, followed by the resource's field label conversion that
 * endpoints/handlers/get.go listOpts applies with FieldSelector.Transform. Errors carry the
 * apiserver's 400 message.
 *
 *   <selector> ::= <term> | <term> "," <selector>      (empty terms are skipped)
 *   <term>     ::= FIELD ("!=" | "==" | "=") VALUE       (first operator wins; `\,` `\=` `\\` escape VALUE)
 */
import { compareGoStrings } from '../kube/go-format.ts';
import { SelectorParseError } from './selector-error.ts';

/** An object's selectable fields by name (fields.Set): what a field selector matches. */
export type SelectableFields = Readonly<Record<string, string>>;

export interface FieldRequirement {
  /** The canonical field name, after conversion (pods: `spec.host` becomes `spec.nodeName`). */
  readonly field: string;
  /** `=` and `==` are the same (fields.hasTerm). */
  readonly operator: '=' | '!=';
  /** Unescaped. */
  readonly value: string;
}

export interface FieldSelector {
  /** In the apiserver's order: terms sorted as written (Go byte order), ANDed. */
  readonly requirements: readonly FieldRequirement[];
  /** A field the object lacks compares as "" (fields.Set.Get). */
  matches(fields: SelectableFields): boolean;
  empty(): boolean;
  /** fields.Selector.RequiresExactMatch: the value of the first `=` term on `field`. */
  requiresExactMatch(field: string): string | undefined;
  /** fields.Selector.String(): `field=value` terms joined with `,`, values unescaped (as Go prints them). */
  toString(): string;
}

/**
 * A resource's field label conversion (the scheme's AddFieldLabelConversionFunc, or
 * runtime.DefaultMetaV1FieldSelectorConversion): which field names its fieldSelector accepts, and
 * the apiserver's words when it does not.
 */
export interface FieldLabelConversion {
  /** Field names accepted, aliases included. */
  readonly allowed: ReadonlySet<string>;
  /** Accepted names that select another field (pods: `spec.host` -> `spec.nodeName`). */
  readonly aliases?: Readonly<Record<string, string>>;
  /** The message for a name not in `allowed`. */
  notSupported(label: string): string;
}

/** Parses `text` for a resource with `conversion`; throws SelectorParseError with the apiserver's message. */
export function parseFieldSelector(text: string, conversion: FieldLabelConversion): FieldSelector {
  const parsed = parseTerms(text);
  // andTerm.Transform: the first term (in sorted order) the conversion rejects fails the request.
  const requirements = parsed.map((r) => {
    if (!conversion.allowed.has(r.field)) fail(conversion.notSupported(r.field));
    return { ...r, field: conversion.aliases?.[r.field] ?? r.field };
  });
  return new Selector(requirements);
}

/** fields.ParseSelector: the terms as written, no resource's conversion (what RequestInfo reads); throws SelectorParseError. */
export function parseRawFieldSelector(text: string): FieldSelector {
  return new Selector(parseTerms(text));
}

/** parseSelector: split on unescaped commas, sort, then parse every term before converting any. */
function parseTerms(text: string): FieldRequirement[] {
  const terms = splitTerms(text).sort(compareGoStrings);
  const parsed: FieldRequirement[] = [];
  for (const term of terms) {
    if (term === '') continue;
    const split = splitTerm(term);
    if (split === undefined) fail(`invalid selector: '${text}'; can't understand '${term}'`);
    const [field, op, rhs] = split;
    parsed.push({ field, operator: op === '!=' ? '!=' : '=', value: unescapeValue(rhs) });
  }
  return parsed;
}

/** The selector of an absent or empty `fieldSelector` (fields.Everything). */
export function everythingFieldSelector(): FieldSelector {
  return EVERYTHING;
}

function fail(message: string): never {
  throw new SelectorParseError('fieldSelector', message);
}

/** fields/selector.go splitTerms: splits on commas not preceded by a backslash escape; keeps escapes. */
function splitTerms(text: string): string[] {
  if (text.length === 0) return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms;
}

/** fields/selector.go termOperators: `==` before `=` so that no `=` is left on the value. */
const TERM_OPERATORS = ['!=', '==', '='] as const;

/** fields/selector.go splitTerm: the first position where any operator starts splits the term. */
function splitTerm(term: string): [string, (typeof TERM_OPERATORS)[number], string] | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of TERM_OPERATORS) {
      if (term.startsWith(op, i)) return [term.slice(0, i), op, term.slice(i + op.length)];
    }
  }
  return undefined;
}

/** fields/selector.go UnescapeValue. */
function unescapeValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      // InvalidEscapeSequence: the backslash and the rune after it.
      if (c !== '\\' && c !== ',' && c !== '=') fail(`invalid field selector: invalid escape sequence: \\${c}`);
      out += c;
      inSlash = false;
    } else if (c === '\\') {
      inSlash = true;
    } else if (c === ',' || c === '=') {
      // UnescapedRune prints the rune with %v: its code point in decimal.
      fail(`invalid field selector: unescaped character in value: ${c.codePointAt(0) ?? 0}`);
    } else {
      out += c;
    }
  }
  if (inSlash) fail('invalid field selector: invalid escape sequence: \\');
  return out;
}

class Selector implements FieldSelector {
  readonly requirements: readonly FieldRequirement[];

  constructor(requirements: readonly FieldRequirement[]) {
    this.requirements = requirements;
  }

  matches(fields: SelectableFields): boolean {
    for (const r of this.requirements) {
      const value = Object.hasOwn(fields, r.field) ? fields[r.field] : '';
      if ((value === r.value) !== (r.operator === '=')) return false;
    }
    return true;
  }

  empty(): boolean {
    return this.requirements.length === 0;
  }

  requiresExactMatch(field: string): string | undefined {
    return this.requirements.find((r) => r.field === field && r.operator === '=')?.value;
  }

  toString(): string {
    return this.requirements.map((r) => `${r.field}${r.operator}${r.value}`).join(',');
  }
}

const EVERYTHING: FieldSelector = new Selector([]);
