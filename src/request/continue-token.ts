/**
 * The apiserver's continue token (apiserver/pkg/storage/continue.go): base64url without padding
 * of {"v":"meta.k8s.io/v1","rv":<list RV>,"start":"<next key, relative to the key prefix>"}.
 * Decoding keeps Go's exact error texts, which clients see in the 400 (`invalid continue token:
 * continue key is not valid: ...`).
 */
import { goMarshal } from '../kube/go-json.ts';
import { goJsonSyntaxError } from '../kube/go-json-syntax.ts';
import type { StatusError } from '../kube/status.ts';
import { badRequest } from '../kube/status.ts';

export const CONTINUE_TOKEN_VERSION = 'meta.k8s.io/v1';

/** continue.go's errors. */
export const ERR_INVALID_START_RV = 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)';
export const ERR_EMPTY_START_KEY = 'continue key is not valid: encoded start key empty (version meta.k8s.io/v1)';
export const ERR_GENERIC_INVALID_KEY = 'continue key is not valid';
export const ERR_UNRECOGNIZED_ENCODED_VERSION = 'continue key is not valid: server does not recognize this encoded version';

export class ContinueTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ContinueTokenError';
  }
}

export interface DecodedContinue {
  /** keyPrefix + the token's start key, cleaned. */
  readonly fromKey: string;
  /** The list's resourceVersion; -1 asks to continue at the latest (an expired token's replacement). */
  readonly resourceVersion: number;
}

const URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const DECODE_MAP = new Map<number, number>(Array.from({ length: URL_ALPHABET.length }, (_, i) => [URL_ALPHABET.charCodeAt(i), i]));

/** Characters of base64url without padding. */
const URL_BASE64 = /^[A-Za-z0-9_-]*$/;
/** The first character that is neither base64url nor CR or LF (which Go skips). */
const NOT_URL_BASE64 = /[^A-Za-z0-9_\-\r\n]/;

/**
 * base64.RawURLEncoding.DecodeString, error positions included (encoding/base64 decodeQuantum:
 * CR and LF are skipped; a lone final character, padding or any other byte is
 * `illegal base64 data at input byte N`). A token of base64url characters only (every token the
 * apiserver or the proxy writes) is decoded at once; so is a token whose first other character
 * comes before any CR or LF: Go reports that character's position, all before it being read.
 */
export function goRawUrlBase64Decode(s: string): Buffer | ContinueTokenError {
  if (URL_BASE64.test(s)) {
    if (s.length % 4 === 1) return new ContinueTokenError(`illegal base64 data at input byte ${String(s.length - 1)}`);
    return Buffer.from(s, 'base64url');
  }
  const bad = NOT_URL_BASE64.exec(s);
  const firstBreak = s.search(/[\r\n]/);
  // The characters before it are ASCII: its index is its byte offset.
  if (bad !== null && (firstBreak < 0 || bad.index < firstBreak))
    return new ContinueTokenError(`illegal base64 data at input byte ${String(bad.index)}`);
  return decodeQuantums(s);
}

/** The general case (CR or LF in the token), quantum by quantum as decodeQuantum reads it. */
function decodeQuantums(s: string): Buffer | ContinueTokenError {
  const src = Buffer.from(s, 'utf8');
  const out: number[] = [];
  let si = 0;
  for (;;) {
    const quantum: number[] = [];
    let j = 0;
    while (j < 4) {
      if (si === src.length) {
        if (j === 1) return new ContinueTokenError(`illegal base64 data at input byte ${String(si - j)}`);
        break;
      }
      const ch = src[si] ?? 0;
      si++;
      const v = DECODE_MAP.get(ch);
      if (v !== undefined) {
        quantum.push(v);
        j++;
        continue;
      }
      if (ch === 0x0a || ch === 0x0d) continue;
      return new ContinueTokenError(`illegal base64 data at input byte ${String(si - 1)}`);
    }
    if (quantum.length === 0) return Buffer.from(out);
    const [a = 0, b = 0, c = 0, d = 0] = quantum;
    const val = (a << 18) | (b << 12) | (c << 6) | d;
    const bytes = [(val >> 16) & 0xff, (val >> 8) & 0xff, val & 0xff].slice(0, quantum.length - 1);
    out.push(...bytes);
    if (quantum.length < 4) return Buffer.from(out);
  }
}

/**
 * Go's path.Clean (continue.go guards the start key with it): `.` and empty segments dropped,
 * `..` removing the segment before it (never above the root of a rooted path), no trailing
 * slash, `.` for nothing. Segment by segment: linear in the path's length.
 */
export function goPathClean(path: string): string {
  if (path === '') return '.';
  const rooted = path.startsWith('/');
  const kept: string[] = [];
  /** How many of the first kept segments are `..` a relative path cannot take back. */
  let fixed = 0;
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment !== '..') kept.push(segment);
    else if (kept.length > fixed) kept.pop();
    else if (!rooted) {
      kept.push('..');
      fixed++;
    }
  }
  const cleaned = kept.join('/');
  if (rooted) return `/${cleaned}`;
  return cleaned === '' ? '.' : cleaned;
}

type JsonKind = 'string' | 'number' | 'bool' | 'array' | 'object' | 'null';

/** A JSON value's kind, from its first character (the text is valid JSON). */
function kindAt(text: string, at: number): JsonKind {
  const c = text[at];
  if (c === '"') return 'string';
  if (c === '{') return 'object';
  if (c === '[') return 'array';
  if (c === 't' || c === 'f') return 'bool';
  if (c === 'n') return 'null';
  return 'number';
}

interface ParsedToken {
  v: string;
  rv: bigint;
  start: string;
}

/** One member of the top-level object: its key (decoded), its value's kind and its text. */
interface Member {
  readonly key: string;
  readonly kind: JsonKind;
  readonly text: string;
}

const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';

/** The end of the string literal starting at `at` (its opening quote), just past its closing quote. */
function stringEnd(text: string, at: number): number {
  let i = at + 1;
  while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

/**
 * The end of the value starting at `at` in valid JSON, skipped without recursion (a value may
 * be nested up to Go's 10,000 levels): brackets counted, strings skipped whole.
 */
function valueEnd(text: string, at: number): number {
  let depth = 0;
  let i = at;
  do {
    const c = text[i];
    if (c === '"') i = stringEnd(text, i);
    else {
      if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') depth--;
      i++;
      if (depth === 0) while (i < text.length && !isSpace(text[i]) && !',}]'.includes(text[i] ?? ',')) i++;
    }
  } while (depth > 0);
  return i;
}

/** The members of a valid JSON object starting at `at`, in document order, duplicates kept (Go decodes each in turn). */
function objectMembers(text: string, at: number): Member[] {
  const members: Member[] = [];
  let i = at + 1;
  const skip = (): void => {
    while (isSpace(text[i])) i++;
  };
  skip();
  while (text[i] !== '}') {
    if (text[i] === ',') {
      i++;
      skip();
    }
    const keyEnd = stringEnd(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = keyEnd;
    skip();
    i++; // ':'
    skip();
    const end = valueEnd(text, i);
    members.push({ key, kind: kindAt(text, i), text: text.slice(i, end) });
    i = end;
    skip();
  }
  return members;
}

const INT64_MIN = -(1n << 63n);
const INT64_LIMIT = 1n << 63n;

/**
 * json.Unmarshal into continueToken: case-insensitive field match, members in document order
 * (the last of a duplicate wins), first type error reported. Nothing is parsed but the members'
 * own scalars: a deep value elsewhere in the token costs a scan, never a recursion.
 */
function unmarshalToken(data: Buffer): ParsedToken | ContinueTokenError {
  const syntax = goJsonSyntaxError(data);
  if (syntax !== undefined) return new ContinueTokenError(`${ERR_GENERIC_INVALID_KEY}: ${syntax}`);
  const text = data.toString('utf8');
  let at = 0;
  while (isSpace(text[at])) at++;
  const token: ParsedToken = { v: '', rv: 0n, start: '' };
  const kind = kindAt(text, at);
  if (kind === 'null') return token;
  if (kind !== 'object') {
    return new ContinueTokenError(`${ERR_GENERIC_INVALID_KEY}: json: cannot unmarshal ${kind} into Go value of type storage.continueToken`);
  }
  let firstError: string | undefined;
  const typeError = (kindText: string, field: string, goType: string): void => {
    firstError ??= `json: cannot unmarshal ${kindText} into Go struct field continueToken.${field} of type ${goType}`;
  };
  for (const member of objectMembers(text, at)) {
    const field = member.key.toLowerCase();
    if (member.kind === 'null') continue;
    if (field === 'v' || field === 'start') {
      if (member.kind !== 'string') typeError(member.kind, field, 'string');
      else if (field === 'v') token.v = JSON.parse(member.text) as string;
      else token.start = JSON.parse(member.text) as string;
    } else if (field === 'rv') {
      if (member.kind !== 'number') {
        typeError(member.kind, 'rv', 'int64');
        continue;
      }
      const literal = member.text;
      const parsed = /^-?(0|[1-9][0-9]*)$/.test(literal) ? BigInt(literal) : undefined;
      if (parsed === undefined || parsed < INT64_MIN || parsed >= INT64_LIMIT) typeError(`number ${literal}`, 'rv', 'int64');
      else token.rv = parsed;
    }
  }
  return firstError === undefined ? token : new ContinueTokenError(`${ERR_GENERIC_INVALID_KEY}: ${firstError}`);
}

/**
 * DecodeContinue: the key to list from (keyPrefix + the token's start key) and the token's
 * resourceVersion. Throws ContinueTokenError with Go's message.
 */
export function decodeContinue(token: string, keyPrefix: string): DecodedContinue {
  const data = goRawUrlBase64Decode(token);
  if (data instanceof ContinueTokenError) throw new ContinueTokenError(`${ERR_GENERIC_INVALID_KEY}: ${data.message}`);
  const c = unmarshalToken(data);
  if (c instanceof ContinueTokenError) throw c;
  if (c.v !== CONTINUE_TOKEN_VERSION) throw new ContinueTokenError(`${ERR_UNRECOGNIZED_ENCODED_VERSION} ${c.v}`);
  if (c.rv === 0n) throw new ContinueTokenError(ERR_INVALID_START_RV);
  if (c.start === '') throw new ContinueTokenError(ERR_EMPTY_START_KEY);
  // Guards against path traversal: the start key may not climb above keyPrefix.
  const key = c.start.startsWith('/') ? c.start : `/${c.start}`;
  const cleaned = goPathClean(key);
  if (cleaned !== key) throw new ContinueTokenError(`${ERR_GENERIC_INVALID_KEY}: ${c.start}`);
  return { fromKey: keyPrefix + cleaned.slice(1), resourceVersion: Number(c.rv) };
}

/** EncodeContinue: the token that resumes a list at `key` (which must start with keyPrefix). */
export function encodeContinue(key: string, keyPrefix: string, resourceVersion: number | bigint): string {
  if (!key.startsWith(keyPrefix) || keyPrefix === '') {
    // strings.TrimPrefix left the key unchanged.
    throw new Error(`unable to encode next field: the key and key prefix do not match ${keyPrefix} ${key}`);
  }
  const json = goMarshal({ v: CONTINUE_TOKEN_VERSION, rv: Number(resourceVersion), start: key.slice(keyPrefix.length) });
  return Buffer.from(json, 'utf8').toString('base64url');
}

/** The storage layer's 400 for a token DecodeContinue rejects (etcd3/store.go, cacher). */
export function invalidContinueToken(err: ContinueTokenError): StatusError {
  return badRequest(`invalid continue token: ${err.message}`);
}
