/**
 * Fairness between the clients of a shared proxy, against the real apiserver: one identity over
 * its watch limit gets the apiserver's 429 with Retry-After while another identity's reads are
 * still answered from the cache; a flood of unknown bearer tokens from one address gets the 429
 * past its burst and costs no more TokenReviews; and the 429 the proxy writes is the one
 * kube-apiserver's API Priority and Fairness writes, compared with a real rejection (a
 * PriorityLevelConfiguration with no seats, for a ServiceAccount of the test's own); and one
 * identity repeating a refused request is answered 429 past its burst of refusals.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import type { Dispatcher } from 'undici';
import { TOO_MANY_REQUESTS_BODY, tooManyRequestsHeaders } from '../../../src/server/pass-through/too-many-requests.ts';
import type { UpstreamClient, UpstreamResponse } from '../../../src/upstream/client.ts';
import { newUpstreamClient } from '../../../src/upstream/client.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { grantInNamespace, kube, serviceAccountToken } from '../../helpers/kube.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import { clientFor, startSharedProxy } from '../../helpers/shared-proxy.ts';
import type { Client, SharedProxy } from '../../helpers/shared-proxy.ts';

const shared = useSharedAdmin();

/** Distinct junk tokens per run. */
const run = randomBytes(4).toString('hex');

const READ_CONFIGMAPS = [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }];

/** A ServiceAccount of `ns` allowed to read its configmaps, and its token. */
async function reader(ns: string, name: string): Promise<string> {
  const token = await serviceAccountToken(shared.admin, ns, name);
  await grantInNamespace(shared.admin, ns, `read-${name}`, READ_CONFIGMAPS, { kind: 'ServiceAccount', name, namespace: ns });
  return token;
}

interface Answer {
  readonly status: number;
  readonly headers: Dispatcher.ResponseData['headers'];
  readonly body: string;
}

async function get(proxy: SharedProxy, client: Client, path: string): Promise<Answer> {
  const res = await request(`${proxy.url}${path}`, {
    dispatcher: client.dispatcher,
    headers: { accept: 'application/json', ...client.headers },
  });
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
}

/** Opens a watch and leaves it open (its body unread until aborted); resolves with its status. */
async function openWatch(
  t: TestContext,
  proxy: SharedProxy,
  client: Client,
  path: string,
): Promise<{ status: number; close: () => void; body: string }> {
  const abort = new AbortController();
  const res = await request(`${proxy.url}${path}`, {
    dispatcher: client.dispatcher,
    headers: { accept: 'application/json', ...client.headers },
    signal: abort.signal,
  });
  if (res.statusCode !== 200) return { status: res.statusCode, close: () => undefined, body: await res.body.text() };
  res.body.on('error', () => undefined);
  const close = (): void => {
    abort.abort();
  };
  t.after(close);
  return { status: 200, close, body: '' };
}

async function proxyMetrics(proxy: SharedProxy, admin: Client): Promise<string> {
  const res = await get(proxy, admin, '/metrics');
  assert.equal(res.status, 200, res.body);
  return res.body;
}

function header(headers: Dispatcher.ResponseData['headers'] | UpstreamResponse['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

test(
  'fairness: one identity past its watch limit gets the 429 with Retry-After, another identity is still read from the cache',
  { timeout: 120_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm' }, data: { a: '1' } });
    const greedyToken = await reader(ns, 'greedy');
    const politeToken = await reader(ns, 'polite');
    const proxy = await startSharedProxy(t, cp, ['--resources', 'configmaps', '--max-watches-per-flow', '3']);
    const greedy = clientFor(t, proxy.ca, { kind: 'token', token: greedyToken });
    const polite = clientFor(t, proxy.ca, { kind: 'token', token: politeToken });
    const asAdmin = clientFor(t, proxy.ca, { kind: 'token', token: cp.users.admin.token });
    await eventually(
      'the RBAC grants in force',
      async () => (await get(proxy, polite, `/api/v1/namespaces/${ns}/configmaps`)).status === 200,
    );
    await eventually(
      'the RBAC grants in force',
      async () => (await get(proxy, greedy, `/api/v1/namespaces/${ns}/configmaps`)).status === 200,
    );

    const watchPath = `/api/v1/namespaces/${ns}/configmaps?watch=1`;
    const watches = [];
    for (let i = 0; i < 3; i++) {
      const w = await openWatch(t, proxy, greedy, watchPath);
      assert.equal(w.status, 200, w.body);
      watches.push(w);
    }
    const refused = await request(`${proxy.url}${watchPath}`, {
      dispatcher: greedy.dispatcher,
      headers: { accept: 'application/json', ...greedy.headers },
    });
    // Checked before the body is read: a watch let through would never end.
    assert.equal(refused.statusCode, 429);
    assert.equal(await refused.body.text(), 'Too many requests, please try again later.\n');
    assert.equal(header(refused.headers, 'cache-control'), 'no-cache, private');
    assert.equal(header(refused.headers, 'retry-after'), '1');
    assert.equal(header(refused.headers, 'content-type'), 'text/plain; charset=utf-8');
    assert.equal(header(refused.headers, 'x-content-type-options'), 'nosniff');

    // Meanwhile the other identity reads, from the cache: a GET, a LIST and a WATCH.
    const before = await proxyMetrics(proxy, asAdmin);
    const served = (text: string): number =>
      metricSum(text, 'kube_cache_proxy_requests_total', { resource: 'configmaps', served_from: 'cache' });
    const one = await get(proxy, polite, `/api/v1/namespaces/${ns}/configmaps/cm`);
    assert.equal(one.status, 200, one.body);
    const list = await get(proxy, polite, `/api/v1/namespaces/${ns}/configmaps`);
    assert.equal(list.status, 200, list.body);
    const watched = await get(proxy, polite, `${watchPath}&timeoutSeconds=1`);
    assert.equal(watched.status, 200, watched.body);
    assert.match(watched.body, /"type":"ADDED"/);
    const after = await proxyMetrics(proxy, asAdmin);
    assert.equal(served(after) - served(before), 3, 'all three reads answered from the cache');
    assert.equal(metricSum(after, 'kube_cache_proxy_rejected_requests_total', { reason: 'watches' }), 1);

    // A watch closed is a seat given back.
    watches[0]?.close();
    await eventually('a watch again for the greedy identity', async () => {
      const w = await openWatch(t, proxy, greedy, watchPath);
      return w.status === 200;
    });
  },
);

test(
  'fairness: one identity repeating a refused request gets the 429 past its burst of refusals (404s spend nothing), for whatever it asks next; another identity is still read from the cache',
  { timeout: 120_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm' }, data: { a: '1' } });
    const stubbornToken = await reader(ns, 'stubborn');
    const politeToken = await reader(ns, 'polite');
    // A burst of 5 and (practically) no refill: the count is exact whatever the machine's speed.
    const proxy = await startSharedProxy(t, cp, [
      '--resources',
      'configmaps',
      '--refusals-burst-per-flow',
      '5',
      '--refusals-qps-per-flow',
      '0.001',
    ]);
    // A client per request: a 429's connection is held unread for its Retry-After.
    const stubborn = (): Client => clientFor(t, proxy.ca, { kind: 'token', token: stubbornToken });
    const polite = clientFor(t, proxy.ca, { kind: 'token', token: politeToken });
    const asAdmin = clientFor(t, proxy.ca, { kind: 'token', token: cp.users.admin.token });
    for (const client of [polite, stubborn()]) {
      await eventually(
        'the RBAC grants in force',
        async () => (await get(proxy, client, `/api/v1/namespaces/${ns}/configmaps`)).status === 200,
      );
    }
    const badSelector = `/api/v1/namespaces/${ns}/configmaps?labelSelector=%3D%3D%3D`;
    // The apiserver's answer to it: a 400.
    await kube(admin, 'GET', badSelector, undefined, 400);
    // Asking for what is not there is no refusal: as many as it likes.
    for (let i = 0; i < 20; i++)
      assert.equal((await get(proxy, stubborn(), `/api/v1/namespaces/${ns}/configmaps/missing-${String(i)}`)).status, 404);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const answer = await get(proxy, stubborn(), badSelector);
      statuses.push(answer.status);
      if (answer.status === 429) {
        assert.equal(answer.body, 'Too many requests, please try again later.\n');
        assert.ok(Number(header(answer.headers, 'retry-after')) >= 1, 'a Retry-After in whole seconds');
      }
    }
    assert.deepEqual(statuses, [...Array<number>(5).fill(400), ...Array<number>(7).fill(429)], 'the burst answered 400, then 429');
    // The flow waits for its bucket, whatever it asks next.
    assert.equal((await get(proxy, stubborn(), `/api/v1/namespaces/${ns}/configmaps/cm`)).status, 429);
    // Meanwhile the other identity reads, from the cache.
    const before = await proxyMetrics(proxy, asAdmin);
    const served = (text: string): number =>
      metricSum(text, 'kube_cache_proxy_requests_total', { resource: 'configmaps', served_from: 'cache' });
    assert.equal((await get(proxy, polite, `/api/v1/namespaces/${ns}/configmaps/cm`)).status, 200);
    assert.equal((await get(proxy, polite, `/api/v1/namespaces/${ns}/configmaps`)).status, 200);
    const after = await proxyMetrics(proxy, asAdmin);
    assert.equal(served(after) - served(before), 2, 'both reads answered from the cache');
    assert.equal(metricSum(after, 'kube_cache_proxy_rejected_requests_total', { reason: 'refusals-per-flow' }), 8);
  },
);

test(
  'fairness: a flood of unknown tokens from one address gets the 429 past its burst, and the TokenReviews stop',
  { timeout: 120_000 },
  async (t) => {
    const { cp } = shared;
    // A burst of 5 and (practically) no refill: the count is exact whatever the machine's speed.
    const proxy = await startSharedProxy(t, cp, [
      '--resources',
      'configmaps',
      '--token-review-burst-per-address',
      '5',
      '--token-review-qps-per-address',
      '0.001',
    ]);
    const asAdmin = clientFor(t, proxy.ca, { kind: 'token', token: cp.users.admin.token });
    const reviews = async (): Promise<number> =>
      metricSum(await proxyMetrics(proxy, asAdmin), 'kube_cache_proxy_reviews_total', { kind: 'token' });
    // The admin's own token, valid: reviewed once, giving its bucket token back.
    const before = await reviews();
    const answers: Answer[] = [];
    for (let i = 0; i < 30; i++) {
      const junk = clientFor(t, proxy.ca, { kind: 'token', token: `junk-${String(i)}-${run}` });
      answers.push(await get(proxy, junk, '/api/v1/namespaces/default/configmaps'));
    }
    const statuses = answers.map((a) => a.status);
    assert.deepEqual(
      statuses,
      [...Array<number>(5).fill(401), ...Array<number>(25).fill(429)],
      'the burst reviewed (and refused), then 429',
    );
    for (const a of answers.slice(5)) {
      assert.equal(a.body, 'Too many requests, please try again later.\n');
      assert.ok(Number(header(a.headers, 'retry-after')) >= 1, 'a Retry-After in whole seconds');
    }
    assert.equal((await reviews()) - before, 5, 'one TokenReview per token let through, none for the rest');
    // More of the flood costs nothing; a token already reviewed is answered from the token cache (its 401), no review.
    for (let i = 0; i < 10; i++) {
      const junk = clientFor(t, proxy.ca, { kind: 'token', token: `more-${String(i)}-${run}` });
      assert.equal((await get(proxy, junk, '/api/v1/namespaces/default/configmaps')).status, 429);
    }
    assert.equal(
      (await get(proxy, clientFor(t, proxy.ca, { kind: 'token', token: `junk-0-${run}` }), '/api/v1/namespaces/default/configmaps')).status,
      401,
    );
    assert.equal((await reviews()) - before, 5, 'the TokenReview count stopped growing');
    const text = await proxyMetrics(proxy, asAdmin);
    assert.equal(metricSum(text, 'kube_cache_proxy_rejected_requests_total', { reason: 'token-reviews-per-address' }), 35);
  },
);

test(
  "fairness: the proxy's 429 is kube-apiserver's API Priority and Fairness rejection, byte for byte",
  { timeout: 120_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    const token = await reader(ns, 'throttled');
    // A priority level with no seats for this ServiceAccount alone: a request arriving while another
    // of its requests executes is rejected at once (limitResponse Reject).
    const name = `kcp-${ns}`;
    await kube(admin, 'POST', '/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations', {
      metadata: { name },
      spec: {
        type: 'Limited',
        limited: { nominalConcurrencyShares: 0, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: { type: 'Reject' } },
      },
    });
    await kube(admin, 'POST', '/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas', {
      metadata: { name },
      spec: {
        priorityLevelConfiguration: { name },
        matchingPrecedence: 100,
        distinguisherMethod: { type: 'ByUser' },
        rules: [
          {
            subjects: [{ kind: 'ServiceAccount', serviceAccount: { name: 'throttled', namespace: ns } }],
            resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }],
          },
        ],
      },
    });
    t.after(async () => {
      await admin.request({ method: 'DELETE', path: `/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/${name}` });
      await admin.request({ method: 'DELETE', path: `/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/${name}` });
    });
    const config = await upstreamConfigFor(cp);
    const client: UpstreamClient = newUpstreamClient({ ...config, authorization: () => Promise.resolve(`Bearer ${token}`) });
    t.after(() => client.close());
    // One request held executing: a LIST at a resourceVersion the apiserver waits 3 s for; others meanwhile.
    const list = `/api/v1/namespaces/${ns}/configmaps`;
    let rejection: UpstreamResponse | undefined;
    await eventually('the apiserver to reject a request of the flow', async () => {
      const held = client.request({ method: 'GET', path: `${list}?resourceVersion=999999999999` });
      for (let i = 0; i < 50 && rejection === undefined; i++) {
        const probe = await client.request({ method: 'GET', path: list });
        if (probe.statusCode === 429) rejection = probe;
      }
      const hold = await held;
      if (hold.statusCode === 429) rejection ??= hold;
      return rejection !== undefined;
    });
    assert.ok(rejection !== undefined);
    assert.equal(rejection.body.toString(), TOO_MANY_REQUESTS_BODY.toString(), 'the body');
    const ours = tooManyRequestsHeaders(1);
    for (const name of ['content-type', 'x-content-type-options', 'cache-control', 'content-length']) {
      assert.equal(header(rejection.headers, name), String(ours[name]), name);
    }
    // Retry-After: whole seconds (APF's starts at 1 and grows with its drops; the proxy's is 1).
    assert.match(header(rejection.headers, 'retry-after') ?? '', /^[1-9]\d*$/);
  },
);
