/**
 * The shared-mode scenario: many distinct identities reading through one proxy in shared mode
 * (`proxy --shared`: each request's token reviewed by TokenReview, each read authorized by
 * SubjectAccessReview, both kept as the apiserver's webhook caches keep them), beside the same
 * identities reading from the apiserver itself.
 *
 * N ServiceAccounts (one identity each, a token from TokenRequest) may list the seeded pods (a
 * ClusterRole bound to their group); identity i lists the pods of namespace i mod namespaces,
 * RV unset (what a client sends without a flag). Each target gets the same two phases: first
 * contact (one request per identity: the proxy reviews each token and decision once), then
 * `seconds` of load with every identity in turn (decisions cached). For each phase the
 * apiserver's own counters say what it was asked: pod LISTs, TokenReviews, SubjectAccessReviews.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { namespaceName } from './cluster.ts';
import type { IdentityLoadSpec } from './identity-load.ts';
import type { LoadResult } from './load.ts';
import { runLoadProcess } from './load.ts';
import { servingAddress } from './targets.ts';

export interface SharedModeOptions {
  readonly identities: number;
  readonly namespaces: number;
  readonly connections: number;
  readonly seconds: number;
}

export type SharedModeTarget = 'apiserver' | 'kube-cache-proxy --shared';
export type SharedModePhase = 'first contact' | 'decisions cached';

/** What the apiserver was asked during a phase. */
export interface SharedModeUpstream {
  readonly podLists: number;
  readonly tokenReviews: number;
  readonly subjectAccessReviews: number;
  /** Every resource request it counted (the three above and anything else). */
  readonly total: number;
}

export interface SharedModeRow extends LoadResult {
  readonly target: SharedModeTarget;
  readonly phase: SharedModePhase;
  readonly upstream: SharedModeUpstream;
}

const NAMESPACE = 'bench-shared';
const ROOT = join(import.meta.dirname, '..');
const ROLE = 'bench-shared-pod-reader';

async function ok(
  client: UpstreamClient,
  method: 'POST' | 'GET',
  path: string,
  body?: unknown,
  also: readonly number[] = [],
): Promise<string> {
  const res = await client.request({ method, path, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  if (res.statusCode >= 300 && !also.includes(res.statusCode))
    throw new Error(`${method} ${path}: ${String(res.statusCode)} ${res.body.toString().slice(0, 300)}`);
  return res.body.toString();
}

/** N ServiceAccounts and a token each, allowed to list pods everywhere (their group's ClusterRoleBinding). */
async function makeIdentities(client: UpstreamClient, n: number, progress: (detail: string) => void): Promise<string[]> {
  await ok(client, 'POST', '/api/v1/namespaces', { metadata: { name: NAMESPACE } }, [409]);
  await ok(
    client,
    'POST',
    '/apis/rbac.authorization.k8s.io/v1/clusterroles',
    { metadata: { name: ROLE }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }] },
    [409],
  );
  await ok(
    client,
    'POST',
    '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    {
      metadata: { name: ROLE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ROLE },
      subjects: [{ kind: 'Group', name: `system:serviceaccounts:${NAMESPACE}`, apiGroup: 'rbac.authorization.k8s.io' }],
    },
    [409],
  );
  const tokens: string[] = new Array<string>(n);
  let next = 0;
  let made = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < n; i = next++) {
      const name = `id-${String(i)}`;
      await ok(client, 'POST', `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`, { metadata: { name } }, [409]);
      const review = JSON.parse(
        await ok(client, 'POST', `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/${name}/token`, {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds: 7200 },
        }),
      ) as { status: { token: string } };
      tokens[i] = review.status.token;
      if (++made % 250 === 0) progress(`${String(made)}/${String(n)} identities`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return tokens;
}

/** The apiserver's apiserver_request_total, summed by resource (resource requests only). */
async function requestTotals(client: UpstreamClient): Promise<Map<string, number>> {
  const res = await client.request({ method: 'GET', path: '/metrics', headers: { accept: 'text/plain' } });
  const totals = new Map<string, number>();
  for (const line of res.body.toString().split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const resource = /resource="([^"]*)"/.exec(line)?.[1] ?? '';
    if (resource === '' || /subresource="[^"]/.test(line)) continue;
    totals.set(resource, (totals.get(resource) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return totals;
}

function upstreamDelta(after: Map<string, number>, before: Map<string, number>): SharedModeUpstream {
  const d = (resource: string): number => (after.get(resource) ?? 0) - (before.get(resource) ?? 0);
  let total = 0;
  for (const resource of after.keys()) total += d(resource);
  return { podLists: d('pods'), tokenReviews: d('tokenreviews'), subjectAccessReviews: d('subjectaccessreviews'), total };
}

async function runIdentityLoad(spec: IdentityLoadSpec): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-identity-load-'));
  const file = join(dir, 'spec.json');
  writeFileSync(file, JSON.stringify(spec));
  try {
    return await runLoadProcess([join(import.meta.dirname, 'identity-load.ts'), file], 'identity load');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The shared proxy, as its own process: HTTPS with a CA it makes (the load does not verify it), pods cached. */
async function startSharedProxy(state: ControlPlaneState): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(
    process.execPath,
    [
      join(ROOT, 'bin', 'kube-cache-proxy.mjs'),
      'proxy',
      `--kubeconfig=${state.kubeconfig}`,
      '--port=0',
      '--shared',
      '--tls-generate',
      '--resources=pods',
      '--log-level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const url = `https://${await servingAddress(child, 'kube-cache-proxy --shared')}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  const agent = new Agent({ connect: { rejectUnauthorized: false } });
  try {
    for (const deadline = Date.now() + 180_000; ;) {
      const res = await request(`${url}/readyz`, { dispatcher: agent }).catch(() => undefined);
      await res?.body.dump();
      if (res?.statusCode === 200) break;
      if (Date.now() > deadline) throw new Error('the shared proxy did not get ready in 180 s');
      await sleep(50);
    }
  } catch (error) {
    await stop();
    throw error;
  } finally {
    await agent.close();
  }
  return { url, stop };
}

export async function runSharedMode(
  state: ControlPlaneState,
  client: UpstreamClient,
  o: SharedModeOptions,
  progress: (detail: string) => void,
): Promise<SharedModeRow[]> {
  const tokens = await makeIdentities(client, o.identities, progress);
  const identities = tokens.map((token, i) => ({ token, path: `/api/v1/namespaces/${namespaceName(i % o.namespaces)}/pods` }));
  // RBAC is read by the apiserver from its informers: wait until the grant is in force.
  for (const deadline = Date.now() + 30_000; ;) {
    const res = await request(`${state.server}${identities[0]?.path ?? ''}`, {
      dispatcher: new Agent({ connect: { rejectUnauthorized: false } }),
      headers: { authorization: `Bearer ${tokens[0] ?? ''}` },
    });
    await res.body.dump();
    if (res.statusCode === 200) break;
    if (Date.now() > deadline) throw new Error(`the identities' grant is not in force: ${String(res.statusCode)}`);
    await sleep(200);
  }
  const proxy = await startSharedProxy(state);
  const rows: SharedModeRow[] = [];
  try {
    for (const [target, url] of [
      ['apiserver', state.server],
      ['kube-cache-proxy --shared', proxy.url],
    ] as const) {
      for (const phase of ['first contact', 'decisions cached'] as const) {
        const before = await requestTotals(client);
        const result = await runIdentityLoad({
          url,
          identities,
          connections: o.connections,
          ...(phase === 'first contact' ? { amount: identities.length } : { seconds: o.seconds }),
        });
        const upstream = upstreamDelta(await requestTotals(client), before);
        rows.push({ ...result, target, phase, upstream });
        progress(
          `${target}, ${phase}: p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ${String(result.requests)} requests; upstream ${String(upstream.podLists)} pod LISTs, ${String(upstream.tokenReviews)} TokenReviews, ${String(upstream.subjectAccessReviews)} SARs`,
        );
      }
    }
  } finally {
    await proxy.stop();
  }
  return rows;
}

export function formatSharedMode(rows: readonly SharedModeRow[], o: SharedModeOptions): string {
  const lines = [
    `Shared mode: ${String(o.identities)} identities (service-account tokens), each listing one namespace's pods (RV unset) in turn, ${String(o.connections)} connections`,
    '| target | phase | requests | p50 ms | p99 ms | req/s | failures | apiserver: pod LISTs | TokenReviews | SARs | all requests |',
    '| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.target} | ${r.phase} | ${String(r.requests)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.rps.toFixed(0)} | ${String(r.failures)} | ${String(r.upstream.podLists)} | ${String(r.upstream.tokenReviews)} | ${String(r.upstream.subjectAccessReviews)} | ${String(r.upstream.total)} |`,
    );
  }
  return lines.join('\n');
}
