/**
 * An upstream that can change pods faster than this machine's apiserver can (it takes ~600
 * writes/s on 2 cores while the proxy serves LISTs), for the scale curve's absorb measurement: how
 * many updates/s the proxy's cache takes at 100k pods while LISTs run, and how late each arrives.
 * Run as its own process (`fork`, advanced serialization) so that its work is never the proxy's.
 *
 * It is a pass-through to the real apiserver for everything but the cluster-wide pods collection,
 * which it answers from the apiserver's own pods, read once at start:
 * - LIST (limit/continue, as the reflector pages it) at the resourceVersion of that read;
 * - WATCH, with the initial events when asked (WatchList), then MODIFIED events of those pods, round robin, each a new resourceVersion and a
 *   `bench-sent` annotation, at the rate the parent asks for. Each event's send time is recorded
 *   on CLOCK_MONOTONIC (the same clock in every process) as its bytes are written.
 *
 * Protocol: child → {type:'ready', port, pods}; parent → {type:'emit', rate, seconds};
 * child → {type:'emitted', rv, time, watches}.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Agent, request } from 'undici';
import { monotonicMs } from './watch-client.ts';

export interface ReplayEmitted {
  readonly type: 'emitted';
  /** Per event: its resourceVersion and when its bytes were written (ms, CLOCK_MONOTONIC). */
  readonly rv: Float64Array;
  readonly time: Float64Array;
  /** Pod watches opened on this upstream (1 unless the proxy's watch broke). */
  readonly watches: number;
}

interface Pod {
  metadata: { resourceVersion?: string; annotations?: Record<string, string> };
}

const apiserver = process.env.KCP_REPLAY_APISERVER ?? '';
const token = process.env.KCP_REPLAY_TOKEN ?? '';
const agent = new Agent({ connect: { ca: process.env.KCP_REPLAY_CA ?? '' } });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'upgrade', 'proxy-connection']);

/** The apiserver's pods, each item's JSON as it sent it, and the list's resourceVersion. */
const listed = await request(`${apiserver}/api/v1/pods`, { dispatcher: agent, headers: { authorization: `Bearer ${token}` } });
const podList = (await listed.body.json()) as { metadata: { resourceVersion: string }; items: Pod[] };
const items = podList.items.map((item) => JSON.stringify(item));
const listResourceVersion = Number(podList.metadata.resourceVersion);
podList.items = [];

/** The pods watch the proxy holds open: events go to it. */
let watcher: ServerResponse | undefined;
let watches = 0;
let nextResourceVersion = listResourceVersion + 1;

function servePodList(url: URL, res: ServerResponse): void {
  const limit = Number(url.searchParams.get('limit') ?? '0') || items.length;
  const from = Number(url.searchParams.get('continue') ?? '0');
  const to = Math.min(items.length, from + limit);
  const more = to < items.length;
  const metadata = `{"resourceVersion":"${String(listResourceVersion)}"${more ? `,"continue":"${String(to)}","remainingItemCount":${String(items.length - to)}` : ''}}`;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(`{"kind":"PodList","apiVersion":"v1","metadata":${metadata},"items":[${items.slice(from, to).join(',')}]}`);
}

/**
 * The proxy's watch. With sendInitialEvents (WatchList, the reflector's default) the pods go
 * first as ADDED events, then the bookmark that ends them, as the apiserver streams them.
 */
function servePodWatch(url: URL, res: ServerResponse): void {
  watches++;
  res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
  if (url.searchParams.get('sendInitialEvents') === 'true') {
    const added = (item: string): string => `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1",${item.slice(1)}}\n`;
    for (let i = 0; i < items.length; i += 1000)
      res.write(
        items
          .slice(i, i + 1000)
          .map(added)
          .join(''),
      );
    const end = `{"resourceVersion":"${String(listResourceVersion)}","annotations":{"k8s.io/initial-events-end":"true"}}`;
    res.write(`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":${end},"spec":{"containers":null},"status":{}}}\n`);
  } else {
    res.flushHeaders();
  }
  watcher = res;
  res.on('close', () => {
    if (watcher === res) watcher = undefined;
  });
}

async function passThrough(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  }
  headers.authorization = `Bearer ${token}`;
  const method = req.method ?? 'GET';
  const upstream = await request(`${apiserver}${req.url ?? '/'}`, {
    dispatcher: agent,
    method: method as 'GET',
    headers,
    body: method === 'GET' || method === 'HEAD' ? null : req,
    bodyTimeout: 0,
  });
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(upstream.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  res.writeHead(upstream.statusCode, out);
  await pipeline(upstream.body, res);
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://replay');
  if (url.pathname === '/api/v1/pods' && req.method === 'GET') {
    const watch = url.searchParams.get('watch');
    if (watch === 'true' || watch === '1') servePodWatch(url, res);
    else servePodList(url, res);
    return;
  }
  passThrough(req, res).catch(() => res.destroy());
});
server.keepAliveTimeout = 0;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('replay: no port');
  process.send?.({ type: 'ready', port: address.port, pods: items.length });
});

/** Emits `rate` events/s for `seconds`, each stamped as written; a late timer writes what is due at once. */
async function emit(rate: number, seconds: number): Promise<ReplayEmitted> {
  const total = Math.round(rate * seconds);
  const rv = new Float64Array(total);
  const time = new Float64Array(total);
  const started = monotonicMs();
  let sent = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const due = Math.min(total, Math.floor(((monotonicMs() - started) * rate) / 1000));
      const target = watcher;
      if (target !== undefined && due > sent) {
        target.cork();
        for (; sent < due; sent++) {
          const pod = JSON.parse(items[sent % items.length] ?? '{}') as Pod;
          const version = nextResourceVersion++;
          const now = monotonicMs();
          pod.metadata.resourceVersion = String(version);
          pod.metadata.annotations = { ...pod.metadata.annotations, 'bench-sent': now.toFixed(3) };
          target.write(`{"type":"MODIFIED","object":${JSON.stringify({ kind: 'Pod', apiVersion: 'v1', ...pod })}}\n`);
          rv[sent] = version;
          time[sent] = now;
        }
        target.uncork();
      }
      // Without the proxy's watch the run ends once its time (and a margin) is up.
      if (sent >= total || monotonicMs() - started > (seconds + 10) * 1000) {
        clearInterval(timer);
        resolve();
      }
    }, 1);
  });
  return { type: 'emitted', rv: rv.slice(0, sent), time: time.slice(0, sent), watches };
}

process.on('message', (m: 'stop' | { type: string; rate?: number; seconds?: number }) => {
  if (m === 'stop') process.exit(0);
  else if (m.type === 'emit') void emit(m.rate ?? 1000, m.seconds ?? 10).then((result) => process.send?.(result));
});
process.on('disconnect', () => process.exit(0));
