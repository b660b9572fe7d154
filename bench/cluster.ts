/**
 * The bench's own control plane (dev-cluster up/down in a dedicated directory), its seed data,
 * and the apiserver's own request counters (its /metrics), which say what each scenario cost
 * upstream whichever target served it.
 *
 * Seed layout: `pods` pods `pod-<i>` in namespace `bench-<i mod namespaces>`, every hundredth
 * labelled `bench-group=selected` (1%), all Pending (no scheduler, no kubelet); `configmaps`
 * ConfigMaps `cm-<i>` of ~1 KiB the same way.
 */
import { ensureControlPlaneBinaries } from '../src/cli/dev-cluster/build.ts';
import type { ControlPlaneState } from '../src/cli/dev-cluster/control-plane.ts';
import { down, readState, runningProcesses, up } from '../src/cli/dev-cluster/control-plane.ts';
import { attachReaper } from '../src/cli/dev-cluster/reaper.ts';
import type { Progress } from '../src/cli/progress.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';

/** The label selecting 1% of the pods (scenario list-selector). */
export const SELECTED_LABEL = 'bench-group=selected';
/** Concurrent creates while seeding: enough to keep the apiserver busy on 2 cores. */
const SEED_CONCURRENCY = 48;

export function namespaceName(i: number): string {
  return `bench-${String(i).padStart(3, '0')}`;
}

export function podName(i: number): string {
  return `pod-${String(i).padStart(6, '0')}`;
}

/** Pods per node: pod i is bound to node i / PODS_PER_NODE (no node object, no kubelet: it stays Pending). */
export const PODS_PER_NODE = 100;

/** The node pod i is bound to, as a scheduler would have (a kubelet lists its pods by it). */
export function nodeName(i: number): string {
  return `node-${String(Math.floor(i / PODS_PER_NODE)).padStart(4, '0')}`;
}

/** Brings up the bench control plane in `dir` (stopping a leftover one first), tied to this process. */
export async function startCluster(dir: string, progress: Progress): Promise<ControlPlaneState> {
  const previous = readState(dir);
  if (previous !== undefined && runningProcesses(previous).length > 0) {
    progress.log(`stopping a leftover bench control plane in ${dir}`);
    await down(dir);
  }
  const state = await up({ dir, binaries: await ensureControlPlaneBinaries(progress), progress });
  attachReaper(dir, process.pid);
  return state;
}

export async function stopCluster(dir: string): Promise<void> {
  await down(dir);
}

/** POSTs `body`; an object that already exists is fine (a seed run again). */
export async function create(client: UpstreamClient, path: string, body: unknown): Promise<void> {
  const res = await client.request({ method: 'POST', path, body: JSON.stringify(body) });
  if (res.statusCode !== 201 && res.statusCode !== 409) throw new Error(`POST ${path}: ${String(res.statusCode)} ${res.body.toString()}`);
}

/** fn(0) … fn(count - 1), at most `concurrency` at a time. */
export async function concurrently(count: number, fn: (i: number) => Promise<void>, concurrency = SEED_CONCURRENCY): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

export interface SeedSizes {
  readonly pods: number;
  readonly namespaces: number;
  readonly configmaps: number;
}

export async function seed(client: UpstreamClient, sizes: SeedSizes, progress: Progress): Promise<void> {
  await seedPods(client, 0, sizes.pods, sizes.namespaces, progress);
  if (sizes.configmaps === 0) return;
  let created = 0;
  const filler = 'x'.repeat(600);
  const cms = progress.step(`creating ${String(sizes.configmaps)} configmaps`, () => `${String(created)} created`);
  await concurrently(sizes.configmaps, async (i) => {
    await create(client, `/api/v1/namespaces/${namespaceName(i % sizes.namespaces)}/configmaps`, {
      metadata: { name: `cm-${String(i).padStart(6, '0')}`, labels: { app: 'bench' } },
      data: { filler },
    });
    created++;
  });
  cms.done();
}

/**
 * Creates pods `from` to `to` - 1 (pod i in namespace i mod `namespaces`, on node nodeName(i), 1%
 * labelled SELECTED_LABEL), and the namespaces.
 */
export async function seedPods(client: UpstreamClient, from: number, to: number, namespaces: number, progress: Progress): Promise<void> {
  await concurrently(namespaces, (i) => create(client, '/api/v1/namespaces', { metadata: { name: namespaceName(i) } }));
  if (to <= from) return;
  let created = 0;
  const pods = progress.step(
    `creating pods ${String(from)} to ${String(to - 1)} in ${String(namespaces)} namespaces`,
    () => `${String(created)} created`,
  );
  await concurrently(to - from, async (j) => {
    const i = from + j;
    const labels: Record<string, string> = { app: 'bench', shard: String(i % 10) };
    if (i % 100 === 0) labels['bench-group'] = 'selected';
    await create(client, `/api/v1/namespaces/${namespaceName(i % namespaces)}/pods`, {
      metadata: { name: podName(i), labels },
      spec: {
        nodeName: nodeName(i),
        containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
      },
    });
    created++;
  });
  pods.done();
}

export async function kubernetesVersion(client: UpstreamClient): Promise<string> {
  const res = await client.request({ method: 'GET', path: '/version' });
  return (JSON.parse(res.body.toString()) as { gitVersion: string }).gitVersion;
}

/** Requests the apiserver counted for one resource: finished ones by verb, and watches open now. */
export interface UpstreamCounts {
  readonly LIST: number;
  readonly GET: number;
  /** Finished watches (apiserver_request_total counts a watch when it ends). */
  readonly WATCH: number;
  /** Watches open now (apiserver_longrunning_requests). */
  readonly openWatches: number;
}

export type UpstreamCountsByResource = Readonly<Record<string, UpstreamCounts>>;

/** Reads apiserver_request_total and apiserver_longrunning_requests for `resources` (core group). */
export async function upstreamCounts(client: UpstreamClient, resources: readonly string[]): Promise<UpstreamCountsByResource> {
  const res = await client.request({ method: 'GET', path: '/metrics', headers: { accept: 'text/plain' } });
  const counts: Record<string, { LIST: number; GET: number; WATCH: number; openWatches: number }> = {};
  for (const r of resources) counts[r] = { LIST: 0, GET: 0, WATCH: 0, openWatches: 0 };
  for (const line of res.body.toString().split('\n')) {
    const total = line.startsWith('apiserver_request_total{');
    const open = line.startsWith('apiserver_longrunning_requests{');
    if (!total && !open) continue;
    const resource = /resource="([^"]*)"/.exec(line)?.[1];
    const verb = /verb="([^"]*)"/.exec(line)?.[1];
    if (resource === undefined || verb === undefined || !line.includes('group=""') || /subresource="[^"]/.test(line)) continue;
    const entry = counts[resource];
    if (entry === undefined) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (open) {
      if (verb === 'WATCH') entry.openWatches += value;
    } else if (verb === 'LIST' || verb === 'GET' || verb === 'WATCH') {
      entry[verb] += value;
    }
  }
  return counts;
}

export function countsDelta(after: UpstreamCountsByResource, before: UpstreamCountsByResource): UpstreamCountsByResource {
  const out: Record<string, UpstreamCounts> = {};
  for (const [r, a] of Object.entries(after)) {
    const b = before[r] ?? { LIST: 0, GET: 0, WATCH: 0, openWatches: 0 };
    out[r] = { LIST: a.LIST - b.LIST, GET: a.GET - b.GET, WATCH: a.WATCH - b.WATCH, openWatches: a.openWatches - b.openWatches };
  }
  return out;
}
