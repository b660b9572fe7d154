/**
 * The fleet's churn, written straight to the apiserver at `rate` writes/s in a fixed cycle: a pod
 * created on a node (round robin), an EndpointSlice updated, the oldest churned pod deleted
 * (gracePeriodSeconds 0: gone at once, no kubelet), an EndpointSlice updated. Every write's answer
 * is timed on CLOCK_MONOTONIC, which the agents' arrivals are measured from.
 */
import type { UpstreamClient } from '../src/upstream/client.ts';
import type { FleetScope } from './fleet-seed.ts';
import { fleetNamespace, fleetNode, fleetPod, sliceName } from './fleet-seed.ts';
import { startPacedWrites } from './paced-writes.ts';
import { monotonicMs } from './watch-client.ts';

/** Writes in flight at most: the writer falls behind rather than piling up requests. */
const MAX_IN_FLIGHT = 16;

/** A pod write: the event its node's agent must see once (`ADDED ns/name` or `DELETED ns/name`). */
export interface PodWrite {
  readonly key: string;
  readonly node: number;
  /** When its answer arrived, ms on CLOCK_MONOTONIC. */
  readonly at: number;
}

/** An EndpointSlice update: every EndpointSlice watcher must see its resourceVersion once. */
export interface SliceWrite {
  readonly rv: number;
  readonly at: number;
}

export interface ChurnLog {
  readonly pods: readonly PodWrite[];
  readonly slices: readonly SliceWrite[];
  /** Writes that failed (not 2xx). */
  readonly failed: number;
}

export interface ChurnSpec {
  readonly rate: number;
  readonly nodes: number;
  readonly services: number;
  /** The seed's scope: the churned pods go to its namespaces and nodes, the EndpointSlices updated are its. */
  readonly scope: FleetScope;
  /** Distinguishes this layout's churned pods from another's. */
  readonly tag: string;
}

export interface Churn {
  /** Stops writing; resolves once the last write answered. */
  stop(): Promise<ChurnLog>;
}

export function startChurn(client: UpstreamClient, spec: ChurnSpec): Churn {
  const pods: PodWrite[] = [];
  const slices: SliceWrite[] = [];
  const live: { name: string; ns: string; node: number }[] = [];
  let failed = 0;
  let created = 0;
  let patched = 0;
  const ok = (status: number): boolean => status >= 200 && status < 300;

  const createPod = async (): Promise<void> => {
    const i = created++;
    const node = i % spec.nodes;
    const ns = fleetNamespace(spec.scope, i);
    const name = `churn-${spec.tag}-${String(i)}`;
    const res = await client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns}/pods`,
      body: JSON.stringify(fleetPod(name, fleetNode(spec.scope, node))),
    });
    const at = monotonicMs();
    if (!ok(res.statusCode)) {
      failed++;
      return;
    }
    pods.push({ key: `ADDED ${ns}/${name}`, node, at });
    live.push({ name, ns, node });
  };
  const deletePod = async (): Promise<void> => {
    const pod = live.shift();
    if (pod === undefined) return;
    const res = await client.request({
      method: 'DELETE',
      path: `/api/v1/namespaces/${pod.ns}/pods/${pod.name}`,
      body: JSON.stringify({ gracePeriodSeconds: 0 }),
    });
    const at = monotonicMs();
    if (!ok(res.statusCode)) {
      failed++;
      return;
    }
    pods.push({ key: `DELETED ${pod.ns}/${pod.name}`, node: pod.node, at });
  };
  const patchSlice = async (): Promise<void> => {
    const i = (patched++ * 7919) % spec.services;
    const res = await client.request({
      method: 'PATCH',
      path: `/apis/discovery.k8s.io/v1/namespaces/${fleetNamespace(spec.scope, i)}/endpointslices/${sliceName(i)}`,
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ metadata: { annotations: { 'fleet-churn': `${spec.tag}-${String(patched)}` } } }),
    });
    const at = monotonicMs();
    if (!ok(res.statusCode)) {
      failed++;
      return;
    }
    const rv = Number((JSON.parse(res.body.toString()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
    slices.push({ rv, at });
  };
  const cycle = [createPod, patchSlice, deletePod, patchSlice];

  const writes = startPacedWrites(spec.rate, MAX_IN_FLIGHT, (j) =>
    (cycle[j % cycle.length] ?? createPod)().catch(() => {
      failed++;
    }),
  );
  return {
    async stop() {
      await writes.stop();
      return { pods, slices, failed };
    },
  };
}
