/**
 * A real local control plane on loopback: etcd and kube-apiserver, with generated certificates,
 * a static token file (an admin in system:masters, and `alice` and `bob` with no permissions),
 * and the authorization of a kubeadm cluster: the Node authorizer then RBAC, with the
 * NodeRestriction admission plugin (a kubelet, `system:node:<name>` in `system:nodes`, reads and
 * writes only what its node's pods need). No controller-manager: namespaces deleted stay
 * Terminating, no default service accounts (the ServiceAccount admission plugin is off so pods can
 * still be created).
 *
 * Everything lives in one directory:
 *   state.json   pids, ports and binaries of the running processes (what `down` stops)
 *   kubeconfig   admin credentials, context `dev`
 *   tokens.csv   the apiserver's --token-auth-file
 *   pki/ etcd/ logs/
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { CliError } from '../../proxy/cli-error.ts';
import type { Progress } from '../progress.ts';
import type { ControlPlaneBinaries } from './build.ts';
import { createPki } from './pki.ts';
import type { RecordedProcess } from './processes.ts';
import { freeLoopbackPort, isRunning, killProcesses, startDetached, stopProcesses } from './processes.ts';
import { ETCD_VERSION, KUBERNETES_VERSION } from './versions.ts';

export const STATE_FILE = 'state.json';
/** The kubeconfig context written for the admin user. */
export const CONTEXT_NAME = 'dev';

export interface ControlPlaneUser {
  readonly name: string;
  readonly token: string;
  readonly groups: readonly string[];
}

export interface ControlPlaneState {
  readonly dir: string;
  /** https://127.0.0.1:<port> */
  readonly server: string;
  readonly caFile: string;
  readonly kubeconfig: string;
  readonly binaries: ControlPlaneBinaries;
  readonly users: Readonly<Record<'admin' | 'alice' | 'bob', ControlPlaneUser>>;
  readonly etcdUrl: string;
  readonly processes: readonly RecordedProcess[];
  readonly startedAt: string;
}

/** How long each component may take to become ready on a busy 2-core machine. */
const ETCD_READY_TIMEOUT_MS = 60_000;
const APISERVER_READY_TIMEOUT_MS = 180_000;
/** A port picked free may be taken before the component binds it; then we try again with new ports. */
const PORT_ATTEMPTS = 3;

/** Files and folders that `up` creates in its directory, and `down` removes. */
const OWNED_ENTRIES = [STATE_FILE, 'kubeconfig', 'tokens.csv', 'pki', 'etcd', 'logs'];

export function readState(dir: string): ControlPlaneState | undefined {
  const file = join(dir, STATE_FILE);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as ControlPlaneState;
}

export function runningProcesses(state: ControlPlaneState): RecordedProcess[] {
  return state.processes.filter(isRunning);
}

export interface UpOptions {
  readonly dir: string;
  readonly binaries: ControlPlaneBinaries;
  readonly progress: Progress;
}

export async function up(options: UpOptions): Promise<ControlPlaneState> {
  const dir = resolve(options.dir);
  const previous = readState(dir);
  if (previous !== undefined) {
    const live = runningProcesses(previous);
    if (live.length > 0) {
      throw new CliError(
        `A control plane is already running in ${dir} (${live.map((p) => `${p.name} pid ${p.pid}`).join(', ')}).`,
        `Use it (export KUBECONFIG=${previous.kubeconfig}), or stop it first: kube-cache-proxy dev-cluster down --dir ${dir}`,
      );
    }
    removeOwnedEntries(dir);
  }
  checkVersions(options.binaries);
  mkdirSync(join(dir, 'logs'), { recursive: true });

  const progress = options.progress;
  const pki = createPki(join(dir, 'pki'));
  const users = {
    admin: { name: 'admin', token: randomToken(), groups: ['system:masters'] },
    alice: { name: 'alice', token: randomToken(), groups: [] },
    bob: { name: 'bob', token: randomToken(), groups: [] },
  } as const;
  const tokensFile = join(dir, 'tokens.csv');
  writeFileSync(
    tokensFile,
    Object.values(users)
      .map((u) => `${u.token},${u.name},uid-${u.name}${u.groups.length > 0 ? `,"${u.groups.join(',')}"` : ''}`)
      .join('\n') + '\n',
    { mode: 0o600 },
  );

  for (let attempt = 1; ; attempt++) {
    const started: RecordedProcess[] = [];
    try {
      const etcdPort = await freeLoopbackPort();
      const peerPort = await freeLoopbackPort();
      const apiPort = await freeLoopbackPort();
      const etcdUrl = `http://127.0.0.1:${etcdPort}`;
      const server = `https://127.0.0.1:${apiPort}`;
      const kubeconfig = join(dir, 'kubeconfig');
      const state = (): ControlPlaneState => ({
        dir,
        server,
        caFile: pki.caCert,
        kubeconfig,
        binaries: options.binaries,
        users,
        etcdUrl,
        processes: started,
        startedAt: new Date().toISOString(),
      });

      const etcdStep = progress.step(`starting etcd ${ETCD_VERSION} on 127.0.0.1:${etcdPort}`);
      rmSync(join(dir, 'etcd'), { recursive: true, force: true });
      const peerUrl = `http://127.0.0.1:${peerPort}`;
      const etcdLog = join(dir, 'logs', 'etcd.log');
      started.push(
        startDetached(
          'etcd',
          options.binaries.etcd,
          [
            '--name=dev',
            `--data-dir=${join(dir, 'etcd')}`,
            `--listen-client-urls=${etcdUrl}`,
            `--advertise-client-urls=${etcdUrl}`,
            `--listen-peer-urls=${peerUrl}`,
            `--initial-advertise-peer-urls=${peerUrl}`,
            `--initial-cluster=dev=${peerUrl}`,
            // Test data only: durability is not worth the fsync latency here.
            '--unsafe-no-fsync=true',
            '--log-level=warn',
          ],
          etcdLog,
        ),
      );
      // Recorded at once, so that `down` can stop what started even if readiness fails.
      writeState(dir, state());
      await waitForEtcd(etcdUrl, started[0], etcdLog);
      etcdStep.done();

      const apiStep = progress.step(`starting kube-apiserver ${KUBERNETES_VERSION} on ${server}`);
      const apiLog = join(dir, 'logs', 'kube-apiserver.log');
      started.push(
        startDetached(
          'kube-apiserver',
          options.binaries.kubeApiserver,
          [
            `--etcd-servers=${etcdUrl}`,
            '--bind-address=127.0.0.1',
            `--secure-port=${apiPort}`,
            // Never contacted. Without it the apiserver derives an address from the default route
            // and fails on a host without one; a loopback address is refused for endpoints.
            '--advertise-address=10.10.10.10',
            '--endpoint-reconciler-type=none',
            `--tls-cert-file=${pki.servingCert}`,
            `--tls-private-key-file=${pki.servingKey}`,
            `--cert-dir=${join(dir, 'pki', 'generated')}`,
            '--service-cluster-ip-range=10.0.0.0/24',
            '--service-account-issuer=https://kubernetes.default.svc',
            `--service-account-key-file=${pki.serviceAccountKey}`,
            `--service-account-signing-key-file=${pki.serviceAccountKey}`,
            `--token-auth-file=${tokensFile}`,
            // Client certificates signed by the dev CA identify users too (CN, groups from O), so
            // that shared mode's certificate users can be checked against the apiserver's own.
            `--client-ca-file=${pki.caCert}`,
            // kubeadm's (cmd/kubeadm/app/phases/controlplane/manifests.go getAPIServerCommand).
            '--authorization-mode=Node,RBAC',
            '--enable-admission-plugins=NodeRestriction',
            // No controller-manager creates `default` service accounts; with the plugin on, pods could not be created.
            '--disable-admission-plugins=ServiceAccount',
            '--v=1',
          ],
          apiLog,
        ),
      );
      writeState(dir, state());
      await waitForApiserver(server, pki.caCert, users.admin.token, started[1], apiLog);
      writeKubeconfig(kubeconfig, server, pki.caCert, users.admin.token);
      const final = state();
      writeState(dir, final);
      apiStep.done();
      return final;
    } catch (error) {
      await stopProcesses(started);
      const portTaken = error instanceof StartupError && error.log.includes('address already in use');
      if (portTaken && attempt < PORT_ATTEMPTS) {
        progress.log(`a port was taken meanwhile; trying again with new ports (attempt ${attempt + 1}/${PORT_ATTEMPTS})`);
        continue;
      }
      removeOwnedEntries(dir, ['pki', 'logs', 'tokens.csv']);
      if (error instanceof StartupError) {
        throw new CliError(
          `${error.message}\nLast lines of ${error.logFile}:\n${error.log}`,
          portTaken
            ? 'Another process keeps taking the ports; free some loopback ports and try again.'
            : `The log above says why. The full logs are in ${join(dir, 'logs')}; remove ${dir} and try again.`,
        );
      }
      throw error;
    }
  }
}

export interface DownResult {
  readonly stopped: readonly RecordedProcess[];
}

/** Stops exactly the processes `up` recorded in `dir` (except the caller itself) and removes the data. */
export async function down(dirOption: string): Promise<DownResult> {
  const dir = resolve(dirOption);
  const state = readState(dir);
  if (state === undefined) return { stopped: [] };
  const others = state.processes.filter((p) => p.pid !== process.pid);
  const stopped = others.filter(isRunning);
  for (const p of stopOrder(others)) await stopProcesses([p]);
  removeOwnedEntries(dir);
  return { stopped };
}

/** The name the reaper (reaper.ts) is recorded under. */
export const REAPER_NAME = 'reaper';

/**
 * The order `down` stops a control plane's processes in, one at a time: the reverse of their
 * start (kube-apiserver stalls its graceful shutdown for the whole grace period when etcd goes
 * away under it), and the reaper last. An owner that exits while it stops the rest (a test
 * runner's forced exit after its last test, in its global teardown) leaves the reaper running to
 * stop what is left; stopped first, it left etcd running.
 */
export function stopOrder(processes: readonly RecordedProcess[]): RecordedProcess[] {
  const reversed = [...processes].reverse();
  return [...reversed.filter((p) => p.name !== REAPER_NAME), ...reversed.filter((p) => p.name === REAPER_NAME)];
}

/** Adds a process (the reaper) to the recorded state, so that `down` stops it too. */
export function recordProcess(dir: string, extra: RecordedProcess): void {
  const state = readState(dir);
  if (state === undefined) return;
  writeState(dir, { ...state, processes: [...state.processes, extra] });
}

function writeState(dir: string, state: ControlPlaneState): void {
  writeFileSync(join(dir, STATE_FILE), `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

function removeOwnedEntries(dir: string, entries: readonly string[] = OWNED_ENTRIES): void {
  for (const entry of entries) rmSync(join(dir, entry), { recursive: true, force: true });
  try {
    if (readdirSync(dir).length === 0) rmdirSync(dir);
  } catch {
    // the directory is not ours to remove, or already gone
  }
}

function randomToken(): string {
  return randomBytes(24).toString('base64url');
}

/** kubeconfig as JSON, which is valid YAML and needs no quoting rules for paths. */
function writeKubeconfig(file: string, server: string, caFile: string, token: string): void {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: CONTEXT_NAME, cluster: { server, 'certificate-authority': caFile } }],
    users: [{ name: 'admin', user: { token } }],
    contexts: [{ name: CONTEXT_NAME, context: { cluster: CONTEXT_NAME, user: 'admin' } }],
    'current-context': CONTEXT_NAME,
    preferences: {},
  };
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
}

/** Polls until etcd answers its health check. */
async function waitForEtcd(etcdUrl: string, process: RecordedProcess | undefined, logFile: string): Promise<void> {
  await waitUntil('etcd', process, logFile, ETCD_READY_TIMEOUT_MS, async () => {
    const res = await request(`${etcdUrl}/health`);
    const body = await res.body.text();
    return res.statusCode === 200 && body.includes('"health":"true"');
  });
}

/** Polls until kube-apiserver is ready and has created the `default` namespace. */
async function waitForApiserver(
  server: string,
  caFile: string,
  adminToken: string,
  process: RecordedProcess | undefined,
  logFile: string,
): Promise<void> {
  const agent = new Agent({ connect: { ca: readFileSync(caFile) } });
  try {
    const authorization = `Bearer ${adminToken}`;
    await waitUntil('kube-apiserver', process, logFile, APISERVER_READY_TIMEOUT_MS, async () => {
      // As cmd/kube-apiserver/app/testing/testserver.go: ready, then the `default` namespace exists.
      const ready = await request(`${server}/readyz`, { dispatcher: agent, headers: { authorization } });
      await ready.body.dump();
      if (ready.statusCode !== 200) return false;
      const ns = await request(`${server}/api/v1/namespaces/default`, { dispatcher: agent, headers: { authorization } });
      await ns.body.dump();
      return ns.statusCode === 200;
    });
  } finally {
    await agent.close();
  }
}

/**
 * Stops kube-apiserver and starts it again with the same flags (etcd keeps running): what an
 * apiserver rollout looks like to clients. Its watch cache starts empty at the newest RV.
 */
export async function restartApiserver(dirOption: string): Promise<ControlPlaneState> {
  await stopProcesses([recordedComponent(dirOption, 'kube-apiserver').process]);
  return startComponent(dirOption, 'kube-apiserver');
}

/** The two processes of a control plane, by the names `up` records them under. */
export type ComponentName = 'etcd' | 'kube-apiserver';

function recordedComponent(dirOption: string, name: ComponentName): { dir: string; state: ControlPlaneState; process: RecordedProcess } {
  const dir = resolve(dirOption);
  const state = readState(dir);
  const process = state?.processes.find((p) => p.name === name);
  if (state === undefined || process === undefined) throw new CliError(`no ${name} is recorded in ${dir}`);
  return { dir, state, process };
}

/**
 * Kills a component with SIGKILL, no graceful shutdown: what an OOM kill or a crashed node looks
 * like to its clients (connections reset mid-stream, no last words). For fault injection
 * (`npm run chaos`); its data and its recorded flags stay, so startComponent brings it back.
 */
export async function killComponent(dirOption: string, name: ComponentName): Promise<void> {
  await killProcesses([recordedComponent(dirOption, name).process]);
}

/**
 * Starts a component that was stopped or killed again, with the flags it was first started with
 * (same ports, same data directory: to its clients it is the same server coming back), and waits
 * until it is ready. kube-apiserver comes back with an empty watch cache at the newest RV, so a
 * watch from an older RV gets 410 Expired; etcd comes back with its data, and kube-apiserver
 * (still running) reconnects to it by itself.
 */
export async function startComponent(dirOption: string, name: ComponentName): Promise<ControlPlaneState> {
  const { dir, state, process: old } = recordedComponent(dirOption, name);
  if (isRunning(old)) throw new CliError(`${name} (pid ${String(old.pid)}) is still running in ${dir}`);
  const fresh = startDetached(old.name, old.executable, old.args, old.logFile);
  const next = { ...state, processes: state.processes.map((p) => (p === old ? fresh : p)) };
  // Recorded before the wait, so that `down` (or the reaper) stops it even if it never gets ready.
  writeState(dir, next);
  if (name === 'etcd') await waitForEtcd(state.etcdUrl, fresh, old.logFile);
  else await waitForApiserver(state.server, state.caFile, state.users.admin.token, fresh, old.logFile);
  return next;
}

/** The binaries must be the versions this code was written for (a stale cache would mislead the tests). */
function checkVersions(binaries: ControlPlaneBinaries): void {
  const expect = (binary: string, pattern: RegExp, wanted: string): void => {
    const result = spawnSync(binary, ['--version'], { encoding: 'utf8' });
    const output = `${result.stdout}${result.stderr}`;
    const found = pattern.exec(output)?.[1];
    if (found !== wanted) {
      throw new CliError(
        `${binary} reports version ${found ?? `(none: ${result.error?.message ?? output.trim()})`}, expected ${wanted}.`,
        `Remove ${binaries.dir} and run \`kube-cache-proxy dev-cluster build\` (or npm test) to rebuild it.`,
      );
    }
  };
  expect(binaries.kubeApiserver, /Kubernetes (v\S+)/, KUBERNETES_VERSION);
  expect(binaries.etcd, /etcd Version: (\S+)/, ETCD_VERSION);
}

class StartupError extends Error {
  readonly logFile: string;
  readonly log: string;
  constructor(message: string, logFile: string) {
    super(message);
    this.logFile = logFile;
    this.log = tail(logFile, 25);
  }
}

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Polls `ready` until it returns true; fails early if the process exits, or after `timeoutMs`. */
async function waitUntil(
  name: string,
  process: RecordedProcess | undefined,
  logFile: string,
  timeoutMs: number,
  ready: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (process === undefined || !isRunning(process)) throw new StartupError(`${name} exited during start-up.`, logFile);
    try {
      if (await ready()) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new StartupError(`${name} was not ready after ${timeoutMs / 1000}s.`, logFile);
    await sleep(250);
  }
}
