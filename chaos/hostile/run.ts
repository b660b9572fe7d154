/**
 * The hostile-client suite: `npm run chaos -- hostile [attack...] [--flags]` or `node
 * chaos/hostile/run.ts ...` (`--help` lists them). Not part of `npm test`; a short scenario of it
 * is (test/e2e/chaos/hostile.test.ts).
 *
 * Brings up a control plane of its own (dev-cluster, in --dir), the tenants (tenants.ts), and
 * kube-cache-proxy in shared mode as its own process (hostile-proxy.ts: HTTPS, --memory-limit and
 * a memory cgroup of that size, deploy/shared-rbac's ServiceAccount, caching pods, ConfigMaps and
 * Services); the good clients in a process of their own under `nice` (good-clients.ts); then a
 * baseline phase and each attack (attacks.ts) in turn, each on a fresh proxy (scenario.ts), and
 * prints a row of figures per phase with its verdict against the bounds. Exits 1 when a bound
 * breaks. Progress goes to stderr, the table to stdout; the proxy's warnings to DIR/proxy.log.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { ensureControlPlaneBinaries } from '../../src/cli/dev-cluster/build.ts';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';
import { down, readState, runningProcesses, up } from '../../src/cli/dev-cluster/control-plane.ts';
import { attachReaper } from '../../src/cli/dev-cluster/reaper.ts';
import { KUBERNETES_VERSION } from '../../src/cli/dev-cluster/versions.ts';
import { formatDuration, newProgress } from '../../src/cli/progress.ts';
import type { Progress } from '../../src/cli/progress.ts';
import type { UpstreamClient } from '../../src/upstream/client.ts';
import { newUpstreamClient } from '../../src/upstream/client.ts';
import { loadUpstreamConfig } from '../../src/upstream/config.ts';
import { kube } from '../../test/helpers/kube.ts';
import { ATTACKS } from './attacks.ts';
import type { GoodClients } from './good-clients.ts';
import { spawnGoodClients } from './good-clients.ts';
import type { HostileProxy } from './hostile-proxy.ts';
import { newHostileProxy } from './hostile-proxy.ts';
import type { ThreadNiceness } from './niceness.ts';
import { reniceProcess, restoreNiceness } from './niceness.ts';
import type { HostileOptions } from './options.ts';
import { HOSTILE_USAGE, parseHostileOptions } from './options.ts';
import type { PhaseRow } from './scenario.ts';
import { brokenBounds, runScenario } from './scenario.ts';
import { COLUMNS_NOTE, formatDetails, formatTable } from './table.ts';
import type { Tenants } from './tenants.ts';
import { makeTenants, waitForGrants } from './tenants.ts';

/** What the proxy caches: the good clients' pods and ConfigMaps, the attacks' Services. */
export const RESOURCES = 'pods,configmaps,services';
/** Pods each good namespace's writer writes. */
export const PODS_PER_NAMESPACE = 10;

export async function runHostile(argv: readonly string[]): Promise<number> {
  let parsed: HostileOptions | 'help';
  try {
    parsed = parseHostileOptions(argv);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${HOSTILE_USAGE}\n`);
    return 2;
  }
  if (parsed === 'help') {
    console.log(HOSTILE_USAGE);
    return 0;
  }
  const options = parsed;
  const started = performance.now();
  const progress = newProgress((line) => process.stderr.write(`${line}\n`), 10_000);
  const log = (line: string): void => {
    progress.log(`[${formatDuration(performance.now() - started)}] ${line}`);
  };
  const autogroup = autogroupEnabled();
  if (autogroup)
    log(
      `the kernel's autogroup is on: niceness orders only the processes of one session, and a control plane started in another (--control-plane) shares the CPU with the proxy as an equal; as root: echo 0 > ${AUTOGROUP}`,
    );

  let admin: UpstreamClient | undefined;
  let tenants: Tenants | undefined;
  let proxy: HostileProxy | undefined;
  let good: GoodClients | undefined;
  let restoreControlPlane = (): void => undefined;
  const cleanUp = async (): Promise<void> => {
    restoreControlPlane();
    await good?.stop().catch(() => undefined);
    await proxy?.close();
    await tenants?.remove();
    await admin?.close();
    if (options.controlPlane === undefined) await down(options.dir);
  };
  const interrupted = (signal: NodeJS.Signals): void => {
    process.stderr.write(`\n${signal}: stopping the clients, the proxy and the control plane\n`);
    void cleanUp().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);

  let rows: PhaseRow[] = [];
  let failure: string | undefined;
  try {
    const state =
      options.controlPlane === undefined ? await startControlPlane(options.dir, progress) : runningControlPlane(options.controlPlane);
    restoreControlPlane = reniceControlPlane(state, log);
    admin = newUpstreamClient(await loadUpstreamConfig({ kubeconfig: state.kubeconfig }), { connections: 16 });
    // Named apart from an earlier run's on a control plane that outlives the run (--control-plane).
    const run = randomBytes(2).toString('hex');
    const goodNamespaces = Array.from({ length: options.namespaces }, (_, i) => `hostile-${run}-good-${String(i)}`);
    const attackNamespace = `hostile-${run}-attack`;
    for (const name of [...goodNamespaces, attackNamespace]) await kube(admin, 'POST', '/api/v1/namespaces', { metadata: { name } });
    const step = progress.step(`making ${String(options.clients)} good identities and the attackers`);
    tenants = await makeTenants({
      admin,
      goodNamespaces,
      attackNamespace,
      clients: options.clients,
      services: options.services,
      suffix: `hostile-${run}`,
      progress: log,
    });
    await waitForGrants(state, tenants);
    step.done();
    proxy = await newHostileProxy({
      state,
      token: tenants.proxyToken,
      resources: RESOURCES,
      memoryLimit: options.memoryLimit,
      memoryLimitBytes: options.memoryLimitBytes,
      cgroup: true,
      logFile: join(options.controlPlane ?? options.dir, 'proxy.log'),
    });
    const proxyStep = progress.step(`starting kube-cache-proxy --shared (caching ${RESOURCES}, --memory-limit ${options.memoryLimit})`);
    await proxy.start();
    proxyStep.done(
      `${proxy.url}${proxy.noCgroup === undefined ? `, in a ${options.memoryLimit} memory cgroup` : `, no memory cgroup: ${proxy.noCgroup}`}`,
    );
    good = await spawnGoodClients(
      {
        url: proxy.url,
        ca: proxy.ca,
        clients: tenants.good,
        configMaps: tenants.configMaps,
        readRate: options.readRate,
        writeRate: options.writeRate,
        podsPerNamespace: PODS_PER_NAMESPACE,
        adminKubeconfig: state.kubeconfig,
        seed: options.seed,
      },
      log,
    );
    rows = await runScenario({
      proxy,
      good,
      env: { url: proxy.url, ca: proxy.ca, tenants, admin, log },
      attacks: options.attacks.map((name) => ATTACKS[name]),
      phaseMs: options.phaseMs,
      holdMs: options.holdMs,
      warmupMs: options.warmupMs,
      beforeMs: options.beforeMs,
      log,
    });
  } catch (error) {
    failure = error instanceof Error ? (error.stack ?? error.message) : String(error);
    log(`could not run: ${failure}`);
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await cleanUp();
  }

  const cpu = cpus();
  console.log(
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${String(cpu.length)} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${String(Math.round(totalmem() / 2 ** 30))} GiB, load ${loadavg()[0]?.toFixed(2) ?? '?'}), Kubernetes ${KUBERNETES_VERSION}, Node ${process.version}, commit ${commit()}${autogroup ? ', kernel autogroup on' : ''}`,
  );
  console.log(
    `\`npm run chaos -- hostile${argv.length > 0 ? ` ${argv.join(' ')}` : ''}\`: ${String(options.clients)} good clients in ${String(options.namespaces)} namespaces reading ${String(options.readRate)}/s each, ${String(options.writeRate)} pod writes/s, ${String(options.phaseMs / 1000)} s phases and ${String(options.holdMs / 1000)} s holds after ${String(options.warmupMs / 1000)} s of warm-up and ${String(options.beforeMs / 1000)} s without the attack, proxy --memory-limit ${options.memoryLimit}${proxy?.noCgroup === undefined ? ' in a memory cgroup of that size' : ''}, seed ${String(options.seed)}; ${formatDuration(performance.now() - started)} in all\n`,
  );
  console.log(formatTable(rows));
  console.log(`\n${formatDetails(rows)}\n\n${COLUMNS_NOTE}\n`);
  const baseline = rows.find((r) => r.phase === 'baseline');
  const broken = rows.flatMap((r) => brokenBounds(r, baseline).map((b) => `${r.phase}: ${b}`));
  const skipped = rows.filter((r) => r.skipped !== undefined);
  if (failure !== undefined) broken.push(`the run could not complete: ${failure.split('\n')[0] ?? failure}`);
  if (broken.length > 0) {
    console.log(`FAILED:\n${broken.map((b) => `- ${b}`).join('\n')}`);
    return 1;
  }
  const ran = rows.length - 1 - skipped.length;
  console.log(
    `OK: ${String(ran)} attack${ran === 1 ? '' : 's'} within every bound${skipped.length === 0 ? '' : `; NOT RUN (not passed): ${skipped.map((r) => `${r.phase} (${r.skipped ?? ''})`).join(', ')}`}.`,
  );
  return 0;
}

const AUTOGROUP = '/proc/sys/kernel/sched_autogroup_enabled';

/**
 * Whether the kernel groups each session's processes for the scheduler (sched_autogroup): then
 * the suite's niceness (the good clients', the attacker's, the control plane's) orders only the
 * processes of one session, and each session gets an equal share of the CPU.
 */
function autogroupEnabled(): boolean {
  try {
    return readFileSync(AUTOGROUP, 'utf8').trim() === '1';
  } catch {
    return false;
  }
}

/**
 * The niceness of the control plane (kube-apiserver, etcd) during the run. In a cluster the
 * apiserver runs on machines of its own; here it shares the 2 cores with the proxy and the good
 * clients, and an attack the proxy passes through (junk paths, huge selectors) makes it work as it
 * would without the proxy: at nice 0 that work would be taken from the good clients (nice 10),
 * and their latency would count the apiserver's work as the proxy's harm. So it runs between the
 * good clients and the attacker (nice 19).
 */
const CONTROL_PLANE_NICENESS = 15;

/** Renices the control plane's processes for the run; the returned function gives them their niceness back. */
function reniceControlPlane(state: ControlPlaneState, log: (line: string) => void): () => void {
  const was: ThreadNiceness[] = [];
  const pids: number[] = [];
  for (const { pid, name } of runningProcesses(state)) {
    try {
      const changed = reniceProcess(pid, CONTROL_PLANE_NICENESS);
      if (changed.length === 0) continue;
      was.push(...changed);
      pids.push(pid);
    } catch (error) {
      log(`  ${name} left at its niceness: ${(error as Error).message}`);
    }
  }
  if (pids.length > 0)
    log(`control plane at nice ${String(CONTROL_PLANE_NICENESS)} for the run, every thread (pids ${pids.map(String).join(', ')})`);
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    restoreNiceness(was);
  };
}

/** The suite's control plane in `dir` (a leftover one stopped first), tied to this process by a reaper. */
async function startControlPlane(dir: string, progress: Progress): Promise<ControlPlaneState> {
  const previous = readState(dir);
  if (previous !== undefined && runningProcesses(previous).length > 0) {
    progress.log(`stopping a leftover control plane in ${dir}`);
    await down(dir);
  }
  const state = await up({ dir, binaries: await ensureControlPlaneBinaries(progress), progress });
  attachReaper(dir, process.pid);
  return state;
}

/** A control plane started elsewhere (dev-cluster up --dir DIR), used as it is. */
function runningControlPlane(dir: string): ControlPlaneState {
  const state = readState(dir);
  if (state === undefined || runningProcesses(state).length === 0) throw new Error(`no control plane runs in ${dir}`);
  return state;
}

function commit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: import.meta.dirname, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

if (import.meta.main) process.exitCode = await runHostile(process.argv.slice(2));
