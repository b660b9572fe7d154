/**
 * A chain's staleness bound holds end to end (protocol/proof-age.ts): a proxy in front of another
 * proxy, both `--max-staleness 10s`, whose upstream proxy's own watch goes silent without breaking
 * while the apiserver's objects change. The proxy in front counts what the one behind serves from
 * its cache (its probe's answers, bookmarks, replays, lists) as of that cache's proof, not as of
 * the arrival: no RV-unset read at the end of the chain returns a state staler than the one bound
 * (without the ages, the two bounds added up: about 15 s here).
 *
 * The staleness of a read: the time it was asked minus the time the first write it does not
 * reflect was acknowledged by the apiserver (0 when it reflects every write acknowledged before).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import type { CachingProxy } from '../../helpers/caching-proxy.ts';
import { proxyCounter, startCachingProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';

const shared = useSharedAdmin();

/** --max-staleness of both proxies. */
const BOUND_MS = 10_000;
/** What a read may take beyond the bound: the watch's own latency and the read itself (as test/e2e/server/consistency.test.ts allows). */
const READ_ALLOWANCE_MS = 250;
/** The upstream proxy's watch is silent this long: past both bounds added up, so that the old defect would show. */
const SILENT_MS = 25_000;
const WRITE_PERIOD_MS = 200;
const READ_PAUSE_MS = 5;

interface ConfigMap {
  metadata: { name: string };
  data?: Record<string, string>;
}

interface Read {
  readonly at: number;
  readonly staleness: number;
}

test(
  `chain: two proxies, both --max-staleness ${String(BOUND_MS / 1000)}s, whose upstream watch goes silent: no RV-unset read at the end is staler than ${String(BOUND_MS / 1000)} s`,
  { timeout: 150_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    const config = await upstreamConfigFor(cp);
    // The first proxy's informers reach the apiserver through a link the test holds; its probes
    // and pass-throughs do not.
    const link = await startTcpProxy(config.server.hostname, Number(config.server.port));
    t.after(() => link.close());
    const informerUpstream = { ...config, server: new URL(`https://127.0.0.1:${String(link.port)}`) };
    // The first proxy stops after the second, whose watches on it stay open until then.
    const innerTeardown: (() => Promise<void>)[] = [];
    const first = await startCachingProxy({ after: (fn) => innerTeardown.push(fn) }, cp, {
      specs: [CONFIGMAPS],
      informerUpstream,
      maxStalenessMs: BOUND_MS,
      chained: false,
    });
    const second: CachingProxy = await startCachingProxy(
      {
        after: (fn) => {
          t.after(async () => {
            await fn();
            for (const inner of innerTeardown) await inner();
          });
        },
      },
      cp,
      { specs: [CONFIGMAPS], maxStalenessMs: BOUND_MS, over: first, chained: false },
    );

    const path = `/api/v1/namespaces/${ns}/configmaps/cm`;
    /** When the apiserver acknowledged the write of n (performance.now()). */
    const acknowledged: number[] = [];
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm' }, data: { n: '0' } });
    acknowledged.push(performance.now());
    const valueOf = (cm: ConfigMap | undefined): number => Number(cm?.data?.n ?? -1);
    await eventually('the chain to hold the object', async () => {
      const res = await request(`${second.url}${path}`);
      return res.statusCode === 200 && valueOf((await res.body.json()) as ConfigMap) === 0;
    });

    const state = { running: true };
    const writer = (async () => {
      for (let n = 1; state.running; n++) {
        await kube(admin, 'PATCH', path, { data: { n: String(n) } });
        acknowledged.push(performance.now());
        await new Promise((resolve) => setTimeout(resolve, WRITE_PERIOD_MS));
      }
    })();
    const reads: Read[] = [];
    const staleness = (asked: number, n: number): number => {
      // The first write the read does not reflect, if it was acknowledged before the read was asked.
      const missed = acknowledged[n + 1];
      return missed !== undefined && missed < asked ? asked - missed : 0;
    };
    const reader = (async () => {
      for (let i = 0; state.running; i++) {
        const asked = performance.now();
        let n: number;
        if (i % 2 === 0) {
          const res = await request(`${second.url}/api/v1/namespaces/${ns}/configmaps`);
          assert.equal(res.statusCode, 200);
          const list = (await res.body.json()) as { items: ConfigMap[] };
          n = valueOf(list.items.find((item) => item.metadata.name === 'cm'));
        } else {
          const res = await request(`${second.url}${path}`);
          assert.equal(res.statusCode, 200);
          n = valueOf((await res.body.json()) as ConfigMap);
        }
        reads.push({ at: asked, staleness: staleness(asked, n) });
        // Continuously, but leaving the machine's cores to the proxies and the apiserver.
        await new Promise((resolve) => setTimeout(resolve, READ_PAUSE_MS));
      }
    })();

    const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
    await sleep(3_000);
    // The first proxy's upstream watch goes silent, not broken: no event, no bookmark, no error.
    const heldAt = performance.now();
    link.setHeld(true);
    await sleep(SILENT_MS);
    link.setHeld(false);
    const releasedAt = performance.now();
    await sleep(5_000);
    state.running = false;
    await Promise.all([writer, reader]);

    const during = reads.filter((r) => r.at >= heldAt && r.at < releasedAt);
    const worst = Math.max(...reads.map((r) => r.staleness));
    const worstRead = reads.find((r) => r.staleness === worst);
    const worstDuring = Math.max(0, ...during.map((r) => r.staleness));
    const staleDuring = during.filter((r) => r.staleness > 1_000).length;
    const probes = await proxyCounter(second.metrics, 'kube_cache_proxy_consistency_probes_total');
    const proofs = await proxyCounter(second.metrics, 'kube_cache_proxy_freshness_proofs_total');
    const message =
      `chain staleness: ${String(reads.length)} RV-unset reads (${String(during.length)} while the first proxy's watch was silent ` +
      `${String(SILENT_MS / 1000)} s, ${String(staleDuring)} of them more than 1 s stale); worst ${worst.toFixed(0)} ms, ${((worstRead?.at ?? heldAt) - heldAt).toFixed(0)} ms after the silence began ` +
      `(bound ${String(BOUND_MS)} ms; ${String(acknowledged.length)} writes; ` +
      `the second proxy's probes: ${String(probes)}, proofs: ${String(proofs)})`;
    t.diagnostic(message);
    console.log(message);
    assert.ok(staleDuring > 0, 'the premise: the chain served from its caches while they fell behind');
    assert.ok(worstDuring === worst || worst < 1_000, 'the stale reads are those of the silence');
    assert.ok(
      worst <= BOUND_MS + READ_ALLOWANCE_MS,
      `no read staler than the bound (${String(READ_ALLOWANCE_MS)} ms for the watch and the read): ${worst.toFixed(0)} ms`,
    );
    // Once the watch is back, the chain's reads are fresh again.
    const after = reads.filter((r) => r.at > releasedAt + 3_000);
    assert.ok(after.length > 0 && after.every((r) => r.staleness < 1_000), 'fresh again after the silence');
  },
);
