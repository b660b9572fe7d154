/**
 * The proxy under attack, as an operator runs a node proxy: `kube-cache-proxy proxy --shared` in
 * a process of its own, HTTPS with a serving certificate of the cluster's CA, deploy/node's
 * memory limit (`--memory-limit`, and a memory cgroup of that size where one can be made, so that
 * going past it ends as a container's would: the kernel's OOM killer), and deploy/shared-rbac's
 * ServiceAccount as its identity. It keeps one port across restarts, so that clients reconnect to
 * the new process as they would to a restarted pod behind its Service.
 *
 * Its log (warnings and errors) goes to `logFile`; /metrics is read with the admin's token.
 */
import { parseKlogLine } from '../../test/helpers/klog.ts';
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';
import { servingAddress, waitReady } from '../../bench/targets.ts';
import { signedCertificate } from '../../test/helpers/certificates.ts';
import type { MemoryCgroup } from '../../test/helpers/memory-cgroup.ts';
import { createMemoryCgroup } from '../../test/helpers/memory-cgroup.ts';
import { imageEnv } from '../../test/helpers/image.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'kube-cache-proxy.mjs');
/**
 * A scrape of a frozen proxy waits this long: long enough to see a freeze end (a ~1 MB Accept
 * header held a 2-core machine's proxy for minutes), short of hanging a run.
 */
const SCRAPE_TIMEOUT_MS = 300_000;
/** The proxy gives in-flight requests up to 10 s (SHUTDOWN_GRACE_MS) once told to stop. */
const STOP_GRACE_MS = 20_000;

/** A line of /proc/PID/status: the resident set, its anonymous part (what the process holds), its file-backed part (code pages, shared and reclaimable). */
export type RssField = 'VmRSS' | 'RssAnon' | 'RssFile';

export interface HostileProxySpec {
  readonly state: ControlPlaneState;
  /** The proxy's own token (deploy/shared-rbac's ServiceAccount). */
  readonly token: string;
  /** --resources */
  readonly resources: string;
  /** --memory-limit, e.g. 512Mi, and its bytes (the cgroup's limit). */
  readonly memoryLimit: string;
  readonly memoryLimitBytes: number;
  /** Also run it in a memory cgroup of that size (needs root; without one, the flag alone). */
  readonly cgroup: boolean;
  /** Where its log goes (appended). */
  readonly logFile: string;
}

/** How the process ended, when it did. */
export interface ProxyExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Kills by the kernel's OOM killer in its cgroup (0 without a cgroup). */
  readonly oomKills: number;
}

export interface ProxyProcess {
  readonly pid: number;
  /** Set once it exited. */
  exit(): ProxyExit | undefined;
  stop(): Promise<void>;
}

export interface HostileProxy {
  /** https://127.0.0.1:PORT, the same across restarts. */
  readonly url: string;
  /** The CA its serving certificate chains to (PEM). */
  readonly ca: string;
  /** Why no memory cgroup holds it (undefined when one does). */
  readonly noCgroup: string | undefined;
  readonly logFile: string;
  /** The niceness its processes are started at (the runner's when this was made). */
  readonly niceness: number;
  /** The running process (after start()). */
  current(): ProxyProcess | undefined;
  /** Starts a process (the previous one must be stopped) and waits until /readyz answers 200. */
  start(): Promise<ProxyProcess>;
  /** Resident set size of the current process, bytes (/proc/PID/status, VmRSS unless `field` says which part); NaN when it is gone. */
  rss(field?: RssField): number;
  /** Its /metrics, read as the admin; undefined when it does not answer. */
  metrics(): Promise<string | undefined>;
  /** The log's length now, and the warning lines written since a mark. */
  logMark(): number;
  warningsSince(mark: number): string[];
  /** Stops the current process and removes what start() made. */
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address === null || typeof address === 'string') reject(new Error('no port'));
        else resolve(address.port);
      });
    });
  });
}

export async function newHostileProxy(spec: HostileProxySpec): Promise<HostileProxy> {
  const { state } = spec;
  const cleanups: (() => void)[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'kcp-hostile-proxy-'));
  cleanups.push(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const serving = signedCertificate({ after: (fn) => cleanups.push(fn) }, state, { cn: 'kube-cache-proxy', serving: true });
  const kubeconfig = join(dir, 'kubeconfig');
  // JSON is YAML: the cluster as the control plane's own kubeconfig names it, the proxy's ServiceAccount as the user.
  writeFileSync(
    kubeconfig,
    `${JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'cluster', cluster: { server: state.server, 'certificate-authority': state.caFile } }],
      users: [{ name: 'proxy', user: { token: spec.token } }],
      contexts: [{ name: 'proxy', context: { cluster: 'cluster', user: 'proxy' } }],
      'current-context': 'proxy',
    })}\n`,
    { mode: 0o600 },
  );
  const port = await freePort();
  const url = `https://127.0.0.1:${String(port)}`;
  const ca = readFileSync(state.caFile, 'utf8');
  const caBuffer = Buffer.from(ca);
  const scraper = new Agent({ connect: { ca }, headersTimeout: SCRAPE_TIMEOUT_MS, bodyTimeout: SCRAPE_TIMEOUT_MS });
  let noCgroup: string | undefined = spec.cgroup ? undefined : 'not asked for';
  let running: ProxyProcess | undefined;
  /**
   * The proxy runs at the niceness its runner had when this was made: the runner may lower its own
   * priority for the attacks it sends (scenario.ts), which the proxy must not inherit. `nice` with
   * a negative adjustment sets it before exec, so every thread of the proxy has it (root only:
   * otherwise `nice` says so and runs it at the runner's niceness).
   */
  const niceness = getPriority();

  const start = async (): Promise<ProxyProcess> => {
    let cgroup: MemoryCgroup | undefined;
    if (noCgroup === undefined) {
      try {
        cgroup = createMemoryCgroup(spec.memoryLimitBytes);
      } catch (error) {
        noCgroup = error instanceof Error ? error.message : String(error);
      }
    }
    const args = [
      BIN,
      'proxy',
      `--kubeconfig=${kubeconfig}`,
      '--address=127.0.0.1',
      `--port=${String(port)}`,
      '--shared',
      `--tls-cert-file=${serving.certFile}`,
      `--tls-private-key-file=${serving.keyFile}`,
      `--resources=${spec.resources}`,
      `--memory-limit=${spec.memoryLimit}`,
      '--log-level=warn',
    ];
    const wrapped = cgroup?.wrap([process.execPath, ...args]) ?? { command: process.execPath, args };
    const adjustment = niceness - getPriority();
    const { command, args: argv } =
      adjustment === 0 ? wrapped : { command: 'nice', args: ['-n', String(adjustment), wrapped.command, ...wrapped.args] };
    // The image's environment (its allocator setting among it): what the proxy holds is measured as a node proxy runs.
    const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...imageEnv() } });
    const log = createWriteStream(spec.logFile, { flags: 'a' });
    child.stderr.pipe(log);
    let exit: ProxyExit | undefined;
    const exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        exit = { code, signal, oomKills: cgroup?.oomKills() ?? 0 };
        try {
          cgroup?.remove();
        } catch {
          // still busy for a moment after the exit: left for the system to reap
        }
        resolve();
      });
    });
    const stop = async (): Promise<void> => {
      if (exit === undefined) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
        await exited;
        clearTimeout(timer);
      }
      log.end();
    };
    try {
      await servingAddress(child, 'kube-cache-proxy --shared');
      child.stdout.pipe(log);
      await waitReady(url, caBuffer);
    } catch (error) {
      await stop();
      throw error;
    }
    const pid = child.pid;
    if (pid === undefined) throw new Error('kube-cache-proxy has no pid');
    running = { pid, exit: () => exit, stop };
    return running;
  };

  return {
    url,
    ca,
    get noCgroup() {
      return noCgroup;
    },
    logFile: spec.logFile,
    niceness,
    current: () => running,
    start,
    rss(field: RssField = 'VmRSS') {
      if (running === undefined || running.exit() !== undefined) return NaN;
      try {
        const kib = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${String(running.pid)}/status`, 'utf8'))?.[1];
        return kib === undefined ? NaN : Number(kib) * 1024;
      } catch {
        return NaN;
      }
    },
    async metrics() {
      try {
        const res = await request(`${url}/metrics`, {
          dispatcher: scraper,
          headers: { authorization: `Bearer ${state.users.admin.token}` },
        });
        const text = await res.body.text();
        return res.statusCode === 200 ? text : undefined;
      } catch {
        return undefined;
      }
    },
    logMark() {
      try {
        return statSync(spec.logFile).size;
      } catch {
        return 0;
      }
    },
    warningsSince(mark) {
      let text: string;
      try {
        text = readFileSync(spec.logFile).subarray(mark).toString('utf8');
      } catch {
        return [];
      }
      const out: string[] = [];
      for (const line of text.split('\n')) {
        // klog's text lines, warnings and errors; a line cut by the end of the read is none.
        const entry = parseKlogLine(line);
        if (entry !== undefined && entry.severity !== 'I') out.push(entry.msg);
      }
      return out;
    },
    async close() {
      await running?.stop();
      await scraper.close();
      for (const cleanup of cleanups.reverse()) cleanup();
    },
  };
}
