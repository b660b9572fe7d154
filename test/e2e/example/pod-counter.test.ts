/**
 * The example controller (examples/pod-counter/) as deployed: two replicas, each the command of
 * deploy/example-controller/pod-counter.yaml, talking to the real apiserver through a proxy
 * started with the sidecar's flags (HTTPS, the kubeconfig it writes), elect a leader on a Lease
 * with short durations; the leader keeps a ConfigMap of pod counts in two namespaces.
 *
 * The leader is killed with SIGKILL, pods change while nobody leads, and the follower must take
 * over within the bound client-go's rules give (see test/e2e/leaderelection/failover.test.ts):
 * between leaseDuration − retryPeriod and leaseDuration + two jittered retry periods after the
 * crash. The outcome is checked against the apiserver, not the replicas' word: an audit watch of
 * the Lease and the ConfigMaps (resourceVersions are etcd revisions, one order for both) shows
 * every ConfigMap write made by the replica the Lease named at that revision (no write by a
 * replica that did not hold it: never both at once), and the ConfigMaps end with the apiserver's
 * own pod counts, changes made while nobody led included (no reconcile lost). Then a clean stop
 * (SIGTERM): exit 0, the Lease released.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadYaml } from '@kubernetes/client-node';
import { WRITTEN_BY } from '../../../examples/pod-counter/controller.ts';
import { podCounts, sameData } from '../../../examples/pod-counter/pod-counts.ts';
import { spawnCli } from '../../helpers/cli.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const shared = useSharedAdmin();

/** Short durations with client-go's rules (leaseDuration > renewDeadline > 1.2 × retryPeriod, retryPeriod + renewDeadline < leaseDuration). */
const LEASE_DURATION_S = 4;
const RENEW_DEADLINE_S = 2;
const RETRY_PERIOD_S = 1;
/** Process start-up, apiserver round trips and line delivery on a busy 2-core machine. */
const SLACK_MS = 1_000;
const TAKEOVER_MAX_MS = (LEASE_DURATION_S + 2 * 2.2 * RETRY_PERIOD_S) * 1000 + SLACK_MS;
const TAKEOVER_MIN_MS = (LEASE_DURATION_S - RETRY_PERIOD_S) * 1000 - 250;

interface LogLine {
  readonly time: string;
  readonly identity: string;
  readonly msg: string;
  readonly namespace?: string;
  readonly action?: string;
}

interface Replica {
  readonly name: string;
  readonly child: ChildProcess;
  readonly lines: LogLine[];
  readonly exited: Promise<number | null>;
  output(): string;
  /** The first line with `msg`, waiting for it. */
  waitFor(msg: string, timeoutMs?: number): Promise<LogLine>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** The app container's command in deploy/example-controller/pod-counter.yaml. */
function deployedCommand(): string[] {
  const manifest = loadYaml<{ spec: { template: { spec: { containers: { name: string; command?: string[] }[] } } } }>(
    readFileSync(join(ROOT, 'deploy/example-controller/pod-counter.yaml'), 'utf8'),
  );
  const command = manifest.spec.template.spec.containers.find((c) => c.name === 'app')?.command;
  assert.ok(command !== undefined && command[0] === 'node', `the app runs node: ${JSON.stringify(command)}`);
  return command.slice(1);
}

/** A replica as the Deployment runs it (the repository as the image's /app), with the test's environment. */
function startReplica(t: TestContext, name: string, env: NodeJS.ProcessEnv): Replica {
  // The library's imports resolve to its sources here (no dist/ needed), as in the repository's tests.
  const child = spawn(process.execPath, deployedCommand(), {
    cwd: ROOT,
    env: { ...process.env, ...env, POD_NAME: name, NODE_OPTIONS: '--conditions=kube-cache-proxy-source' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const lines: LogLine[] = [];
  let output = '';
  createInterface({ input: child.stdout }).on('line', (line) => {
    output += `${line}\n`;
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {
      // not a log line
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  void exited.then(() => live.delete(child));
  t.after(() => {
    child.kill('SIGKILL');
  });
  return {
    name,
    child,
    lines,
    exited,
    output: () => output,
    async waitFor(msg, timeoutMs = 30_000) {
      let found: LogLine | undefined;
      await eventually(`${name}: ${msg}\n${output}`, () => (found = lines.find((l) => l.msg === msg)) !== undefined, timeoutMs);
      if (found === undefined) throw new Error('unreachable');
      return found;
    },
  };
}

interface Recorded {
  readonly rv: bigint;
  readonly what: 'lease' | 'configmap';
  /** The Lease's holder, or the ConfigMap writer's annotation. */
  readonly who: string;
  readonly namespace: string;
  readonly data?: Record<string, string>;
}

/** Records a watch at the apiserver (as admin) from `rv` until `signal` aborts. */
async function record(path: string, rv: string, what: Recorded['what'], out: Recorded[], signal: AbortSignal): Promise<void> {
  const res = await shared.admin.stream({
    method: 'GET',
    path: `${path}${path.includes('?') ? '&' : '?'}watch=1&resourceVersion=${rv}`,
    signal,
  });
  assert.equal(res.statusCode, 200);
  try {
    for await (const line of createInterface({ input: res.body })) {
      const event = JSON.parse(line) as {
        type: string;
        object: {
          metadata: { resourceVersion: string; namespace: string; annotations?: Record<string, string> };
          spec?: { holderIdentity?: string };
          data?: Record<string, string>;
        };
      };
      if (event.type !== 'ADDED' && event.type !== 'MODIFIED') continue;
      const { metadata } = event.object;
      out.push({
        rv: BigInt(metadata.resourceVersion),
        what,
        who: what === 'lease' ? (event.object.spec?.holderIdentity ?? '') : (metadata.annotations?.[WRITTEN_BY] ?? ''),
        namespace: metadata.namespace,
        ...(event.object.data === undefined ? {} : { data: event.object.data }),
      });
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}

async function createPods(ns: string, names: readonly string[]): Promise<void> {
  for (const name of names) {
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: { containers: [{ name: 'app', image: 'busybox' }] },
    });
  }
}

/** The counts the apiserver itself gives a namespace's pods. */
async function apiserverCounts(ns: string): Promise<Record<string, string>> {
  const list = await kube<{ items: { status?: { phase?: string } }[] }>(shared.admin, 'GET', `/api/v1/namespaces/${ns}/pods`);
  return podCounts(list.items);
}

async function configMapData(ns: string): Promise<Record<string, string> | undefined> {
  const res = await shared.admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps/pod-counts` });
  return res.statusCode === 200 ? (JSON.parse(res.body.toString()) as { data?: Record<string, string> }).data : undefined;
}

async function countsWritten(namespaces: readonly string[]): Promise<boolean> {
  for (const ns of namespaces) {
    if (!sameData(await configMapData(ns), await apiserverCounts(ns))) return false;
  }
  return true;
}

test(
  'example controller: two replicas through a proxy; kill -9 of the leader, the other takes over within the lease bound; every write by the Lease holder, none lost; SIGTERM releases',
  { timeout: 180_000 },
  async (t) => {
    const nsA = await testNamespace(t, shared.admin);
    const nsB = await testNamespace(t, shared.admin);
    await createPods(nsA, ['a-0', 'a-1', 'a-2']);
    await createPods(nsB, ['b-0', 'b-1']);

    // The proxy as the sidecar runs it: HTTPS with a CA of its own, the apps' kubeconfig written.
    const dir = mkdtempSync(join(tmpdir(), 'kcp-pod-counter-'));
    t.after(() => {
      rmSync(dir, { recursive: true, force: true });
    });
    const kubeconfig = join(dir, 'kubeconfig');
    const proxy = spawnCli([
      'proxy',
      '--kubeconfig',
      shared.cp.kubeconfig,
      '--port',
      '0',
      '--log-level',
      'warn',
      '--tls-generate',
      '--write-kubeconfig',
      kubeconfig,
    ]);
    t.after(async () => {
      proxy.child.kill('SIGTERM');
      await proxy.exited;
    });
    await eventually('the proxy to write its kubeconfig', () => existsSync(kubeconfig) || proxy.child.exitCode !== null, 30_000);
    assert.ok(existsSync(kubeconfig), proxy.output());

    // The audit: what the apiserver itself stores, from now on.
    const audit: Recorded[] = [];
    const stopAudit = new AbortController();
    const from = (await kube<{ metadata: { resourceVersion: string } }>(shared.admin, 'GET', `/api/v1/namespaces/${nsA}/configmaps`))
      .metadata.resourceVersion;
    const audits = [
      record(`/apis/coordination.k8s.io/v1/namespaces/${nsA}/leases`, from, 'lease', audit, stopAudit.signal),
      ...[nsA, nsB].map((ns) =>
        record(`/api/v1/namespaces/${ns}/configmaps?fieldSelector=metadata.name%3Dpod-counts`, from, 'configmap', audit, stopAudit.signal),
      ),
    ];
    t.after(() => {
      stopAudit.abort();
    });

    const env = {
      KUBECONFIG: kubeconfig,
      POD_NAMESPACE: nsA,
      NAMESPACES: `${nsA},${nsB}`,
      LEASE_DURATION_SECONDS: String(LEASE_DURATION_S),
      RENEW_DEADLINE_SECONDS: String(RENEW_DEADLINE_S),
      RETRY_PERIOD_SECONDS: String(RETRY_PERIOD_S),
      RESYNC_SECONDS: '2',
    };
    const replicas = [startReplica(t, 'replica-a', env), startReplica(t, 'replica-b', env)];
    await eventually('a replica to lead', () => replicas.some((r) => r.lines.some((l) => l.msg === 'started leading')), 60_000);
    const leader = replicas.find((r) => r.lines.some((l) => l.msg === 'started leading'));
    const follower = replicas.find((r) => r !== leader);
    assert.ok(leader !== undefined && follower !== undefined);
    await follower.waitFor('caches synced');
    await eventually('the leader to write both namespaces’ counts', () => countsWritten([nsA, nsB]), 30_000);
    assert.deepEqual(await configMapData(nsA), { total: '3', Pending: '3', Running: '0', Succeeded: '0', Failed: '0', Unknown: '0' });

    // The leader dies; pods change while nobody leads.
    const killedAt = Date.now();
    leader.child.kill('SIGKILL');
    assert.equal(await leader.exited, null, 'killed by the signal');
    await createPods(nsA, ['a-3', 'a-4']);
    await kube(shared.admin, 'DELETE', `/api/v1/namespaces/${nsB}/pods/b-0`);
    const took = await follower.waitFor('started leading', 30_000);
    const takeoverMs = Date.parse(took.time) - killedAt;
    t.diagnostic(`kill -9: ${follower.name} leads ${String(takeoverMs)} ms after the kill (lease ${String(LEASE_DURATION_S * 1000)} ms)`);
    assert.ok(takeoverMs >= TAKEOVER_MIN_MS, `${String(takeoverMs)} ms: the lease was respected until it expired`);
    assert.ok(takeoverMs <= TAKEOVER_MAX_MS, `${String(takeoverMs)} ms <= ${String(TAKEOVER_MAX_MS)} ms`);
    await eventually('the new leader to write the changes made while nobody led', () => countsWritten([nsA, nsB]), 30_000);
    assert.equal((await configMapData(nsA))?.total, '5');
    assert.equal((await configMapData(nsB))?.total, '1');

    // A clean stop: the reconcile in progress finishes, the Lease is released, exit 0.
    follower.child.kill('SIGTERM');
    assert.equal(await follower.exited, 0, follower.output());
    assert.ok(follower.lines.some((l) => l.msg === 'stopped'));
    const lease = await kube<{ spec: { holderIdentity?: string } }>(
      shared.admin,
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${nsA}/leases/pod-counter`,
    );
    assert.equal(lease.spec.holderIdentity ?? '', '', 'released');

    // The audit, in the apiserver's order: each ConfigMap write made by the Lease's holder at its revision.
    await eventually('the audit to see the release', () => audit.some((r) => r.what === 'lease' && r.who === ''));
    stopAudit.abort();
    await Promise.all(audits);
    const ordered = [...audit].sort((a, b) => (a.rv < b.rv ? -1 : a.rv > b.rv ? 1 : 0));
    let holder = '';
    const writers: string[] = [];
    for (const entry of ordered) {
      if (entry.what === 'lease') {
        holder = entry.who;
        continue;
      }
      assert.equal(
        entry.who,
        holder,
        `the ConfigMap of ${entry.namespace} at ${String(entry.rv)} written by ${entry.who} while ${holder || 'nobody'} held the Lease`,
      );
      if (writers.at(-1) !== entry.who) writers.push(entry.who);
    }
    assert.deepEqual(writers, [leader.name, follower.name], 'the leader wrote, then the follower once it held the Lease: never in turns');
    const conflicts = replicas.flatMap((r) => r.lines.filter((l) => l.msg === 'conflict: requeued'));
    t.diagnostic(
      `${String(ordered.filter((e) => e.what === 'configmap').length)} ConfigMap writes audited, ${String(conflicts.length)} conflicts requeued`,
    );
  },
);
