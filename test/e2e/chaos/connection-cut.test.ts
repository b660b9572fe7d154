/**
 * One fault of `npm run chaos`, short enough for every run: the proxy's upstream connections are
 * cut (behind the test TCP link) and refused for a few seconds while a writer goes on writing at
 * the apiserver; reflector-style client watches of the proxy must stay whole: nothing lost,
 * duplicated or reordered, and the writes of the outage delivered within seconds of the link's
 * return. The same client and checks as the chaos run (reflector-watcher.ts, watch-audit.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent } from 'undici';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { newPodChurn } from '../../helpers/pod-churn.ts';
import { seededRandom } from '../../helpers/prng.ts';
import { startReflectorWatcher } from '../../helpers/reflector-watcher.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';
import { auditWatch, caughtUp } from '../../helpers/watch-audit.ts';

const shared = useSharedAdmin();

const WATCHERS = 4;
const WRITES = 60;
const WRITES_PER_SECOND = 20;
/** Long enough for the reflectors' backoff to grow past a second (the /readyz probe must cut it). */
const OUTAGE_MS = 4_000;
/** Writing goes on this long after the link is back, so that silence is measured on fresh writes too. */
const SETTLE_MS = 2_000;
/** The chaos run's acceptance bound on the longest silence after the apiserver returns. */
const MAX_SILENCE_MS = 10_000;

test(
  'chaos: a cut of the upstream connections loses, repeats and reorders nothing for reflector-style watchers',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const config = await upstreamConfigFor(shared.cp);
    const link = await startTcpProxy(config.server.hostname, Number(config.server.port));
    t.after(() => link.close());
    const options = parseProxyOptions(['--port', '0', '--resources', 'pods', '--log-level', 'error']);
    const proxy = await startProxy(options, { ...config, server: new URL(`https://127.0.0.1:${String(link.port)}`) });
    t.after(() => proxy.stop(0));
    const url = proxy.url ?? '';
    const dispatcher = new Agent({ connections: null });
    t.after(() => dispatcher.close());

    const random = seededRandom(17);
    const watchers = Array.from({ length: WATCHERS }, (_, i) =>
      startReflectorWatcher({ name: `watcher-${String(i)}`, url, path: `/api/v1/namespaces/${ns}/pods`, dispatcher, random }),
    );
    t.after(() => Promise.all(watchers.map((w) => w.stop())));
    await Promise.all(watchers.map((w) => w.synced));

    const churn = newPodChurn({ client: shared.admin, namespace: ns, objects: 10, writesPerSecond: WRITES_PER_SECOND, random });
    /** When the link is back (performance.now()). */
    const recovery = { at: Infinity };
    const writing = churn.run(
      () => churn.writes.length >= WRITES && performance.now() >= recovery.at + SETTLE_MS,
      AbortSignal.timeout(45_000),
    );
    await eventually('a third of the writes', () => churn.writes.length >= WRITES / 3);
    const cutAt = performance.now();
    link.setBlocked(true);
    link.cut();
    // The outage itself: the fault's length, not a wait for anything.
    await sleep(OUTAGE_MS);
    link.setBlocked(false);
    const back = performance.now();
    recovery.at = back;
    await writing;

    const list = JSON.parse((await shared.admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/pods` })).body.toString()) as {
      items: { metadata: { name: string; resourceVersion: string } }[];
    };
    const final = new Map(list.items.map((p) => [`${ns}/${p.metadata.name}`, Number(p.metadata.resourceVersion)]));
    await eventually('every watcher to reach the apiserver’s state', () => watchers.every((w) => caughtUp(w, final)), 20_000);
    await Promise.all(watchers.map((w) => w.stop()));

    const during = churn.writes.filter((w) => w.ackedAt > cutAt && w.ackedAt < back).length;
    assert.ok(during > 0, `writes were acknowledged while the link was cut (${String(during)})`);
    for (const watcher of watchers) {
      const audit = auditWatch(watcher, { writes: churn.writes, final, recoveredAt: back });
      t.diagnostic(
        `${watcher.name}: ${String(audit.delivered)} delivered, ${String(audit.relisted)} by relist, longest silence ${(audit.longestSilenceMs / 1000).toFixed(1)} s, ${String(watcher.counts.rewatches)} re-watches, ${String(watcher.counts.expired)} 410s`,
      );
      assert.deepEqual(audit.problems, [], `${watcher.name}: no problem`);
      assert.equal(audit.lost, 0, `${watcher.name}: nothing lost`);
      assert.equal(audit.duplicated, 0, `${watcher.name}: nothing duplicated`);
      assert.equal(audit.reordered, 0, `${watcher.name}: nothing reordered`);
      assert.equal(audit.delivered + audit.relisted, churn.writes.length, `${watcher.name}: every write seen`);
      assert.ok(audit.longestSilenceMs <= MAX_SILENCE_MS, `${watcher.name}: longest silence ${String(audit.longestSilenceMs)} ms`);
    }
  },
);
