/**
 * A writer for the chaos run and its e2e scenario: creates, updates and deletes pods of one
 * namespace at a steady rate, straight at the apiserver, and logs each write the apiserver
 * acknowledged with the resourceVersion of its answer (watch-audit.ts checks the watchers
 * against that log). Pods, not ConfigMaps: a pod's DELETE answers with the deleted object at the
 * deletion's resourceVersion (a ConfigMap's answers with a Status), so deletes are checked too.
 *
 * Across an outage each write is retried until the apiserver answers it: a write whose answer was
 * lost may have happened (its retry then meets 409 or 404, and the writer learns the state), so
 * the watchers may see changes the log lacks; the log holds only what was acknowledged.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { UpstreamClient } from '../../src/upstream/client.ts';
import type { AcknowledgedWrite } from './watch-audit.ts';

export interface PodChurnOptions {
  /** Straight to the apiserver, not through the proxy under test. */
  readonly client: UpstreamClient;
  readonly namespace: string;
  /** Distinct pods written (pod-000, pod-001, ...). */
  readonly objects: number;
  readonly writesPerSecond: number;
  /** Seeded: which pod, and whether an update or a delete. */
  readonly random: () => number;
  /** Bytes of an annotation on every write: big events for slow readers (default 0). */
  readonly padBytes?: number;
  /** Share of the writes to an existing pod that delete it (default 0.1). */
  readonly deleteShare?: number;
  /** Milliseconds on the watchers' clock; default performance.now. */
  readonly now?: () => number;
}

export interface PodChurn {
  /** Acknowledged writes, in the order of their answers. */
  readonly writes: readonly AcknowledgedWrite[];
  /** Attempts that failed (refused, 5xx, timed out) and were retried. */
  failures(): number;
  /**
   * Writes at the rate until `done()` (asked before each write) says stop; resolves after the last
   * write's answer. `signal` gives up at once (a write in flight is abandoned).
   */
  run(done: () => boolean, signal?: AbortSignal): Promise<void>;
  /** No writes for `ms` from the next one on (the type goes quiet); resolves when they resume. */
  pause(ms: number): Promise<void>;
}

/** Between attempts of a failed write: often enough to notice the apiserver's return at once. */
const RETRY_MS = 100;
/** A write the apiserver has not answered in this long is abandoned and retried (etcd may be down). */
const WRITE_TIMEOUT_MS = 10_000;
const POD_IMAGE = 'registry.k8s.io/pause:3.10';

export function podName(i: number): string {
  return `pod-${String(i).padStart(3, '0')}`;
}

export function newPodChurn(options: PodChurnOptions): PodChurn {
  const now = options.now ?? (() => performance.now());
  const deleteShare = options.deleteShare ?? 0.1;
  const pad = 'x'.repeat(options.padBytes ?? 0);
  const exists = new Array<boolean>(options.objects).fill(false);
  const writes: AcknowledgedWrite[] = [];
  /** When a pause ends (now() ms). */
  let pausedUntil = Number.NEGATIVE_INFINITY;
  const base = `/api/v1/namespaces/${options.namespace}/pods`;
  let failures = 0;
  let counter = 0;

  /** One attempt: the acknowledged write, 'changed' when the pod's existence was not what we thought, or 'failed'. */
  const attempt = async (i: number, signal: AbortSignal): Promise<AcknowledgedWrite | 'changed' | 'failed'> => {
    const name = podName(i);
    const annotations: Record<string, string> = { 'chaos/n': String(++counter) };
    if (pad !== '') annotations['chaos/pad'] = pad;
    const deleting = exists[i] === true && options.random() < deleteShare;
    const request = {
      signal: AbortSignal.any([signal, AbortSignal.timeout(WRITE_TIMEOUT_MS)]),
      ...(exists[i] !== true
        ? {
            method: 'POST' as const,
            path: base,
            body: JSON.stringify({
              metadata: { name, labels: { app: 'chaos' }, annotations },
              spec: { containers: [{ name: 'app', image: POD_IMAGE }] },
            }),
          }
        : deleting
          ? { method: 'DELETE' as const, path: `${base}/${name}?gracePeriodSeconds=0` }
          : {
              method: 'PATCH' as const,
              path: `${base}/${name}`,
              headers: { 'content-type': 'application/merge-patch+json' },
              body: JSON.stringify({ metadata: { annotations } }),
            }),
    };
    let res;
    try {
      res = await options.client.request(request);
    } catch {
      return 'failed';
    }
    const ok = request.method === 'POST' ? 201 : 200;
    if (res.statusCode === ok) {
      const rv = Number((JSON.parse(res.body.toString()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
      exists[i] = request.method !== 'DELETE';
      const type = request.method === 'POST' ? 'ADDED' : request.method === 'DELETE' ? 'DELETED' : 'MODIFIED';
      return { key: `${options.namespace}/${name}`, type, rv, ackedAt: now() };
    }
    // A create or delete whose answer was lost earlier happened after all.
    if (res.statusCode === 409 && request.method === 'POST') {
      exists[i] = true;
      return 'changed';
    }
    if (res.statusCode === 404 && request.method !== 'POST') {
      exists[i] = false;
      return 'changed';
    }
    return 'failed';
  };

  const write = async (signal: AbortSignal): Promise<void> => {
    const i = Math.floor(options.random() * options.objects);
    for (;;) {
      signal.throwIfAborted();
      const result = await attempt(i, signal);
      if (result === 'changed') continue;
      if (result !== 'failed') {
        writes.push(result);
        return;
      }
      failures++;
      await sleep(RETRY_MS, undefined, { signal });
    }
  };

  return {
    writes,
    failures: () => failures,
    async pause(ms) {
      pausedUntil = now() + ms;
      await sleep(ms);
    },
    async run(done, signal = new AbortController().signal) {
      const interval = 1000 / options.writesPerSecond;
      let next = now();
      while (!done()) {
        const paused = pausedUntil - now();
        if (paused > 0) await sleep(paused, undefined, { signal });
        await write(signal);
        // Paced from the schedule, but no burst to catch up after an outage.
        next = Math.max(next + interval, now());
        const wait = next - now();
        if (wait > 0) await sleep(wait, undefined, { signal });
      }
    },
  };
}
