/**
 * The polling scenario: many small clients, each reading as polling apps and simple controllers
 * do, every second an RV-unset LIST of its namespace's pods and an RV-unset GET of one pod, for
 * `seconds`. What it measures is the apiserver's load with and without the proxy: the pods LISTs
 * and GETs the apiserver served per minute (its apiserver_request_total), beside the clients'
 * own requests per minute and their latency.
 *
 * The clients run in this process (undici, one connection each): at a few hundred requests per
 * second the load is light, and what is measured is the target's answer time and the apiserver's
 * counters, not the client's CPU.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { countsDelta, namespaceName, podName, upstreamCounts } from './cluster.ts';
import { quantile } from './stats.ts';
import type { Target } from './targets.ts';

export interface PollSpec {
  readonly clients: number;
  readonly seconds: number;
  readonly pods: number;
  readonly namespaces: number;
}

export interface PollResult {
  readonly clients: number;
  readonly seconds: number;
  readonly clientRequestsPerMinute: number;
  readonly upstreamRequestsPerMinute: number;
  readonly p50: number;
  readonly p99: number;
  readonly failures: number;
}

export async function runPoll(target: Target, apiserver: UpstreamClient, spec: PollSpec): Promise<PollResult> {
  const agent = new Agent({ connections: 1, ...(target.ca === undefined ? {} : { connect: { ca: target.ca } }) });
  const latencies: number[] = [];
  let failures = 0;
  const read = async (path: string): Promise<void> => {
    const started = performance.now();
    try {
      const res = await request(`${target.url}${path}`, { dispatcher: agent, headers: { ...target.headers, accept: 'application/json' } });
      await res.body.dump();
      if (res.statusCode !== 200) failures++;
    } catch {
      failures++;
    }
    latencies.push(performance.now() - started);
  };
  const before = await upstreamCounts(apiserver, ['pods']);
  const started = performance.now();
  const deadline = started + spec.seconds * 1000;
  let requests = 0;
  const client = async (i: number): Promise<void> => {
    const ns = namespaceName(i % spec.namespaces);
    const pod = podName(i % spec.pods);
    // Spread the clients over the second, as independent pollers are.
    let next = started + (i / spec.clients) * 1000;
    while (next < deadline) {
      const wait = next - performance.now();
      if (wait > 0) await sleep(wait);
      await Promise.all([read(`/api/v1/namespaces/${ns}/pods`), read(`/api/v1/namespaces/${podNamespace(i, spec)}/pods/${pod}`)]);
      requests += 2;
      next += 1000;
    }
  };
  try {
    await Promise.all(Array.from({ length: spec.clients }, (_, i) => client(i)));
  } finally {
    await agent.close();
  }
  const minutes = (performance.now() - started) / 60_000;
  const delta = countsDelta(await upstreamCounts(apiserver, ['pods']), before).pods;
  const upstream = delta === undefined ? 0 : delta.LIST + delta.GET;
  return {
    clients: spec.clients,
    seconds: spec.seconds,
    clientRequestsPerMinute: requests / minutes,
    upstreamRequestsPerMinute: upstream / minutes,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    failures,
  };
}

/** The seeded pods are spread round-robin: pod i is in namespace i mod namespaces. */
function podNamespace(i: number, spec: PollSpec): string {
  return namespaceName((i % spec.pods) % spec.namespaces);
}
