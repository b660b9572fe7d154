/**
 * What the scenarios are run against, each its own process on loopback:
 *   apiserver         kube-apiserver itself, over HTTPS with the admin's bearer token
 *   kubectl proxy     `kubectl proxy --port 0` of the dev cluster's kubectl
 *   kube-cache-proxy  `node bin/kube-cache-proxy.mjs proxy --port 0 ...` (this project), with its
 *                     defaults (bounded read consistency), and a second one with `--read-consistency strong`
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { MemoryCgroup } from '../test/helpers/memory-cgroup.ts';
import { signedCertificate } from '../test/helpers/certificates.ts';
import { metricSum } from '../test/helpers/metrics-text.ts';

export type TargetName = 'apiserver' | 'kubectl proxy' | 'kube-cache-proxy' | 'kube-cache-proxy (strong)';

export interface Target {
  readonly name: TargetName;
  /** Base URL, no trailing slash. */
  readonly url: string;
  /** Headers a client needs (the bearer token for the apiserver; none for the proxies). */
  readonly headers: Readonly<Record<string, string>>;
  /** The process that answers (whose CPU and memory the scenarios read). */
  readonly pid: number;
  /** For HTTPS targets, the CA to trust. */
  readonly ca: Buffer | undefined;
  /** A proxy started here: when it said it serves (performance.now()). */
  readonly servingAt?: number;
  stop(): Promise<void>;
}

const ROOT = join(import.meta.dirname, '..');
/**
 * The proxy started by the scenarios: this checkout's, or KCP_BENCH_PROXY_BIN's (another
 * checkout's bin/kube-cache-proxy.mjs, to measure an older commit with today's scenarios).
 */
const BIN = process.env.KCP_BENCH_PROXY_BIN ?? join(ROOT, 'bin', 'kube-cache-proxy.mjs');
/** How long a proxy may take to serve and sync its caches on a busy 2-core machine. */
const READY_TIMEOUT_MS = 180_000;

export function apiserverTarget(state: ControlPlaneState): Target {
  const pid = state.processes.find((p) => p.name === 'kube-apiserver')?.pid;
  if (pid === undefined) throw new Error('no kube-apiserver in the control plane state');
  return {
    name: 'apiserver',
    url: state.server,
    headers: { authorization: `Bearer ${state.users.admin.token}` },
    pid,
    ca: readFileSync(state.caFile),
    stop: () => Promise.resolve(),
  };
}

/** Resolves with `host:port` once the child prints `Starting to serve on HOST:PORT`. */
export function servingAddress(child: ChildProcess, name: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      const address = /Starting to serve on (\S+)/.exec(out)?.[1];
      if (address !== undefined) {
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        resolve(address);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      err = (err + chunk.toString()).slice(-4000);
    });
    child.once('exit', (code) => {
      reject(new Error(`${name} exited (${String(code)}) before serving:\n${out.slice(-2000)}${err}`));
    });
  });
}

function stopper(child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    // The proxy gives in-flight requests up to 10 s (SHUTDOWN_GRACE_MS), then exits.
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  };
}

export async function startKubectlProxy(state: ControlPlaneState): Promise<Target> {
  const child = spawn(state.binaries.kubectl, ['proxy', '--port=0', `--kubeconfig=${state.kubeconfig}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const address = await servingAddress(child, 'kubectl proxy');
  if (child.pid === undefined) throw new Error('kubectl proxy has no pid');
  return { name: 'kubectl proxy', url: `http://${address}`, headers: {}, pid: child.pid, ca: undefined, stop: stopper(child) };
}

export interface CacheProxyOptions {
  readonly name?: TargetName;
  readonly resources: string;
  readonly readConsistency?: 'strong' | 'bounded';
  /** Node flags before the script (e.g. --cpu-prof --cpu-prof-dir DIR). */
  readonly nodeArgs?: readonly string[];
  /** More flags of the proxy command (e.g. --max-staleness=5s). */
  readonly args?: readonly string[];
  /** The proxy's script, when not BIN (the image's JavaScript: test/helpers/image.ts). */
  readonly script?: string;
  /** Environment beside the bench's own (the image's ENV). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The CA its serving certificate chains to, when `args` make it serve HTTPS (shared mode's
   * --tls-cert-file): its URL is then https, and its readiness is polled over TLS.
   */
  readonly ca?: Buffer;
  /** A memory cgroup to run it in, as a container's limit would (removed once it stopped). */
  readonly cgroup?: MemoryCgroup;
  /** The port it serves on (a restart keeps its clients' URL); default: one the kernel picks. */
  readonly port?: number;
}

/** Starts the proxy as its own process and waits until /readyz says its caches have synced. */
export async function startCacheProxy(state: ControlPlaneState, options: CacheProxyOptions): Promise<Target> {
  const args = [
    ...(options.nodeArgs ?? []),
    options.script ?? BIN,
    'proxy',
    `--kubeconfig=${state.kubeconfig}`,
    `--port=${String(options.port ?? 0)}`,
    ...(options.resources === '' ? [] : [`--resources=${options.resources}`]),
    '--log-level=warn',
    ...(options.args ?? []),
    ...(options.readConsistency === undefined ? [] : [`--read-consistency=${options.readConsistency}`]),
  ];
  const env = options.env === undefined ? process.env : { ...process.env, ...options.env };
  const { command, args: argv } = options.cgroup?.wrap([process.execPath, ...args]) ?? { command: process.execPath, args };
  const child = spawn(command, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const stopProcess = stopper(child);
  const stop = async (): Promise<void> => {
    await stopProcess();
    options.cgroup?.remove();
  };
  let address: string;
  let servingAt: number;
  try {
    address = await servingAddress(child, 'kube-cache-proxy');
    servingAt = performance.now();
  } catch (error) {
    await stop();
    throw error;
  }
  if (child.pid === undefined) throw new Error('kube-cache-proxy has no pid');
  const url = `${options.ca === undefined ? 'http' : 'https'}://${address}`;
  try {
    await waitReady(url, options.ca);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    name: options.name ?? (options.readConsistency === 'strong' ? 'kube-cache-proxy (strong)' : 'kube-cache-proxy'),
    url,
    headers: {},
    pid: child.pid,
    ca: options.ca,
    servingAt,
    stop,
  };
}

/**
 * The proxy serving TLS (HTTP/2 and HTTP/1.1 by ALPN) with a certificate for 127.0.0.1 signed by
 * the control plane's CA, caching pods: the fan-out's target over h2, with no bound on the
 * watches of a flow (a connection: over h2 a client process's thousand watches share one). Its
 * certificate's folder goes when it stops.
 */
export async function startTlsProxy(state: ControlPlaneState): Promise<Target> {
  const cleanups: (() => void)[] = [];
  const cert = signedCertificate({ after: (fn) => cleanups.push(fn) }, state, { cn: 'kube-cache-proxy', serving: true });
  const clean = (): void => {
    for (const fn of cleanups) fn();
  };
  let proxy: Target;
  try {
    proxy = await startCacheProxy(state, {
      resources: 'pods',
      // The fan-out's thousands of watches per connection are one synthetic client's, not a flow to bound.
      args: [`--tls-cert-file=${cert.certFile}`, `--tls-private-key-file=${cert.keyFile}`, '--max-watches-per-flow=0'],
      ca: readFileSync(state.caFile),
    });
  } catch (error) {
    clean();
    throw error;
  }
  return {
    ...proxy,
    stop: async () => {
      await proxy.stop();
      clean();
    },
  };
}

/**
 * Polls the proxy's /readyz until 200 (every 20 ms: the cold-start scenario times it), over TLS
 * trusting `ca` for an https URL (a shared proxy's /readyz needs no credentials, as the apiserver's).
 */
export async function waitReady(url: string, ca?: Buffer): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const dispatcher = ca === undefined ? undefined : new Agent({ connect: { ca } });
  try {
    for (;;) {
      try {
        const res = await request(`${url}/readyz`, dispatcher === undefined ? {} : { dispatcher });
        await res.body.dump();
        if (res.statusCode === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`${url} was not ready after ${String(READY_TIMEOUT_MS / 1000)} s`);
      await sleep(20);
    }
  } finally {
    await dispatcher?.close();
  }
}

/** A counter's value summed over the series of the proxy's /metrics whose labels include every one of `labels`. */
export async function proxyCounter(target: Target, name: string, labels: Readonly<Record<string, string>>): Promise<number> {
  const res = await request(`${target.url}/metrics`);
  return metricSum(await res.body.text(), name, labels);
}

/** One GET through a target, parsed (for the resourceVersion a watch starts from). */
export async function getJson(target: Target, path: string): Promise<unknown> {
  const agent = new Agent(target.ca === undefined ? {} : { connect: { ca: target.ca } });
  try {
    const res = await request(`${target.url}${path}`, { dispatcher: agent, headers: { ...target.headers, accept: 'application/json' } });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${target.name} GET ${path}: ${String(res.statusCode)} ${text.slice(0, 300)}`);
    return JSON.parse(text) as unknown;
  } finally {
    await agent.close();
  }
}
