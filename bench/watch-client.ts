/**
 * A watch fan-out client, run as its own process by watch-fanout.ts (IPC, advanced
 * serialization): opens one HTTP/1.1 watch per path with undici, records for every MODIFIED event
 * its object's resourceVersion and the monotonic time its bytes arrived, and hands the records
 * back when told to finish. It parses no JSON: it finds the line ends and the first
 * `"resourceVersion":"` of each line (the object's metadata's), so that its own cost stays small
 * beside the server's.
 *
 * Protocol: parent → {type:'start', ...WatchClientStart}; child → {type:'ready', opened, failed};
 * parent → {type:'count'} (any number of times); child → {type:'count', recorded};
 * parent → {type:'finish'}; child → {type:'result', ...WatchClientResult} and exits.
 */
import { Agent, request } from 'undici';

export interface WatchClientStart {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** PEM of the CA for an HTTPS target. */
  readonly ca: string | undefined;
  /** One watch per path (path and query). */
  readonly paths: readonly string[];
}

export interface WatchClientResult {
  /** Per record: the watcher's index in `paths`, the event's resourceVersion, its arrival (ms, CLOCK_MONOTONIC). */
  readonly watcher: Uint32Array;
  readonly rv: Float64Array;
  readonly time: Float64Array;
  /** Watches the server ended (or that failed) before finish. */
  readonly closed: number;
}

type Message = ({ type: 'start' } & WatchClientStart) | { type: 'finish' } | { type: 'count' };

/** Watches opened at once: enough to open 5,000 in seconds without a burst of handshakes. */
const OPEN_CONCURRENCY = 64;
const RV_MARK = '"resourceVersion":"';
const MODIFIED = '{"type":"MODIFIED"';

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

/** Events recorded so far (the parent polls it to know when delivery has caught up). */
let recorded = (): number => 0;

async function run(start: WatchClientStart, finished: Promise<void>): Promise<void> {
  const agent = new Agent({ connections: null, pipelining: 1, ...(start.ca === undefined ? {} : { connect: { ca: start.ca } }) });
  const records = new Records();
  recorded = () => records.length;
  let closed = 0;
  let failed = 0;
  let opened = 0;
  let finishing = false;
  const bodies: { destroy(): void }[] = [];

  const open = async (index: number, path: string): Promise<void> => {
    try {
      const res = await request(`${start.url}${path}`, {
        dispatcher: agent,
        headers: { ...start.headers, accept: 'application/json' },
        headersTimeout: 120_000,
        bodyTimeout: 0,
      });
      if (res.statusCode !== 200) {
        failed++;
        await res.body.dump();
        return;
      }
      opened++;
      bodies.push(res.body);
      let rest = '';
      res.body.setEncoding('utf8');
      res.body.on('data', (chunk: string) => {
        const now = monotonicMs();
        let text = rest + chunk;
        let end = text.indexOf('\n');
        while (end !== -1) {
          if (text.startsWith(MODIFIED)) {
            const at = text.indexOf(RV_MARK);
            if (at !== -1 && at < end) {
              const from = at + RV_MARK.length;
              records.push(index, Number(text.slice(from, text.indexOf('"', from))), now);
            }
          }
          text = text.slice(end + 1);
          end = text.indexOf('\n');
        }
        rest = text;
      });
      res.body.on('error', () => undefined);
      res.body.on('close', () => {
        if (!finishing) closed++;
      });
    } catch {
      failed++;
    }
  };

  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(OPEN_CONCURRENCY, start.paths.length) }, async () => {
      while (next < start.paths.length) {
        const index = next++;
        await open(index, start.paths[index] ?? '');
      }
    }),
  );
  process.send?.({ type: 'ready', opened, failed });
  await finished;
  finishing = true;
  const result: WatchClientResult = {
    watcher: records.watcher.slice(0, records.length),
    rv: records.rv.slice(0, records.length),
    time: records.time.slice(0, records.length),
    closed: closed + failed,
  };
  process.send?.({ type: 'result', ...result }, () => {
    for (const body of bodies) body.destroy();
    void agent.destroy().finally(() => process.exit(0));
  });
}

if (process.send !== undefined) {
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  process.on('message', (message: Message) => {
    if (message.type === 'start') void run(message, finished);
    else if (message.type === 'count') process.send?.({ type: 'count', recorded: recorded() });
    else finish();
  });
  process.on('disconnect', () => process.exit(0));
}
