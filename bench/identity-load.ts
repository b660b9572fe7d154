/**
 * Load from many identities, as its own process (the load generator's CPU is never the measured
 * process's): autocannon's API with a setupRequest that gives each request the next identity's
 * bearer token and path in turn, so every identity is served round-robin across the connections.
 *
 * Input: a JSON file (argv[2]) { url, identities: [{ token, path }], connections, seconds?, amount? }.
 * Output: one JSON line on stdout, as load.ts reads autocannon's CLI.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import type { AutocannonJson } from './load.ts';

export interface IdentityLoadSpec {
  readonly url: string;
  readonly identities: readonly { readonly token: string; readonly path: string }[];
  readonly connections: number;
  readonly seconds?: number;
  /** Requests in all instead of a duration (one round over the identities: `identities.length`). */
  readonly amount?: number;
}

const spec = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as IdentityLoadSpec;
let next = 0;
const result = await autocannon({
  url: spec.url,
  connections: spec.connections,
  ...(spec.amount === undefined ? { duration: spec.seconds ?? 5 } : { amount: spec.amount }),
  timeout: 60,
  requests: [
    {
      method: 'GET',
      setupRequest: (request) => {
        const identity = spec.identities[next++ % spec.identities.length];
        if (identity === undefined) return request;
        return {
          ...request,
          path: identity.path,
          headers: { ...request.headers, accept: 'application/json', authorization: `Bearer ${identity.token}` },
        };
      },
    },
  ],
});
const printed: AutocannonJson = {
  latency: { p50: result.latency.p50, p99: result.latency.p99 },
  requests: { average: result.requests.average, total: result.requests.total },
  throughput: { average: result.throughput.average },
  errors: result.errors,
  timeouts: result.timeouts,
  non2xx: result.non2xx,
};
process.stdout.write(`${JSON.stringify(printed)}\n`);
