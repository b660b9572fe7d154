/**
 * The proxy in a child process that can also measure itself: `node --expose-gc
 * bench/proxy-process.ts <proxy flags>`. Does what `kube-cache-proxy proxy` does (startProxy over
 * the parsed flags), after sending the parent a baseline memory sample taken with the modules
 * loaded and nothing cached; answers 'measure' with a sample after full collections.
 */
import { loadUpstream, startProxy } from '../src/cli/proxy-command.ts';
import { parseProxyOptions } from '../src/cli/proxy-options.ts';
import { answerParent, sampleMemory } from './memory-probe.ts';

process.send?.({ type: 'baseline', ...sampleMemory() });
const options = parseProxyOptions(process.argv.slice(2));
const proxy = await startProxy(options, await loadUpstream(options));
console.log(`Starting to serve on ${proxy.address}`);
answerParent(() => proxy.stop(0));
