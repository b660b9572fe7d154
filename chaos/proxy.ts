/**
 * The proxy under test, as its own process (so that its RSS is its own): bench/proxy-process.ts
 * with a kubeconfig whose server is the test TCP link in front of the apiserver, so that the run
 * can cut, refuse or silence every upstream connection of the proxy (its informers', its probes'
 * and its pass-through) while the apiserver itself stays up. Its log goes to DIR/proxy.log (kept after the run).
 */
import { parseKlogLine } from '../test/helpers/klog.ts';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { metricSum } from '../test/helpers/metrics-text.ts';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import { servingAddress, waitReady } from '../bench/targets.ts';

export interface ProxyChild {
  /** http://127.0.0.1:PORT: the same across restarts. */
  readonly url: string;
  /** The running process's (a restart makes a new one). */
  readonly pid: number;
  readonly logFile: string;
  /** Resident set size now, in bytes (/proc/PID/status VmRSS). */
  rss(): number;
  /** A counter of the proxy's /metrics, summed over its series whose labels include `labels`. */
  counter(name: string, labels?: Readonly<Record<string, string>>): Promise<number>;
  /** The log's length now: where logSince starts. */
  logMark(): number;
  /** The messages of the proxy's own log since `mark` (informer transitions, warnings), not its request lines. */
  logSince(mark: number): string[];
  /** The --state-dir it runs with (a state per cache, kept across restart()). */
  readonly stateDir: string;
  /**
   * Stops the proxy as a rollout does (it saves its caches' states), calls `whileDown`, waits
   * `downMs`, and starts it again on the same port with the same flags; resolves once it is ready.
   */
  restart(downMs: number, whileDown?: () => void): Promise<void>;
  stop(): Promise<void>;
}

const PROXY_PROCESS = join(import.meta.dirname, '..', 'bench', 'proxy-process.ts');

export interface ProxyChildOptions {
  readonly state: ControlPlaneState;
  /** The TCP link's port on 127.0.0.1: the proxy's upstream. */
  readonly linkPort: number;
  readonly resources: string;
  readonly maxStalenessMs: number;
}

export async function startProxyChild(options: ProxyChildOptions): Promise<ProxyChild> {
  const { state } = options;
  const kubeconfig = join(state.dir, 'proxy-kubeconfig');
  // As the control plane's own (JSON is YAML), with the link for server: the serving certificate holds 127.0.0.1.
  writeFileSync(
    kubeconfig,
    `${JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'link', cluster: { server: `https://127.0.0.1:${String(options.linkPort)}`, 'certificate-authority': state.caFile } },
      ],
      users: [{ name: 'admin', user: { token: state.users.admin.token } }],
      contexts: [{ name: 'link', context: { cluster: 'link', user: 'admin' } }],
      'current-context': 'link',
    })}\n`,
    { mode: 0o600 },
  );
  const logFile = join(state.dir, 'proxy.log');
  const stateDir = join(state.dir, 'proxy-state');
  const log = createWriteStream(logFile, { flags: 'a' });
  const spawnProxy = async (port: number): Promise<{ child: ChildProcess; address: string }> => {
    const child = spawn(
      process.execPath,
      [
        '--expose-gc',
        PROXY_PROCESS,
        `--kubeconfig=${kubeconfig}`,
        `--port=${String(port)}`,
        `--resources=${options.resources}`,
        `--max-staleness=${String(options.maxStalenessMs / 1000)}s`,
        `--state-dir=${stateDir}`,
        '--log-level=info',
      ],
      { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
    );
    child.stderr?.pipe(log, { end: false });
    const address = await servingAddress(child, 'kube-cache-proxy');
    // servingAddress resumed stdout (discarding it); from here on the proxy's log lines go to the file.
    child.stdout?.pipe(log, { end: false });
    if (child.pid === undefined) throw new Error('kube-cache-proxy has no pid');
    return { child, address };
  };
  const first = await spawnProxy(0);
  let child = first.child;
  const address = first.address;
  const url = `http://${address}`;
  const port = Number(address.slice(address.lastIndexOf(':') + 1));
  await waitReady(url);
  const stopChild = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.send('stop');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  return {
    url,
    get pid() {
      return child.pid ?? 0;
    },
    logFile,
    stateDir,
    rss() {
      try {
        const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${String(child.pid)}/status`, 'utf8'))?.[1];
        return kib === undefined ? NaN : Number(kib) * 1024;
      } catch {
        return NaN;
      }
    },
    async counter(name, labels = {}) {
      const res = await request(`${url}/metrics`);
      const text = await res.body.text();
      // The labelled series that match, or an unlabelled counter's one line.
      const bare = text.split('\n').find((line) => line.startsWith(`${name} `));
      const unlabelled = bare === undefined || Object.keys(labels).length > 0 ? 0 : Number(bare.slice(bare.lastIndexOf(' ') + 1));
      return metricSum(text, name, labels) + unlabelled;
    },
    logMark() {
      try {
        return statSync(logFile).size;
      } catch {
        return 0;
      }
    },
    logSince(mark) {
      const lines = readFileSync(logFile).subarray(mark).toString('utf8').split('\n');
      const messages: string[] = [];
      for (const line of lines) {
        // klog's text lines; a line cut by the end of the read is none.
        const entry = parseKlogLine(line);
        if (entry !== undefined && entry.msg !== 'request') messages.push(entry.msg);
      }
      return messages;
    },
    async restart(downMs, whileDown) {
      await stopChild();
      whileDown?.();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      ({ child } = await spawnProxy(port));
      await waitReady(url);
    },
    async stop() {
      await stopChild();
      log.end();
    },
  };
}
