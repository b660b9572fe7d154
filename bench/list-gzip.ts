/**
 * The gzip scenario: a LIST of every pod as a node agent or an informer across the network asks
 * for it, with `Accept-Encoding: gzip` (client-go's transport asks for gzip by default), at the
 * apiserver and at the proxy in one run, each also without gzip for the cost beside it.
 *
 * Per target and encoding: latency to the last byte (the client does not decompress: its cost is
 * the client's either way), bytes on the wire per answer (the body as sent, headers aside), and
 * the target process's CPU over the run. The CPU gzip costs is the gzip run's CPU less the
 * identity run's, per MB compressed: every answer for the apiserver (it compresses each one),
 * the proxy's own count (kube_cache_proxy_gzip_input_bytes_total: a shared LIST body is
 * compressed once for all its readers). The proxy gzips loopback clients only with
 * --compress-loopback, which the scenario's proxy is started with.
 */
import { Agent, request } from 'undici';
import { cpuSeconds, quantile } from './stats.ts';
import type { Target } from './targets.ts';

export interface ListGzipSpec {
  readonly path: string;
  readonly accept: string;
  /** Requests per target and encoding, `connections` at a time. */
  readonly requests: number;
  readonly connections: number;
}

export interface ListGzipResult {
  readonly target: string;
  readonly encoding: 'gzip' | 'identity';
  /** The answers' Content-Encoding ('' for none), as the last one said. */
  readonly contentEncoding: string;
  readonly p50: number;
  readonly p99: number;
  /** Bytes on the wire per answer (the body as sent), the median. */
  readonly wireBytes: number;
  readonly requests: number;
  readonly failures: number;
  /** The target's CPU seconds over the run. */
  readonly cpuSeconds: number;
  /** Bytes the target compressed during the run: every answer's for the apiserver, the proxy's own count. */
  readonly compressedBytes: number;
}

const GZIP_INPUT_METRIC = 'kube_cache_proxy_gzip_input_bytes_total';

/** An unlabelled counter of the proxy's /metrics. */
async function proxyTotal(target: Target, name: string): Promise<number> {
  const res = await request(`${target.url}/metrics`);
  const line = (await res.body.text()).split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

async function runOne(target: Target, spec: ListGzipSpec, encoding: 'gzip' | 'identity'): Promise<ListGzipResult> {
  const agent = new Agent({ connections: spec.connections, ...(target.ca === undefined ? {} : { connect: { ca: target.ca } }) });
  const isProxy = target.name.startsWith('kube-cache-proxy');
  const latencies: number[] = [];
  const sizes: number[] = [];
  let failures = 0;
  let contentEncoding = '';
  const headers = { ...target.headers, accept: spec.accept, ...(encoding === 'gzip' ? { 'accept-encoding': 'gzip' } : {}) };
  const compressedBefore = isProxy ? await proxyTotal(target, GZIP_INPUT_METRIC) : 0;
  const cpuBefore = cpuSeconds(target.pid);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next++ < spec.requests) {
      const started = performance.now();
      try {
        const res = await request(`${target.url}${spec.path}`, { dispatcher: agent, headers });
        let bytes = 0;
        for await (const chunk of res.body) bytes += (chunk as Buffer).length;
        if (res.statusCode !== 200) failures++;
        const said = res.headers['content-encoding'];
        contentEncoding = typeof said === 'string' ? said : '';
        sizes.push(bytes);
      } catch {
        failures++;
      }
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: spec.connections }, worker));
  const cpu = cpuSeconds(target.pid) - cpuBefore;
  await agent.close();
  const compressed = isProxy
    ? (await proxyTotal(target, GZIP_INPUT_METRIC)) - compressedBefore
    : contentEncoding === 'gzip'
      ? // The apiserver compresses every answer: its uncompressed size is the identity run's.
        NaN
      : 0;
  return {
    target: target.name,
    encoding,
    contentEncoding,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    wireBytes: quantile(sizes, 0.5),
    requests: latencies.length,
    failures,
    cpuSeconds: cpu,
    compressedBytes: compressed,
  };
}

/** Both encodings at `target`: without gzip first (the body's size and the CPU it costs anyway), then with. */
export async function runListGzip(target: Target, spec: ListGzipSpec): Promise<readonly [ListGzipResult, ListGzipResult]> {
  const identity = await runOne(target, spec, 'identity');
  const gzip = await runOne(target, spec, 'gzip');
  // The apiserver compresses every gzip answer, each the identity answer's size.
  const compressedBytes = Number.isNaN(gzip.compressedBytes) ? identity.wireBytes * gzip.requests : gzip.compressedBytes;
  return [identity, { ...gzip, compressedBytes }];
}

const mb = (bytes: number): string => (bytes / 1e6).toFixed(2);

/** The scenario's table: the proxy beside the apiserver, with and without gzip. */
export function formatListGzip(rows: readonly (readonly [ListGzipResult, ListGzipResult])[], title: string): string {
  const lines = [
    `### ${title}`,
    '',
    '| target | Accept-Encoding | Content-Encoding | p50 ms | p99 ms | MB on the wire / answer | saved | CPU s (run) | MB compressed | net CPU ms / MB compressed (gzip run less identity run) |',
    '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [identity, gzip] of rows) {
    for (const r of [identity, gzip]) {
      const saved = r.encoding === 'gzip' ? `${(100 * (1 - r.wireBytes / identity.wireBytes)).toFixed(1)} %` : '';
      const cost =
        r.encoding === 'gzip' && r.compressedBytes > 0
          ? (((r.cpuSeconds - identity.cpuSeconds * (r.requests / identity.requests)) * 1000) / (r.compressedBytes / 1e6)).toFixed(1)
          : '';
      lines.push(
        `| ${r.target} | ${r.encoding === 'gzip' ? 'gzip' : '(none)'} | ${r.contentEncoding === '' ? '(none)' : r.contentEncoding} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} | ${mb(r.wireBytes)} | ${saved} | ${r.cpuSeconds.toFixed(2)} | ${r.encoding === 'gzip' ? mb(r.compressedBytes) : ''} | ${cost} |`,
      );
    }
  }
  const [apiserverRow] = rows.filter(([, g]) => !g.target.startsWith('kube-cache-proxy'));
  const [proxyRow] = rows.filter(([, g]) => g.target.startsWith('kube-cache-proxy'));
  if (apiserverRow !== undefined && proxyRow !== undefined) {
    const ratio = proxyRow[1].wireBytes / apiserverRow[1].wireBytes;
    lines.push(
      '',
      `gzipped bytes, proxy against apiserver: ${ratio.toFixed(3)} (${ratio <= 1.05 && ratio >= 0.95 ? 'within' : '⚠ outside'} 5 %)`,
    );
  }
  return lines.join('\n');
}
