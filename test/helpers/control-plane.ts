/**
 * The real control plane for integration tests, and per-test namespaces in it.
 *
 * Under `npm test` one control plane serves the whole run (global-setup.ts). A file run on its
 * own (`node --test test/e2e/x.test.ts`) starts one for itself, stopped by a reaper when the
 * test process exits.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { TestContext } from 'node:test';
import { ensureControlPlaneBinaries } from '../../src/cli/dev-cluster/build.ts';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';
import { readState, up } from '../../src/cli/dev-cluster/control-plane.ts';
import { attachReaper } from '../../src/cli/dev-cluster/reaper.ts';
import { newProgress } from '../../src/cli/progress.ts';
import { loadUpstreamConfig } from '../../src/upstream/config.ts';
import type { UpstreamConfig } from '../../src/upstream/config.ts';
import type { UpstreamClient } from '../../src/upstream/client.ts';
import { newUpstreamClient } from '../../src/upstream/client.ts';

export const CONTROL_PLANE_ENV = 'KCP_TEST_CONTROL_PLANE';

let own: Promise<ControlPlaneState> | undefined;

/** The run's shared control plane, or one started for this test file. */
export async function testControlPlane(): Promise<ControlPlaneState> {
  const shared = process.env[CONTROL_PLANE_ENV];
  if (shared !== undefined && shared !== '') {
    const state = readState(shared);
    if (state === undefined) throw new Error(`${CONTROL_PLANE_ENV}=${shared} holds no control plane`);
    return state;
  }
  own ??= (async () => {
    const progress = newProgress((line) => process.stderr.write(`[control plane] ${line}\n`));
    const dir = mkdtempSync(join(tmpdir(), 'kcp-test-'));
    const state = await up({ dir, binaries: await ensureControlPlaneBinaries(progress), progress });
    // Stopped by the reaper when this test process exits, whichever way it exits.
    attachReaper(dir, process.pid);
    return state;
  })();
  return own;
}

/** The admin's upstream config, or the same cluster with another user's token. */
export async function upstreamConfigFor(cp: ControlPlaneState, user: 'admin' | 'alice' | 'bob' = 'admin'): Promise<UpstreamConfig> {
  const config = await loadUpstreamConfig({ kubeconfig: cp.kubeconfig });
  if (user === 'admin') return config;
  const token = cp.users[user].token;
  return { ...config, authorization: () => Promise.resolve(`Bearer ${token}`), source: `${config.source} as ${user}` };
}

/** A namespace of the test's own, deleted when the test ends (it stays Terminating: no controller-manager). */
export async function testNamespace(t: TestContext, client: UpstreamClient): Promise<string> {
  const name = `t-${randomBytes(4).toString('hex')}`;
  const res = await client.request({
    method: 'POST',
    path: '/api/v1/namespaces',
    body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }),
  });
  if (res.statusCode !== 201) throw new Error(`creating namespace ${name}: ${res.statusCode} ${res.body.toString()}`);
  t.after(async () => {
    await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${name}` });
  });
  return name;
}

export interface SharedAdmin {
  readonly cp: ControlPlaneState;
  readonly admin: UpstreamClient;
}

/**
 * For a test file: registers the hooks that open the run's control plane and an admin client
 * before its tests, and close the client after them. Read the fields inside tests, not at load.
 */
export function useSharedAdmin(): SharedAdmin {
  const shared: { cp?: ControlPlaneState; admin?: UpstreamClient } = {};
  before(async () => {
    shared.cp = await testControlPlane();
    shared.admin = newUpstreamClient(await upstreamConfigFor(shared.cp));
  });
  after(async () => {
    await shared.admin?.close();
  });
  return {
    get cp(): ControlPlaneState {
      if (shared.cp === undefined) throw new Error('useSharedAdmin: read inside a test');
      return shared.cp;
    },
    get admin(): UpstreamClient {
      if (shared.admin === undefined) throw new Error('useSharedAdmin: read inside a test');
      return shared.admin;
    },
  };
}
