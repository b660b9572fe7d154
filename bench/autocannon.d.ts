/** The part of autocannon's API (it ships no types) that bench/identity-load.ts uses. */
declare module 'autocannon' {
  interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    setupRequest?: (request: Request) => Request;
  }
  interface Options {
    url: string;
    connections: number;
    duration?: number;
    amount?: number;
    timeout?: number;
    requests?: Request[];
  }
  interface Result {
    latency: { p50: number; p99: number };
    requests: { average: number; total: number };
    throughput: { average: number };
    errors: number;
    timeouts: number;
    non2xx: number;
  }
  export default function autocannon(options: Options): Promise<Result>;
}
