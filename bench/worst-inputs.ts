/**
 * What one request's worst inputs cost the event loop: `node bench/worst-inputs.ts`.
 *
 * Each parser a request meets before it is answered (negotiation of the Accept header, the path's
 * request info, kubectl proxy's filter, the continue token, the selectors) on the inputs that cost
 * it most at the size the HTTP server lets through (1 MiB, Go's http.DefaultMaxHeaderBytes):
 * a quadratic step shows as seconds. Each figure is the median CPU time of ROUNDS runs, in
 * milliseconds (CPU, not wall time: other processes on a loaded machine do not count). About
 * 10 s on 2 cores; results to stdout, never asserted.
 */
import { decodeContinue } from '../src/request/continue-token.ts';
import { defaultRequestFilterOptions, filterRequest } from '../src/request/request-filter.ts';
import { negotiateRead } from '../src/request/negotiation.ts';
import { parseRequestInfo } from '../src/request/request-info.ts';
import { parseRawFieldSelector } from '../src/selector/field-selector.ts';
import { parseLabelSelector } from '../src/selector/label-selector.ts';
import { SelectorParseError } from '../src/selector/selector-error.ts';

const MiB = 2 ** 20;
const ROUNDS = 3;

const b64 = (s: string): string => Buffer.from(s).toString('base64url');
const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const filter = defaultRequestFilterOptions();

/** A selector the apiserver refuses throws its 400: the work is the same. */
function selector(parse: () => unknown): void {
  try {
    parse();
  } catch (error) {
    if (!(error instanceof SelectorParseError)) throw error;
  }
}

/** Each case builds its input (not timed), then returns the call that is timed. */
const cases: Record<string, () => () => unknown> = {
  'Accept: clauses in rising q': () => {
    const accept = Array.from({ length: 70_000 }, (_, i) => `a/b;q=0.${String(i).padStart(6, '0')}`)
      .join(',')
      .slice(0, MiB);
    return () => negotiateRead(accept, true);
  },
  'Accept: spaces inside a clause': () => {
    const accept = `a/b${' '.repeat(MiB)}x`;
    return () => negotiateRead(accept, true);
  },
  'Accept: a q of digits': () => {
    const accept = `a/b;q=${'1'.repeat(MiB)}x`;
    return () => negotiateRead(accept, true);
  },
  'Accept: a hexadecimal q': () => {
    const accept = `a/b;q=0x${'1'.repeat(MiB)}p1`;
    return () => negotiateRead(accept, true);
  },
  'Accept: empty clauses': () => {
    const accept = ','.repeat(MiB);
    return () => negotiateRead(accept, true);
  },
  'Accept: invalid clauses': () => {
    const accept = 'x,'.repeat(MiB / 2);
    return () => negotiateRead(accept, true);
  },
  'Accept: parameters': () => {
    const accept = `a/b${';k=v'.repeat(MiB / 4)}`;
    return () => negotiateRead(accept, true);
  },
  'path: slashes (request info)': () => {
    const url = `/api${'/'.repeat(MiB)}x`;
    return () => parseRequestInfo('GET', url);
  },
  'path: many /pods/ (filter)': () => {
    const url = `/api/${'/pods/'.repeat(MiB / 6)}`;
    return () => filterRequest(filter, 'GET', url, 'localhost');
  },
  'continue: nested 5,000 deep': () => {
    const token = b64(nested(5_000));
    return () => {
      try {
        decodeContinue(token, '/r/');
      } catch {
        // its 400
      }
    };
  },
  'continue: a 700 KB start key': () => {
    const token = b64(JSON.stringify({ v: 'meta.k8s.io/v1', rv: 5, start: 'a'.repeat(700_000) }));
    return () => decodeContinue(token, '/r/');
  },
  'labelSelector: 1 MiB of requirements': () => {
    const text = Array.from({ length: MiB / 8 }, (_, i) => `k${String(i)}`).join(',');
    return () => {
      selector(() => parseLabelSelector(text));
    };
  },
  'fieldSelector: 1 MiB of terms': () => {
    const text = Array.from({ length: MiB / 8 }, (_, i) => `a=${String(i)}`).join(',');
    return () => {
      selector(() => parseRawFieldSelector(text));
    };
  },
};

for (const [name, prepare] of Object.entries(cases)) {
  const run = prepare();
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.cpuUsage();
    run();
    const used = process.cpuUsage(start);
    times.push((used.user + used.system) / 1000);
  }
  times.sort((a, b) => a - b);
  console.log(`${name.padEnd(40)} ${(times[Math.floor(ROUNDS / 2)] ?? 0).toFixed(1).padStart(8)} ms`);
}
