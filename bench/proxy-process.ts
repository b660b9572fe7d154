/**
 * The proxy in a child process that can also measure itself: `node --expose-gc
 * bench/proxy-process.ts <proxy flags>`. Does what `kube-cache-proxy proxy` does (startProxy over
 * the parsed flags), after sending the parent a baseline memory sample taken with the modules
 * loaded and nothing cached; answers 'measure' with a sample after full collections, and
 * 'loop-delay-start' then 'loop-delay' with how long its event loop was held up in between
 * (perf_hooks samples it once per free millisecond, so a long hold counts once: the events' own
 * latency, measured by their receivers, is the figure that weighs it by time).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadUpstream } from '../src/proxy/upstream.ts';
import { startProxy } from '../src/proxy/proxy.ts';
import { parseProxyOptions } from '../src/cli/proxy-options.ts';
import { answerParent, sampleMemory } from './memory-probe.ts';

/** Event-loop delay in ms, from perf_hooks' histogram (1 ms sampling). */
export interface LoopDelay {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

process.send?.({ type: 'baseline', ...sampleMemory() });
const options = parseProxyOptions(process.argv.slice(2));
const proxy = await startProxy(options, await loadUpstream(options));
console.log(`Starting to serve on ${proxy.address}`);
answerParent(() => proxy.stop(0));

let histogram: ReturnType<typeof monitorEventLoopDelay> | undefined;
process.on('message', (message: string) => {
  if (message === 'loop-delay-start') {
    histogram = monitorEventLoopDelay({ resolution: 1 });
    histogram.enable();
  }
  if (message === 'loop-delay' && histogram !== undefined) {
    histogram.disable();
    const ms = (ns: number): number => ns / 1e6;
    const delay: LoopDelay = { p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) };
    process.send?.({ type: 'loop-delay', ...delay });
  }
});
