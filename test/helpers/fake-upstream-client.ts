/**
 * An UpstreamClient answered by the test, for the real ListerWatcher (query strings, status
 * handling, watch streaming) without an apiserver: request() answers from `respond`; stream()
 * opens a watch body the test writes lines to, ended when the request's signal aborts (as
 * undici destroys the body of an aborted request).
 */
import { PassThrough } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { UpstreamClient, UpstreamRequest, UpstreamResponse } from '../../src/upstream/client.ts';
import { PROBE_NAME } from '../../src/cache/consistency-probe.ts';

export interface FakeWatchStream {
  readonly path: string;
  /** Writes raw bytes to the body (lines must end with \n). */
  write(chunk: string | Buffer): void;
  /** The server ends the body. */
  end(): void;
  aborted(): boolean;
}

export interface FakeUpstreamOptions {
  /** Answers request() (LISTs, consistency probes); a promise holds the answer; undefined (or none): 404. */
  readonly respond?: (request: UpstreamRequest) => UpstreamResponse | Promise<UpstreamResponse> | undefined;
  /** Non-200 answers for stream() (opening a watch), by request; undefined opens the stream. */
  readonly refuseWatch?: (request: UpstreamRequest) => UpstreamResponse | undefined;
  /** Called with each watch opened. */
  readonly onWatch?: (stream: FakeWatchStream) => void;
  /** The response headers of a watch opened (an upstream proxy's proof age: protocol/proof-age.ts); default none. */
  readonly watchHeaders?: (request: UpstreamRequest) => Record<string, string> | undefined;
}

export interface FakeUpstream {
  readonly client: UpstreamClient;
  /** Paths (with query) of every request() and stream(), in order. */
  readonly paths: string[];
  readonly watches: FakeWatchStream[];
}

export function jsonResponse(statusCode: number, body: unknown, headers: Record<string, string> = {}): UpstreamResponse {
  return { statusCode, headers, body: Buffer.from(JSON.stringify(body)) };
}

/** Whether `path` is a consistency probe (consistency-probe.ts: a consistent LIST of one name that matches nothing). */
export function isConsistencyProbe(path: string): boolean {
  const query = new URLSearchParams(path.slice(path.indexOf('?') + 1));
  return query.get('fieldSelector') === `metadata.name=${PROBE_NAME}` && query.get('watch') === null;
}

/** An empty list at `rv`: a consistency probe's answer, the apiserver's current RV. */
export function listAt(rv: bigint | number | string, kind = 'ConfigMapList'): UpstreamResponse {
  return jsonResponse(200, { kind, apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items: [] });
}

export function newFakeUpstream(options: FakeUpstreamOptions = {}): FakeUpstream {
  const paths: string[] = [];
  const watches: FakeWatchStream[] = [];
  const client: UpstreamClient = {
    config: {
      server: new URL('https://127.0.0.1:6443'),
      tls: { rejectUnauthorized: true },
      authorization: () => Promise.resolve(undefined),
      source: 'fake',
    },
    forward() {
      return Promise.reject(new Error('the fake upstream does not pass requests through'));
    },
    upgrade() {
      return Promise.reject(new Error('the fake upstream does not upgrade connections'));
    },
    request(request) {
      paths.push(request.path);
      const res = options.respond?.(request) ?? jsonResponse(404, { kind: 'Status', code: 404, reason: 'NotFound' });
      const signal = request.signal;
      if (signal === undefined) return Promise.resolve(res);
      // As undici: an aborted request rejects, whenever its answer would have come.
      return new Promise((resolve, reject) => {
        const abort = (): void => {
          reject(new DOMException('This operation was aborted', 'AbortError'));
        };
        if (signal.aborted) abort();
        signal.addEventListener('abort', abort, { once: true });
        Promise.resolve(res).then(resolve, reject);
      });
    },
    stream(request) {
      paths.push(request.path);
      const body = new PassThrough();
      const refused = options.refuseWatch?.(request);
      if (refused !== undefined) body.end(refused.body);
      const signal = request.signal;
      signal?.addEventListener(
        'abort',
        () => {
          body.destroy(new DOMException('This operation was aborted', 'AbortError'));
        },
        { once: true },
      );
      if (refused === undefined) {
        const stream: FakeWatchStream = {
          path: request.path,
          write: (chunk) => {
            body.write(chunk);
          },
          end: () => {
            body.end();
          },
          aborted: () => signal?.aborted === true,
        };
        watches.push(stream);
        options.onWatch?.(stream);
      }
      const withMixin = Object.assign(body, {
        arrayBuffer: async (): Promise<ArrayBuffer> => {
          const chunks: Buffer[] = [];
          for await (const chunk of body) chunks.push(chunk as Buffer);
          const all = Buffer.concat(chunks);
          return all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
        },
      });
      const data = {
        statusCode: refused?.statusCode ?? 200,
        headers: refused?.headers ?? options.watchHeaders?.(request) ?? {},
        body: withMixin,
        trailers: {},
        opaque: null,
        context: {},
      };
      return Promise.resolve(data as unknown as Dispatcher.ResponseData);
    },
    close: () => Promise.resolve(),
  };
  return { client, paths, watches };
}
