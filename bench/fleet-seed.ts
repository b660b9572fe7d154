/**
 * The fleet scenario's cluster: `nodes` Node objects, `podsPerNode` pods bound to each (no
 * kubelet: they stay Pending), `services` headless Services each with one EndpointSlice, spread
 * over the scope's namespaces. Created once, shared by every layout.
 */
import type { Progress } from '../src/cli/progress.ts';
import type { UpstreamClient } from '../src/upstream/client.ts';
import { concurrently as seedConcurrently, create } from './cluster.ts';

/** Concurrent creates: enough to keep the apiserver busy on 2 cores. */
const CONCURRENCY = 32;

/**
 * Where a fleet's objects are. The bench's control plane is the fleet's alone; a test's is shared
 * with other tests writing beside it, so the fleet keeps to namespaces of its own and gives its
 * Nodes (cluster-scoped) names no other test uses.
 */
export interface FleetScope {
  /** The namespaces pods, Services and EndpointSlices are spread over, round robin (the seed creates them unless they exist). */
  readonly namespaces: readonly string[];
  /** Node i is `<nodePrefix><i, 4 digits>`. */
  readonly nodePrefix: string;
  /**
   * Others write to the cluster too: the light watches then record only the events of objects in
   * `namespaces`, so that others' writes neither delay the drain nor reach the figures. Off for
   * the bench, whose watch clients stay as light as they can be.
   */
  readonly shared: boolean;
}

/** The bench's fleet: ten namespaces, on a control plane of its own. */
export const BENCH_FLEET_SCOPE: FleetScope = {
  namespaces: Array.from({ length: 10 }, (_, i) => `fleet-${String(i).padStart(2, '0')}`),
  nodePrefix: 'fleet-node-',
  shared: false,
};

export function fleetNamespace(scope: FleetScope, i: number): string {
  return scope.namespaces[i % scope.namespaces.length] ?? '';
}

export function fleetNode(scope: FleetScope, i: number): string {
  return `${scope.nodePrefix}${String(i).padStart(4, '0')}`;
}

export function serviceName(i: number): string {
  return `svc-${String(i).padStart(5, '0')}`;
}

/** The EndpointSlice of Service i (in the Service's namespace). */
export function sliceName(i: number): string {
  return `${serviceName(i)}-slice`;
}

/** The pod spec of every fleet pod: bound to `node`, one pause container. */
export function fleetPod(name: string, node: string): unknown {
  return {
    metadata: { name, labels: { app: 'fleet' } },
    spec: {
      nodeName: node,
      containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
    },
  };
}

/** The fleet's seed, CONCURRENCY requests at a time. */
function each(count: number, fn: (i: number) => Promise<void>): Promise<void> {
  return seedConcurrently(count, fn, CONCURRENCY);
}

export interface FleetSizes {
  readonly nodes: number;
  readonly podsPerNode: number;
  readonly services: number;
}

export async function seedFleet(client: UpstreamClient, sizes: FleetSizes, scope: FleetScope, progress: Progress): Promise<void> {
  let created = 0;
  const total = scope.namespaces.length + sizes.nodes + sizes.services * 2 + sizes.nodes * sizes.podsPerNode;
  const step = progress.step(
    `fleet: seeding ${String(sizes.nodes)} nodes × ${String(sizes.podsPerNode)} pods, ${String(sizes.services)} services and EndpointSlices`,
    () => `${String(created)}/${String(total)} created`,
  );
  const made = async (work: Promise<void>): Promise<void> => {
    await work;
    created++;
  };
  await each(scope.namespaces.length, (i) => made(create(client, '/api/v1/namespaces', { metadata: { name: fleetNamespace(scope, i) } })));
  await each(sizes.nodes, (i) => made(create(client, '/api/v1/nodes', { metadata: { name: fleetNode(scope, i) } })));
  await each(sizes.services, async (i) => {
    const ns = fleetNamespace(scope, i);
    await made(
      create(client, `/api/v1/namespaces/${ns}/services`, {
        metadata: { name: serviceName(i) },
        spec: { clusterIP: 'None', selector: { app: serviceName(i) }, ports: [{ name: 'http', port: 80 }] },
      }),
    );
    await made(
      create(client, `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
        metadata: { name: sliceName(i), labels: { 'kubernetes.io/service-name': serviceName(i) } },
        addressType: 'IPv4',
        endpoints: [{ addresses: [`10.${String((i >> 8) & 255)}.${String(i & 255)}.1`], conditions: { ready: true } }],
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      }),
    );
  });
  await each(sizes.nodes * sizes.podsPerNode, (k) => {
    const node = k % sizes.nodes;
    const j = Math.floor(k / sizes.nodes);
    return made(
      create(
        client,
        `/api/v1/namespaces/${fleetNamespace(scope, k)}/pods`,
        fleetPod(`seed-${fleetNode(scope, node)}-${String(j)}`, fleetNode(scope, node)),
      ),
    );
  });
  step.done();
}
