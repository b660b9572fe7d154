/**
 * A client of the default read consistency (`bounded`), through the proxy, all through a fault:
 * it writes a ConfigMap of its own and reads it back without a resourceVersion (GET, then a LIST
 * of its namespace), and, in a loop of its own, reads the writer's pods the same way (a LIST,
 * and a GET of one pod).
 *
 * Read-your-writes: a read after the reader's own acknowledged write must show that write (the
 * object's RV at least the write's). Staleness: a read answered at RV x misses the writer's
 * acknowledged writes with an RV above x; its staleness is how long ago the oldest of those was
 * acknowledged, when the read was sent. Above --max-staleness it is a stale read: the bound the
 * default mode promises (cache/consistency.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import type { Dispatcher } from 'undici';
import type { AcknowledgedWrite } from '../test/helpers/watch-audit.ts';
import { podName } from '../test/helpers/pod-churn.ts';

export interface RvUnsetReaderOptions {
  /** The proxy. */
  readonly url: string;
  readonly dispatcher: Dispatcher;
  readonly namespace: string;
  /** The writer's log (growing), acknowledged writes of pods in `namespace`, in RV order. */
  readonly writes: readonly AcknowledgedWrite[];
  /** Pods the writer writes (podName(0) to podName(objects - 1)). */
  readonly objects: number;
  readonly maxStalenessMs: number;
  readonly random: () => number;
}

export interface RvUnsetReads {
  /** Reads answered 200. */
  readonly reads: number;
  /** Reads and writes that failed (expected while the upstream is away: they are passed through). */
  readonly failed: number;
  /** Reads staler than the bound. */
  readonly stale: number;
  /** Reads that missed the reader's own acknowledged write. */
  readonly rywMisses: number;
  /** The stalest read, ms. */
  readonly maxStalenessMs: number;
  readonly problems: readonly string[];
}

export interface RvUnsetReader {
  results(): RvUnsetReads;
  stop(): Promise<void>;
}

/** Between rounds (a write and two reads; two reads): a steady client, not a load test. */
const ROUND_MS = 100;
const REQUEST_TIMEOUT_MS = 10_000;
const MAX_PROBLEMS = 10;
const CONFIGMAP = 'rv-unset-reader';

export function startRvUnsetReader(options: RvUnsetReaderOptions): RvUnsetReader {
  const stopper = new AbortController();
  const counts = { reads: 0, failed: 0, stale: 0, rywMisses: 0, maxStalenessMs: 0 };
  const problems: string[] = [];
  const problem = (text: string): void => {
    if (problems.length < MAX_PROBLEMS) problems.push(text);
  };
  const base = `${options.url}/api/v1/namespaces/${options.namespace}`;

  /** A JSON request through the proxy: its status and parsed body, or undefined when it got no answer. */
  const send = async (
    method: Dispatcher.HttpMethod,
    url: string,
    body?: unknown,
  ): Promise<{ status: number; body: unknown } | undefined> => {
    try {
      const res = await request(url, {
        dispatcher: options.dispatcher,
        method,
        headers: {
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.any([stopper.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
      });
      return { status: res.statusCode, body: JSON.parse(await res.body.text()) as unknown };
    } catch {
      return undefined;
    }
  };
  /** The body of an answer with status `ok`; anything else counts as failed (unless stopping). */
  const expect = async (method: Dispatcher.HttpMethod, url: string, ok: number, body?: unknown): Promise<unknown> => {
    const res = await send(method, url, body);
    if (res?.status === ok) return res.body;
    if (!stopper.signal.aborted) counts.failed++;
    return undefined;
  };
  const rvOf = (object: unknown): number => Number((object as { metadata: { resourceVersion: string } }).metadata.resourceVersion);

  /** How stale an answer at `rv` was for a read sent at `sentAt`, given the writes it should show. */
  const staleness = (writes: readonly AcknowledgedWrite[], rv: number, sentAt: number, what: string): void => {
    const missed = writes.find((w) => w.rv > rv && w.ackedAt < sentAt);
    if (missed === undefined) return;
    const ms = sentAt - missed.ackedAt;
    counts.maxStalenessMs = Math.max(counts.maxStalenessMs, ms);
    if (ms > options.maxStalenessMs) {
      counts.stale++;
      problem(
        `${what} answered at RV ${String(rv)} misses ${missed.key}@${String(missed.rv)}, acknowledged ${(ms / 1000).toFixed(1)} s before it was sent`,
      );
    }
  };

  let created = false;
  /** Read-your-writes on the reader's own ConfigMap. */
  const ownWrite = async (): Promise<void> => {
    if (!created) {
      const res = await send('POST', `${base}/configmaps`, { metadata: { name: CONFIGMAP }, data: { n: '0' } });
      // 409: an earlier create whose answer was lost.
      created = res?.status === 201 || res?.status === 409;
      if (!created) counts.failed++;
    }
    const written = created
      ? await expect('PATCH', `${base}/configmaps/${CONFIGMAP}`, 200, { data: { n: String(Date.now()) } })
      : undefined;
    if (written !== undefined) {
      const rv = rvOf(written);
      const got = await expect('GET', `${base}/configmaps/${CONFIGMAP}`, 200);
      if (got !== undefined) {
        counts.reads++;
        if (rvOf(got) < rv) {
          counts.rywMisses++;
          problem(`GET of its own ConfigMap at RV ${String(rvOf(got))} after writing RV ${String(rv)}`);
        }
      }
      const listed = (await expect('GET', `${base}/configmaps`, 200)) as { items: unknown[] } | undefined;
      if (listed !== undefined) {
        counts.reads++;
        const own = listed.items.find((item) => (item as { metadata: { name: string } }).metadata.name === CONFIGMAP);
        if (own === undefined || rvOf(own) < rv) {
          counts.rywMisses++;
          problem(`LIST without its own ConfigMap at RV ≥ ${String(rv)} (${own === undefined ? 'absent' : `RV ${String(rvOf(own))}`})`);
        }
      }
    }
  };

  /** Staleness of the writer's pods: the list's RV, and one pod's RV. */
  const othersWrites = async (): Promise<void> => {
    let sentAt = performance.now();
    const pods = await expect('GET', `${base}/pods`, 200);
    if (pods !== undefined) {
      counts.reads++;
      staleness(options.writes, rvOf(pods), sentAt, 'LIST of pods');
    }
    const name = podName(Math.floor(options.random() * options.objects));
    sentAt = performance.now();
    const pod = await send('GET', `${base}/pods/${name}`);
    if (pod?.status === 200) {
      counts.reads++;
      const key = `${options.namespace}/${name}`;
      staleness(
        options.writes.filter((w) => w.key === key),
        rvOf(pod.body),
        sentAt,
        `GET of pod ${name}`,
      );
    } else if (pod?.status === 404) {
      // Not written yet, or deleted: nothing to compare without the deletion's moment.
      counts.reads++;
    } else if (!stopper.signal.aborted) {
      counts.failed++;
    }
  };

  // Two loops: a write through the proxy may hang for as long as its upstream link does, and the
  // reads of the cache must go on meanwhile (they are what may turn stale).
  const loop = async (round: () => Promise<void>): Promise<void> => {
    while (!stopper.signal.aborted) {
      await round();
      await sleep(ROUND_MS, undefined, { signal: stopper.signal }).catch(() => undefined);
    }
  };
  const running = Promise.all([loop(ownWrite), loop(othersWrites)]);

  return {
    results: () => ({ ...counts, problems }),
    async stop() {
      stopper.abort();
      await running;
    },
  };
}
