/**
 * A pod's own answer through `pods/NAME/proxy/`, served by the real apiserver from a pod whose IP
 * is a host of the test's (a network namespace): the proxy passes it on unchanged but for a
 * sandbox policy, so that a page of the pod's never runs on the proxy's origin, where its
 * same-origin requests would carry the proxy's credentials past the browser guard.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { newProxyServer } from '../../../src/server/http/app.ts';
import { PROXIED_CONTENT_POLICY } from '../../../src/server/pass-through/pass-through.ts';
import { defaultRequestFilterOptions } from '../../../src/request/request-filter.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { inPage, launchBrowser } from '../../helpers/browser.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { startNetnsHttpServer } from '../../helpers/netns-host.ts';

const shared = useSharedAdmin();

/** The pod's page: it tries to read the cluster through the origin it is served on, and says in its title whether it could. */
const POD_PAGE = `<!doctype html><title>waiting</title><script>
fetch('/api/v1/namespaces').then((r) => (r.ok ? r.text() : Promise.reject(new Error(String(r.status)))))
  .then((text) => { document.title = 'read ' + text.length; }, () => { document.title = 'blocked'; });
</script>`;

test(
  'pods/proxy: the pod answer is passed on byte for byte with a sandbox policy, and its page cannot read the cluster with the proxy credentials',
  { timeout: 90_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const host = await startNetnsHttpServer(
      t,
      `(req, res) => { res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'x-from': 'pod' }); res.end(${JSON.stringify(POD_PAGE)}); }`,
    );
    const pods = `/api/v1/namespaces/${ns}/pods`;
    const created = await shared.admin.request({
      method: 'POST',
      path: pods,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web' },
        spec: { containers: [{ name: 'web', image: 'web', ports: [{ containerPort: host.port }] }] },
      }),
    });
    assert.equal(created.statusCode, 201, created.body.toString());
    // What a kubelet would report: the pod runs at the test's host.
    const status = await shared.admin.request({
      method: 'PATCH',
      path: `${pods}/web/status`,
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ status: { phase: 'Running', podIP: host.address, podIPs: [{ ip: host.address }] } }),
    });
    assert.equal(status.statusCode, 200, status.body.toString());

    const client = newUpstreamClient(await upstreamConfigFor(shared.cp));
    const app = newProxyServer({ client, filter: defaultRequestFilterOptions() });
    const proxy = await app.listen({ host: '127.0.0.1', port: 0 });
    t.after(async () => {
      await app.close();
      await client.close();
    });

    const path = `${pods}/web/proxy/`;
    const direct = await shared.admin.request({ method: 'GET', path });
    assert.equal(direct.statusCode, 200);
    assert.equal(direct.headers['x-from'], 'pod');
    // The apiserver adds no policy of its own.
    assert.equal(direct.headers['content-security-policy'], undefined);
    const proxied = await request(`${proxy}${path}`);
    assert.equal(proxied.statusCode, 200);
    assert.equal(proxied.headers['x-from'], 'pod');
    assert.equal(proxied.headers['content-security-policy'], PROXIED_CONTENT_POLICY);
    assert.equal(await proxied.body.text(), direct.body.toString());
    // The apiserver's own answers carry no such policy.
    const own = await request(`${proxy}${pods}/web`);
    assert.equal(own.headers['content-security-policy'], undefined);
    await own.body.dump();

    const browser = await launchBrowser(t);
    const page = await browser.newPage();
    // The threat: a page on the proxy's origin reads the cluster with the proxy's credentials.
    await page.goto(`${proxy}/version`);
    const sameOrigin = await inPage<number>(page, `fetch('/api/v1/namespaces').then((r) => r.status)`);
    assert.equal(sameOrigin, 200);
    // The pod's page runs in an opaque origin of its own: its request is refused.
    await page.goto(`${proxy}${path}`);
    await page.waitForFunction(`document.title !== 'waiting'`, { timeout: 15_000 });
    assert.equal(await page.title(), 'blocked');
  },
);
