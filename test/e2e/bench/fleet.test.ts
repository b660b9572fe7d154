/**
 * The fleet bench's node layout at its smallest (3 nodes, a few seconds of churn) on the run's
 * shared control plane: its pods, Services and EndpointSlices in a namespace of the test's own,
 * its Nodes named after it. Every event each agent had to see arrived once, and each node proxy
 * held one upstream watch per type, its informer's. Other tests watch the same apiserver, so the
 * watches are counted by each proxy's own /metrics, not by the apiserver's. Counts only; the
 * timings are the bench's to print. The Go agent is built first (seconds with a warm Go build
 * cache, minutes without one).
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { test } from 'node:test';
import { newProgress } from '../../../src/cli/progress.ts';
import type { FleetSpec } from '../../../bench/fleet.ts';
import { buildAgent, runLayout } from '../../../bench/fleet.ts';
import { apiserverSnapshot, FLEET_RESOURCES } from '../../../bench/fleet-apiserver.ts';
import type { FleetScope } from '../../../bench/fleet-seed.ts';
import { fleetNode, seedFleet } from '../../../bench/fleet-seed.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';

const shared = useSharedAdmin();

const SPEC: FleetSpec = {
  nodes: 3,
  podsPerNode: 5,
  services: 20,
  churn: 10,
  seconds: 4,
  layouts: ['node'],
  listSeconds: 2,
  lightAgents: 1,
};

test(
  `fleet: ${String(SPEC.nodes)} node proxies lose no event and hold one upstream watch per type each`,
  { timeout: 600_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    const scope: FleetScope = { namespaces: [ns], nodePrefix: `${ns}-node-`, shared: true };
    t.after(async () => {
      for (let i = 0; i < SPEC.nodes; i++) await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${fleetNode(scope, i)}` });
    });
    const apiserverPid = cp.processes.find((p) => p.name === 'kube-apiserver')?.pid;
    assert.ok(apiserverPid !== undefined);
    const binary = await buildAgent();
    t.after(() => {
      rmSync(dirname(binary), { recursive: true, force: true });
    });
    const quiet = newProgress(() => undefined);
    await seedFleet(admin, SPEC, scope, quiet);
    const row = await runLayout(
      { state: cp, client: admin, apiserverPid, spec: SPEC, scope, binary, report: () => undefined },
      'node',
      await apiserverSnapshot(admin, apiserverPid),
    );
    const agents = row.agents;
    assert.ok(agents !== undefined);
    assert.ok(agents.expected > 0, 'the churn made events for the agents');
    assert.equal(agents.failedWrites, 0);
    assert.equal(agents.lost, 0, 'events lost');
    assert.equal(agents.duplicated, 0, 'events duplicated');
    assert.equal(agents.delivered, agents.expected);
    const one = Object.fromEntries(FLEET_RESOURCES.map((r) => [r, 1]));
    const proxies = row.nodeProxyWatches ?? [];
    assert.equal(proxies.length, SPEC.nodes);
    for (const [i, watches] of proxies.entries()) {
      assert.deepEqual(watches, one, `node proxy ${String(i)}: its informer's upstream watch of each type, no other`);
    }
  },
);
