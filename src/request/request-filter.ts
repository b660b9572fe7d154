/**
 * kubectl proxy's request filter (staging/src/k8s.io/kubectl/pkg/proxy/proxy_server.go,
 * `FilterServer`): a request reaches the apiserver only when its path and Host are accepted and
 * neither its path nor its method is rejected. The Host check is what protects a loopback proxy
 * holding cluster credentials against DNS rebinding: a page on evil.example whose name now
 * resolves to 127.0.0.1 still sends `Host: evil.example`.
 *
 * The path is checked both as written and as Go's path cleaning reads it (`//api/...`,
 * `/a/../b`, `/./`): a request passes only when both forms are accepted and neither is
 * rejected, so a reject pattern such as `^/api/.*\/pods/.*\/exec` cannot be side-stepped by
 * spelling the path oddly. Unlike kubectl proxy (whose http.ServeMux answers an unclean path with
 * a 301 to the clean one), the request then goes to the apiserver as written: the apiserver
 * answers such paths itself (404, or 400 for a name of `.` or `..`), and the proxy must answer
 * as it does.
 */
import { posix } from 'node:path';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { forbidden } from '../kube/status.ts';

/** DefaultHostAcceptRE (proxy_server.go). */
export const DEFAULT_ACCEPT_HOSTS = '^localhost$,^127\\.0\\.0\\.1$,^\\[::1\\]$';
/** DefaultPathAcceptRE (proxy_server.go). */
export const DEFAULT_ACCEPT_PATHS = '^.*';
/** DefaultPathRejectRE (proxy_server.go). */
export const DEFAULT_REJECT_PATHS = '^/api/.*/pods/.*/exec,^/api/.*/pods/.*/attach';
/** DefaultMethodRejectRE (proxy_server.go): matches no method. */
export const DEFAULT_REJECT_METHODS = '^$';

export interface RequestFilterOptions {
  /** Hosts are required to match one of these (the Host header without its port). */
  readonly acceptHosts: readonly RegExp[];
  /** Only paths that match one of these are accepted. */
  readonly acceptPaths: readonly RegExp[];
  /** Paths that match one of these are rejected, even if accepted above. */
  readonly rejectPaths: readonly RegExp[];
  /** Methods that match one of these are rejected. */
  readonly rejectMethods: readonly RegExp[];
}

/** Thrown by makeRegexpArray for a pattern JavaScript cannot compile. */
export class RegexpSyntaxError extends Error {
  readonly pattern: string;

  constructor(pattern: string, cause: unknown) {
    super(`invalid regular expression ${JSON.stringify(pattern)}: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'RegexpSyntaxError';
    this.pattern = pattern;
  }
}

/**
 * MakeRegexpArray (proxy_server.go): splits a comma-separated list of regexps; "" is the empty
 * list (which matches nothing). Go's RE2 syntax is mostly JavaScript's; a leading flag group
 * `(?i)`, `(?s)`, `(?m)` (or a combination) becomes the JavaScript flag.
 */
export function makeRegexpArray(str: string): RegExp[] {
  if (str === '') return [];
  return str.split(',').map(compileGoRegexp);
}

function compileGoRegexp(pattern: string): RegExp {
  const flagGroup = /^\(\?([ism]+)\)/.exec(pattern);
  const source = flagGroup === null ? pattern : pattern.slice(flagGroup[0].length);
  const flags = flagGroup?.[1] === undefined ? '' : [...new Set(flagGroup[1])].join('');
  try {
    const compiled = new RegExp(source, flags);
    const linear = flags.includes('m') ? undefined : linearAnchoredGlob(source);
    return linear === undefined ? compiled : new RegExp(linear, flags);
  } catch (error) {
    throw new RegexpSyntaxError(pattern, error);
  }
}

/** A regex metacharacter: outside these (and `\` escapes of non-alphanumerics), a pattern character is a literal. */
const REGEXP_META = new Set(['^', '$', '.', '|', '?', '*', '+', '(', ')', '[', ']', '{', '}']);

/**
 * Go's RE2 matches in time linear in the path; JavaScript's engine backtracks, and kubectl's
 * default reject patterns (`^/api/.*\/pods/.*\/exec`) cost it the product of the path's length
 * and its number of `/pods/`: seconds for a 64 KiB path. A pattern anchored at `^` made of
 * literals and `.*` only is rewritten: each `.*` followed by a literal L takes, at once, the run
 * of characters before L's first occurrence (`(?=((?:(?!L).)*))\1`) and never backtracks into
 * it, so the match is linear. For RegExp.test the answer is the same: when the pattern matches
 * with L somewhere, it matches with L at its first occurrence after that point (the `.*` before
 * it spans less of the same line, the `.*` after it more, and L itself holds no line break); the
 * last literal of a pattern ending in `$` keeps a plain `.*`. Any other pattern (an operator's
 * own, with alternatives, classes, repeats or multi-line `^`) runs as written. Returns the
 * rewritten source, or undefined for a pattern of another shape.
 */
function linearAnchoredGlob(source: string): string | undefined {
  if (!source.startsWith('^')) return undefined;
  const pieces: { readonly literal: string | undefined }[] = [];
  let literal = '';
  let end = '';
  for (let i = 1; i < source.length;) {
    const c = source[i] ?? '';
    if (c === '.' && source[i + 1] === '*') {
      if (literal !== '') pieces.push({ literal });
      if (pieces.at(-1)?.literal !== undefined || pieces.length === 0) pieces.push({ literal: undefined });
      literal = '';
      i += 2;
    } else if (c === '\\') {
      const next = source[i + 1];
      if (next === undefined || /[0-9A-Za-z]/.test(next)) return undefined;
      literal += c + next;
      i += 2;
    } else if (c === '$' && i === source.length - 1) {
      end = '$';
      i++;
    } else if (REGEXP_META.has(c)) {
      return undefined;
    } else {
      literal += c;
      i++;
    }
  }
  if (literal !== '') pieces.push({ literal });
  if (!pieces.some((p) => p.literal === undefined)) return undefined; // no `.*`: linear as written
  let out = '^';
  let groups = 0;
  pieces.forEach((piece, i) => {
    if (piece.literal !== undefined) out += piece.literal;
    else {
      // The last literal of a pattern ending in `$` must end the path, not be the first one seen.
      const next = pieces[i + 1]?.literal;
      // A final `.*` not held to the end matches the empty run as well: RegExp.test needs none of
      // it (`^.*`, every path, answers at once instead of scanning the whole path).
      if (next === undefined) out += end === '$' ? '.*' : '';
      else if (i + 2 === pieces.length && end === '$') out += '.*';
      // Taken whole (a lookahead is atomic, the backreference consumes what it saw): no
      // backtracking point per character, where a failing match would give each one back in turn.
      else out += `(?=((?:(?!${next}).)*))\\${String(++groups)}`;
    }
  });
  return out + end;
}

/** The filter with kubectl proxy's defaults (NewProxyOptions in kubectl's cmd/proxy/proxy.go). */
export function defaultRequestFilterOptions(): RequestFilterOptions {
  return {
    acceptHosts: makeRegexpArray(DEFAULT_ACCEPT_HOSTS),
    acceptPaths: makeRegexpArray(DEFAULT_ACCEPT_PATHS),
    rejectPaths: makeRegexpArray(DEFAULT_REJECT_PATHS),
    rejectMethods: makeRegexpArray(DEFAULT_REJECT_METHODS),
  };
}

/** matchesRegexp (proxy_server.go): Go's MatchString finds a match anywhere, as RegExp.test does. */
function matchesRegexp(str: string, regexps: readonly RegExp[]): boolean {
  return regexps.some((re) => {
    // A caller's /g or /y regexp keeps lastIndex between calls: test from the start every time.
    re.lastIndex = 0;
    return re.test(str);
  });
}

/** FilterServer.accept (proxy_server.go), same order: reject paths, reject methods, then accept. */
export function accept(options: RequestFilterOptions, method: string, path: string, host: string): boolean {
  if (matchesRegexp(path, options.rejectPaths)) return false;
  if (matchesRegexp(method, options.rejectMethods)) return false;
  return matchesRegexp(path, options.acceptPaths) && matchesRegexp(host, options.acceptHosts);
}

/**
 * extractHost (proxy_server.go): the host of a Host header value like "localhost:8080", by Go's
 * net.SplitHostPort; a value it cannot split (no port, say) is used whole. So `[::1]` stays
 * `[::1]` (and matches the default `^\[::1\]$`), while `[::1]:8001` becomes `::1`, which the
 * defaults do not accept: kubectl proxy's behaviour, kept.
 */
export function extractHost(header: string): string {
  return splitHostPort(header) ?? header;
}

/** net.SplitHostPort's host, or undefined where Go returns an error. */
function splitHostPort(hostport: string): string | undefined {
  const i = hostport.lastIndexOf(':');
  if (i < 0) return undefined; // missing port
  let host: string;
  let j = 0;
  let k = 0;
  if (hostport.startsWith('[')) {
    const end = hostport.indexOf(']');
    if (end < 0) return undefined; // missing ']'
    if (end + 1 !== i) return undefined; // missing port, or too many colons
    host = hostport.slice(1, end);
    j = 1;
    k = end + 1;
  } else {
    host = hostport.slice(0, i);
    if (host.includes(':')) return undefined; // too many colons
  }
  if (hostport.indexOf('[', j) >= 0) return undefined; // unexpected '['
  if (hostport.indexOf(']', k) >= 0) return undefined; // unexpected ']'
  return host;
}

/**
 * cleanPath (Go's net/http/server.go, used by ServeMux): "/" for "", a leading slash added,
 * `.`/`..`/`//` resolved by path.Clean, a trailing slash kept.
 */
export function cleanPath(p: string): string {
  if (p === '') return '/';
  // Already clean (rooted, no empty, `.` or `..` segment): as it is, without a copy of a path that
  // may be as long as the header section.
  if (p.startsWith('/') && !p.includes('//') && !p.includes('/.')) return p;
  // posix.normalize is path.Clean that keeps a trailing slash, as cleanPath puts it back.
  return posix.normalize(p.startsWith('/') ? p : `/${p}`);
}

/**
 * The path as Go's url.URL.Path has it: percent-escapes decoded (to UTF-8, invalid bytes as
 * U+FFFD); undefined for a malformed escape, which Go's server answers with 400.
 */
export function unescapePath(raw: string): string | undefined {
  if (!raw.includes('%')) return raw;
  if (/%(?![0-9A-Fa-f]{2})/.test(raw)) return undefined;
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === '%') {
      bytes.push(Number.parseInt(raw.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(raw[i] ?? '', 'latin1'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

interface Target {
  readonly path: string | undefined;
  readonly rawQuery: string | undefined;
  readonly host: string;
}

/**
 * Path, query and host as Go's server reads them: from the request line, and for an
 * absolute-form target (`GET http://h/p`) the host is the URL's, else the Host header's.
 */
function target(url: string, header: string): Target {
  if (!url.startsWith('/')) {
    try {
      const parsed = new URL(url);
      return { path: unescapePath(parsed.pathname), rawQuery: parsed.search.slice(1) || undefined, host: parsed.host || header };
    } catch {
      return { path: undefined, rawQuery: undefined, host: header };
    }
  }
  const q = url.indexOf('?');
  return {
    path: unescapePath(q < 0 ? url : url.slice(0, q)),
    rawQuery: q < 0 ? undefined : url.slice(q + 1),
    host: header,
  };
}

/** A response the filter sends in place of the apiserver's. */
export interface FilterAnswer {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  /** undefined: no body at all (not even an empty text/plain one). */
  readonly body: string | undefined;
}

/**
 * What the filter does with a request: `accept` lets it go to the apiserver; every other kind
 * carries the answer to send instead. `accept` and `reject` carry what kubectl proxy logs.
 */
export type FilterDecision =
  | { readonly kind: 'accept'; readonly method: string; readonly path: string; readonly host: string }
  | { readonly kind: 'cross-origin'; readonly origin: string; readonly answer: FilterAnswer }
  | { readonly kind: 'reject'; readonly method: string; readonly path: string; readonly host: string; readonly answer: FilterAnswer }
  | { readonly kind: 'bad-request'; readonly answer: FilterAnswer };

/** http.Error (Go's net/http/server.go): text/plain, nosniff, the text and a newline. */
function httpError(code: number, text: string): FilterAnswer {
  return {
    statusCode: code,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' },
    body: `${text}\n`,
  };
}

/**
 * A browser names the page that sent a request in its Origin header (every cross-site request,
 * and every WebSocket upgrade): the request is the page's, not the user's, and the proxy acts
 * with the cluster credentials it holds. kubectl proxy checks only the Host header, so a page open
 * on the laptop can read the cluster through it (its fetch or WebSocket to 127.0.0.1:8001 carries
 * an accepted Host). An Origin is accepted only when its host is one --accept-hosts accepts;
 * `null` (sandboxed or file pages) never is. Clients that are not browsers (kubectl, curl,
 * client libraries) send no Origin and are not concerned.
 */
function acceptedOrigin(options: RequestFilterOptions, origin: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  return matchesRegexp(extractHost(url.host), options.acceptHosts);
}

/**
 * The filter's decision for a request line and Host header (FilterServer.ServeHTTP behind
 * ServeMux's path cleaning). Shared by the Fastify hook and the 'upgrade' path (upgrade.ts), so
 * that an exec reached by `Upgrade: SPDY/3.1` is filtered exactly as a plain POST to it.
 */
export function filterRequest(
  options: RequestFilterOptions,
  method: string,
  url: string,
  hostHeader: string,
  origin?: string,
): FilterDecision {
  const { path, host: hostFromTarget } = target(url, hostHeader);
  if (path === undefined) return { kind: 'bad-request', answer: httpError(400, 'Bad Request') };
  if (origin !== undefined && !acceptedOrigin(options, origin)) {
    const status = forbidden(
      `cross-origin request refused: Origin ${JSON.stringify(origin)} is not an accepted host (--accept-hosts); a page in a browser may not use this proxy's credentials`,
    );
    return {
      kind: 'cross-origin',
      origin,
      answer: { statusCode: 403, headers: { 'content-type': 'application/json' }, body: status.body().toString() },
    };
  }
  const host = extractHost(hostFromTarget);
  const clean = cleanPath(path);
  if (accept(options, method, path, host) && (clean === path || accept(options, method, clean, host))) {
    return { kind: 'accept', method, path, host };
  }
  // FilterServer.ServeHTTP: `http.Error(rw, http.StatusText(http.StatusForbidden), http.StatusForbidden)`.
  return { kind: 'reject', method, path, host, answer: httpError(403, 'Forbidden') };
}

/** kubectl proxy's log lines for a decision ("Filter accepting" / "Filter rejecting"). */
export function logFilterDecision(log: FastifyBaseLogger, decision: FilterDecision): void {
  const { kind } = decision;
  if (kind === 'accept') log.debug({ method: decision.method, path: decision.path, host: decision.host }, 'Filter accepting');
  else if (kind === 'reject') log.info({ method: decision.method, path: decision.path, host: decision.host }, 'Filter rejecting');
  else if (kind === 'cross-origin') log.info({ origin: decision.origin }, 'Filter rejecting a cross-origin request');
}

/**
 * Installs the filter as an `onRequest` hook: a rejected request gets what kubectl proxy answers,
 * `403` with the plain-text body `Forbidden\n`, and never reaches a route.
 */
export function installRequestFilter(app: FastifyInstance, options: RequestFilterOptions): void {
  app.addHook('onRequest', async (request, reply) => {
    const decision = filterRequest(
      options,
      request.raw.method ?? '',
      request.raw.url ?? '/',
      request.headers.host ?? '',
      request.headers.origin,
    );
    logFilterDecision(request.log, decision);
    if (decision.kind === 'accept') return undefined;
    const { statusCode, headers, body } = decision.answer;
    // Bytes, not a string: Fastify would add a charset to a JSON Status's content type.
    return reply
      .code(statusCode)
      .headers(headers)
      .send(body === undefined ? undefined : Buffer.from(body));
  });
}
