/**
 * Builds kube-apiserver, kubectl and etcd from the Go modules in tools/controlplane/ with the
 * machine's Go, and caches the binaries outside the repo so that only the first build pays.
 *
 * Cache layout: `<cache>/controlplane-k8s-<version>-etcd-<version>-<hash>/{kube-apiserver,kubectl,etcd}`,
 * where <hash> covers both modules' go.mod/go.sum and the link flags: a change to any of them
 * builds into a new directory. A build goes to a temporary directory renamed into place at the
 * end, so an interrupted build never leaves a half-filled cache entry.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CliError } from '../../proxy/cli-error.ts';
import type { Progress } from '../progress.ts';
import { CONTROL_PLANE_MODULES_DIR, ETCD_VERSION, KUBERNETES_VERSION } from './versions.ts';

export interface ControlPlaneBinaries {
  readonly dir: string;
  readonly kubeApiserver: string;
  readonly kubectl: string;
  readonly etcd: string;
}

/** The oldest Go that builds Kubernetes 1.37 (its go.mod says `go 1.26.0`). */
const MIN_GO_MINOR = 26;

/** Written last into a cache entry: its presence means all binaries are complete. */
const COMPLETE_MARKER = '.complete';

/**
 * Version stamping as kubernetes/hack/lib/version.sh does it; without it the binaries report
 * v0.0.0-master and kubectl warns about version skew.
 */
function kubernetesLinkFlags(): string {
  const [major, minor] = KUBERNETES_VERSION.slice(1).split('.');
  const flags = ['-s', '-w'];
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    flags.push(
      `-X ${pkg}.gitVersion=${KUBERNETES_VERSION}`,
      `-X ${pkg}.gitMajor=${major ?? ''}`,
      `-X ${pkg}.gitMinor=${minor ?? ''}`,
      `-X ${pkg}.gitTreeState=clean`,
      `-X ${pkg}.buildDate=1970-01-01T00:00:00Z`,
    );
  }
  return flags.join(' ');
}

/** Where built binaries are cached: $KCP_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache, + kube-cache-proxy. */
export function cacheRoot(): string {
  const explicit = process.env.KCP_CACHE_DIR;
  if (explicit) return explicit;
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'kube-cache-proxy');
}

export function controlPlaneBinaries(): ControlPlaneBinaries {
  const hash = createHash('sha256');
  for (const module of ['k8s', 'etcd']) {
    for (const file of ['go.mod', 'go.sum']) hash.update(readFileSync(join(CONTROL_PLANE_MODULES_DIR, module, file)));
  }
  hash.update(kubernetesLinkFlags());
  const dir = join(cacheRoot(), `controlplane-k8s-${KUBERNETES_VERSION}-etcd-${ETCD_VERSION}-${hash.digest('hex').slice(0, 12)}`);
  return binariesIn(dir);
}

function binariesIn(dir: string): ControlPlaneBinaries {
  return { dir, kubeApiserver: join(dir, 'kube-apiserver'), kubectl: join(dir, 'kubectl'), etcd: join(dir, 'etcd') };
}

export function isBuilt(binaries: ControlPlaneBinaries): boolean {
  return existsSync(join(binaries.dir, COMPLETE_MARKER));
}

/** Returns the cached binaries, building them first when they are missing. */
export async function ensureControlPlaneBinaries(progress: Progress): Promise<ControlPlaneBinaries> {
  const binaries = controlPlaneBinaries();
  if (isBuilt(binaries)) return binaries;

  checkGo();
  progress.log(
    `Building the local control plane (Kubernetes ${KUBERNETES_VERSION}, etcd ${ETCD_VERSION}) from Go modules into ${binaries.dir}.\n` +
      'The first build downloads the modules and compiles for 10-25 minutes on 2 cores; later runs reuse the cache.',
  );
  const staging = `${binaries.dir}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    await goBuild(progress, `[1/2] building etcd ${ETCD_VERSION}`, join(CONTROL_PLANE_MODULES_DIR, 'etcd'), [
      '-ldflags',
      '-s -w',
      '-o',
      join(staging, 'etcd'),
      'go.etcd.io/etcd/server/v3',
    ]);
    await goBuild(progress, `[2/2] building kube-apiserver and kubectl ${KUBERNETES_VERSION}`, join(CONTROL_PLANE_MODULES_DIR, 'k8s'), [
      '-ldflags',
      kubernetesLinkFlags(),
      '-o',
      `${staging}/`,
      'k8s.io/kubernetes/cmd/kube-apiserver',
      'k8s.io/kubernetes/cmd/kubectl',
    ]);
    writeFileSync(join(staging, COMPLETE_MARKER), `${new Date().toISOString()}\n`);
    // Another process may have finished the same build first; its result is as good as ours.
    if (!isBuilt(binaries)) {
      rmSync(binaries.dir, { recursive: true, force: true });
      renameSync(staging, binaries.dir);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  progress.log(`Control plane binaries ready in ${binaries.dir}`);
  return binaries;
}

/** kube-controller-manager and kube-scheduler, built on demand (the bench's component runs, and test/e2e/http2/controller-manager.test.ts). */
export interface ComponentBinaries {
  readonly dir: string;
  readonly kubeControllerManager: string;
  readonly kubeScheduler: string;
}

/**
 * The components' own module (tools/controlplane/components: the same pins, with the two commands
 * as its tools), so that the control plane's cache key, and CI's warm cache, stay as they are.
 */
export function componentBinaries(): ComponentBinaries {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum']) hash.update(readFileSync(join(CONTROL_PLANE_MODULES_DIR, 'components', file)));
  hash.update(kubernetesLinkFlags());
  const dir = join(cacheRoot(), `components-k8s-${KUBERNETES_VERSION}-${hash.digest('hex').slice(0, 12)}`);
  return { dir, kubeControllerManager: join(dir, 'kube-controller-manager'), kubeScheduler: join(dir, 'kube-scheduler') };
}

/** Returns the cached component binaries, building them first when they are missing (a few minutes after the control plane's build). */
export async function ensureComponentBinaries(progress: Progress): Promise<ComponentBinaries> {
  const binaries = componentBinaries();
  if (existsSync(join(binaries.dir, COMPLETE_MARKER))) return binaries;
  checkGo();
  progress.log(`Building kube-controller-manager and kube-scheduler ${KUBERNETES_VERSION} from Go modules into ${binaries.dir}.`);
  const staging = `${binaries.dir}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    await goBuild(
      progress,
      `building kube-controller-manager and kube-scheduler ${KUBERNETES_VERSION}`,
      join(CONTROL_PLANE_MODULES_DIR, 'components'),
      [
        '-ldflags',
        kubernetesLinkFlags(),
        '-o',
        `${staging}/`,
        'k8s.io/kubernetes/cmd/kube-controller-manager',
        'k8s.io/kubernetes/cmd/kube-scheduler',
      ],
    );
    writeFileSync(join(staging, COMPLETE_MARKER), `${new Date().toISOString()}\n`);
    if (!existsSync(join(binaries.dir, COMPLETE_MARKER))) {
      rmSync(binaries.dir, { recursive: true, force: true });
      renameSync(staging, binaries.dir);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return binaries;
}

function goEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    // Never download a toolchain: a too-new go.mod must fail loudly, not fetch a prebuilt Go.
    GOTOOLCHAIN: 'local',
    GOWORK: 'off',
    CGO_ENABLED: '0',
    GOFLAGS: '-trimpath -buildvcs=false -mod=readonly',
  };
}

function checkGo(): void {
  const result = spawnSync('go', ['version'], { encoding: 'utf8', env: goEnv() });
  if (result.error || result.status !== 0) {
    throw new CliError(
      'Go was not found on PATH: the local control plane (kube-apiserver, kubectl, etcd) is built from source with it.',
      `Install Go 1.${MIN_GO_MINOR} or newer, or point the proxy at an existing cluster (KUBECONFIG) and skip the local control plane.`,
    );
  }
  const match = /go1\.(\d+)/.exec(result.stdout);
  const minor = match?.[1] === undefined ? Number.NaN : Number(match[1]);
  if (!(minor >= MIN_GO_MINOR)) {
    throw new CliError(
      `${result.stdout.trim()} is too old to build Kubernetes ${KUBERNETES_VERSION}.`,
      `Install Go 1.${MIN_GO_MINOR} or newer (GOTOOLCHAIN=local is used, so Go will not download one itself).`,
    );
  }
}

/** Runs `go build -v` in `moduleDir`, reporting the packages compiled so far every few seconds. */
async function goBuild(progress: Progress, label: string, moduleDir: string, args: readonly string[]): Promise<void> {
  let packages = 0;
  let downloads = 0;
  const tail: string[] = [];
  const step = progress.step(label, () => `${downloads} modules downloaded, ${packages} packages compiled`);
  const child = spawn('go', ['build', '-v', ...args], { cwd: moduleDir, env: goEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  const onOutput = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line === '') continue;
      if (line.startsWith('go: downloading')) downloads++;
      else packages++;
      tail.push(line);
      if (tail.length > 40) tail.shift();
    }
  };
  child.stdout.on('data', onOutput);
  child.stderr.on('data', onOutput);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (code !== 0) {
    step.fail();
    throw new CliError(
      `${label} failed (go build exited ${code ?? 'on a signal'}). Last lines:\n${tail.join('\n')}`,
      'Check that the Go module proxy is reachable and that there is disk space, then run `npm test` (or `kube-cache-proxy dev-cluster build`) again.',
    );
  }
  step.done(`${packages} packages compiled`);
}
