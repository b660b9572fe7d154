/**
 * `kube-cache-proxy start` (what `npm start` runs). Until the proxy itself lands, it brings up the
 * local control plane in the foreground, prints how to use it, and stops it on Ctrl-C.
 * A control plane already running in the directory is reused and left running.
 */
import { newProgress } from './progress.ts';
import { ensureControlPlaneBinaries } from './dev-cluster/build.ts';
import { defaultDevClusterDir, envLines } from './dev-cluster/command.ts';
import { down, readState, runningProcesses, up } from './dev-cluster/control-plane.ts';
import { attachReaper } from './dev-cluster/reaper.ts';

export async function startCommand(): Promise<number> {
  const progress = newProgress();
  const dir = defaultDevClusterDir();
  const existing = readState(dir);
  const reuse = existing !== undefined && runningProcesses(existing).length === existing.processes.length;
  const state = reuse ? existing : await up({ dir, binaries: await ensureControlPlaneBinaries(progress), progress });
  if (!reuse) attachReaper(dir, process.pid);

  console.log(`
Local control plane at ${state.server}${reuse ? ' (already running: left running on exit)' : ''}
Try it in another terminal:
  ${envLines(state).split('\n').join('\n  ')}
  kubectl get namespaces
  curl --cacert ${state.caFile} -H "Authorization: Bearer $(grep ',admin,' ${dir}/tokens.csv | cut -d, -f1)" ${state.server}/api/v1/namespaces

The caching proxy itself is not built yet. Press Ctrl-C to stop.`);

  await new Promise<void>((resolve) => {
    // Signal listeners keep no handle open: without this timer the process would exit at once.
    const keepAlive = setInterval(() => undefined, 1 << 30);
    const stop = (): void => {
      clearInterval(keepAlive);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  if (!reuse) {
    const { stopped } = await down(dir);
    console.log(`stopped ${stopped.map((p) => p.name).join(', ')}`);
  }
  return 0;
}
