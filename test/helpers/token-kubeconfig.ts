/**
 * A kubeconfig file (clientcmd's v1 Config, JSON) for a bearer token against the control plane's
 * apiserver: a sidecar's in-cluster config (its ServiceAccount's token), as the chain tests run it.
 * In a folder of its own, removed when `t` ends.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';

export function tokenKubeconfig(t: { after(fn: () => void): void }, cp: ControlPlaneState, token: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-token-kubeconfig-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const path = join(dir, 'kubeconfig');
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: cp.server, 'certificate-authority': cp.caFile } }],
      users: [{ name: 'sidecar', user: { token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'sidecar' } }],
      'current-context': 'c',
    }),
  );
  return path;
}
