/**
 * `kube-cache-proxy proxy [flags]`: the proxy in the foreground, like `kubectl proxy`
 * (kubectl's pkg/cmd/proxy/proxy.go, RunProxy): it prints `Starting to serve on ADDRESS`, then
 * serves until SIGTERM or SIGINT, when it stops accepting, lets in-flight requests finish for a
 * bounded grace period, closes what is still open (long watches), and exits 0. The proxy itself
 * is composed in src/proxy/proxy.ts.
 */
import { startProxy } from '../proxy/proxy.ts';
import { loadUpstream } from '../proxy/upstream.ts';
import { PROXY_FLAGS_USAGE } from './proxy-flags.ts';
import { parseProxyOptions } from './proxy-options.ts';

export const PROXY_USAGE = `Usage: kube-cache-proxy proxy [options]

Runs the caching proxy in front of the cluster's apiserver, in the foreground, until SIGTERM or
SIGINT. Clients talk to it as to the apiserver: kubectl --server http://127.0.0.1:8001 get ns

Apps whose client refuses plain HTTP (@kubernetes/client-node) get HTTPS and a kubeconfig:
  kube-cache-proxy proxy --tls-generate --write-kubeconfig /var/run/kube-cache-proxy/kubeconfig
  KUBECONFIG=/var/run/kube-cache-proxy/kubeconfig kubectl get pods

${PROXY_FLAGS_USAGE}`;

/**
 * Resolves at the first SIGTERM or SIGINT. The handlers are once-only: a second signal during
 * shutdown gets the default action and ends the process at once.
 */
export function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    // Signal listeners keep no handle open: this timer keeps the process alive until a signal.
    const keepAlive = setInterval(() => undefined, 1 << 30);
    const onSignal = (signal: NodeJS.Signals): void => {
      clearInterval(keepAlive);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

export async function proxyCommand(argv: readonly string[]): Promise<number> {
  const options = parseProxyOptions(argv);
  if (options.help) {
    console.log(PROXY_USAGE);
    return 0;
  }
  const proxy = await startProxy(options, await loadUpstream(options));
  // kubectl proxy's line (RunProxy), so scripts that read the chosen port (--port 0) keep working.
  console.log(`Starting to serve on ${proxy.address}`);
  if (proxy.metricsAddress !== undefined) console.log(`Serving metrics and health on ${proxy.metricsAddress}`);
  const signal = await waitForSignal();
  proxy.app.log.info({ signal }, 'shutting down');
  await proxy.stop();
  return 0;
}
