/**
 * The chaos run: `npm run chaos` (every fault) or `npm run chaos -- <fault...> [--flags]`
 * (`--help` lists them; sizes also from KCP_CHAOS_* variables). Not part of `npm test`; one short
 * fault of it is (test/e2e/chaos/connection-cut.test.ts).
 *
 * Brings up a control plane of its own (dev-cluster, in --dir: the faults kill its processes, so
 * never the tests' shared one), a TCP link in front of its apiserver and kube-cache-proxy as its
 * own process behind the link (caching pods and configmaps, default read consistency), then runs
 * each fault (faults.ts) in a namespace of its own (fault-run.ts) and prints a row of figures per
 * fault. Exits 1 when anything was lost, duplicated or reordered, a read was staler than the
 * bound or missed its own write, or a silence passed --max-silence. Progress goes to stderr, the
 * table to stdout; the proxy's log to DIR/proxy.log.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { Agent } from 'undici';
import { ensureControlPlaneBinaries } from '../src/cli/dev-cluster/build.ts';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import { down, readState, runningProcesses, up } from '../src/cli/dev-cluster/control-plane.ts';
import { attachReaper } from '../src/cli/dev-cluster/reaper.ts';
import { KUBERNETES_VERSION } from '../src/cli/dev-cluster/versions.ts';
import { formatDuration, newProgress } from '../src/cli/progress.ts';
import { newUpstreamClient } from '../src/upstream/client.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { loadUpstreamConfig } from '../src/upstream/config.ts';
import { seededRandom } from '../test/helpers/prng.ts';
import { startTcpProxy } from '../test/helpers/tcp-proxy.ts';
import type { TcpProxy } from '../test/helpers/tcp-proxy.ts';
import type { FaultRow } from './fault-run.ts';
import { runFault } from './fault-run.ts';
import { FAULTS } from './faults.ts';
import type { ChaosOptions } from './options.ts';
import { CHAOS_USAGE, parseChaosOptions } from './options.ts';
import type { ProxyChild } from './proxy.ts';
import { startProxyChild } from './proxy.ts';
import { COLUMNS_NOTE, formatTable } from './table.ts';

/** What the proxy caches: the writer's pods and the RV-unset reader's ConfigMaps. */
const RESOURCES = 'pods,configmaps';

async function main(): Promise<number> {
  // The hostile-client suite is a run of its own (chaos/hostile/run.ts), with its own flags.
  const [first, ...rest] = process.argv.slice(2);
  if (first === 'hostile') return (await import('./hostile/run.ts')).runHostile(rest);
  let parsed: ChaosOptions | 'help';
  try {
    parsed = parseChaosOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${CHAOS_USAGE}\n`);
    return 2;
  }
  if (parsed === 'help') {
    console.log(CHAOS_USAGE);
    return 0;
  }
  const options = parsed;
  const started = performance.now();
  const progress = newProgress((line) => process.stderr.write(`${line}\n`), 10_000);
  const log = (line: string): void => {
    progress.log(`[${formatDuration(performance.now() - started)}] ${line}`);
  };

  let admin: UpstreamClient | undefined;
  let link: TcpProxy | undefined;
  let proxy: ProxyChild | undefined;
  const dispatcher = new Agent({ connections: null });
  const cleanUp = async (): Promise<void> => {
    await proxy?.stop();
    await link?.close();
    await dispatcher.close();
    await admin?.close();
    await down(options.dir);
  };
  // Ctrl-C: stop what the run started before exiting.
  const interrupted = (signal: NodeJS.Signals): void => {
    process.stderr.write(`\n${signal}: stopping the proxy and the control plane\n`);
    void cleanUp().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);

  const rows: FaultRow[] = [];
  const failures: string[] = [];
  try {
    const state = await startControlPlane(options.dir, progress);
    admin = newUpstreamClient(await loadUpstreamConfig({ kubeconfig: state.kubeconfig }), { connections: 16 });
    const server = new URL(state.server);
    link = await startTcpProxy(server.hostname, Number(server.port));
    const step = progress.step(`starting kube-cache-proxy behind a TCP link (caching ${RESOURCES})`);
    proxy = await startProxyChild({ state, linkPort: link.port, resources: RESOURCES, maxStalenessMs: options.maxStalenessMs });
    step.done(`${proxy.url}, log ${proxy.logFile}`);
    const env = { state, admin, proxy, link, dispatcher, options, random: seededRandom(options.seed), log };
    for (const name of options.faults) {
      log(`${name}: ${String(options.watchers)} watchers, ${String(options.writes)} writes at ${String(options.writeRate)}/s`);
      try {
        const row = await runFault(FAULTS[name], env);
        rows.push(row);
        log(
          `${name}: ${String(row.written)} written, ${String(row.delivered)} delivered, ${String(row.relisted)} by relist, ${String(row.lost)} lost, ${String(row.duplicated)} duplicated, ${String(row.reordered)} reordered, longest silence ${(row.longestSilenceMs / 1000).toFixed(1)} s`,
        );
        failures.push(...verdict(row, options));
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        failures.push(`${name}: could not run: ${message}`);
        log(`${name}: could not run: ${message}`);
      }
    }
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await cleanUp();
  }

  const cpu = cpus();
  console.log(
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${String(cpu.length)} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${String(Math.round(totalmem() / 2 ** 30))} GiB, load ${loadavg()[0]?.toFixed(2) ?? '?'}), Kubernetes ${KUBERNETES_VERSION}, Node ${process.version}, commit ${commit()}`,
  );
  console.log(
    `\`npm run chaos${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`: ${String(options.watchers)} watchers, ≥ ${String(options.writes)} writes at ${String(options.writeRate)}/s per fault, ${String(options.outageMs / 1000)} s outages, max staleness ${String(options.maxStalenessMs / 1000)} s, seed ${String(options.seed)}; ${formatDuration(performance.now() - started)} in all\n`,
  );
  console.log(formatTable(rows));
  console.log(`\n${COLUMNS_NOTE}\n`);
  for (const row of rows) for (const problem of row.problems) console.log(`- ${row.fault}: ${problem}`);
  if (failures.length > 0) {
    console.log(`\nFAILED:\n${failures.map((f) => `- ${f}`).join('\n')}`);
    return 1;
  }
  console.log('OK: nothing lost, duplicated or reordered; no read staler than the bound; every silence within the bound.');
  return 0;
}

/** What fails the run in a fault's row. */
function verdict(row: FaultRow, options: ChaosOptions): string[] {
  const out: string[] = [];
  const count = (n: number, what: string): void => {
    if (n > 0) out.push(`${row.fault}: ${String(n)} ${what}`);
  };
  count(row.lost, 'lost');
  count(row.duplicated, 'duplicated');
  count(row.reordered, 'reordered');
  count(row.staleReads, `reads staler than ${String(options.maxStalenessMs / 1000)} s`);
  count(row.rywMisses, 'reads that missed their own write');
  if (Object.values(FAULTS).find((f) => f.name === row.fault)?.noStalePassThrough === true)
    count(row.passedStale, 'RV-unset reads passed through for staleness (a pass-through storm)');
  if (row.longestSilenceMs > options.maxSilenceMs) {
    out.push(
      `${row.fault}: longest silence ${(row.longestSilenceMs / 1000).toFixed(1)} s (bound ${String(options.maxSilenceMs / 1000)} s)`,
    );
  }
  return out;
}

/** The chaos control plane in `dir` (a leftover one stopped first), tied to this process by a reaper. */
async function startControlPlane(dir: string, progress: ReturnType<typeof newProgress>): Promise<ControlPlaneState> {
  const previous = readState(dir);
  if (previous !== undefined && runningProcesses(previous).length > 0) {
    progress.log(`stopping a leftover chaos control plane in ${dir}`);
    await down(dir);
  }
  const state = await up({ dir, binaries: await ensureControlPlaneBinaries(progress), progress });
  attachReaper(dir, process.pid);
  return state;
}

function commit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: import.meta.dirname, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

process.exitCode = await main();
