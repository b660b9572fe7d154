/**
 * WATCH served from the proxy's cache, against the real apiserver: one upstream watch feeds any
 * number of client watches (each gets every event once, in resourceVersion order, the same events
 * a direct apiserver watch from the same RV gets); a client that stops reading is closed at a
 * bounded memory cost without holding the others back; a cut upstream watch is invisible to the
 * clients (no close, no gap, no duplicate), and a client that re-watches from its last RV gets
 * exactly what it missed.
 *
 * Every stream is checked against a reference: a watch opened straight on the apiserver from the
 * same RV. Events are compared as (resourceVersion, type) pairs; in one namespace each write has an
 * RV of its own, so equal sequences mean the same events in the same order.
 */
import assert from 'node:assert/strict';
import { get } from 'node:http';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { startProxy } from '../../../src/proxy/proxy.ts';
import type { RunningProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import type { UpstreamConfig } from '../../../src/upstream/config.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { forEachConcurrently, kube } from '../../helpers/kube.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';
import { spawnCli } from '../../helpers/cli.ts';

const shared = useSharedAdmin();

/** The proxy's counter of client watches it closed because they did not read fast enough. */
const WATCHERS_CLOSED_SLOW = 'kube_cache_proxy_watchers_closed_slow_total';

const MiB = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Proxy and metrics

async function startConfigMapProxy(upstream: UpstreamConfig): Promise<RunningProxy & { url: string }> {
  const options = parseProxyOptions(['--port', '0', '--resources', 'configmaps', '--log-level', 'warn']);
  const proxy = await startProxy(options, upstream);
  const url = proxy.url;
  assert.ok(url !== undefined);
  await eventually('the configmaps cache to sync', async () => {
    const res = await request(`${url}/readyz`);
    await res.body.dump();
    return res.statusCode === 200;
  });
  return Object.assign(proxy, { url });
}

/**
 * The proxy as its own process (as deployed), so that its fan-out and the 1,000 clients of this
 * test each have a core of the two.
 */
async function spawnConfigMapProxy(): Promise<{ url: string; stop(): Promise<void> }> {
  const cli = spawnCli(['proxy', '--kubeconfig', shared.cp.kubeconfig, '--port', '0', '--resources', 'configmaps', '--log-level', 'warn']);
  const stop = async (): Promise<void> => {
    cli.child.kill('SIGKILL');
    await cli.exited;
  };
  try {
    await eventually('the proxy to serve', () => /Starting to serve on 127\.0\.0\.1:\d+/.test(cli.output()), 30_000);
    const url = `http://${/Starting to serve on (127\.0\.0\.1:\d+)/.exec(cli.output())?.[1] ?? ''}`;
    await eventually('the configmaps cache to sync', async () => {
      const res = await request(`${url}/readyz`);
      await res.body.dump();
      return res.statusCode === 200;
    });
    return { url, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A counter's value from the proxy's registry, summed over the series matching `labels`. */
async function proxyCounter(proxy: RunningProxy, name: string, labels: Record<string, string>): Promise<number> {
  const metric = await proxy.metrics.registry.getSingleMetric(name)?.get();
  let total = 0;
  for (const value of metric?.values ?? []) {
    if (Object.entries(labels).every(([k, v]) => value.labels[k] === v)) total += value.value;
  }
  return total;
}

/**
 * Watches the apiserver is serving for configmaps now, all scopes summed. A gauge: the apiserver
 * counts a WATCH in apiserver_request_total only when it ends, so open watches are read here.
 * (apiserver_registered_watchers is gone from v1.37.) It is cluster-wide: the test assumes no
 * other suite opens or ends configmap watches meanwhile, which holds while test files run one at
 * a time (node --test's default on 2 cores).
 */
async function apiserverConfigMapWatches(): Promise<number> {
  const res = await shared.admin.request({ method: 'GET', path: '/metrics', headers: { accept: 'text/plain' } });
  let total = 0;
  for (const line of res.body.toString().split('\n')) {
    if (!line.startsWith('apiserver_longrunning_requests{')) continue;
    if (!line.includes('verb="WATCH"') || !line.includes('resource="configmaps"') || !line.includes('group=""')) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// Watch streams and what they received

const EVENT_TYPES = ['ADDED', 'MODIFIED', 'DELETED'] as const;
const EVENT_PREFIX = Buffer.from('{"type":"');
const RESOURCE_VERSION = Buffer.from('"resourceVersion":"');

/** An event as one number, `rv * 4 + type`: cheap to keep by the million and to compare. */
function encodeEvent(type: string, rv: number): number {
  const code = EVENT_TYPES.indexOf(type as (typeof EVENT_TYPES)[number]);
  if (code < 0 || !Number.isSafeInteger(rv * 4)) throw new Error(`unexpected event ${type} at RV ${String(rv)}`);
  return rv * 4 + code;
}

const rvOf = (event: number): number => Math.floor(event / 4);

function describeEvent(event: number | undefined): string {
  return event === undefined ? 'nothing' : `${EVENT_TYPES[event % 4] ?? '?'}@${String(rvOf(event))}`;
}

/**
 * What one watch stream received. Lines are decoded without parsing the object: a million-event
 * test cannot afford JSON.parse per line. A line not in the apiserver's layout
 * (`{"type":"T","object":{...,"metadata":{...,"resourceVersion":"N",...`) is parsed whole.
 */
class EventLog {
  readonly events: number[] = [];
  /** ERROR events and undecodable lines: any is a failure. */
  readonly problems: string[] = [];
  bytes = 0;
  /** The stream ended or failed (before we closed it, unless `closing`). */
  ended = false;
  closing = false;
  endedBy: unknown;

  get lastResourceVersion(): number {
    const last = this.events.at(-1);
    assert.ok(last !== undefined, 'no event received yet');
    return rvOf(last);
  }

  add(line: Buffer): void {
    this.bytes += line.length + 1;
    let type: string;
    let rv: number;
    const rvAt = line.indexOf(RESOURCE_VERSION);
    if (line.subarray(0, EVENT_PREFIX.length).equals(EVENT_PREFIX) && rvAt > 0) {
      type = line.toString('latin1', EVENT_PREFIX.length, line.indexOf(0x22, EVENT_PREFIX.length));
      const start = rvAt + RESOURCE_VERSION.length;
      rv = Number(line.toString('latin1', start, line.indexOf(0x22, start)));
    } else {
      const event = JSON.parse(line.toString()) as { type?: string; object?: { metadata?: { resourceVersion?: string } } };
      type = event.type ?? '';
      rv = Number(event.object?.metadata?.resourceVersion);
    }
    if (type === 'BOOKMARK') return; // not asked for; harmless if sent
    if (type === 'ERROR' || !Number.isSafeInteger(rv)) {
      this.problems.push(line.toString().slice(0, 300));
      return;
    }
    this.events.push(encodeEvent(type, rv));
  }

  /**
   * Reads `body` to its end; never rejects (a failure is kept in `endedBy`). Lines are split
   * synchronously in 'data' (splitLines' logic, lister-watcher.ts): an async iteration per line
   * costs more than the proxy's fan-out when 1,000 streams share this process.
   */
  consume(body: Readable): Promise<void> {
    this.ended = false;
    this.closing = false;
    this.endedBy = undefined;
    let pending: Buffer[] = [];
    let finished = false;
    return new Promise((resolve) => {
      const finish = (error?: unknown): void => {
        if (finished) return;
        finished = true;
        this.endedBy = error;
        this.ended = true;
        resolve();
      };
      body.on('data', (chunk: Buffer) => {
        let start = 0;
        for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
          const piece = chunk.subarray(start, nl);
          const line = pending.length === 0 ? piece : Buffer.concat([...pending, piece]);
          pending = [];
          if (line.length > 0) this.add(line);
          start = nl + 1;
        }
        if (start < chunk.length) pending.push(chunk.subarray(start));
      });
      body.once('end', () => {
        finish();
      });
      body.once('error', finish);
      body.once('close', () => {
        finish(body.readableEnded ? undefined : new Error('closed before its end'));
      });
    });
  }
}

interface WatchStream {
  readonly log: EventLog;
  /** Settles when the stream is over, whoever ended it. */
  readonly done: Promise<void>;
  close(): Promise<void>;
}

/** `?watch=1&resourceVersion=rv` on the proxy, on a connection of its own (no agent). */
async function watchThroughProxy(url: string, path: string, rv: number, log = new EventLog()): Promise<WatchStream> {
  const req: ClientRequest = get(`${url}${path}?watch=1&resourceVersion=${String(rv)}`, { agent: false });
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  // Our own destroy() at close is reported as an error on the request: expected.
  req.on('error', () => undefined);
  if (res.statusCode !== 200) {
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    req.destroy();
    throw new Error(`WATCH ${path} at RV ${String(rv)} through the proxy: ${String(res.statusCode)} ${Buffer.concat(chunks).toString()}`);
  }
  const done = log.consume(res);
  return {
    log,
    done,
    async close() {
      log.closing = true;
      req.destroy();
      await done;
    },
  };
}

/**
 * The same watch straight on the apiserver: what every client watch must equal. It shares this
 * busy process, so the apiserver may close it for slowness (its cacher does that to a watcher
 * that does not keep up); it then re-watches from its last RV, as any client does, which the
 * apiserver answers with exactly the events after it.
 */
async function watchApiserver(path: string, rv: number): Promise<WatchStream & { resumes(): number }> {
  const log = new EventLog();
  const open = async (from: number): Promise<{ body: Readable; done: Promise<void> }> => {
    const res = await shared.admin.stream({ method: 'GET', path: `${path}?watch=1&resourceVersion=${String(from)}` });
    if (res.statusCode !== 200)
      throw new Error(`direct WATCH ${path} at RV ${String(from)}: ${String(res.statusCode)} ${await res.body.text()}`);
    return { body: res.body, done: log.consume(res.body) };
  };
  let current = await open(rv);
  const state = { closing: false, resumes: 0 };
  const closingNow = (): boolean => state.closing;
  const done = (async () => {
    for (;;) {
      await current.done;
      if (state.closing) return;
      state.resumes++;
      try {
        current = await open(log.events.length === 0 ? rv : log.lastResourceVersion);
      } catch (error) {
        // Kept for the assertions (the log stays short); never an unhandled rejection.
        log.endedBy = error;
        return;
      }
      // close() may have come while it opened (a function call: TS keeps no narrowing across it).
      if (closingNow()) current.body.destroy();
    }
  })();
  return {
    log,
    done,
    resumes: () => state.resumes,
    async close() {
      state.closing = true;
      log.closing = true;
      current.body.destroy();
      await done;
    },
  };
}

/**
 * How `events` differs from `reference` (undefined when equal): a repeated or out-of-order RV, a
 * different event at some index, or a missing or extra tail.
 */
function difference(events: readonly number[], reference: readonly number[]): string | undefined {
  for (let i = 1; i < events.length; i++) {
    const [prev, cur] = [events[i - 1] ?? 0, events[i] ?? 0];
    if (rvOf(cur) <= rvOf(prev)) return `RV not increasing at #${String(i)}: ${describeEvent(prev)} then ${describeEvent(cur)}`;
  }
  const n = Math.min(events.length, reference.length);
  for (let i = 0; i < n; i++) {
    if (events[i] !== reference[i])
      return `event #${String(i)} is ${describeEvent(events[i])}, the apiserver's is ${describeEvent(reference[i])}`;
  }
  if (events.length !== reference.length)
    return `${String(events.length)} events, the apiserver sent ${String(reference.length)} (next: ${describeEvent(events[n] ?? reference[n])})`;
  return undefined;
}

/** Asserts that every log equals the reference and had no problem; reports the first few that do not. */
function assertAllEqual(what: string, logs: readonly EventLog[], reference: EventLog): void {
  assert.deepEqual(reference.problems, [], 'the direct watch had no ERROR event');
  const failures: string[] = [];
  logs.forEach((log, i) => {
    const diff =
      log.problems.length > 0 ? `problem events: ${log.problems.slice(0, 2).join(' | ')}` : difference(log.events, reference.events);
    if (diff !== undefined) failures.push(`${what} #${String(i)}: ${diff}`);
  });
  assert.equal(
    failures.length,
    0,
    `${String(failures.length)} of ${String(logs.length)} ${what}s differ:\n${failures.slice(0, 5).join('\n')}`,
  );
}

/** t.diagnostic every few seconds until stopped: the spec reporter prints them with the test. */
function reportProgress(t: TestContext, describe: () => string, everyMs = 5_000): () => void {
  const start = Date.now();
  const timer = setInterval(() => {
    t.diagnostic(`+${((Date.now() - start) / 1000).toFixed(1)} s: ${describe()}`);
  }, everyMs);
  return () => {
    clearInterval(timer);
  };
}

const seconds = (since: number): string => `${((performance.now() - since) / 1000).toFixed(1)} s`;

/** The RV of a LIST through the proxy: where a client starts its watch. */
async function listResourceVersion(url: string, path: string): Promise<number> {
  const res = await request(`${url}${path}`);
  const body = (await res.body.json()) as { metadata?: { resourceVersion?: string } };
  assert.equal(res.statusCode, 200);
  const rv = Number(body.metadata?.resourceVersion);
  assert.ok(Number.isSafeInteger(rv) && rv > 0, `LIST returned RV ${String(body.metadata?.resourceVersion)}`);
  return rv;
}

/** Closes what it was given, last first; for `finally` blocks. */
function closers(): { add(close: () => Promise<unknown>): void; closeAll(): Promise<void> } {
  const list: (() => Promise<unknown>)[] = [];
  return {
    add(close) {
      list.push(close);
    },
    async closeAll() {
      for (const close of list.reverse()) await close();
    },
  };
}

// ---------------------------------------------------------------------------------------------

test(
  'watch fan-out: 1,000 watchers through the proxy get all 5,000 changes once, in RV order, over one upstream WATCH',
  { timeout: 420_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const cleanup = closers();
    const started = performance.now();
    try {
      const watchesBefore = await apiserverConfigMapWatches();
      const proxy = await spawnConfigMapProxy();
      cleanup.add(() => proxy.stop());
      const rv = await listResourceVersion(proxy.url, path);
      const reference = await watchApiserver(path, rv);
      cleanup.add(() => reference.close());

      const watchers: WatchStream[] = [];
      // At most 100 connections opening at once: the server's accept backlog is 511.
      await forEachConcurrently(
        Array.from({ length: 1000 }, (_, i) => i),
        100,
        async () => {
          const watch = await watchThroughProxy(proxy.url, path, rv);
          watchers.push(watch);
          cleanup.add(() => watch.close());
        },
      );
      const watchesOpen = await apiserverConfigMapWatches();
      t.diagnostic(
        `${seconds(started)}: 1,000 watchers open at RV ${String(rv)}; apiserver configmap watches ${String(watchesBefore)} → ${String(watchesOpen)}`,
      );

      // 2,000 objects: each created and updated, every other one deleted: 5,000 changes. The
      // RVs of creates and updates are kept (a DELETE of a ConfigMap answers a Status, without one).
      let writes = 0;
      const writtenRvs = new Set<number>();
      const stopProgress = reportProgress(t, () => {
        const delivered = watchers.reduce((sum, w) => sum + w.log.events.length, 0);
        return `${String(writes)} writes, direct watch ${String(reference.log.events.length)}, ${String(delivered)} events delivered to the 1,000`;
      });
      try {
        await forEachConcurrently(
          Array.from({ length: 2000 }, (_, i) => i),
          16,
          async (i) => {
            const name = `cm-${String(i)}`;
            const created = await kube(shared.admin, 'POST', path, { metadata: { name }, data: { v: '0' } });
            writtenRvs.add(Number(created.metadata.resourceVersion));
            const updated = await kube(shared.admin, 'PATCH', `${path}/${name}`, { data: { v: '1' } });
            writtenRvs.add(Number(updated.metadata.resourceVersion));
            writes += 2;
            if (i % 2 === 0) {
              await kube(shared.admin, 'DELETE', `${path}/${name}`, undefined, 200);
              writes++;
            }
          },
        );
        t.diagnostic(`${seconds(started)}: ${String(writes)} writes done`);
        await eventually('the direct watch to see every write', () => reference.log.events.length >= writes);
        await eventually(
          'every watcher to receive as many events as the direct watch',
          () => watchers.every((w) => w.log.events.length >= reference.log.events.length || w.log.ended),
          240_000,
        );
      } finally {
        stopProgress();
      }
      t.diagnostic(`${seconds(started)}: every watcher caught up`);

      t.diagnostic(`the direct watch was resumed ${String(reference.resumes())} times`);
      assert.equal(reference.log.events.length, writes, 'the direct watch saw as many events as there were writes');
      const seen = new Set(reference.log.events.map(rvOf));
      assert.deepEqual(
        [...writtenRvs].filter((rv) => !seen.has(rv)),
        [],
        'the direct watch saw every create and update',
      );
      assert.deepEqual(
        watchers.filter((w) => w.log.ended).map((w) => String(w.log.endedBy)),
        [],
        'no watcher was closed',
      );
      assertAllEqual(
        'watcher',
        watchers.map((w) => w.log),
        reference.log,
      );
      // The proxy's informer is the only upstream WATCH; the other new one is the direct watch.
      assert.equal(watchesOpen - watchesBefore - 1, 1, 'one upstream WATCH serves the 1,000 watchers');
    } finally {
      await cleanup.closeAll();
    }
    t.diagnostic(`${seconds(started)} in all`);
  },
);

test(
  'watch fan-out: a watcher that stops reading is closed at a bounded memory cost, while 100 others get every event',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const cleanup = closers();
    const started = performance.now();
    try {
      const proxy = await startConfigMapProxy(await upstreamConfigFor(shared.cp));
      cleanup.add(() => proxy.stop(0));
      const closedSlowBefore = await proxyCounter(proxy, WATCHERS_CLOSED_SLOW, { resource: 'configmaps' });
      const rv = await listResourceVersion(proxy.url, path);
      const reference = await watchApiserver(path, rv);
      cleanup.add(() => reference.close());
      const watchers: WatchStream[] = [];
      await forEachConcurrently(
        Array.from({ length: 100 }, (_, i) => i),
        50,
        async () => {
          const watch = await watchThroughProxy(proxy.url, path, rv);
          watchers.push(watch);
          cleanup.add(() => watch.close());
        },
      );

      // The slow client: sends its WATCH and never reads. Paused before it connects, Node never
      // starts reading the socket, so the kernel's receive buffer (it stays small when the reader
      // never reads; node:net cannot set SO_RCVBUF) and the proxy's send buffer fill, ~4 MiB in
      // all on loopback, and then the proxy's own backlog for it grows.
      const port = Number(new URL(proxy.url).port);
      const slow = new Socket();
      slow.pause();
      let slowClosed = false;
      let slowBytes = 0;
      const slowHead: Buffer[] = [];
      slow.on('error', () => undefined);
      slow.on('close', () => {
        slowClosed = true;
      });
      cleanup.add(async () => {
        slow.destroy();
        await eventually('the slow socket to close', () => slowClosed);
      });
      await new Promise<void>((resolve, reject) => {
        slow.once('error', reject);
        slow.connect(port, '127.0.0.1', () => {
          slow.off('error', reject);
          resolve();
        });
      });
      slow.write(`GET ${path}?watch=1&resourceVersion=${String(rv)} HTTP/1.1\r\nHost: 127.0.0.1:${String(port)}\r\n\r\n`);

      // RSS of this process, which is the proxy's too: sampled while the events flow.
      const rssBefore = process.memoryUsage().rss;
      let rssPeak = rssBefore;
      const sampler = setInterval(() => {
        rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
      }, 100);
      const stopProgress = reportProgress(t, () => {
        const delivered = watchers.reduce((sum, w) => sum + w.log.events.length, 0);
        return `direct watch ${String(reference.log.events.length)}, ${String(delivered)} events delivered to the 100, RSS +${((rssPeak - rssBefore) / MiB).toFixed(0)} MiB at most`;
      });

      // 1,000 changes of ~32 KiB objects (400 created and updated, every other one deleted):
      // ~32 MiB for each watcher. The slow one must be closed by then, so the proxy may let at
      // most ~28 MiB wait for one watcher beyond the ~4 MiB the kernel holds (its cap is 16 MiB).
      // Fewer, larger events than the first test: 100 watchers times 32 MiB is already 3.2 GiB
      // through loopback, both ends in this process.
      const blob = (v: number): string => String(v % 10).repeat(32 * 1024);
      let writes = 0;
      try {
        // 4 writers at a time: the 100 readers share this process with the proxy, and must keep
        // up (a reader more than 16 MiB behind is slow by the proxy's rule, as it should be).
        await forEachConcurrently(
          Array.from({ length: 400 }, (_, i) => i),
          4,
          async (i) => {
            const name = `cm-${String(i)}`;
            await kube(shared.admin, 'POST', path, { metadata: { name }, data: { blob: blob(i) } });
            await kube(shared.admin, 'PATCH', `${path}/${name}`, { data: { blob: blob(i + 1) } });
            writes += 2;
            if (i % 2 === 0) {
              await kube(shared.admin, 'DELETE', `${path}/${name}`, undefined, 200);
              writes++;
            }
          },
        );
        t.diagnostic(`${seconds(started)}: ${String(writes)} writes done`);
        await eventually('the direct watch to see every write', () => reference.log.events.length >= writes);
        await eventually(
          'the 100 watchers to receive as many events as the direct watch',
          () => watchers.every((w) => w.log.events.length >= writes || w.log.ended),
          60_000,
        );
      } finally {
        stopProgress();
        clearInterval(sampler);
      }
      const fastBytes = watchers[0]?.log.bytes ?? 0;
      assert.equal(reference.log.events.length, writes, 'the direct watch saw as many events as there were writes');
      t.diagnostic(
        `${seconds(started)}: the 100 caught up (${(fastBytes / MiB).toFixed(1)} MiB each); RSS ${(rssBefore / MiB).toFixed(0)} → peak ${(rssPeak / MiB).toFixed(0)} MiB`,
      );

      assert.deepEqual(
        watchers.filter((w) => w.log.ended).map((w) => String(w.log.endedBy)),
        [],
        'no reading watcher was closed',
      );
      assertAllEqual(
        'watcher',
        watchers.map((w) => w.log),
        reference.log,
      );
      // The stated bound: 400 MiB of growth for this process, which holds the proxy (101 watchers,
      // each capped at 16 MiB unsent) and the 100 readers, with the garbage collector's slack;
      // without the cap, the slow watcher alone would hold all 32 MiB of its events and more.
      assert.ok(rssPeak - rssBefore < 400 * MiB, `RSS grew by ${((rssPeak - rssBefore) / MiB).toFixed(0)} MiB (bound: 400 MiB)`);

      // A paused socket learns of nothing: read now what the kernel kept for it, to its end. A
      // watcher the proxy closed ends short of the stream the others got; one still open never ends.
      slow.on('data', (chunk: Buffer) => {
        if (slowBytes < 64) slowHead.push(chunk);
        slowBytes += chunk.length;
      });
      slow.resume();
      await eventually('the proxy to have closed the slow watcher', () => slowClosed, 30_000);
      const head = Buffer.concat(slowHead).toString('latin1');
      t.diagnostic(`the slow watcher got ${(slowBytes / MiB).toFixed(1)} MiB before it was closed`);
      assert.match(head, /^HTTP\/1\.1 200 /, 'the slow watcher was answered 200');
      assert.ok(slowBytes < fastBytes, 'the slow watcher was closed before it got every event');
      assert.ok(
        (await proxyCounter(proxy, WATCHERS_CLOSED_SLOW, { resource: 'configmaps' })) > closedSlowBefore,
        `${WATCHERS_CLOSED_SLOW}{resource="configmaps"} counted the slow watcher`,
      );
    } finally {
      await cleanup.closeAll();
    }
    t.diagnostic(`${seconds(started)} in all`);
  },
);

test(
  'watch fan-out: a 10 s cut of the upstream watch leaves client watches open, then whole; a client re-watching from its last RV gets exactly what it missed',
  { timeout: 150_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const cleanup = closers();
    const started = performance.now();
    try {
      const apiserver = new URL(shared.cp.server);
      const link = await startTcpProxy(apiserver.hostname, Number(apiserver.port));
      cleanup.add(() => link.close());
      const config = await upstreamConfigFor(shared.cp);
      const proxy = await startConfigMapProxy({ ...config, server: new URL(`https://127.0.0.1:${String(link.port)}`) });
      cleanup.add(() => proxy.stop(0));
      const rv = await listResourceVersion(proxy.url, path);
      const reference = await watchApiserver(path, rv);
      cleanup.add(() => reference.close());
      const steady: WatchStream[] = [];
      for (let i = 0; i < 10; i++) {
        const watch = await watchThroughProxy(proxy.url, path, rv);
        steady.push(watch);
        cleanup.add(() => watch.close());
      }
      // Two clients that leave during the outage: one comes back while the link is still down
      // (served by the cache alone), one once it is up again. Each keeps one log across its streams.
      const leaveEarly = await watchThroughProxy(proxy.url, path, rv);
      cleanup.add(() => leaveEarly.close());
      const leaveLate = await watchThroughProxy(proxy.url, path, rv);
      cleanup.add(() => leaveLate.close());
      const clients = (): WatchStream[] => [...steady, leaveEarly, leaveLate];

      let writes = 0;
      let counter = 0;
      /** One object's life: created, updated, deleted (3 events). */
      const churn = async (): Promise<void> => {
        const name = `cm-${String(counter++)}`;
        await kube(shared.admin, 'POST', path, { metadata: { name }, data: { v: '0' } });
        await kube(shared.admin, 'PATCH', `${path}/${name}`, { data: { v: '1' } });
        await kube(shared.admin, 'DELETE', `${path}/${name}`, undefined, 200);
        writes += 3;
      };
      const caughtUp = async (what: string, timeoutMs: number, streams: () => WatchStream[]): Promise<void> => {
        await eventually(`the direct watch to see every write (${what})`, () => reference.log.events.length >= writes);
        await eventually(
          `every client watch to hold as many events as the direct watch (${what})`,
          () => streams().every((w) => w.log.events.length >= reference.log.events.length || w.log.ended),
          timeoutMs,
        );
      };

      // Before: events flow through the proxy.
      await forEachConcurrently(
        Array.from({ length: 20 }, (_, i) => i),
        4,
        churn,
      );
      await caughtUp('before the cut', 30_000, clients);
      assertAllEqual(
        'client watch',
        clients().map((w) => w.log),
        reference.log,
      );
      t.diagnostic(`${seconds(started)}: ${String(writes)} events through the proxy before the cut`);

      // The outage: the proxy's connections to the apiserver are cut and new ones refused, while
      // the writer keeps writing straight to the apiserver.
      link.setBlocked(true);
      link.cut();
      const outageStarted = performance.now();
      let outageOver = false;
      const writer = forEachConcurrently([0, 1, 2, 3], 4, async () => {
        while (!outageOver) await churn();
      });
      const stopProgress = reportProgress(
        t,
        () => `outage: ${String(writes)} writes, direct watch ${String(reference.log.events.length)}`,
        2_000,
      );
      let earlyBack: WatchStream;
      try {
        // leaveEarly goes at once, and re-watches from its last RV while the link is still down.
        const earlyLastRv = leaveEarly.log.lastResourceVersion;
        await leaveEarly.close();
        earlyBack = await watchThroughProxy(proxy.url, path, earlyLastRv, leaveEarly.log);
        cleanup.add(() => earlyBack.close());
        await leaveLate.close();
        // The outage lasts 10 s: the duration is the scenario, not a wait for something.
        await sleep(10_000);
        outageOver = true;
        await writer;
      } finally {
        outageOver = true;
        stopProgress();
      }
      assert.deepEqual(
        steady.filter((w) => w.log.ended).map((w) => String(w.log.endedBy)),
        [],
        'every client watch stayed open through the outage',
      );
      assert.equal(earlyBack.log.ended, false, 'the client that re-watched during the outage is still watching');
      t.diagnostic(`${seconds(outageStarted)} outage, ${String(writes)} events in all`);

      // After: the link is back; leaveLate re-watches from its last RV, and a few more writes.
      link.setBlocked(false);
      const lateBack = await watchThroughProxy(proxy.url, path, leaveLate.log.lastResourceVersion, leaveLate.log);
      cleanup.add(() => lateBack.close());
      await forEachConcurrently(
        Array.from({ length: 20 }, (_, i) => i),
        4,
        churn,
      );
      const catchUpStarted = performance.now();
      // The proxy's informer re-watches after its backoff (up to ~30 s after a 10 s outage).
      await caughtUp('after the outage', 60_000, () => [...steady, earlyBack, lateBack]);
      t.diagnostic(`${seconds(catchUpStarted)} for the clients to catch up after the link came back`);

      t.diagnostic(`the direct watch was resumed ${String(reference.resumes())} times`);
      assert.equal(reference.log.events.length, writes, 'the direct watch saw every write');
      assert.deepEqual(
        [...steady, earlyBack, lateBack].filter((w) => w.log.ended).map((w) => String(w.log.endedBy)),
        [],
        'no client watch was closed',
      );
      assertAllEqual(
        'steady client watch',
        steady.map((w) => w.log),
        reference.log,
      );
      // Their logs run across both streams: equal to the reference means the second stream began
      // right after the last event of the first, with no duplicate and no gap.
      assertAllEqual('re-watching client', [leaveEarly.log, leaveLate.log], reference.log);
    } finally {
      await cleanup.closeAll();
    }
    t.diagnostic(`${seconds(started)} in all`);
  },
);
