/**
 * `kube-cache-proxy dev-cluster up|down|env|build [--dir DIR] [--owner-pid PID]`
 *
 * Kept out of the proxy's runtime imports: only the CLI entry loads it.
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError } from '../../proxy/cli-error.ts';
import { newProgress } from '../progress.ts';
import { cacheRoot, ensureControlPlaneBinaries } from './build.ts';
import type { ControlPlaneState } from './control-plane.ts';
import { down, readState, runningProcesses, up } from './control-plane.ts';
import { attachReaper } from './reaper.ts';

export const DEV_CLUSTER_USAGE = `Usage: kube-cache-proxy dev-cluster <command> [--dir DIR]

A real local control plane (etcd + kube-apiserver, built from Go modules) on loopback.

Commands:
  up      build the binaries if needed, start etcd and kube-apiserver, write DIR/kubeconfig
  down    stop the processes that \`up\` started in DIR and remove its data
  env     print the shell lines that point kubectl at it (eval "$(... env)")
  build   only build (or find in the cache) the control-plane binaries

Options:
  --dir DIR        where the control plane keeps its state (default: ${defaultDevClusterDir()})
  --owner-pid PID  with up: stop the control plane when process PID exits (test harnesses)`;

/** $KCP_DEV_CLUSTER_DIR, else `dev-cluster` in the cache directory. */
export function defaultDevClusterDir(): string {
  return process.env.KCP_DEV_CLUSTER_DIR ?? join(cacheRoot(), 'dev-cluster');
}

/** The lines a person types to use the control plane. */
export function envLines(state: ControlPlaneState): string {
  return `export KUBECONFIG=${state.kubeconfig}\nexport PATH="${state.binaries.dir}:$PATH"`;
}

export async function devClusterCommand(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      dir: { type: 'string' },
      'owner-pid': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help === true || command === undefined) {
    console.log(DEV_CLUSTER_USAGE);
    return values.help === true ? 0 : 2;
  }
  if (rest.length > 0) throw new CliError(`unexpected arguments: ${rest.join(' ')}`, DEV_CLUSTER_USAGE);
  const dir = resolve(values.dir ?? defaultDevClusterDir());
  const progress = newProgress();

  switch (command) {
    case 'build': {
      const binaries = await ensureControlPlaneBinaries(progress);
      console.log(`control plane binaries: ${binaries.dir}`);
      return 0;
    }
    case 'up': {
      const binaries = await ensureControlPlaneBinaries(progress);
      const state = await up({ dir, binaries, progress });
      const owner = values['owner-pid'];
      if (owner !== undefined) {
        const pid = Number(owner);
        if (!Number.isInteger(pid) || pid <= 0) throw new CliError(`--owner-pid must be a process id, not ${owner}`);
        attachReaper(dir, pid);
      }
      console.log(`control plane running: ${state.server}\n${envLines(state)}\nthen: kubectl get namespaces`);
      return 0;
    }
    case 'down': {
      const { stopped } = await down(dir);
      console.log(
        stopped.length === 0 ? `nothing was running in ${dir}` : `stopped ${stopped.map((p) => `${p.name} (pid ${p.pid})`).join(', ')}`,
      );
      return 0;
    }
    case 'env': {
      const state = readState(dir);
      if (state === undefined || runningProcesses(state).length === 0) {
        throw new CliError(`no control plane is running in ${dir}`, `Start one: kube-cache-proxy dev-cluster up --dir ${dir}`);
      }
      console.log(envLines(state));
      return 0;
    }
    default:
      throw new CliError(`unknown dev-cluster command: ${command}`, DEV_CLUSTER_USAGE);
  }
}
