/**
 * The status page in a real browser (Chromium through puppeteer-core), in front of the real
 * control plane: the proxy runs as `kube-cache-proxy proxy` does; after known traffic the page
 * shows what /metrics says, it follows new traffic without a reload, and it is usable with the
 * keyboard and in a narrow window.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { request } from 'undici';
import { dataValue, inPage, launchBrowser, textOf, waitForDataValue } from '../../helpers/browser.ts';
import { spawnCli } from '../../helpers/cli.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import Fastify from 'fastify';
import type { CacheStatus } from '../../../src/cache/cache-source.ts';
import { newProxyMetrics } from '../../../src/server/http/metrics.ts';
import { newStatusReporter } from '../../../src/status/status-report.ts';
import { installStatusRoutes } from '../../../src/status/status-routes.ts';

const shared = useSharedAdmin();

/** Sums of one metric's series whose labels include `labels`, from the proxy's /metrics text. */
function metricSum(text: string, name: string, labels: Record<string, string | readonly string[]>): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (match?.[1] !== name) continue;
    const have = new Map<string, string>();
    for (const [, key = '', value = ''] of (match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)) have.set(key, value);
    const matches = Object.entries(labels).every(([k, v]) => (typeof v === 'string' ? have.get(k) === v : v.includes(have.get(k) ?? '')));
    if (matches) total += Number(match[3]);
  }
  return total;
}

const READS = ['get', 'list', 'watch'];

test(
  "status page: in Chromium, its figures are /metrics' after known traffic, follow new traffic live, and read with the keyboard and in a narrow window",
  { timeout: 180_000 },
  async (t) => {
    const { cp, admin } = shared;
    const ns = await testNamespace(t, admin);
    for (let i = 0; i < 3; i++) {
      await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `cm-${String(i)}` }, data: { i: String(i) } });
    }
    const cli = spawnCli(['proxy', '--kubeconfig', cp.kubeconfig, '--port', '0', '--resources', 'configmaps,pods', '--log-level', 'warn']);
    t.after(() => cli.child.kill('SIGKILL'));
    await eventually('the serving line', () => /Starting to serve on 127\.0\.0\.1:\d+/.test(cli.output()), 30_000);
    const base = `http://${/Starting to serve on (127\.0\.0\.1:\d+)/.exec(cli.output())?.[1] ?? ''}`;
    await eventually('the caches to sync', async () => (await request(`${base}/readyz`)).statusCode === 200);

    // Known traffic: LISTs answered from the cache, GETs of an uncached type passed through.
    const get = async (path: string): Promise<void> => {
      const res = await request(`${base}${path}`);
      assert.equal(res.statusCode, 200, path);
      await res.body.dump();
    };
    for (let i = 0; i < 5; i++) await get(`/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`);
    for (let i = 0; i < 2; i++) await get(`/api/v1/namespaces/${ns}`);

    const browser = await launchBrowser(t);
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(String(error)));
    await page.setViewport({ width: 1280, height: 900 });
    const loaded = await page.goto(`${base}/kube-cache-proxy/`, { waitUntil: 'load' });
    assert.equal(loaded?.status(), 200);
    await page.waitForSelector('#reads-cache[data-value]', { timeout: 15_000 });

    const metrics = await (await request(`${base}/metrics`)).body.text();
    const fromCache = metricSum(metrics, 'kube_cache_proxy_requests_total', { served_from: 'cache', verb: READS });
    const fromApiserver = metricSum(metrics, 'kube_cache_proxy_requests_total', { served_from: 'apiserver', verb: READS });
    assert.ok(fromCache >= 5, `5 LISTs from the cache in /metrics: ${String(fromCache)}`);
    await waitForDataValue(page, '#reads-cache', fromCache);
    await waitForDataValue(page, '#reads-apiserver', fromApiserver);
    await waitForDataValue(page, '#offload', Math.round((fromCache / (fromCache + fromApiserver)) * 10_000) / 10_000);
    const row = 'tr[data-cache="cache-configmaps"]';
    await waitForDataValue(
      page,
      `${row} td[data-label="Reads cached"]`,
      metricSum(metrics, 'kube_cache_proxy_requests_total', { served_from: 'cache', verb: READS, resource: 'configmaps' }),
    );
    await waitForDataValue(
      page,
      'tr[data-type="namespaces"] td:last-child',
      metricSum(metrics, 'kube_cache_proxy_requests_total', { served_from: 'apiserver', verb: READS, resource: 'namespaces' }),
    );
    assert.equal(await textOf(page, `${row} td[data-label="State"]`), 'watching');
    const objects = Number(await dataValue(page, `${row} td[data-label="Objects"]`));
    assert.ok(objects >= 3, `the test's 3 configmaps are among the cached objects: ${String(objects)}`);
    assert.match((await textOf(page, '#upstream')) ?? '', new RegExp(new URL(cp.server).port));
    assert.equal(await dataValue(page, '#consistency'), 'bounded');
    await eventually('the identity (a SelfSubjectReview)', async () =>
      /^admin \(.*system:masters/.test((await textOf(page, '#identity')) ?? ''),
    );
    assert.ok((await page.$$('#chart rect')).length >= 1, 'the chart has a bar for the traffic');

    // Live: more traffic and a watch show up without a reload.
    await inPage(page, 'window.notReloaded = true');
    for (let i = 0; i < 4; i++) await get(`/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`);
    await waitForDataValue(page, '#reads-cache', fromCache + 4);
    const watch = await request(`${base}/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=0`);
    assert.equal(watch.statusCode, 200);
    const watchers = async (): Promise<number> =>
      metricSum(await (await request(`${base}/metrics`)).body.text(), 'kube_cache_proxy_watchers', { resource: 'configmaps' });
    await eventually('the watch counted in /metrics', async () => (await watchers()) === 1);
    await waitForDataValue(page, `${row} td[data-label="Watchers"]`, 1);
    await waitForDataValue(page, '#watchers', 1);
    watch.body.destroy();
    await waitForDataValue(page, '#watchers', 0);
    assert.equal(await inPage(page, 'window.notReloaded === true'), true, 'no reload');

    const screenshot = join(tmpdir(), 'kube-cache-proxy-status-page.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    assert.ok(statSync(screenshot).size > 10_000, `a screenshot at ${screenshot}`);

    // The keyboard reaches the pause button and works it.
    let focused = '';
    for (let i = 0; i < 20 && focused !== 'pause'; i++) {
      await page.keyboard.press('Tab');
      focused = await inPage(page, "document.activeElement?.id ?? ''");
    }
    assert.equal(focused, 'pause', 'Tab reaches the pause button');
    await page.keyboard.press('Enter');
    assert.equal(await inPage(page, "document.querySelector('#pause').getAttribute('aria-pressed')"), 'true');
    assert.equal(await textOf(page, '#pause'), 'Resume');
    await page.keyboard.press('Space');
    assert.equal(await inPage(page, "document.querySelector('#pause').getAttribute('aria-pressed')"), 'false');

    // A narrow window: rows become cards, nothing scrolls sideways.
    await page.setViewport({ width: 380, height: 800 });
    assert.equal(await inPage(page, `getComputedStyle(document.querySelector('${row}')).display`), 'block');
    const overflow = await inPage<number>(page, 'document.documentElement.scrollWidth - document.documentElement.clientWidth');
    assert.ok(overflow <= 0, `no horizontal scrolling at 380 px: ${String(overflow)} px too wide`);

    assert.deepEqual(problems, [], 'no script error and no Content-Security-Policy violation');
  },
);

test(
  'status page: a cache whose last consistency check failed is marked inconsistent, with the check in its title',
  { timeout: 60_000 },
  async (t) => {
    const metrics = newProxyMetrics();
    const cache: CacheStatus = {
      name: 'cache-pods',
      type: 'pods',
      version: 'v1',
      namespace: undefined,
      phase: 'watching',
      failure: undefined,
      state: 'watching',
      objects: 2,
      resourceVersion: '120',
      heardAgoMs: 500,
      consistency: { result: 'failure', resourceVersion: '118', agoMs: 3_000, detail: 'cache digest 1, apiserver digest 2' },
    };
    const app = Fastify();
    installStatusRoutes(
      app,
      newStatusReporter({
        registry: metrics.registry,
        caches: () => [cache, { ...cache, name: 'cache-configmaps', type: 'configmaps', consistency: undefined }],
        upstream: { server: 'https://10.0.0.1:6443', source: 'test' },
        consistency: { mode: 'bounded', strongResources: [], maxStalenessSeconds: 75 },
        version: 'test',
        memory: () => process.memoryUsage(),
      }),
    );
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    t.after(() => app.close());
    const browser = await launchBrowser(t);
    const page = await browser.newPage();
    await page.goto(`${base}/kube-cache-proxy/`, { waitUntil: 'load' });
    await page.waitForSelector('tr[data-cache="cache-pods"]', { timeout: 15_000 });
    const state = 'tr[data-cache="cache-pods"] td[data-label="State"]';
    assert.equal(await textOf(page, state), 'watching, inconsistent at RV 118: relisted');
    assert.equal(await inPage(page, `document.querySelector(${JSON.stringify(state)}).className`), 'text phase-inconsistent');
    assert.match(
      await inPage<string>(page, `document.querySelector(${JSON.stringify(state)}).title`),
      /^consistency check failure, 3 s ago: cache digest 1, apiserver digest 2$/,
    );
    assert.equal(await textOf(page, 'tr[data-cache="cache-configmaps"] td[data-label="State"]'), 'watching', 'no check yet: no mark');
  },
);
