/**
 * What the apiserver carries, read around each fleet layout: its /metrics (watches open, requests
 * answered, bytes of responses and of watch events) and its process (/proc: CPU seconds, bytes
 * written by write calls, sockets included).
 */
import { readFileSync } from 'node:fs';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { cpuSeconds } from './stats.ts';

/** The types a node's agents read, as apiserver_longrunning_requests names them. */
export const FLEET_RESOURCES = ['pods', 'services', 'endpointslices', 'nodes', 'namespaces'] as const;

export interface ApiserverSnapshot {
  /** Watches open now, per resource of FLEET_RESOURCES. */
  readonly watches: Readonly<Record<string, number>>;
  /** apiserver_request_total of the reads (LIST, GET, WATCH): the churn's own writes left out. */
  readonly requests: number;
  /** apiserver_response_sizes_sum of the reads + apiserver_watch_events_sizes_sum (bytes of bodies and events). */
  readonly bodyBytes: number;
  readonly cpuSeconds: number;
  /** /proc/PID/io wchar: bytes the process wrote (sockets to clients and etcd, logs); NaN when unreadable. */
  readonly writtenBytes: number;
}

function writtenBytes(pid: number): number {
  try {
    const io = readFileSync(`/proc/${String(pid)}/io`, 'utf8');
    return Number(/^wchar: (\d+)$/m.exec(io)?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

const READ_VERB = /verb="(LIST|GET|WATCH)"/;
const value = (line: string): number => Number(line.slice(line.lastIndexOf(' ') + 1));

export async function apiserverSnapshot(client: UpstreamClient, pid: number): Promise<ApiserverSnapshot> {
  const res = await client.request({ method: 'GET', path: '/metrics', headers: { accept: 'text/plain' } });
  const watches: Record<string, number> = Object.fromEntries(FLEET_RESOURCES.map((r) => [r, 0]));
  let requests = 0;
  let bodyBytes = 0;
  for (const line of res.body.toString().split('\n')) {
    const read = READ_VERB.test(line);
    if (line.startsWith('apiserver_request_total{')) {
      if (read) requests += value(line);
    } else if ((line.startsWith('apiserver_response_sizes_sum{') && read) || line.startsWith('apiserver_watch_events_sizes_sum{')) {
      bodyBytes += value(line);
    } else if (line.startsWith('apiserver_longrunning_requests{') && line.includes('verb="WATCH"') && !/subresource="[^"]/.test(line)) {
      const resource = /resource="([^"]*)"/.exec(line)?.[1];
      if (resource !== undefined && resource in watches) watches[resource] = (watches[resource] ?? 0) + value(line);
    }
  }
  return { watches, requests, bodyBytes, cpuSeconds: cpuSeconds(pid), writtenBytes: writtenBytes(pid) };
}

export interface ApiserverDelta {
  /** Watches open at the later snapshot beyond the earlier one's, per resource. */
  readonly watches: Readonly<Record<string, number>>;
  readonly requests: number;
  readonly bodyBytes: number;
  readonly cpuSeconds: number;
  readonly writtenBytes: number;
}

export function apiserverDelta(after: ApiserverSnapshot, before: ApiserverSnapshot): ApiserverDelta {
  const watches: Record<string, number> = {};
  for (const r of FLEET_RESOURCES) watches[r] = (after.watches[r] ?? 0) - (before.watches[r] ?? 0);
  return {
    watches,
    requests: after.requests - before.requests,
    bodyBytes: after.bodyBytes - before.bodyBytes,
    cpuSeconds: after.cpuSeconds - before.cpuSeconds,
    writtenBytes: after.writtenBytes - before.writtenBytes,
  };
}
