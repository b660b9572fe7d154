import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { newProxyServer } from '../../../src/server/http/app.ts';
import { newProxyMetrics } from '../../../src/server/http/metrics.ts';
import { defaultRequestFilterOptions } from '../../../src/request/request-filter.ts';
import { newStatusReporter } from '../../../src/status/status-report.ts';
import type { StatusReporter } from '../../../src/status/status-report.ts';
import { newFakeUpstream } from '../../helpers/fake-upstream-client.ts';

function reporter(): StatusReporter {
  return newStatusReporter({
    registry: newProxyMetrics().registry,
    caches: () => [],
    upstream: { server: 'https://127.0.0.1:6443', source: 'fake' },
    consistency: { mode: 'strong', strongResources: [], maxStalenessSeconds: 75 },
    version: '0.0.0',
  });
}

test('status routes: the page is self-contained, its inline script and style allowed by hash and nothing else', async (t) => {
  const app = newProxyServer({ client: newFakeUpstream().client, status: reporter(), filter: defaultRequestFilterOptions() });
  t.after(() => app.close());
  const res = await app.inject({ method: 'GET', url: '/kube-cache-proxy/', headers: { host: '127.0.0.1:8001' } });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(res.headers['cache-control'], 'no-store');
  const csp = String(res.headers['content-security-policy']);
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /frame-ancestors 'none'/);
  for (const tag of ['script', 'style'] as const) {
    const blocks = [...res.body.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))];
    assert.equal(blocks.length, 1, `one inline ${tag}`);
    const hash = createHash('sha256')
      .update(blocks[0]?.[1] ?? '')
      .digest('base64');
    assert.ok(csp.includes(`${tag}-src 'sha256-${hash}'`), `${tag} allowed by its hash in ${csp}`);
  }
  // Nothing from the network: no src= or href= to another origin, no inline style attributes (CSP would block them).
  assert.doesNotMatch(res.body, /(src|href)="(https?:)?\/\//);
  assert.doesNotMatch(res.body, / style="/);
});

test('status routes: /kube-cache-proxy redirects to the page; the JSON is served without caching', async (t) => {
  const app = newProxyServer({ client: newFakeUpstream().client, status: reporter() });
  t.after(() => app.close());
  const redirect = await app.inject({ method: 'GET', url: '/kube-cache-proxy' });
  assert.equal(redirect.statusCode, 301);
  assert.equal(redirect.headers.location, '/kube-cache-proxy/');
  const json = await app.inject({ method: 'GET', url: '/kube-cache-proxy/status' });
  assert.equal(json.statusCode, 200);
  assert.equal(json.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(json.headers['cache-control'], 'no-store');
  const body = JSON.parse(json.body) as { consistency: { mode: string }; reads: { offloadRatio: unknown } };
  assert.equal(body.consistency.mode, 'strong');
  assert.equal(body.reads.offloadRatio, null);
});

test('status routes: behind the request filter: a foreign Origin or Host is refused as for the API', async (t) => {
  const app = newProxyServer({ client: newFakeUpstream().client, status: reporter(), filter: defaultRequestFilterOptions() });
  t.after(() => app.close());
  for (const url of ['/kube-cache-proxy/', '/kube-cache-proxy/status']) {
    const foreignPage = await app.inject({ method: 'GET', url, headers: { host: '127.0.0.1:8001', origin: 'https://evil.example' } });
    assert.equal(foreignPage.statusCode, 403, url);
    const rebinding = await app.inject({ method: 'GET', url, headers: { host: 'evil.example:8001' } });
    assert.equal(rebinding.statusCode, 403, url);
    const sameOrigin = await app.inject({ method: 'GET', url, headers: { host: '127.0.0.1:8001', origin: 'http://127.0.0.1:8001' } });
    assert.equal(sameOrigin.statusCode, 200, url);
  }
});
