/**
 * The selector scope of a cache: a field selector and a label selector its upstream LIST and
 * WATCH carry, so that it holds only the objects they select (a node proxy's `pods` where
 * `spec.nodeName` is its node). The apiserver's filtered watch tells the cache when an object
 * leaves the scope (a DELETED event of its last state in scope, cacher.go / cache_watcher.go
 * convertToWatchEvent), as it tells any filtered watcher.
 *
 * A scope answers only the reads it covers (`scopeCovers`): those whose own selectors imply it.
 * The rule is syntactic and sound: every requirement of the scope is one of the request's, after
 * the type's field label conversion (`spec.host` is `spec.nodeName`) and with the spellings that
 * mean the same folded together (`=`, `==` and a one-value `in`; `!=` and a one-value `notin`).
 * A request's selector is the AND of its requirements, so what it selects is within the scope;
 * its other requirements are applied by the cacher as for any read. A read that the rule does not
 * show covered (all pods, another node's pods, an equivalent selector written another way) is
 * never answered by the scoped cache.
 *
 * Flag syntax (`--resources`, whose entries are separated by commas):
 *
 *   <entry>  ::= RESOURCE [ ":" <scope> ]
 *   <scope>  ::= FIELDS | FIELDS ";labels=" LABELS | "labels=" LABELS
 *
 * FIELDS and LABELS are the query parameters' selectors with `+` for each `,` (a comma would end
 * the entry): `pods:spec.nodeName=node-1`, `pods:spec.nodeName=node-1+status.phase!=Succeeded`,
 * `pods:spec.nodeName=node-1;labels=app=web+tier in (a+b)`.
 */
import type { FieldLabelConversion, FieldRequirement, FieldSelector } from '../selector/field-selector.ts';
import { parseFieldSelector, parseRawFieldSelector } from '../selector/field-selector.ts';
import type { LabelRequirement, LabelSelector } from '../selector/label-selector.ts';
import { parseLabelSelector } from '../selector/label-selector.ts';
import { SelectorParseError } from '../selector/selector-error.ts';

/** The selectors of a scoped cache, as sent upstream and as parsed for the covering rule. */
export interface SelectorScope {
  /** The upstream `fieldSelector` ('' for none). */
  readonly fieldSelector: string;
  /** The upstream `labelSelector` ('' for none). */
  readonly labelSelector: string;
  /** Parsed with the type's field label conversion. */
  readonly fields: FieldSelector;
  readonly labels: LabelSelector;
}

/** A read's selectors, as its query gives them ('' for none). */
export interface RequestSelectors {
  readonly fieldSelector: string;
  readonly labelSelector: string;
}

const LABELS_CLAUSE = 'labels=';

/** An entry of `--resources`: the resource name and the scope's selectors as written, if any. */
export interface ScopeEntry {
  readonly name: string;
  readonly scope: RequestSelectors | undefined;
}

/**
 * Splits a `--resources` entry (see the top of this file) and checks the syntax of its
 * selectors (not their field names: that needs the type). Throws SelectorParseError or Error.
 */
export function parseScopeEntry(entry: string): ScopeEntry {
  const colon = entry.indexOf(':');
  if (colon < 0) return { name: entry, scope: undefined };
  const name = entry.slice(0, colon);
  const text = entry.slice(colon + 1);
  const at = text.startsWith(LABELS_CLAUSE) ? 0 : text.indexOf(`;${LABELS_CLAUSE}`);
  const fieldText = at < 0 ? text : text.slice(0, at);
  const labelText = at < 0 ? '' : text.slice(at + (at === 0 ? 0 : 1) + LABELS_CLAUSE.length);
  const scope = { fieldSelector: fieldText.replaceAll('+', ','), labelSelector: labelText.replaceAll('+', ',') };
  const fields = parseRawFieldSelector(scope.fieldSelector);
  const labels = parseLabelSelector(scope.labelSelector);
  if (fields.empty() && labels.empty()) throw new Error(`the scope of ${name} selects nothing out: give a field or a label selector`);
  return { name, scope };
}

/** The scope of a type: its selectors parsed with the type's field label conversion. Throws SelectorParseError. */
export function newSelectorScope(selectors: RequestSelectors, conversion: FieldLabelConversion): SelectorScope {
  return {
    fieldSelector: selectors.fieldSelector,
    labelSelector: selectors.labelSelector,
    fields: parseFieldSelector(selectors.fieldSelector, conversion),
    labels: parseLabelSelector(selectors.labelSelector),
  };
}

/** How narrow a scope is: its requirements' count (the registry prefers the narrowest covering scope). */
export function scopeNarrowness(scope: SelectorScope): number {
  return scope.fields.requirements.length + scope.labels.requirements.length;
}

/** `spec.nodeName=n1;labels=app=web`: a scope in the flag's words (with `,`), for logs and check names. */
export function describeSelectors(scope: RequestSelectors): string {
  if (scope.labelSelector === '') return scope.fieldSelector;
  return `${scope.fieldSelector};${LABELS_CLAUSE}${scope.labelSelector}`;
}

/**
 * True when every requirement of `scope` is one of the request's (see the top of this file): the
 * request selects nothing the scoped cache lacks. A request whose selectors do not parse is not
 * covered (the apiserver words its error).
 */
export function scopeCovers(scope: SelectorScope, request: RequestSelectors, conversion: FieldLabelConversion): boolean {
  let fields: FieldSelector;
  let labels: LabelSelector;
  try {
    fields = parseFieldSelector(request.fieldSelector, conversion);
    labels = parseLabelSelector(request.labelSelector);
  } catch (error) {
    if (error instanceof SelectorParseError) return false;
    throw error;
  }
  const fieldKeys = new Set(fields.requirements.map(fieldKey));
  const labelKeys = new Set(labels.requirements.map(labelKey));
  return (
    scope.fields.requirements.every((r) => fieldKeys.has(fieldKey(r))) && scope.labels.requirements.every((r) => labelKeys.has(labelKey(r)))
  );
}

/** A field requirement's identity (`=` and `==` are one operator already). */
function fieldKey(r: FieldRequirement): string {
  return JSON.stringify([r.field, r.operator, r.value]);
}

/**
 * A label requirement's identity, with the operators that select alike folded together
 * (selector.go Requirement.Matches: Equals, DoubleEquals and In of one value; NotEquals and
 * NotIn of one value, both true for an object without the key).
 */
function labelKey(r: LabelRequirement): string {
  let operator: string = r.operator;
  if (operator === '==' || (operator === 'in' && r.values.length === 1)) operator = '=';
  else if (operator === 'notin' && r.values.length === 1) operator = '!=';
  return JSON.stringify([r.key, operator, r.values]);
}
