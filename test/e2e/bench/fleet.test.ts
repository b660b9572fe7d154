/**
 * The fleet bench at its smallest (3 nodes, a few seconds of churn, the node layout), on a control
 * plane of its own (the apiserver's watch count is the figure checked): every event each agent
 * had to see arrived once, and the apiserver held at most one watch per type per node proxy.
 * Counts only; the timings are the bench's to print. The Go agent is built first (seconds with a warm
 * Go build cache, minutes without one).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { newProgress } from '../../../src/cli/progress.ts';
import { loadUpstreamConfig } from '../../../src/upstream/config.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { startCluster, stopCluster } from '../../../bench/cluster.ts';
import { runFleet } from '../../../bench/fleet.ts';
import { FLEET_RESOURCES } from '../../../bench/fleet-apiserver.ts';

const NODES = 3;

test(
  `fleet: ${String(NODES)} node proxies lose no event and hold at most one apiserver watch per type each`,
  { timeout: 600_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'kcp-fleet-test-'));
    const progress = newProgress(() => undefined);
    const state = await startCluster(dir, progress);
    t.after(async () => {
      await stopCluster(dir);
      rmSync(dir, { recursive: true, force: true });
    });
    const client = newUpstreamClient(await loadUpstreamConfig({ kubeconfig: state.kubeconfig }));
    t.after(() => client.close());
    const pid = state.processes.find((p) => p.name === 'kube-apiserver')?.pid;
    assert.ok(pid !== undefined);
    const result = await runFleet(
      state,
      client,
      pid,
      { nodes: NODES, podsPerNode: 5, services: 20, churn: 10, seconds: 4, layouts: ['node'], listSeconds: 2, lightAgents: 1 },
      progress,
      () => undefined,
    );
    const row = result.rows[0];
    assert.equal(row?.skipped, undefined, row?.skipped);
    const agents = row?.agents;
    assert.ok(agents !== undefined);
    assert.ok(agents.expected > 0, 'the churn made events for the agents');
    assert.equal(agents.failedWrites, 0);
    assert.equal(agents.lost, 0, 'events lost');
    assert.equal(agents.duplicated, 0, 'events duplicated');
    assert.equal(agents.delivered, agents.expected);
    const watches = Object.values(row?.watches ?? {}).reduce((a, b) => a + b, 0);
    assert.ok(watches <= FLEET_RESOURCES.length * NODES, `${String(watches)} apiserver watches for ${String(NODES)} node proxies`);
  },
);
