/**
 * A watch fan-out client, run as its own process by watch-fanout.ts (IPC, advanced
 * serialization): opens one HTTP/1.1 watch per path on its own socket (net, or tls for an HTTPS
 * target), or with `protocol: 'h2'` one HTTP/2 stream per path, multiplexed over as few TLS
 * sessions (ALPN h2) as the server's SETTINGS_MAX_CONCURRENT_STREAMS allows, records for every
 * MODIFIED event its object's resourceVersion and the monotonic time its bytes arrived, and hands
 * the records back when told to finish. It measures itself between 'mark' and 'sample': its
 * event-loop delay (monitorEventLoopDelay, 1 ms resolution) and its CPU, so that the fan-out can
 * tell when the clients, not the server, were behind.
 *
 * It is as light as a client can be, so that on a 2-core machine it takes as little CPU as
 * possible from the servers it measures (an undici client per watch cost about as much CPU as
 * the proxy that served it): no HTTP library, no JSON parsing, no text decoding. It scans the
 * raw bytes (chunk-size lines and all) for each `{"type":"MODIFIED"` and the first
 * `"resourceVersion":"` after it (the object's metadata's); a frame split across reads is
 * carried to the next one from its line's start. Given `namespaces`, it records only the objects
 * whose `"namespace":"…"` is one of them between the two (metadata.namespace, which the
 * apiserver's JSON writes before metadata.resourceVersion): cluster-scoped objects not at all.
 *
 * Over h2 the DATA frames carry the watch's JSON lines with no chunk framing; the same scan reads them.
 *
 * Protocol: parent → {type:'start', ...WatchClientStart}; child → {type:'ready', opened, failed, connections};
 * parent → {type:'count'} (any number of times); child → {type:'count', recorded};
 * parent → {type:'mark'} (starts the self-measurement window), {type:'sample'}; child → {type:'sample', ...ClientSample};
 * parent → {type:'finish'}; child → {type:'result', ...WatchClientResult} and exits.
 */
import { connect as connectHttp2, constants as http2Constants } from 'node:http2';
import type { ClientHttp2Session, ClientHttp2Stream, Settings } from 'node:http2';
import { connect as connectTcp } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Histogram } from 'node:perf_hooks';
import type { Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import type { ChildProcess } from 'node:child_process';

export interface WatchClientStart {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** PEM of the CA for an HTTPS target. */
  readonly ca: string | undefined;
  /** One watch per path (path and query). */
  readonly paths: readonly string[];
  /** Per path, another base URL than `url` (plain HTTP: the fleet's node proxies, one per watch group). */
  readonly urls?: readonly string[];
  /** Only the events of objects in these namespaces are recorded (default: every event). */
  readonly namespaces?: readonly string[];
  /** 'h1' (default): a socket per watch; 'h2': streams over TLS sessions (an https `url` only). */
  readonly protocol?: WatchProtocol;
}

export type WatchProtocol = 'h1' | 'h2';

/** What a client process measured of itself between 'mark' and 'sample'. */
export interface ClientSample {
  /** Event-loop delay p99 and max, ms (monitorEventLoopDelay at 1 ms resolution: ~1 ms when idle). */
  readonly loopP99Ms: number;
  readonly loopMaxMs: number;
  /** CPU seconds (user + system) of the process, and the window's wall seconds. */
  readonly cpuSeconds: number;
  readonly seconds: number;
  /** Events recorded in the window. */
  readonly events: number;
  /**
   * The loop's delays as [ms, how many] (from the histogram's percentiles): what a time-weighted
   * reading needs, since one long stall is one sample of the histogram but holds every event
   * that arrives during it.
   */
  readonly delays: readonly (readonly [number, number])[];
}

export interface WatchClientReady {
  readonly opened: number;
  readonly failed: number;
  /** TCP connections the process holds for its watches (one per watch over h1). */
  readonly connections: number;
}

export interface WatchClientResult {
  /** Per record: the watcher's index in `paths`, the event's resourceVersion, its arrival (ms, CLOCK_MONOTONIC). */
  readonly watcher: Uint32Array;
  readonly rv: Float64Array;
  readonly time: Float64Array;
  /** Watches the server ended (or that failed) before finish. */
  readonly closed: number;
}

type Message = ({ type: 'start' } & WatchClientStart) | { type: 'finish' } | { type: 'count' } | { type: 'mark' } | { type: 'sample' };

/** Watches opened at once: enough to open 5,000 in seconds without a burst of handshakes. */
const OPEN_CONCURRENCY = 64;
const RV_MARK = Buffer.from('"resourceVersion":"');
const MODIFIED = Buffer.from('{"type":"MODIFIED"');
const HEAD_END = Buffer.from('\r\n\r\n');
const NEWLINE = 0x0a;
const QUOTE = 0x22;
/** How long a watch may take to answer its head. */
const HEAD_TIMEOUT_MS = 120_000;
/**
 * Streams per h2 session when the server advertises no limit (SETTINGS_MAX_CONCURRENT_STREAMS
 * absent means unlimited): golang.org/x/net/http2's transport assumes 1000 then
 * (transport.go, defaultMaxConcurrentStreams), as client-go would.
 */
const H2_UNADVERTISED_STREAMS = 1000;
/**
 * The h2 receive windows: as Go's transport (transport.go, transportDefaultConnFlow 1 GiB and
 * transportDefaultStreamFlow 4 MiB), so that flow control never holds a watch back here.
 */
const H2_CONNECTION_WINDOW = 1 << 30;
const H2_STREAM_WINDOW = 4 << 20;
/**
 * Loopback source addresses the watches are spread over (127.0.0.10 and up): one source address
 * has ~28,000 ephemeral ports, fewer than the 50,000 watches of one run.
 */
const SOURCE_ADDRESSES = 64;

/** Milliseconds on CLOCK_MONOTONIC: the same clock in every process, unlike performance.now(). */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

class Records {
  watcher = new Uint32Array(1 << 16);
  rv = new Float64Array(1 << 16);
  time = new Float64Array(1 << 16);
  length = 0;
  push(watcher: number, rv: number, time: number): void {
    if (this.length === this.rv.length) {
      const grow = <T extends Uint32Array | Float64Array>(a: T, make: (n: number) => T): T => {
        const b = make(a.length * 2);
        b.set(a);
        return b;
      };
      this.watcher = grow(this.watcher, (n) => new Uint32Array(n));
      this.rv = grow(this.rv, (n) => new Float64Array(n));
      this.time = grow(this.time, (n) => new Float64Array(n));
    }
    this.watcher[this.length] = watcher;
    this.rv[this.length] = rv;
    this.time[this.length] = time;
    this.length++;
  }
}

/** Sends a protocol message to a watch client process (the parent's side). */
export function send(child: ChildProcess, message: unknown): void {
  child.send(message as Parameters<ChildProcess['send']>[0]);
}

/** The client's next message of `type`; rejects if it exits first (the parent's side). */
export function nextMessage<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: { type: string }): void => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message as T);
    };
    const onExit = (code: number | null): void => {
      reject(new Error(`watch client exited (${String(code)}) before '${type}'`));
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Events recorded so far (the parent polls it to know when delivery has caught up). */
let recorded = (): number => 0;

/** The decimal number in `buffer` [start, end): a resourceVersion. */
function decimal(buffer: Buffer, start: number, end: number): number {
  let value = 0;
  for (let i = start; i < end; i++) value = value * 10 + ((buffer[i] ?? 0x30) - 0x30);
  return value;
}

function mentionsAny(head: Buffer, marks: readonly Buffer[]): boolean {
  return marks.some((mark) => head.includes(mark));
}

/**
 * Records the MODIFIED events of the complete lines of `data` [0, end); with `namespaces` (each
 * `"namespace":"<ns>"`), only those with one of them before their resourceVersion.
 */
function scan(data: Buffer, end: number, index: number, now: number, records: Records, namespaces: readonly Buffer[] | undefined): void {
  let at = data.indexOf(MODIFIED);
  while (at !== -1 && at < end) {
    const mark = data.indexOf(RV_MARK, at);
    if (mark === -1 || mark >= end) return;
    const from = mark + RV_MARK.length;
    const to = data.indexOf(QUOTE, from);
    if (namespaces === undefined || mentionsAny(data.subarray(at, mark), namespaces)) records.push(index, decimal(data, from, to), now);
    at = data.indexOf(MODIFIED, to);
  }
}

interface Endpoint {
  readonly tls: boolean;
  readonly host: string;
  readonly port: number;
  readonly headers: string;
}

function endpoint(base: string, start: WatchClientStart): Endpoint {
  const url = new URL(base);
  const tls = url.protocol === 'https:';
  const port = Number(url.port === '' ? (tls ? 443 : 80) : url.port);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const headers = Object.entries({ ...start.headers, accept: 'application/json', host: url.host, connection: 'close' })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return { tls, host, port, headers };
}

async function run(start: WatchClientStart, finished: Promise<void>): Promise<void> {
  const endpoints = new Map<string, Endpoint>();
  const endpointOf = (index: number): Endpoint => {
    const base = start.urls?.[index] ?? start.url;
    let found = endpoints.get(base);
    if (found === undefined) {
      found = endpoint(base, start);
      endpoints.set(base, found);
    }
    return found;
  };
  const records = new Records();
  recorded = () => records.length;
  const namespaces = start.namespaces?.map((ns) => Buffer.from(`"namespace":"${ns}"`));
  let closed = 0;
  let failed = 0;
  let opened = 0;
  let finishing = false;
  const sockets: Socket[] = [];
  const sessions: ClientHttp2Session[] = [];
  const streams: ClientHttp2Stream[] = [];

  /** Records the complete lines of a watch's bytes as they arrive, carrying a split line to the next read. */
  const reader = (index: number): ((data: Buffer, now: number) => void) => {
    let carry: Buffer | undefined;
    return (chunk, now) => {
      const data = carry === undefined ? chunk : Buffer.concat([carry, chunk]);
      const last = data.lastIndexOf(NEWLINE);
      if (last === -1) {
        carry = data;
        return;
      }
      scan(data, last + 1, index, now, records, namespaces);
      carry = last + 1 < data.length ? Buffer.from(data.subarray(last + 1)) : undefined;
    };
  };

  /** Resolves once the watch's head has arrived (true: 200) or it failed. */
  const open = (index: number, path: string): Promise<boolean> =>
    new Promise((resolve) => {
      const { tls, host, port, headers } = endpointOf(index);
      const localAddress = host === '127.0.0.1' ? `127.0.0.${String(10 + (index % SOURCE_ADDRESSES))}` : undefined;
      const socket = tls
        ? connectTls({ host, port, ca: start.ca, ALPNProtocols: ['http/1.1'], ...(localAddress === undefined ? {} : { localAddress }) })
        : connectTcp({ host, port, ...(localAddress === undefined ? {} : { localAddress }) });
      socket.setNoDelay(true);
      sockets.push(socket);
      let head: Buffer | undefined = Buffer.alloc(0);
      const read = reader(index);
      let answered = false;
      const answer = (ok: boolean): void => {
        if (answered) return;
        answered = true;
        clearTimeout(timer);
        resolve(ok);
      };
      const timer = setTimeout(() => {
        socket.destroy();
        answer(false);
      }, HEAD_TIMEOUT_MS);
      socket.on('data', (chunk: Buffer) => {
        const now = monotonicMs();
        let data = chunk;
        if (head !== undefined) {
          head = Buffer.concat([head, chunk]);
          const end = head.indexOf(HEAD_END);
          if (end === -1) return;
          if (!head.subarray(0, 16).toString('latin1').startsWith('HTTP/1.1 200')) {
            socket.destroy();
            answer(false);
            return;
          }
          data = head.subarray(end + HEAD_END.length);
          head = undefined;
          answer(true);
        }
        read(data, now);
      });
      socket.on('error', () => undefined);
      socket.on('close', () => {
        if (!answered) answer(false);
        else if (!finishing) closed++;
      });
      socket.write(`GET ${path} HTTP/1.1\r\n${headers}\r\n`);
    });

  /** An h2 session of `url`'s origin and the streams it may still take (from its SETTINGS). */
  interface Session {
    readonly session: ClientHttp2Session;
    readonly max: number;
    reserved: number;
  }
  const connectSession = (): Promise<Session> =>
    new Promise((resolve, reject) => {
      const session = connectHttp2(start.url, {
        ...(start.ca === undefined ? {} : { ca: start.ca }),
        settings: { initialWindowSize: H2_STREAM_WINDOW, enablePush: false },
        maxSessionMemory: 64,
      });
      sessions.push(session);
      session.on('error', reject);
      session.once('remoteSettings', (settings: Settings) => {
        session.setLocalWindowSize(H2_CONNECTION_WINDOW);
        const advertised = settings.maxConcurrentStreams;
        const max = advertised === undefined || advertised >= 2 ** 31 ? H2_UNADVERTISED_STREAMS : advertised;
        resolve({ session, max, reserved: 0 });
      });
    });
  // Streams go to the newest session until it is full, then to a new one: as few connections as the server allows.
  let pending: Promise<Session> | undefined;
  const acquire = async (): Promise<Session> => {
    for (;;) {
      pending ??= connectSession();
      const current = pending;
      const found = await current;
      if (found.reserved < found.max && !found.session.closed && !found.session.destroyed) {
        found.reserved++;
        return found;
      }
      if (pending === current) pending = undefined;
    }
  };
  const headers = { ...start.headers, accept: 'application/json' };
  /** Resolves once the stream's response headers arrived (true: 200) or it failed. */
  const openStream = async (index: number, path: string): Promise<boolean> => {
    let session: Session;
    try {
      session = await acquire();
    } catch {
      pending = undefined;
      return false;
    }
    return new Promise((resolve) => {
      const stream = session.session.request({ ...headers, ':method': 'GET', ':path': path }, { endStream: true });
      streams.push(stream);
      const read = reader(index);
      let answered = false;
      const answer = (ok: boolean): void => {
        if (answered) return;
        answered = true;
        clearTimeout(timer);
        resolve(ok);
      };
      const timer = setTimeout(() => {
        stream.close(http2Constants.NGHTTP2_CANCEL);
        answer(false);
      }, HEAD_TIMEOUT_MS);
      stream.on('response', (head) => {
        if (head[':status'] !== 200) {
          stream.close(http2Constants.NGHTTP2_CANCEL);
          answer(false);
          return;
        }
        answer(true);
      });
      stream.on('data', (chunk: Buffer) => {
        read(chunk, monotonicMs());
      });
      stream.on('error', () => undefined);
      stream.on('close', () => {
        if (!answered) answer(false);
        else if (!finishing) closed++;
      });
    });
  };

  const h2 = start.protocol === 'h2';
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(OPEN_CONCURRENCY, start.paths.length) }, async () => {
      while (next < start.paths.length) {
        const index = next++;
        const path = start.paths[index] ?? '';
        if (await (h2 ? openStream(index, path) : open(index, path))) opened++;
        else failed++;
      }
    }),
  );
  const ready: WatchClientReady = { opened, failed, connections: h2 ? sessions.length : sockets.length };
  process.send?.({ type: 'ready', ...ready });
  await finished;
  finishing = true;
  const result: WatchClientResult = {
    watcher: records.watcher.slice(0, records.length),
    rv: records.rv.slice(0, records.length),
    time: records.time.slice(0, records.length),
    closed: closed + failed,
  };
  process.send?.({ type: 'result', ...result }, () => {
    for (const socket of sockets) socket.destroy();
    for (const stream of streams) stream.destroy();
    for (const session of sessions) session.destroy();
    process.exit(0);
  });
}

/** The histogram's delays as [ms, samples]: each percentile's value, with the samples between it and the one before. */
function delaysOf(histogram: Histogram): [number, number][] {
  const delays: [number, number][] = [];
  let before = 0;
  for (const [percentile, ns] of histogram.percentiles) {
    const samples = ((percentile - before) / 100) * histogram.count;
    before = percentile;
    if (samples > 0) delays.push([ns / 1e6, samples]);
  }
  return delays;
}

if (process.send !== undefined) {
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  let mark = { cpu: process.cpuUsage(), time: monotonicMs(), events: 0 };
  process.on('message', (message: Message) => {
    if (message.type === 'start') void run(message, finished);
    else if (message.type === 'count') process.send?.({ type: 'count', recorded: recorded() });
    else if (message.type === 'mark') {
      loop.reset();
      mark = { cpu: process.cpuUsage(), time: monotonicMs(), events: recorded() };
    } else if (message.type === 'sample') {
      const cpu = process.cpuUsage(mark.cpu);
      const sample: ClientSample = {
        loopP99Ms: loop.percentile(99) / 1e6,
        loopMaxMs: loop.max / 1e6,
        cpuSeconds: (cpu.user + cpu.system) / 1e6,
        seconds: (monotonicMs() - mark.time) / 1000,
        events: recorded() - mark.events,
        delays: delaysOf(loop),
      };
      process.send?.({ type: 'sample', ...sample });
    } else finish();
  });
  process.on('disconnect', () => process.exit(0));
}
