/**
 * The real kubectl (the control plane's own build) run twice per command: through a proxy and
 * straight at the apiserver, each with a throwaway kubeconfig and cache dir, and compared.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';
import { runCommand } from './cli.ts';
import type { CliRun } from './cli.ts';

export interface Kubectl {
  /** kubectl through the proxy: --server PROXY, no credentials of its own. */
  viaProxy(args: readonly string[]): Promise<CliRun>;
  /** kubectl straight at the apiserver, with the admin kubeconfig. */
  direct(args: readonly string[]): Promise<CliRun>;
}

/** Both kubectls, each with a kubeconfig and a --cache-dir of its own for this test only. */
export function kubectls(t: TestContext, cp: ControlPlaneState, proxyUrl: string): Kubectl {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-kubectl-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const emptyKubeconfig = join(dir, 'empty-kubeconfig');
  writeFileSync(emptyKubeconfig, '');
  const bin = cp.binaries.kubectl;
  // A fresh cache dir per invocation: discovery must come from the server every time.
  let runs = 0;
  const cacheDir = (): string => join(dir, `cache-${String(runs++)}`);
  return {
    viaProxy: (args) => runCommand(bin, ['--kubeconfig', emptyKubeconfig, '--server', proxyUrl, '--cache-dir', cacheDir(), ...args]),
    direct: (args) => runCommand(bin, ['--kubeconfig', cp.kubeconfig, '--cache-dir', cacheDir(), ...args]),
  };
}

/**
 * kubectl's ages (HumanDuration: `5s`, `2m3s`, `4h`, `3d5h`, ...) and timestamps are computed at
 * print time, so two runs a second apart may differ: only those tokens are replaced.
 */
export function withoutAges(text: string): string {
  return text.replace(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\b/g, '<time>').replace(/\b\d+[smhdy](\d+[smhd])?\b/g, '<age>');
}

/**
 * A list's own metadata.resourceVersion in `-o json`/`-o yaml`: an answer from the proxy's cache
 * carries the cache's RV, which may trail or lead the apiserver's watch cache by unrelated writes
 * elsewhere in the cluster (the items are the same objects at the same RVs). Only that field of a
 * top-level List is replaced; every item keeps its resourceVersion.
 */
export function withoutListResourceVersion(text: string): string {
  return text
    .replace(/^(\{"kind":"\w+List","apiVersion":"[^"]+","metadata":\{"resourceVersion":")\d+"/, '$1<rv>"')
    .replace(/("kind": "List",\n\s+"metadata": \{\n\s+"resourceVersion": ")\d*"/, '$1<rv>"')
    .replace(/^(kind: List\nmetadata:\n {2}resourceVersion: )"?\d*"?$/m, '$1<rv>');
}

/**
 * Runs the same kubectl command both ways and asserts the same exit code, stdout and stderr after
 * `normalise`. Other suites write to the cluster concurrently (other namespaces, for `-A`), so the
 * pair is re-run a few times before the last pair's difference is reported.
 */
export async function assertSameAnswer(
  t: TestContext,
  kubectl: Kubectl,
  args: readonly string[],
  normalise: (s: string) => string = (s) => s,
): Promise<CliRun> {
  let last: { proxy: CliRun; direct: CliRun } | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    const [viaProxy, direct] = await Promise.all([kubectl.viaProxy(args), kubectl.direct(args)]);
    last = { proxy: viaProxy, direct };
    if (
      viaProxy.code === direct.code &&
      normalise(viaProxy.stdout) === normalise(direct.stdout) &&
      normalise(viaProxy.stderr) === normalise(direct.stderr)
    )
      break;
  }
  assert.ok(last !== undefined);
  const label = `kubectl ${args.join(' ')}`;
  assert.equal(last.proxy.code, last.direct.code, `${label}: exit code (proxy stderr: ${last.proxy.stderr})`);
  assert.equal(normalise(last.proxy.stdout), normalise(last.direct.stdout), `${label}: stdout`);
  assert.equal(normalise(last.proxy.stderr), normalise(last.direct.stderr), `${label}: stderr`);
  t.diagnostic(`${label}: exit ${String(last.direct.code)}, ${String(last.direct.stdout.length)} bytes of stdout, identical`);
  return last.direct;
}
