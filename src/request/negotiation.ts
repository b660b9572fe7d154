/**
 * Content negotiation as the apiserver does it, to decide whether the cache can give a read the
 * very representation the apiserver would (k8s.io/apiserver pkg/endpoints/handlers/negotiation
 * negotiate.go NegotiateMediaTypeOptions, over goautoneg's ParseAccept; the endpoint's
 * restrictions from handlers/rest.go RequestScope.AllowsMediaTypeTransform).
 *
 * The apiserver walks the client's Accept clauses by preference (q, then specific before `*`)
 * and, for each, the media types it serves in order (JSON, YAML, protobuf for built-in types),
 * and answers with the first pair whose parameters it honours: `as`/`g`/`v` ask for a
 * conversion (Table, PartialObjectMetadata[List] in meta.k8s.io v1 or v1beta1), and a clause
 * asking for one it cannot do is skipped. The cache produces plain JSON and protobuf (built-in
 * types: src/protobuf/), JSON Tables and PartialObjectMetadata[List] in JSON and protobuf, so it
 * answers when that first choice is one of them, and passes everything else through: YAML, and
 * any request the apiserver would refuse with 406.
 */

/** One clause of an Accept header, as goautoneg parses it. */
export interface AcceptClause {
  readonly type: string;
  readonly subType: string;
  readonly q: number;
  /** The parameters negotiation reads (NEGOTIATED_PARAMS), the last of each name. */
  readonly params: ReadonlyMap<string, string>;
}

/**
 * The parameters acceptMediaTypeOptions acts on (negotiate.go; `export` and `profile` change
 * nothing the cache serves). Any other is only listed as unrecognized there: not kept here, so
 * a clause of many parameters holds a map of at most these.
 */
const NEGOTIATED_PARAMS = new Set(['as', 'g', 'v', 'stream', 'sv', 'pretty']);

/** What the apiserver would serve, as far as the cache cares. */
export type Negotiated =
  /** Plain JSON of the stored objects; `pretty`: indented (media type parameter `pretty=1`). */
  | { readonly kind: 'json'; readonly pretty: boolean }
  /** A Table (meta.k8s.io v1 or v1beta1) in JSON. */
  | { readonly kind: 'table'; readonly version: 'v1' | 'v1beta1'; readonly pretty: boolean }
  /** The stored objects in protobuf (built-in types). */
  | { readonly kind: 'protobuf' }
  /** PartialObjectMetadata (`list`: PartialObjectMetadataList), in JSON or (`protobuf`) in protobuf. */
  | {
      readonly kind: 'metadata';
      readonly version: 'v1' | 'v1beta1';
      readonly list: boolean;
      readonly pretty: boolean;
      readonly protobuf: boolean;
    }
  /** Anything else: the apiserver's to answer, and why. */
  | { readonly kind: 'apiserver'; readonly reason: NegotiatedElsewhere };

/** Why the apiserver writes the answer (codes of cache/pass-reason.ts's catalogue). */
export type NegotiatedElsewhere = 'yaml' | 'protobuf-only' | 'not-acceptable' | 'too-many-accept-clauses' | 'unsupported-conversion';

const elsewhere = {
  yaml: { kind: 'apiserver', reason: 'yaml' },
  'protobuf-only': { kind: 'apiserver', reason: 'protobuf-only' },
  'not-acceptable': { kind: 'apiserver', reason: 'not-acceptable' },
  'too-many-accept-clauses': { kind: 'apiserver', reason: 'too-many-accept-clauses' },
  'unsupported-conversion': { kind: 'apiserver', reason: 'unsupported-conversion' },
} as const satisfies Record<NegotiatedElsewhere, Negotiated>;

/**
 * Text positions of one header: goautoneg's splits (nextSplitElement) and trims
 * (stringTrimSpaceCutset: spaces only, a tab is part of a token) work on ranges [from, to) of the
 * header, each searching its own range only, and a string is made only for what is kept. A
 * search past its range, or a regex such as ` +$` that retries at every space of a long run,
 * would make reading quadratic in the header's size.
 */
function indexIn(s: string, code: number, from: number, to: number): number {
  for (let i = from; i < to; i++) if (s.charCodeAt(i) === code) return i;
  return -1;
}

function trimmed(s: string, from: number, to: number): string {
  while (from < to && s.charCodeAt(from) === SPACE) from++;
  while (to > from && s.charCodeAt(to - 1) === SPACE) to--;
  return s.slice(from, to);
}

/** header[from, to) is `*` between spaces. */
function isStar(s: string, from: number, to: number): boolean {
  while (from < to && s.charCodeAt(from) === SPACE) from++;
  while (to > from && s.charCodeAt(to - 1) === SPACE) to--;
  return to === from + 1 && s.charCodeAt(from) === STAR;
}

const SPACE = 0x20;
const STAR = 0x2a;
const COMMA = 0x2c;
const SEMICOLON = 0x3b;
const SLASH = 0x2f;
const EQUALS = 0x3d;

/** More clauses than this and Go's sort.Sort is no longer an insertion sort: the order is its pdqsort's. */
export const MAX_SORTED_CLAUSES = 12;

/**
 * goautoneg.ParseAccept, step for step: clauses in preference order (higher q, then specific
 * type, then specific subtype). A parameter without a value (`as=`, `q=`) is dropped; `q` is read
 * untrimmed as strconv.ParseFloat(s, 32) reads it (0 when it is not a number).
 *
 * Undefined for a header of more than MAX_SORTED_CLAUSES clauses: the apiserver negotiates
 * those. Reading stops at the clause past the limit, and every step reads each character a
 * bounded number of times: the work is linear in the header's size (at most 1 MiB,
 * MAX_HEADER_BYTES), and the sort never sees more than MAX_SORTED_CLAUSES clauses.
 */
export function parseAccept(header: string): AcceptClause[] | undefined {
  const clauses: AcceptClause[] = [];
  const n = header.length;
  for (let at = 0; at < n;) {
    if (clauses.length > MAX_SORTED_CLAUSES) return undefined;
    // Empty clauses (`,,`, `, ,`) are skipped as goautoneg skips them, a character at a time.
    const c = header.charCodeAt(at);
    if (c === COMMA || c === SPACE) {
      at++;
      continue;
    }
    let end = header.indexOf(',', at);
    if (end < 0) end = n;
    const clause = parseClause(header, at, end);
    if (clause !== undefined) clauses.push(clause);
    at = end + 1;
  }
  if (clauses.length > MAX_SORTED_CLAUSES) return undefined;
  // sort.Sort with goautoneg's Less. That Less is no strict order (a lower q with a specific
  // subtype can sort before a wildcard), so the result depends on the algorithm: Go sorts lists
  // of up to 12 by insertion sort, which this repeats; longer ones negotiate at the apiserver.
  for (let i = 1; i < clauses.length; i++) {
    for (let j = i; j > 0 && less(clauses[j] as AcceptClause, clauses[j - 1] as AcceptClause); j--) {
      const swap = clauses[j] as AcceptClause;
      clauses[j] = clauses[j - 1] as AcceptClause;
      clauses[j - 1] = swap;
    }
  }
  return clauses;
}

/** One clause, header[from, to) (no comma in it), or undefined where goautoneg skips it. */
function parseClause(header: string, from: number, to: number): AcceptClause | undefined {
  // part = trim(part); mediaRange, params = nextSplitElement(part, ";")
  while (from < to && header.charCodeAt(from) === SPACE) from++;
  while (to > from && header.charCodeAt(to - 1) === SPACE) to--;
  if (from === to) return undefined; // no type, and no `*`
  const semicolon = indexIn(header, SEMICOLON, from, to);
  const rangeEnd = semicolon < 0 ? to : semicolon;
  // typeAndSub: the type, then a subtype with no second `/` after it (but an empty remainder).
  const slash = indexIn(header, SLASH, from, rangeEnd);
  let subType: string;
  if (slash < 0 || slash + 1 === rangeEnd) {
    // No subtype: only `*` stands for `*/*` (compared before any string is made for it).
    if (!isStar(header, from, slash < 0 ? rangeEnd : slash)) return undefined;
    subType = '*';
  } else {
    const second = indexIn(header, SLASH, slash + 1, rangeEnd);
    if (second >= 0 && second + 1 < rangeEnd) return undefined;
    subType = trimmed(header, slash + 1, second < 0 ? rangeEnd : second);
  }
  const type = trimmed(header, from, slash < 0 ? rangeEnd : slash);
  let q = 1;
  const params = new Map<string, string>();
  for (let at = semicolon < 0 ? to : semicolon + 1; at < to;) {
    let paramEnd = indexIn(header, SEMICOLON, at, to);
    if (paramEnd < 0) paramEnd = to;
    // key, afterKey = nextSplitElement(param, "="); value, extra = nextSplitElement(afterKey, "=")
    const equals = indexIn(header, EQUALS, at, paramEnd);
    if (equals >= 0 && equals + 1 < paramEnd) {
      const second = indexIn(header, EQUALS, equals + 1, paramEnd);
      if (second < 0 || second + 1 === paramEnd) {
        const valueEnd = second < 0 ? paramEnd : second;
        const token = trimmed(header, at, equals);
        if (token === 'q') q = parseGoFloat32(header.slice(equals + 1, valueEnd));
        else if (NEGOTIATED_PARAMS.has(token)) params.set(token, trimmed(header, equals + 1, valueEnd));
      }
    }
    at = paramEnd + 1;
  }
  return { type, subType, q, params };
}

function less(a: AcceptClause, b: AcceptClause): boolean {
  if (a.q > b.q) return true;
  if (a.type !== '*' && b.type === '*') return true;
  if (a.subType !== '*' && b.subType === '*') return true;
  return false;
}

/**
 * A decimal float as strconv.ParseFloat reads it. Each part can end in one way only (the
 * integer digits before `.`, `e` or the end), so a failing match backtracks once per character:
 * linear, where `\d+\.?\d*` splits a run of digits between its two halves in every way.
 */
const GO_DECIMAL_FLOAT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
/** A hexadecimal float (mantissa digits separated by `_`, a `p` exponent required), linear as GO_DECIMAL_FLOAT. */
const GO_HEX_FLOAT = /^([+-]?)0[xX](_?[0-9a-fA-F](?:_?[0-9a-fA-F])*)?(?:\.([0-9a-fA-F](?:_?[0-9a-fA-F])*)?)?[pP]([+-]?\d+)$/;

/**
 * strconv.ParseFloat(s, 32) as goautoneg uses it (its error ignored): decimal and hexadecimal
 * floats, `inf`/`infinity`/`nan` in any case, digits separated by `_` only after a base prefix;
 * out of float32's range ±Inf; anything else 0. Linear in the length of `s`.
 */
export function parseGoFloat32(s: string): number {
  if (/^[+-]?(inf|infinity)$/i.test(s)) return s.startsWith('-') ? -Infinity : Infinity;
  if (/^nan$/i.test(s)) return Number.NaN;
  if (GO_DECIMAL_FLOAT.test(s)) return Math.fround(Number(s));
  const hex = GO_HEX_FLOAT.exec(s);
  if (hex === null) return 0;
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = hex;
  const fractionDigits = fraction.replaceAll('_', '').length;
  const digits = `${whole}${fraction}`.replaceAll('_', '');
  if (digits === '') return 0;
  let first = 0;
  while (first < digits.length && digits.charCodeAt(first) === 0x30) first++;
  if (first === digits.length) return sign === '-' ? -0 : 0;
  // The first 13 significant digits (52 bits: exact in a double, and more than float32's 24),
  // a sticky bit for any non-zero digit past them, and the rest in the exponent: one rounding,
  // by Math.fround, as Go rounds once; and linear however many digits are sent.
  let mantissa = parseInt(digits.slice(first, first + HEX_KEPT_DIGITS), 16);
  const dropped = Math.max(0, digits.length - first - HEX_KEPT_DIGITS);
  let shift = 4 * dropped - 4 * fractionDigits;
  if (dropped > 0 && /[1-9a-fA-F]/.test(digits.slice(first + HEX_KEPT_DIGITS))) {
    mantissa = mantissa * 2 + 1;
    shift -= 1;
  }
  const value = Math.fround(mantissa * 2 ** (Number(exponent) + shift));
  return sign === '-' ? -value : value;
}

/** Significant hexadecimal digits of a float read exactly (13 x 4 = 52 bits, within a double's 53). */
const HEX_KEPT_DIGITS = 13;

interface MediaType {
  readonly type: string;
  readonly subType: string;
}

const JSON_TYPE: MediaType = { type: 'application', subType: 'json' };
const YAML_TYPE: MediaType = { type: 'application', subType: 'yaml' };
const PROTOBUF_TYPE: MediaType = { type: 'application', subType: 'vnd.kubernetes.protobuf' };

/** The apiserver's serializers in its order (a custom resource's protobuf only for a conversion: see accepts). */
const SERVED_TYPES: readonly MediaType[] = [JSON_TYPE, YAML_TYPE, PROTOBUF_TYPE];

/** The pairing the apiserver would make: which served type, with which conversion, for which clause. */
interface Choice {
  readonly served: MediaType;
  readonly convert: string | undefined;
  readonly pretty: boolean;
  readonly index: number;
}

/**
 * acceptMediaTypeOptions for a resource endpoint: the clause's conversion (`as`, `g`, `v`) must
 * be one the endpoint can do for this media type; `stream` must be `watch` (JSON, protobuf);
 * `sv` is left to the apiserver.
 */
function accepts(
  clause: AcceptClause,
  served: MediaType,
  protobufObjects: boolean,
): { convert: string | undefined; pretty: boolean } | undefined {
  const p = clause.params;
  const as = p.get('as');
  const g = p.get('g');
  const v = p.get('v');
  const stream = p.get('stream');
  if (stream !== undefined && stream !== '' && (stream !== 'watch' || served === YAML_TYPE)) return undefined;
  // RequestScope.AllowsServerVersion: the meta group's version.
  const sv = p.get('sv');
  if (sv !== undefined && sv !== '' && sv !== 'v1') return undefined;
  const pretty = p.get('pretty') === '1';
  if (as === undefined && g === undefined && v === undefined) {
    // A custom resource's StandardSerializers have no protobuf; its conversions do.
    if (served === PROTOBUF_TYPE && !protobufObjects) return undefined;
    return { convert: undefined, pretty };
  }
  if (g !== 'meta.k8s.io' || (v !== 'v1' && v !== 'v1beta1')) return undefined;
  if (as === 'Table') return served === PROTOBUF_TYPE ? undefined : { convert: `Table/${v}`, pretty };
  if (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList') return { convert: `${as}/${v}`, pretty };
  return undefined;
}

function choose(
  clauses: readonly AcceptClause[],
  served: readonly MediaType[],
  from: number,
  protobufObjects: boolean,
): Choice | undefined {
  for (let i = from; i < clauses.length; i++) {
    const clause = clauses[i];
    if (clause === undefined) continue;
    for (const s of served) {
      const matches =
        (clause.type === s.type && (clause.subType === s.subType || clause.subType === '*')) ||
        (clause.type === '*' && clause.subType === '*');
      if (!matches) continue;
      const options = accepts(clause, s, protobufObjects);
      if (options !== undefined) return { served: s, ...options, index: i };
    }
  }
  return undefined;
}

/**
 * What to answer a read of a resource with. `protobuf`: the type is served in protobuf
 * (built-in types; not custom resources).
 */
export function negotiateRead(accept: string | undefined, protobuf: boolean): Negotiated {
  // An empty Accept gets the first serializer: JSON.
  if (accept === undefined || accept === '') return { kind: 'json', pretty: false };
  const clauses = parseAccept(accept);
  if (clauses === undefined) return elsewhere['too-many-accept-clauses'];
  const first = choose(clauses, SERVED_TYPES, 0, protobuf);
  if (first === undefined) {
    // Nothing acceptable (the apiserver's 406); for a type without protobuf, say so when protobuf is what was asked for.
    return !protobuf && choose(clauses, SERVED_TYPES, 0, true) !== undefined ? elsewhere['protobuf-only'] : elsewhere['not-acceptable'];
  }
  if (first.served === JSON_TYPE && (first.convert === 'Table/v1' || first.convert === 'Table/v1beta1')) {
    return { kind: 'table', version: first.convert === 'Table/v1' ? 'v1' : 'v1beta1', pretty: first.pretty };
  }
  if (first.served === YAML_TYPE) return elsewhere.yaml;
  if (first.served !== JSON_TYPE && first.served !== PROTOBUF_TYPE) return elsewhere['unsupported-conversion'];
  const inProtobuf = first.served === PROTOBUF_TYPE;
  if (first.convert === undefined) return inProtobuf ? { kind: 'protobuf' } : { kind: 'json', pretty: first.pretty };
  const [as = '', version = ''] = first.convert.split('/');
  if ((as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList') && (version === 'v1' || version === 'v1beta1')) {
    // Protobuf is never indented (the pretty parameter is JSON's).
    return {
      kind: 'metadata',
      version,
      list: as === 'PartialObjectMetadataList',
      pretty: !inProtobuf && first.pretty,
      protobuf: inProtobuf,
    };
  }
  return elsewhere['unsupported-conversion'];
}

/**
 * isPrettyPrint (negotiate.go): `?pretty=` parsed as Go's strconv.ParseBool decides when given a
 * value; otherwise curl, Wget and browsers (by User-Agent prefix) get indented JSON.
 */
export function prettyByRequest(query: URLSearchParams, userAgent: string | undefined): boolean {
  const value = query.get('pretty');
  if (value !== null && value !== '') return PARSE_BOOL_TRUE.has(value);
  const ua = userAgent ?? '';
  return ua.startsWith('curl') || ua.startsWith('Wget') || ua.startsWith('Mozilla/5.0');
}

/** strconv.ParseBool's true spellings (the false ones and any error are false). */
const PARSE_BOOL_TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);

/**
 * The Accept header as Go's Header.Get reads it: the first field of that name only. Node joins
 * repeated Accept fields with ", ", which would read as more clauses.
 */
export function firstAccept(rawHeaders: readonly string[]): string | undefined {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] ?? '';
    if (name.length === 6 && name.toLowerCase() === 'accept') return rawHeaders[i + 1];
  }
  return undefined;
}
