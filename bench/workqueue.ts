/**
 * Workqueue throughput and memory: `npm run bench:workqueue` (node --expose-gc bench/workqueue.ts).
 *
 * Measures, on N string keys ("default/pod-<i>", built before timing so that their cost is not
 * counted): add of N distinct keys, add of the same N keys again while queued (the no-op path),
 * get + done of N items by one worker and by 8 async workers, the same with Prometheus metrics, addAfter of N keys and the timer
 * moving them into the queue, and the heap held by N queued items (Queue) and N waiting items
 * (DelayingQueue). Each timing is the median of ROUNDS rounds. Progress goes to stderr, results to
 * stdout. About 35 s on 2 cores.
 */
import { getHeapStatistics } from 'node:v8';
import { Registry } from 'prom-client';
import type { Clock, Timer } from '../src/clock/clock.ts';
import { newDelayingQueue } from '../src/workqueue/delaying-queue.ts';
import { newPrometheusMetricsProvider } from '../src/workqueue/prometheus-metrics.ts';
import { newQueue } from '../src/workqueue/queue.ts';
import type { Queue } from '../src/workqueue/queue.ts';

/** Items per measurement: the size of a large relist. */
const N = 1_000_000;
/** Rounds per timing; the median is reported. */
const ROUNDS = 3;
/** Workers for the concurrent get/done measurement (a controller's usual worker count range). */
const WORKERS = 8;

const collect = globalThis.gc;
if (collect === undefined) {
  process.stderr.write('run with node --expose-gc (npm run bench:workqueue)\n');
  process.exit(2);
}

const progress = (line: string): void => {
  process.stderr.write(`  ${line}\n`);
};

/** Heap in use after a full collection (bytes). */
function heapUsed(): number {
  collect?.();
  collect?.();
  return getHeapStatistics().used_heap_size;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

/** A clock moved by hand, so that addAfter's timer work is measured without waiting. */
class ManualClock implements Clock {
  #now = 0;
  #timers: { due: number; fn: () => void; cancelled: boolean }[] = [];
  now(): number {
    return this.#now;
  }
  wallNow(): number {
    return this.#now;
  }
  setTimeout(fn: () => void, ms: number): Timer {
    const timer = { due: this.#now + Math.max(0, ms), fn, cancelled: false };
    this.#timers.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
      },
    };
  }
  /** Jumps to `time`, firing due timers in order (the delaying queue keeps at most one). */
  advance(time: number): void {
    for (;;) {
      this.#timers = this.#timers.filter((t) => !t.cancelled);
      const next = this.#timers.filter((t) => t.due <= time).sort((a, b) => a.due - b.due)[0];
      if (next === undefined) break;
      this.#timers.splice(this.#timers.indexOf(next), 1);
      this.#now = Math.max(this.#now, next.due);
      next.fn();
    }
    this.#now = time;
  }
}

async function getDoneAll(q: Queue<string>, workers: number): Promise<void> {
  q.shutDown();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (;;) {
        const result = await q.get();
        if (result.shutdown) return;
        q.done(result.item);
      }
    }),
  );
}

const results = new Map<string, number[]>();

/** Runs `fn` once, timed, and records the time under `name`. */
async function measure(name: string, fn: () => void | Promise<void>): Promise<void> {
  const started = performance.now();
  await fn();
  const ms = performance.now() - started;
  results.set(name, [...(results.get(name) ?? []), ms]);
  progress(`${name}: ${ms.toFixed(0)} ms`);
}

async function main(): Promise<void> {
  const started = performance.now();
  process.stderr.write(`workqueue bench: N=${N}, ${ROUNDS} rounds, node ${process.version}\n`);
  const keys = Array.from({ length: N }, (_, i) => `default/pod-${i}`);
  const addAll = (q: Queue<string>): void => {
    for (const k of keys) q.add(k);
  };

  for (let round = 1; round <= ROUNDS; round++) {
    process.stderr.write(`round ${round}/${ROUNDS}\n`);
    collect?.();
    let q = newQueue<string>();
    await measure('Queue.add, distinct keys', () => {
      addAll(q);
    });
    await measure('Queue.add, keys already queued', () => {
      addAll(q);
    });
    await measure('Queue.get+done, 1 worker', () => getDoneAll(q, 1));

    q = newQueue<string>();
    addAll(q);
    await measure(`Queue.get+done, ${WORKERS} workers`, () => getDoneAll(q, WORKERS));

    // The same with metrics (real clock): what a named queue with a provider costs over the above.
    q = newQueue<string>({ name: 'bench', metricsProvider: newPrometheusMetricsProvider(new Registry()) });
    await measure('Queue.add, distinct keys, with metrics', () => {
      addAll(q);
    });
    await measure('Queue.get+done, 1 worker, with metrics', () => getDoneAll(q, 1));

    const clock = new ManualClock();
    const dq = newDelayingQueue<string>({ clock });
    // Delays spread over 1000 distinct ms values, so that the heap orders real work.
    await measure('DelayingQueue.addAfter, distinct keys', () => {
      keys.forEach((k, i) => {
        dq.addAfter(k, 1 + ((i * 7919) % 1000));
      });
    });
    await measure('DelayingQueue timer: waiting -> queued', () => {
      clock.advance(2000);
    });
    if (dq.len() !== N) throw new Error(`expected ${N} queued items, found ${dq.len()}`);
    dq.shutDown();
  }

  process.stderr.write('memory\n');
  const base = heapUsed();
  const q = newQueue<string>();
  addAll(q);
  const queued = heapUsed() - base;
  progress(`Queue with ${N} items: ${(queued / 2 ** 20).toFixed(1)} MiB`);
  q.shutDown();
  await getDoneAll(q, 1);

  const base2 = heapUsed();
  const dq = newDelayingQueue<string>({ clock: new ManualClock() });
  keys.forEach((k, i) => {
    dq.addAfter(k, 1 + (i % 1000));
  });
  const waiting = heapUsed() - base2;
  progress(`DelayingQueue with ${N} waiting items: ${(waiting / 2 ** 20).toFixed(1)} MiB`);
  dq.shutDown();

  const rate = (ms: number): string => `${(N / ms / 1000).toFixed(2)} Mops/s`;
  process.stdout.write(`\nworkqueue, N=${N} string keys, median of ${ROUNDS} rounds (node ${process.version})\n`);
  for (const [name, values] of results) {
    const ms = median(values);
    const line = `  ${name.padEnd(42)} ${ms.toFixed(0).padStart(6)} ms  ${rate(ms).padStart(12)}  ${((ms * 1e6) / N).toFixed(0).padStart(5)} ns/op`;
    process.stdout.write(`${line}\n`);
  }
  process.stdout.write(
    `  ${'heap: Queue, 1M queued items'.padEnd(42)} ${(queued / 2 ** 20).toFixed(1).padStart(6)} MiB  ${(queued / N).toFixed(0)} B/item\n`,
  );
  process.stdout.write(
    `  ${'heap: DelayingQueue, 1M waiting items'.padEnd(42)} ${(waiting / 2 ** 20).toFixed(1).padStart(6)} MiB  ${(waiting / N).toFixed(0)} B/item\n`,
  );
  process.stdout.write(`  (keys themselves not counted; total run ${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
}

await main();
