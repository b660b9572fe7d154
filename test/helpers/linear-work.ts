/**
 * Runs a src/ module's code on a worst-case input in a worker thread, and
 * fails when it has not returned within a watchdog far beyond linear work: the proof that a
 * parser is not quadratic in a client's input (a 1 MiB header, path or query value), where
 * nothing else can be observed. Linear work on 1 MiB takes tens of milliseconds; the quadratic
 * forms these tests guard against took from seconds (64 KiB) to hours (1 MiB). The worker is
 * terminated at the watchdog (a function spinning on the main thread could not be stopped),
 * so a regression fails the test instead of hanging the run. A watchdog, not a timing: no
 * figure is asserted, and the margin is three orders of magnitude.
 */
import { Worker } from 'node:worker_threads';

/** The watchdog: ~1000 times what linear work on 1 MiB takes on a loaded 2-core machine. */
const WATCHDOG_MS = 30_000;

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
import(workerData.url).then((m) => {
  const result = new Function('return ' + workerData.run)()(m);
  parentPort.postMessage({ result: JSON.stringify(result === undefined ? null : result, (_, v) => (typeof v === 'bigint' ? String(v) : v instanceof Map ? [...v] : v)) });
}, (error) => parentPort.postMessage({ error: String(error) }));
`;

/**
 * Calls `run` with the module at `url` (its exports) in a worker, and resolves what it returns in
 * JSON; rejects when it throws or is still working at the watchdog. `run`'s source is what is
 * sent: it may use no variable from around it, and builds its 1 MiB input itself.
 */
export function runsInLinearTime(url: URL, run: (module: never) => unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER, { eval: true, workerData: { url: url.href, run: run.toString() } });
    const watchdog = setTimeout(() => {
      void worker.terminate();
      reject(new Error(`still working after ${WATCHDOG_MS} ms: more than linear in its input`));
    }, WATCHDOG_MS);
    worker.once('message', (message: { result?: string; error?: string }) => {
      clearTimeout(watchdog);
      void worker.terminate();
      if (message.error !== undefined) reject(new Error(message.error));
      else resolve(message.result ?? 'null');
    });
    worker.once('error', (error: Error) => {
      clearTimeout(watchdog);
      reject(error);
    });
  });
}
