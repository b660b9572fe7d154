/**
 * `kube-cache-proxy start [proxy flags]` (what `npm start` runs): the proxy in the foreground.
 * When a cluster is configured (--kubeconfig / KCP_KUBECONFIG, $KUBECONFIG, ~/.kube/config, or
 * the in-cluster service account) it proxies that cluster, exactly as `proxy` does. Otherwise it
 * brings up the local control plane first, serves in front of it, prints what to try, and on
 * Ctrl-C stops the proxy and the control plane it started. A control plane already running in
 * the directory is reused and left running.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { waitForSignal } from './proxy-command.ts';
import { startProxy } from '../proxy/proxy.ts';
import { loadUpstream } from '../proxy/upstream.ts';
import type { RunningProxy } from '../proxy/proxy.ts';
import { parseProxyOptions } from './proxy-options.ts';
import type { ProxyOptions } from '../proxy/options.ts';
import { PROXY_USAGE } from './proxy-command.ts';
import { STATUS_JSON_PATH, STATUS_PAGE_PATH } from '../status/status-routes.ts';

/** client-node's (and client-go's) in-cluster token file. */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * Where the cluster's configuration comes from, or undefined when none is configured, in the
 * order kubectl (and loadUpstreamConfig) looks.
 */
export function configuredCluster(
  options: Pick<ProxyOptions, 'kubeconfig'>,
  env: NodeJS.ProcessEnv = process.env,
  home: string = homedir(),
  exists: (path: string) => boolean = existsSync,
): string | undefined {
  if (options.kubeconfig !== undefined) return options.kubeconfig;
  if (env.KUBECONFIG !== undefined && env.KUBECONFIG !== '') return `$KUBECONFIG (${env.KUBECONFIG})`;
  const own = join(home, '.kube', 'config');
  if (exists(own)) return own;
  if (env.KUBERNETES_SERVICE_HOST !== undefined && env.KUBERNETES_SERVICE_HOST !== '' && exists(SERVICE_ACCOUNT_TOKEN)) {
    return 'the in-cluster service account';
  }
  return undefined;
}

/** What to try: kubectl, curl, and the status page (a browser, or its JSON on a socket). */
function tryLines(proxy: RunningProxy, socket: string | undefined): string {
  if (proxy.url === undefined) {
    const at = `curl --unix-socket ${socket ?? proxy.address} http://localhost`;
    return `  ${at}/api/v1/namespaces\n  ${at}${STATUS_JSON_PATH}   (the cache's status, JSON)`;
  }
  return [
    `  kubectl --server ${proxy.url} get ns`,
    `  curl ${proxy.url}/api/v1/namespaces`,
    `Status page (what is cached, how fresh, the load taken off the apiserver): ${proxy.url}${STATUS_PAGE_PATH}`,
  ].join('\n');
}

export async function startCommand(argv: readonly string[] = []): Promise<number> {
  const options = parseProxyOptions(argv);
  if (options.help) {
    console.log(PROXY_USAGE.replace('kube-cache-proxy proxy', 'kube-cache-proxy start'));
    return 0;
  }
  const cluster = configuredCluster(options);
  if (cluster !== undefined) {
    const proxy = await startProxy(options, await loadUpstream(options));
    console.log(`Starting to serve on ${proxy.address}
Proxying the cluster of ${cluster}. Try it in another terminal:
${tryLines(proxy, options.unixSocket)}
Press Ctrl-C to stop.`);
    await waitForSignal();
    await proxy.stop();
    return 0;
  }

  // No cluster: the local control plane. Loaded here only, so a proxy never imports its code.
  const { newProgress } = await import('./progress.ts');
  const { ensureControlPlaneBinaries } = await import('./dev-cluster/build.ts');
  const { defaultDevClusterDir, envLines } = await import('./dev-cluster/command.ts');
  const { down, readState, runningProcesses, up } = await import('./dev-cluster/control-plane.ts');
  const { attachReaper } = await import('./dev-cluster/reaper.ts');

  const progress = newProgress();
  const dir = defaultDevClusterDir();
  const existing = readState(dir);
  const reuse = existing !== undefined && runningProcesses(existing).length === existing.processes.length;
  const state = reuse ? existing : await up({ dir, binaries: await ensureControlPlaneBinaries(progress), progress });
  if (!reuse) attachReaper(dir, process.pid);

  let proxy: RunningProxy;
  try {
    proxy = await startProxy(options, await loadUpstream({ kubeconfig: state.kubeconfig, context: undefined }));
  } catch (error) {
    if (!reuse) await down(dir);
    throw error;
  }
  console.log(`
Starting to serve on ${proxy.address}
No cluster is configured: proxying the local control plane at ${state.server}${reuse ? ' (already running: left running on exit)' : ''}.
Try it in another terminal:
${tryLines(proxy, options.unixSocket)}
The control plane itself:
  ${envLines(state).split('\n').join('\n  ')}
  kubectl get namespaces

Press Ctrl-C to stop.`);

  await waitForSignal();
  await proxy.stop();
  console.log('proxy stopped');
  if (!reuse) {
    const { stopped } = await down(dir);
    console.log(`stopped ${stopped.map((p) => p.name).join(', ')}`);
  }
  return 0;
}
