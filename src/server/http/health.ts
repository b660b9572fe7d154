/**
 * The proxy's own /livez, /readyz and /healthz, answered as the apiserver answers its own
 * (k8s.io/apiserver pkg/server/healthz/healthz.go, handleRootHealth and adaptCheckToHandler):
 * - `GET /readyz`: 200 `ok` when every check passes; with `?verbose`, a `[+]<check> ok` line per
 *   check, then `readyz check passed`;
 * - a failing check: 500 with every line, failures as `[-]<check> failed: reason withheld` (the
 *   endpoint is public), then `readyz check failed` (verbose whatever was asked);
 * - `?exclude=<check>` (repeatable) skips a check (`[+]<check> excluded: ok`); names matching no
 *   check get a `warn:` line;
 * - `GET /readyz/<check>`: 200 `ok`, or 500 `internal server error: <reason>`.
 *
 * One addition: a verbose line of a cache check carries the cache's state after `ok`
 * (`[+]cache-pods ok: watching, 120 objects at RV 4711, heard from 3 s ago`), so that
 * `kubectl get --raw '/readyz?verbose'` tells an operator what each cache is doing. Probes read
 * the status code only.
 */
import type { CacheCheck } from '../../cache/cache-source.ts';

/** A check: a cache's (watch-cache.ts CacheCheck), or the proxy's own ping. `state` is said after `ok` in the verbose answer. */
export type HealthCheck = CacheCheck;

export interface HealthAnswer {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export const PING: HealthCheck = { name: 'ping', failure: undefined, state: '' };

const PLAIN = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' } as const;

/** The answer to `/<endpoint>` (livez, readyz, healthz) over `checks`, for the query string `query`. */
export function rootHealth(endpoint: string, checks: readonly HealthCheck[], query: URLSearchParams): HealthAnswer {
  const excluded = new Set(query.getAll('exclude'));
  const unknownExcluded = new Set(excluded);
  let lines = '';
  let failed = false;
  for (const check of checks) {
    if (excluded.has(check.name)) {
      unknownExcluded.delete(check.name);
      lines += `[+]${check.name} excluded: ok\n`;
      continue;
    }
    if (check.failure !== undefined) {
      failed = true;
      lines += `[-]${check.name} failed: reason withheld\n`;
      continue;
    }
    lines += check.state === '' ? `[+]${check.name} ok\n` : `[+]${check.name} ok: ${check.state}\n`;
  }
  if (unknownExcluded.size > 0) {
    const names = [...unknownExcluded].sort().map((name) => JSON.stringify(name));
    lines += `warn: some health checks cannot be excluded: no matches for ${names.join(',')}\n`;
  }
  // Go's http.Error: the message and a newline.
  if (failed) return { statusCode: 500, headers: PLAIN, body: `${lines}${endpoint} check failed\n` };
  if (!query.has('verbose')) return { statusCode: 200, headers: PLAIN, body: 'ok' };
  return { statusCode: 200, headers: PLAIN, body: `${lines}${endpoint} check passed\n` };
}

/** What the proxy's checks are made of: its memory budget's state and its caches' checks. */
export interface HealthSources {
  /** The memory budget's state, a /readyz check that always passes and says how full it is. */
  readonly memoryState?: (() => string) | undefined;
  /** The caches' checks (/readyz only). */
  readonly caches?: (() => readonly HealthCheck[]) | undefined;
  /** While the proxy shuts down, why it is not ready (a failing /readyz check, so that no new client is sent to it). */
  readonly shuttingDown?: (() => string | undefined) | undefined;
}

/** The checks of `/<endpoint>`: ping for /livez and /healthz; for /readyz, ping, shutdown, memory and the caches. */
export function proxyHealthChecks(sources: HealthSources): (endpoint: string) => readonly HealthCheck[] {
  return (endpoint) => {
    if (endpoint !== 'readyz') return [PING];
    const { memoryState, caches, shuttingDown } = sources;
    return [
      PING,
      ...(shuttingDown === undefined ? [] : [{ name: 'shutdown', failure: shuttingDown(), state: '' }]),
      ...(memoryState === undefined ? [] : [{ name: 'memory', failure: undefined, state: memoryState() }]),
      ...(caches?.() ?? []),
    ];
  };
}

/** The health endpoints the proxy answers itself. */
export const HEALTH_ENDPOINTS = ['livez', 'readyz', 'healthz'] as const;

/**
 * The answer to a health path (`/readyz`, `/readyz/<check>`, …) and its query; undefined for a
 * path that is not one of the proxy's endpoints or checks.
 */
export function healthAnswer(
  checksOf: (endpoint: string) => readonly HealthCheck[],
  path: string,
  query: string,
): HealthAnswer | undefined {
  const endpoint = HEALTH_ENDPOINTS.find((e) => path === `/${e}` || path.startsWith(`/${e}/`));
  if (endpoint === undefined) return undefined;
  const checks = checksOf(endpoint);
  if (path === `/${endpoint}`) return rootHealth(endpoint, checks, new URLSearchParams(query));
  const check = checks.find((c) => path === `/${endpoint}/${c.name}`);
  return check === undefined ? undefined : singleHealth(check);
}

/** The answer to `/<endpoint>/<check>`. */
export function singleHealth(check: HealthCheck): HealthAnswer {
  if (check.failure === undefined) return { statusCode: 200, headers: PLAIN, body: 'ok' };
  return { statusCode: 500, headers: PLAIN, body: `internal server error: ${check.failure}\n` };
}
