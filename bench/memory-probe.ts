/** Memory of this process after full collections (needs node --expose-gc), for the child processes of the sync scenarios. */
import { getHeapStatistics } from 'node:v8';

export interface MemorySample {
  /** V8 heap in use (bytes). */
  readonly heap: number;
  /** ArrayBuffers and Buffers outside the heap (bytes). */
  readonly buffers: number;
  readonly rss: number;
}

export function sampleMemory(): MemorySample {
  const collect = globalThis.gc;
  if (collect === undefined) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i++) collect();
  return { heap: getHeapStatistics().used_heap_size, buffers: process.memoryUsage().arrayBuffers, rss: process.memoryUsage.rss() };
}

/** Answers the parent's 'measure' with a sample and 'stop' with `stop()` then exit. */
export function answerParent(stop: () => Promise<void>): void {
  process.on('message', (message: string) => {
    if (message === 'measure') process.send?.({ type: 'memory', ...sampleMemory() });
    if (message === 'stop') void stop().finally(() => process.exit(0));
  });
  process.on('disconnect', () => process.exit(0));
}
