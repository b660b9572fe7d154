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
  readonly params: ReadonlyMap<string, string>;
}

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

/** goautoneg's stringTrimSpaceCutset: spaces only (a tab is part of a token). */
function trim(s: string): string {
  return s.replace(/^ +| +$/g, '');
}

/** goautoneg's nextSplitElement: the text before the first `sep`, and the rest after it ('' when none). */
function nextSplit(s: string, sep: string): [item: string, remaining: string] {
  const at = s.indexOf(sep);
  return at < 0 ? [s, ''] : [s.slice(0, at), s.slice(at + 1)];
}

/** More clauses than this and Go's sort.Sort is no longer an insertion sort: the order is its pdqsort's. */
export const MAX_SORTED_CLAUSES = 12;

/**
 * goautoneg.ParseAccept, step for step: clauses in preference order (higher q, then specific
 * type, then specific subtype). A parameter without a value (`as=`, `q=`) is dropped; `q` is read
 * untrimmed as strconv.ParseFloat(s, 32) reads it (0 when it is not a number).
 */
export function parseAccept(header: string): AcceptClause[] {
  const clauses: AcceptClause[] = [];
  let remaining = header;
  while (remaining.length > 0) {
    let part: string;
    [part, remaining] = nextSplit(remaining, ',');
    part = trim(part);
    const [range, params0] = nextSplit(part, ';');
    let paramPart = params0;
    const [typeText, typeRest] = nextSplit(range, '/');
    const type = trim(typeText);
    let subType: string;
    if (typeRest.length === 0) {
      if (type !== '*') continue;
      subType = '*';
    } else {
      const [subText, extra] = nextSplit(typeRest, '/');
      if (extra.length > 0) continue;
      subType = trim(subText);
    }
    let q = 1;
    const params = new Map<string, string>();
    while (paramPart.length > 0) {
      let param: string;
      [param, paramPart] = nextSplit(paramPart, ';');
      const [key, afterKey] = nextSplit(param, '=');
      if (afterKey.length === 0) continue;
      const [value, extra] = nextSplit(afterKey, '=');
      if (extra.length !== 0) continue;
      const token = trim(key);
      if (token === 'q') q = parseGoFloat32(value);
      else params.set(token, trim(value));
    }
    clauses.push({ type, subType, q, params });
  }
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

function less(a: AcceptClause, b: AcceptClause): boolean {
  if (a.q > b.q) return true;
  if (a.type !== '*' && b.type === '*') return true;
  if (a.subType !== '*' && b.subType === '*') return true;
  return false;
}

/**
 * strconv.ParseFloat(s, 32) as goautoneg uses it (its error ignored): decimal and hexadecimal
 * floats, `inf`/`infinity`/`nan` in any case, digits separated by `_` only after a base prefix;
 * out of float32's range ±Inf; anything else 0.
 */
export function parseGoFloat32(s: string): number {
  if (/^[+-]?(inf|infinity)$/i.test(s)) return s.startsWith('-') ? -Infinity : Infinity;
  if (/^nan$/i.test(s)) return Number.NaN;
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return Math.fround(Number(s));
  const hex = /^([+-]?)0[xX](_?[0-9a-fA-F](?:_?[0-9a-fA-F])*)?(?:\.([0-9a-fA-F](?:_?[0-9a-fA-F])*)?)?[pP]([+-]?\d+)$/.exec(s);
  if (hex === null) return 0;
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = hex;
  const digits = `${whole}${fraction}`.replaceAll('_', '');
  if (digits === '') return 0;
  const mantissa = parseInt(digits, 16) / 16 ** fraction.replaceAll('_', '').length;
  const value = Math.fround(mantissa * 2 ** Number(exponent));
  return sign === '-' ? -value : value;
}

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
  if (clauses.length > MAX_SORTED_CLAUSES) return elsewhere['too-many-accept-clauses'];
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
