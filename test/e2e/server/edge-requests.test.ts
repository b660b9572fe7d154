/**
 * Requests at the edges, each answered as the apiserver answers it (found by the adversarial run
 * of issue #17): a watch timeout past Node's longest timer, a body sent after Expect:
 * 100-continue, GET's export parameter, a method no route knows, metric labels from hostile
 * paths, and the watchers gauge.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { proxyCounter, startCachingProxy } from '../../helpers/caching-proxy.ts';
import type { CachingProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';

const shared = useSharedAdmin();

interface Raw {
  readonly status: number;
  readonly body: string;
}

/** One request by node:http(s), body sent only after the server's 100 Continue (as curl does past 1 MiB). */
function rawRequest(url: string, method: string, headers: Record<string, string>, body?: string): Promise<Raw> {
  const target = new URL(url);
  const https = target.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const options = {
      method,
      headers,
      ...(https ? { ca: readFileSync(shared.cp.caFile) } : {}),
    };
    const req = (https ? httpsRequest : httpRequest)(target, options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: text });
      });
    });
    req.on('error', reject);
    if (body === undefined) req.end();
    else if (headers.expect === '100-continue') req.on('continue', () => req.end(body));
    else req.end(body);
  });
}

const admin = (): Record<string, string> => ({ authorization: `Bearer ${shared.cp.users.admin.token}` });

async function proxyFor(t: TestContext): Promise<CachingProxy> {
  return startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS] });
}

test(
  'edge requests: a watch with timeoutSeconds past Node’s longest timer stays open, as at the apiserver',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const proxy = await proxyFor(t);
    const abort = new AbortController();
    t.after(() => {
      abort.abort();
    });
    const res = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=0&timeoutSeconds=2147484`, {
      signal: abort.signal,
    });
    assert.equal(res.statusCode, 200);
    let text = '';
    let ended = false;
    const reading = (async () => {
      try {
        for await (const chunk of res.body) text += (chunk as Buffer).toString();
        ended = true;
      } catch {
        // aborted by the test
      }
    })();
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'after' } });
    await eventually('the event to arrive on the long watch', () => text.includes('"name":"after"'));
    assert.equal(ended, false, 'the watch is still open');
    abort.abort();
    await reading;
  },
);

test('edge requests: a create sent after Expect: 100-continue is answered as by the apiserver', { timeout: 60_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const proxy = await proxyFor(t);
  const body = (name: string): string => JSON.stringify({ metadata: { name }, data: { big: 'x'.repeat(64 * 1024) } });
  const headers = { 'content-type': 'application/json', expect: '100-continue' };
  const direct = await rawRequest(
    `${shared.cp.server}/api/v1/namespaces/${ns}/configmaps`,
    'POST',
    { ...headers, ...admin() },
    body('direct'),
  );
  const proxied = await rawRequest(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`, 'POST', headers, body('proxied'));
  assert.equal(direct.status, 201);
  assert.equal(proxied.status, direct.status, proxied.body.slice(0, 300));
  assert.equal((JSON.parse(proxied.body) as { metadata: { name: string } }).metadata.name, 'proxied');
});

test('edge requests: GET with export, and a method no route knows, get the apiserver’s answers', { timeout: 60_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm' } });
  const proxy = await proxyFor(t);
  const path = `/api/v1/namespaces/${ns}/configmaps/cm`;
  await eventually(
    'the object to be cached',
    async () => (await rawRequest(`${proxy.url}${path}?resourceVersion=0`, 'GET', {})).status === 200,
  );
  const cases: readonly (readonly [string, string])[] = [
    ['GET', `${path}?export=true`],
    ['GET', `${path}?export=1`],
    ['GET', `${path}?export=false`],
    ['GET', `${path}?export=maybe`],
    ['PROPFIND', '/version'],
    ['PROPFIND', path],
  ];
  for (const [method, target] of cases) {
    const direct = await rawRequest(`${shared.cp.server}${target}`, method, admin());
    const proxied = await rawRequest(`${proxy.url}${target}`, method, {});
    assert.equal(proxied.status, direct.status, `${method} ${target}`);
    assert.equal(proxied.body, direct.body, `${method} ${target}: the apiserver's body`);
  }
});

test(
  'edge requests: metric labels take no bytes from hostile paths; the watchers gauge counts open watches',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const proxy = await proxyFor(t);
    for (const target of ['/api/v1/namespaces/x/%00bad', '/apis/EVIL%0aGROUP/v1/things', '/api/v1/namespaces/x/pods%20x']) {
      await rawRequest(`${proxy.url}${target}`, 'GET', {});
    }
    const exposition = await proxy.metrics.registry.metrics();
    for (const hostile of ['\u0000', 'EVIL', 'pods x'])
      assert.equal(exposition.includes(hostile), false, `no label value holds ${JSON.stringify(hostile)}`);
    const watches = await Promise.all(
      [0, 1, 2].map(async () => {
        const abort = new AbortController();
        const res = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=0`, { signal: abort.signal });
        res.body.on('error', () => undefined);
        return abort;
      }),
    );
    await eventually(
      'three open watches',
      async () => (await proxyCounter(proxy.metrics, 'kube_cache_proxy_watchers', { resource: 'configmaps' })) === 3,
    );
    watches[0]?.abort();
    await eventually(
      'two open watches',
      async () => (await proxyCounter(proxy.metrics, 'kube_cache_proxy_watchers', { resource: 'configmaps' })) === 2,
    );
    for (const watch of watches) watch.abort();
  },
);
