/**
 * A node proxy rolled as deploy/node rolls it (maxSurge: the new one ready beside the old, then
 * SIGTERM to the old, whose readiness fails at once while it serves on for the manifest's
 * KCP_SHUTDOWN_DELAY_DURATION, then drains), behind a stand-in for its Service (a TCP proxy whose
 * new connections go to the ready endpoint, as kube-proxy's rules do once the endpoint drops),
 * under 50 clients reading, watching and writing: 40 of them the node proxy's own, 10 through two
 * chained sidecars. Not one request fails, not one event is lost.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadAllYaml } from '@kubernetes/client-node';
import { Agent, request } from 'undici';
import type { Dispatcher } from 'undici';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { loadUpstream } from '../../../src/proxy/upstream.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { grantInNamespace, kube, serviceAccountToken } from '../../helpers/kube.ts';
import { seededRandom } from '../../helpers/prng.ts';
import { startReflectorWatcher } from '../../helpers/reflector-watcher.ts';
import type { ReflectorWatcher } from '../../helpers/reflector-watcher.ts';
import { clientFor, startSharedProxy } from '../../helpers/shared-proxy.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';
import { tokenKubeconfig } from '../../helpers/token-kubeconfig.ts';
import { auditWatch, caughtUp } from '../../helpers/watch-audit.ts';
import type { AcknowledgedWrite } from '../../helpers/watch-audit.ts';

const shared = useSharedAdmin();

/** The shared proxies' shutdown delay, as deploy/shared-proxy/proxy.yaml sets it. */
function manifestShutdownDelay(): string {
  const [patch] = loadAllYaml(readFileSync(new URL('../../../deploy/shared-proxy/proxy.yaml', import.meta.url), 'utf8')) as {
    spec: { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } };
  }[];
  const value = patch?.spec.template.spec.containers[0]?.env?.find((e) => e.name === 'KCP_SHUTDOWN_DELAY_DURATION')?.value;
  assert.ok(value !== undefined, 'KCP_SHUTDOWN_DELAY_DURATION in deploy/shared-proxy/proxy.yaml');
  return value;
}

interface Load {
  readonly failures: string[];
  requests: number;
}

/** A client that reads (a LIST, then a GET) twice a second until stopped; every failure noted. */
function reader(
  base: string,
  ns: string,
  dispatcher: Dispatcher,
  headers: Record<string, string>,
  load: Load,
  signal: AbortSignal,
): Promise<void> {
  return (async () => {
    while (!signal.aborted) {
      for (const path of [`/api/v1/namespaces/${ns}/configmaps`, `/api/v1/namespaces/${ns}/configmaps/seed`]) {
        try {
          const res = await request(`${base}${path}`, { dispatcher, headers });
          const body = await res.body.text();
          load.requests++;
          if (res.statusCode !== 200) load.failures.push(`GET ${path}: ${String(res.statusCode)} ${body.slice(0, 200)}`);
        } catch (error) {
          load.failures.push(`GET ${path}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  })();
}

/** A client that creates a ConfigMap of its own once a second until stopped; every acknowledged write kept. */
function writer(
  base: string,
  ns: string,
  name: string,
  dispatcher: Dispatcher,
  headers: Record<string, string>,
  load: Load,
  writes: AcknowledgedWrite[],
  signal: AbortSignal,
): Promise<void> {
  return (async () => {
    for (let i = 0; !signal.aborted; i++) {
      const object = `${name}-${String(i)}`;
      try {
        const res = await request(`${base}/api/v1/namespaces/${ns}/configmaps`, {
          method: 'POST',
          dispatcher,
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ metadata: { name: object } }),
        });
        const body = await res.body.text();
        load.requests++;
        if (res.statusCode !== 201) load.failures.push(`POST ${object}: ${String(res.statusCode)} ${body.slice(0, 200)}`);
        else {
          const rv = Number((JSON.parse(body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
          writes.push({ key: `${ns}/${object}`, type: 'ADDED', rv, ackedAt: performance.now() });
        }
      } catch (error) {
        load.failures.push(`POST ${object}: ${error instanceof Error ? error.message : String(error)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  })();
}

test(
  'node proxy rolled (the new one ready, SIGTERM to the old) under 50 clients reading, watching and writing, 10 of them through chained sidecars: no request fails, no event is lost',
  { timeout: 240_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'seed' } });
    const token = await serviceAccountToken(admin, ns, 'app');
    await grantInNamespace(
      admin,
      ns,
      'configmaps',
      [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create'] }],
      {
        kind: 'ServiceAccount',
        name: 'app',
        namespace: ns,
      },
    );
    const delay = manifestShutdownDelay();
    const nodeArgs = ['--resources', 'configmaps', '--shutdown-delay-duration', delay, '--log-level', 'warn'];
    const old = await startSharedProxy(t, cp, nodeArgs);
    const oldPort = Number(new URL(old.url).port);
    // The Service: new connections to the ready endpoint.
    const service = await startTcpProxy('127.0.0.1', oldPort);
    t.after(() => service.close());
    const serviceUrl = `https://127.0.0.1:${String(service.port)}`;

    // Two chained sidecars, each as its pod's ServiceAccount, upstream the Service.
    const caFile = cp.caFile;
    const sidecars: string[] = [];
    for (let i = 0; i < 2; i++) {
      const options = parseProxyOptions([
        '--port',
        '0',
        '--resources',
        'configmaps',
        '--namespace',
        ns,
        '--log-level',
        'warn',
        '--kubeconfig',
        tokenKubeconfig(t, cp, token),
        '--server',
        serviceUrl,
        '--certificate-authority',
        caFile,
      ]);
      const sidecar = await startProxy(options, await loadUpstream(options));
      t.after(() => sidecar.stop(1_000));
      const url = sidecar.url ?? '';
      await eventually('a sidecar to sync', async () => (await request(`${url}/readyz`)).statusCode === 200, 30_000);
      sidecars.push(url);
    }

    const ca = readFileSync(caFile, 'utf8');
    const direct = clientFor(t, ca, { kind: 'token', token });
    const local = new Agent({ connections: null });
    t.after(() => local.close());
    const stop = new AbortController();
    const load: Load = { failures: [], requests: 0 };
    const writes: AcknowledgedWrite[] = [];
    const random = seededRandom(11);
    const running: Promise<void>[] = [];
    const watchers: ReflectorWatcher[] = [];
    // 40 clients of the node proxy: 20 readers, 10 watchers, 10 writers.
    for (let i = 0; i < 20; i++) running.push(reader(serviceUrl, ns, direct.dispatcher, direct.headers, load, stop.signal));
    for (let i = 0; i < 10; i++) {
      watchers.push(
        startReflectorWatcher({
          name: `direct-${String(i)}`,
          url: serviceUrl,
          path: `/api/v1/namespaces/${ns}/configmaps`,
          dispatcher: direct.dispatcher,
          headers: direct.headers,
          random,
        }),
      );
    }
    for (let i = 0; i < 10; i++)
      running.push(writer(serviceUrl, ns, `direct-${String(i)}`, direct.dispatcher, direct.headers, load, writes, stop.signal));
    // 10 through the sidecars (loopback, no credentials): per sidecar 2 readers, 2 watchers, 1 writer.
    sidecars.forEach((url, s) => {
      for (let i = 0; i < 2; i++) running.push(reader(url, ns, local, {}, load, stop.signal));
      for (let i = 0; i < 2; i++) {
        watchers.push(
          startReflectorWatcher({
            name: `sidecar-${String(s)}-${String(i)}`,
            url,
            path: `/api/v1/namespaces/${ns}/configmaps`,
            dispatcher: local,
            random,
          }),
        );
      }
      running.push(writer(url, ns, `sidecar-${String(s)}`, local, {}, load, writes, stop.signal));
    });
    t.after(() => Promise.all(watchers.map((w) => w.stop())));
    await Promise.all(watchers.map((w) => w.synced));
    assert.equal(20 + 10 + 10 + 2 * 5, 50);
    await eventually('writes before the roll', () => writes.length >= 20, 30_000);

    // The roll: the new node proxy ready beside the old one, then SIGTERM to the old.
    const next = await startSharedProxy(t, cp, nodeArgs);
    const probe = clientFor(t, ca, { kind: 'anonymous' });
    old.cli.child.kill('SIGTERM');
    // Its readiness fails at once; the endpoint drops, new connections go to the new one.
    await eventually(
      'the old proxy not ready',
      async () => {
        const res = await request(`${old.url}/readyz`, { dispatcher: probe.dispatcher });
        await res.body.dump();
        return res.statusCode === 500;
      },
      10_000,
    );
    service.retarget('127.0.0.1', Number(new URL(next.url).port));
    const exitCode = await old.cli.exited;
    assert.equal(exitCode, 0, 'the old proxy drained and exited');
    const writesAtExit = writes.length;
    await eventually('writes after the old one is gone', () => writes.length >= writesAtExit + 20, 30_000);
    stop.abort();
    await Promise.all(running);

    assert.deepEqual(load.failures, [], 'no request failed');
    assert.ok(load.requests > 200, `requests made: ${String(load.requests)}`);
    const list = JSON.parse((await admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps` })).body.toString()) as {
      items: { metadata: { name: string; resourceVersion: string } }[];
    };
    const final = new Map(list.items.map((c) => [`${ns}/${c.metadata.name}`, Number(c.metadata.resourceVersion)]));
    await eventually('every watcher to reach the apiserver’s state', () => watchers.every((w) => caughtUp(w, final)), 30_000);
    await Promise.all(watchers.map((w) => w.stop()));
    for (const watcher of watchers) {
      const audit = auditWatch(watcher, { writes, final });
      assert.deepEqual(audit.problems, [], watcher.name);
      assert.equal(audit.lost, 0, `${watcher.name}: nothing lost`);
      assert.equal(audit.duplicated, 0, `${watcher.name}: nothing twice`);
      assert.equal(audit.reordered, 0, `${watcher.name}: nothing reordered`);
      assert.equal(audit.delivered + audit.relisted, writes.length, `${watcher.name}: every write seen`);
    }
    t.diagnostic(`${String(load.requests)} requests, ${String(writes.length)} writes, ${String(watchers.length)} watchers audited`);
  },
);
