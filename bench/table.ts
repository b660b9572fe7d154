/**
 * The run's figures as Markdown tables (printed, and pasted into bench/RESULTS.md as they are).
 * `node bench/table.ts [results.json]` prints them again from a results file (default latest.json).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchResults } from './results.ts';

function fixed(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '–';
}

function int(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '–';
}

export function formatTables(results: BenchResults): string {
  const lines: string[] = [];
  const env = results.environment;
  lines.push(
    `${env.date.slice(0, 16).replace('T', ' ')} UTC, ${env.machine}, Kubernetes ${env.kubernetes}, Node ${env.node}, commit ${env.commit}`,
  );
  lines.push(`\`${results.command}\` (${int(results.sizes.pods)} pods in ${int(results.sizes.namespaces)} namespaces)`, '');
  if (results.load.length > 0) {
    const s = results.sizes;
    lines.push(
      `Requests: autocannon; per target ${String(s.warmup)} s of warm-up, then ${String(s.repeats)} repeats in alternation, each making the requests the target answered in ${String(s.duration)} s of warm-up rate (at least 4 per client); medians of the repeats; ⚠ = repeats spread over ${String(s.spread * 100)}%. Upstream: the apiserver's LISTs, GETs and finished WATCHes of pods (a consistency probe is a LIST, a freshness proof's watch a WATCH).`,
      '',
    );
    lines.push('| scenario | target | p50 ms | p99 ms | req/s | p50 ÷ apiserver | upstream requests / client requests | from the cache |');
    lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const row of results.load) {
      const base = results.load.find((r) => r.scenario === row.scenario && r.target === 'apiserver')?.p50 ?? NaN;
      const flags = `${row.unstable ? ' ⚠' : ''}${row.failures > 0 ? ` (${int(row.failures)} failed)` : ''}`;
      lines.push(
        `| ${row.title} | ${row.target}${flags} | ${fixed(row.p50)} | ${fixed(row.p99)} | ${fixed(row.rps)} | ${row.target === 'apiserver' ? '1' : fixed(row.p50 / base, 2)} | ${int(row.upstreamRequests)} / ${int(row.clientRequests)} | ${row.fromCache === undefined ? '' : `${fixed((100 * row.fromCache) / row.clientRequests, 0)} %`} |`,
      );
    }
    lines.push('');
  }
  const poll = results.poll ?? [];
  if (poll.length > 0) {
    const first = poll[0];
    lines.push(
      `Polling: ${int(first?.clients ?? NaN)} clients, each an RV-unset LIST of its namespace's pods and an RV-unset GET of a pod every second, for ${String(first?.seconds ?? '')} s; upstream = the pods LISTs and GETs the apiserver served.`,
      '',
    );
    lines.push('| target | client requests / min | upstream requests / min | p50 ms | p99 ms |');
    lines.push('| --- | ---: | ---: | ---: | ---: |');
    for (const row of poll) {
      lines.push(
        `| ${row.target}${row.failures > 0 ? ` (${int(row.failures)} failed)` : ''} | ${int(row.clientRequestsPerMinute)} | ${int(row.upstreamRequestsPerMinute)} | ${fixed(row.p50)} | ${fixed(row.p99)} |`,
      );
    }
    lines.push('');
  }
  if (results.watch.length > 0) {
    const s = results.sizes;
    lines.push(
      `Watch fan-out: each watcher watches one namespace's pods (${String(s.namespaces)} namespaces: ${fixed(s.watchRate / s.namespaces)} events/s per watcher); a writer patches ${String(s.watchRate)} pods/s for ${String(s.watchSeconds)} s at the apiserver; latency from the write's response to a watcher's receipt; CPU of the process the watchers talk to. Over h1 a connection per watch, over h2 the watches of a client process multiplexed over TLS sessions up to the server's SETTINGS_MAX_CONCURRENT_STREAMS each. Clients: processes sized by a calibration (client CPU µs per event received) to use ≤ 0.5 of a core each, at most one per core; their event-loop delay and CPU while the writes ran; ⚠ = the clients were the bottleneck (a process's loop late by ≥ ¼ of the delivery p99 and ≥ 5 ms for ≥ 1 % of the time, time-weighted, or a process using ≥ 0.8 of a core). Cores used while the writes ran: the target, the apiserver, the clients (of the machine's cores).`,
      '',
    );
    lines.push(
      "| watchers | target | protocol | opened | connections per client process | p50 ms | p99 ms | delivered | lost | closed | target CPU s / 1k events | apiserver CPU s | watchers' CPU s | clients: processes (µs / event) | clients' loop delay p99 / max ms, time late ≥ ¼ p99 | clients: cores: each process's share of a core | cores used: target / apiserver / clients (of N) | upstream p50 / p99 ms | proxy loop delay p99 / max ms | proxy GC ms (major) | LISTs beside: /s, p99 ms |",
    );
    lines.push(
      '| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const row of results.watch) {
      const loop = row.loop === undefined ? '–' : `${fixed(row.loop.lagP99Ms)} / ${fixed(row.loop.lagMaxMs)}`;
      const upstream = row.upstream === undefined ? '–' : `${fixed(row.upstream.p50)} / ${fixed(row.upstream.p99)}`;
      const lists =
        row.lists === undefined
          ? '–'
          : `${String(row.lists.connections)} clients: ${fixed(row.lists.rps)}/s, ${fixed(row.lists.p99)}${row.lists.failures > 0 ? ` (${String(row.lists.failures)} failed)` : ''}`;
      const gc = row.loop === undefined ? '–' : `${fixed(row.loop.gcMs, 0)} (${fixed(row.loop.gcMajorMs, 0)})`;
      // Rows of results written before the clients measured themselves have none of these.
      const c = row.clients as typeof row.clients | undefined;
      const sh = row.shares as typeof row.shares | undefined;
      const clients =
        c === undefined
          ? '– | – | – | –'
          : `${c.connections.map(int).join(' + ')}${row.proxyConnections === undefined ? '' : ` (proxy counted ${int(row.proxyConnections)})`} | ${fixed(row.p50)} | ${fixed(row.p99)} | ${int(row.delivered)} | ${int(row.lost)} | ${int(row.closed)} | ${fixed(row.cpuPer1k, 3)} | ${fixed(row.apiserverCpu)} | ${fixed(row.clientCpu)} | ${String(c.processes)} (${fixed(c.microsPerEvent)}) | ${fixed(c.loopP99Ms)} / ${fixed(c.loopMaxMs)}${(c.lateShare as number | undefined) === undefined ? '' : `, ${fixed(100 * c.lateShare, 1)} %`} | ${fixed(c.cores, 2)}: ${(c.processShares as readonly number[] | undefined)?.map((x) => fixed(x, 2)).join(' + ') ?? fixed(c.maxProcessShare, 2)}`;
      const shares =
        sh === undefined ? '–' : `${fixed(sh.target, 2)} / ${fixed(sh.apiserver, 2)} / ${fixed(sh.clients, 2)} (of ${String(sh.cores)})`;
      const prefix =
        c === undefined
          ? `– | ${fixed(row.p50)} | ${fixed(row.p99)} | ${int(row.delivered)} | ${int(row.lost)} | ${int(row.closed)} | ${fixed(row.cpuPer1k, 3)} | ${fixed(row.apiserverCpu)} | ${fixed(row.clientCpu)} | – | – | –`
          : clients;
      lines.push(
        `| ${int(row.watchers)} | ${row.target}${c?.bound === true ? ' ⚠' : ''} | ${(row.protocol as string | undefined) ?? 'h1'} | ${int(row.opened)} | ${prefix} | ${shares} | ${upstream} | ${loop} | ${gc} | ${lists} |`,
      );
    }
    lines.push('');
  }
  if (results.sync.length > 0) {
    lines.push('Cold start (spawn to synced) and memory after full collections, per cached object, pods and configmaps:', '');
    lines.push(
      '| who | objects | cold start s | upstream LIST | upstream WATCH | JSON B/obj | heap B/obj | Buffers B/obj | RSS B/obj | heap ÷ JSON | (heap + Buffers) ÷ JSON |',
    );
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const row of results.sync) {
      const m = row.memory;
      lines.push(
        `| ${row.who} | ${int(row.objects)} | ${fixed(row.coldStartMs / 1000, 2)} | ${int(row.upstreamLists)} | ${int(row.upstreamWatches)} | ${int(m?.jsonBytes ?? NaN)} | ${int(m?.heap ?? NaN)} | ${int(m?.buffers ?? NaN)} | ${int(m?.rss ?? NaN)} | ${fixed((m?.heap ?? NaN) / (m?.jsonBytes ?? NaN), 2)} | ${fixed(((m?.heap ?? NaN) + (m?.buffers ?? NaN)) / (m?.jsonBytes ?? NaN), 2)} |`,
      );
    }
    lines.push('');
    for (const row of results.sync) {
      const p = row.memory?.protobuf;
      if (p === undefined) continue;
      lines.push(
        `${row.who}, once a protobuf client has listed each type: + ${int(p.heap)} B heap and ${int(p.buffers)} B Buffers per object (its protobuf bytes, ${int(p.messageBytes)} B per object in the LISTs, made once and kept); nothing for types no protobuf client reads.`,
        '',
      );
    }
  }
  const scale = results.scale ?? [];
  if (scale.length > 0) {
    lines.push(
      `Scale: pods cached by a fresh proxy (--resources pods); LIST RV=0 of every pod and a 1% selector LIST with 8 clients, GET with 32, proxy ÷ apiserver p50 in one run; memory per cached object after full collections; apply: a writer patching pods at the apiserver while 8 clients LIST every pod from the proxy, from the write's answer to the event at a watch on the proxy, beside a watch on the apiserver in the same run (added: each event at the proxy's watcher minus at the apiserver's); absorb: the same pods replayed as updates to a fresh proxy at the apply rate while 8 clients LIST every pod from it, from the upstream's write to the event at a watch on the proxy (after a warm-up; the LIST load at nice 19), and the proxy's event-loop delay.`,
      '',
    );
    lines.push(
      '| pods | LIST MB | sync s | LIST p50 ms (÷ apiserver) | selector p50 ms (÷) | GET p50 ms (÷) | proxy CPU µs / MB listed | JSON B/obj | heap B/obj | Buffers B/obj | RSS B/obj | (heap + Buffers) ÷ JSON | apply writes/s | apply p99 ms (apiserver watch) | added by the proxy p50 / p99 ms | absorb updates/s | absorb p50 / p99 / max ms | loop delay p99 ms |',
    );
    lines.push(
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const r of scale) {
      const ratio = (a: number, b: number): string => `${fixed(a)} (${fixed(a / b, 2)})`;
      const absorb = `${int(r.absorb.deliveredPerSecond)} | ${fixed(r.absorb.p50, 2)} / ${fixed(r.absorb.p99)} / ${fixed(r.absorb.max)} | ${fixed(r.absorb.loopDelay.p99)}`;
      lines.push(
        `| ${int(r.pods)} | ${fixed(r.list.bodyBytes / 1e6)} | ${fixed(r.syncSeconds, 2)} | ${ratio(r.list.proxy.p50, r.list.apiserver.p50)} | ${ratio(r.selector.proxy.p50, r.selector.apiserver.p50)} | ${ratio(r.get.proxy.p50, r.get.apiserver.p50)} | ${int(r.cpuMicrosPerMB)} | ${int(r.jsonBytesPerObject)} | ${int(r.heapPerObject)} | ${int(r.buffersPerObject)} | ${int(r.rssPerObject)} | ${fixed((r.heapPerObject + r.buffersPerObject) / r.jsonBytesPerObject, 2)} | ${int(r.apply.writesPerSecond)} | ${fixed(r.apply.p99)} (${fixed(r.apply.apiserverP99)}) | ${fixed(r.apply.addedP50)} / ${fixed(r.apply.addedP99)} | ${absorb} |`,
      );
    }
    lines.push('');
  }
  for (const warning of results.warnings) lines.push(`⚠ ${warning}`);
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2] ?? join(import.meta.dirname, 'results', 'latest.json');
  console.log(formatTables(JSON.parse(readFileSync(file, 'utf8')) as BenchResults));
}
