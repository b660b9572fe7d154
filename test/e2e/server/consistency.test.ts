/**
 * RV-unset ("most recent") reads through the proxy against the real apiserver: what they cost
 * upstream (the apiserver's own apiserver_request_total), read-your-writes whatever form the
 * write's answer takes, a conflict's refresh, the staleness bound while the upstream watch is
 * cut or silent, and what strong mode costs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import { startProxy } from '../../../src/proxy/proxy.ts';
import type { RunningProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import type { CachingProxy, CachingProxyOptions } from '../../helpers/caching-proxy.ts';
import { proxyCounter, startCachingProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { apiserverRequests, kube } from '../../helpers/kube.ts';
import type { TcpProxy } from '../../helpers/tcp-proxy.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';
import { startNetnsHttpServer } from '../../helpers/netns-host.ts';
import { CONFIGMAPS, PODS, PODTEMPLATES } from '../../helpers/resource-specs.ts';

const shared = useSharedAdmin();

const PROBES = 'kube_cache_proxy_consistency_probes_total';
const REQUESTS = 'kube_cache_proxy_requests_total';

/** The proxy command as a user runs it, with its defaults but for the flags given. */
async function startConfigMapProxy(...flags: string[]): Promise<RunningProxy & { url: string }> {
  const options = parseProxyOptions(['--port', '0', '--resources', 'configmaps', '--log-level', 'warn', ...flags]);
  const proxy = await startProxy(options, await upstreamConfigFor(shared.cp));
  const url = proxy.url;
  assert.ok(url !== undefined);
  await eventually('the configmaps cache to sync', async () => (await request(`${url}/readyz`)).statusCode === 200);
  return Object.assign(proxy, { url });
}

async function getStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await request(url, { headers });
  await res.body.dump();
  return res.statusCode;
}

async function getConfigMap(url: string): Promise<{ status: number; body: ConfigMap }> {
  const res = await request(url);
  return { status: res.statusCode, body: (await res.body.json()) as ConfigMap };
}

async function getList(url: string): Promise<{ status: number; body: { items: unknown[] } }> {
  const res = await request(url);
  return { status: res.statusCode, body: (await res.body.json()) as { items: unknown[] } };
}

interface ConfigMap {
  metadata: { name: string; resourceVersion: string };
  data?: Record<string, string>;
}

/** Both LIST and GET counts of configmaps at the apiserver. */
async function configMapReads(): Promise<number> {
  const [lists, gets] = await Promise.all([
    apiserverRequests(shared.admin, 'LIST', 'configmaps'),
    apiserverRequests(shared.admin, 'GET', 'configmaps'),
  ]);
  return lists + gets;
}

test(
  'consistency (default): 100 RV-unset LISTs and 100 RV-unset GETs after sync cost the apiserver nothing',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'one' } });
    const proxy = await startConfigMapProxy();
    try {
      await eventually(
        'the object to be cached',
        async () => (await getStatus(`${proxy.url}/api/v1/namespaces/${ns}/configmaps/one`)) === 200,
      );
      const before = await configMapReads();
      const passedBefore = await proxyCounter(proxy.metrics, REQUESTS, { served_from: 'apiserver', resource: 'configmaps' });
      const statuses = await Promise.all([
        ...Array.from({ length: 100 }, () => getStatus(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`)),
        ...Array.from({ length: 100 }, () => getStatus(`${proxy.url}/api/v1/namespaces/${ns}/configmaps/one`)),
      ]);
      assert.deepEqual(new Set(statuses), new Set([200]));
      const upstream = (await configMapReads()) - before;
      t.diagnostic(`default mode: 200 RV-unset reads → ${String(upstream)} upstream reads`);
      assert.equal(upstream, 0, "the apiserver's apiserver_request_total did not move");
      assert.equal(await proxyCounter(proxy.metrics, REQUESTS, { served_from: 'apiserver', resource: 'configmaps' }), passedBefore);
      assert.equal(await proxyCounter(proxy.metrics, PROBES), 0, 'no probe');
      const staleness = await proxy.metrics.registry.getSingleMetric('kube_cache_proxy_read_staleness_seconds')?.get();
      const count = staleness?.values.find((v) => v.labels.le === '+Inf');
      assert.ok((count?.value ?? 0) >= 200, 'each read from the cache recorded its staleness');
    } finally {
      await proxy.stop(0);
    }
  },
);

async function readYourWrites(
  t: TestContext,
  flags: string[],
  iterations: number,
): Promise<{ notFound: number; cached: number; probes: number }> {
  const ns = await testNamespace(t, shared.admin);
  const proxy = await startConfigMapProxy(...flags);
  try {
    let notFound = 0;
    for (let i = 0; i < iterations; i++) {
      const name = `ryw-${String(i)}`;
      const created = await request(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { name }, data: { i: String(i) } }),
      });
      await created.body.dump();
      assert.equal(created.statusCode, 201);
      const status = await getStatus(`${proxy.url}/api/v1/namespaces/${ns}/configmaps/${name}`);
      if (status === 404) notFound++;
      else assert.equal(status, 200);
    }
    const cached = await proxyCounter(proxy.metrics, REQUESTS, { verb: 'get', resource: 'configmaps', served_from: 'cache' });
    const probes = await proxyCounter(proxy.metrics, PROBES);
    t.diagnostic(
      `${flags.join(' ') || 'default'}: ${String(iterations)} create+GET, ${String(cached)} GETs from the cache, ${String(probes)} probes`,
    );
    return { notFound, cached, probes };
  } finally {
    await proxy.stop(0);
  }
}

test(
  'consistency: read-your-writes, 500 creates through the proxy each read back at once (default and strong)',
  { timeout: 180_000 },
  async (t) => {
    const [bounded, strong] = await Promise.all([readYourWrites(t, [], 500), readYourWrites(t, ['--read-consistency', 'strong'], 500)]);
    assert.equal(bounded.notFound, 0, 'default: no GET after a create answered 404');
    assert.equal(bounded.cached, 500, 'default: every GET from the cache');
    assert.equal(bounded.probes, 0, 'default: the creates named their RV');
    assert.equal(strong.notFound, 0, 'strong: no GET after a create answered 404');
    assert.ok(strong.probes <= 500, `strong: at most a probe per GET (${String(strong.probes)})`);
    assert.ok(strong.cached > 0, "strong: GETs served from the cache once it reached the probe's RV");
  },
);

test(
  'consistency (default): writes answered in protobuf (client-go) or indented JSON (curl) cause no probe',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const proxy = await startConfigMapProxy();
    try {
      const collection = `${proxy.url}/api/v1/namespaces/${ns}/configmaps`;
      const clients = [
        {
          name: 'client-go',
          headers: { accept: 'application/vnd.kubernetes.protobuf, */*', 'user-agent': 'kubectl/v1.37.2 (linux/amd64)' },
        },
        { name: 'curl', headers: { accept: '*/*', 'user-agent': 'curl/8.11.1' } },
      ] as const;
      for (const client of clients) {
        const created = await request(collection, {
          method: 'POST',
          headers: { ...client.headers, 'content-type': 'application/json' },
          body: JSON.stringify({ metadata: { name: client.name }, data: { v: '1' } }),
        });
        const bytes = Buffer.from(await created.body.arrayBuffer());
        assert.equal(created.statusCode, 201);
        // The premise: the answer is in the form the client asked for.
        if (client.name === 'client-go') assert.equal(bytes.subarray(0, 4).toString('latin1'), 'k8s\u0000', 'a protobuf answer');
        else assert.match(bytes.toString(), /^\{\n {2}"kind": "ConfigMap"/, 'an indented JSON answer');
        const updated = await request(`${collection}/${client.name}`, {
          method: 'PATCH',
          headers: { ...client.headers, 'content-type': 'application/merge-patch+json' },
          body: JSON.stringify({ data: { v: '2' } }),
        });
        await updated.body.dump();
        assert.equal(updated.statusCode, 200);
        const read = await getConfigMap(`${collection}/${client.name}`);
        assert.equal(read.status, 200);
        assert.equal(read.body.data?.v, '2', `${client.name}: the read sees the patch`);
      }
      assert.equal(await proxyCounter(proxy.metrics, PROBES), 0, 'every answer named its RV');
      assert.equal(await proxyCounter(proxy.metrics, REQUESTS, { verb: 'get', served_from: 'apiserver', resource: 'configmaps' }), 0);
    } finally {
      await proxy.stop(0);
    }
  },
);

/** An in-process proxy whose informers reach the apiserver through a TCP link the test can cut or hold. */
async function proxyBehindLink(
  t: TestContext,
  options: Omit<CachingProxyOptions, 'specs' | 'informerUpstream'> = {},
): Promise<{ proxy: CachingProxy; link: TcpProxy }> {
  const config = await upstreamConfigFor(shared.cp);
  const link = await startTcpProxy(config.server.hostname, Number(config.server.port));
  t.after(() => link.close());
  const informerUpstream = { ...config, server: new URL(`https://127.0.0.1:${String(link.port)}`) };
  const proxy = await startCachingProxy(t, shared.cp, { ...options, specs: [CONFIGMAPS], informerUpstream });
  return { proxy, link };
}

test(
  'consistency (default): after a conflict through the proxy, the next GET returns the object as the apiserver holds it',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const { proxy, link } = await proxyBehindLink(t);
    const path = `/api/v1/namespaces/${ns}/configmaps/cm`;
    const created = await kube<ConfigMap>(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      metadata: { name: 'cm' },
      data: { v: '1' },
    });
    await eventually(
      'the object to be cached',
      async () => (await getStatus(`${proxy.url}${path}?resourceVersion=${created.metadata.resourceVersion}`)) === 200,
    );
    // The cache's watch goes silent (not broken): the update below does not reach it.
    link.setHeld(true);
    const current = await kube<ConfigMap>(shared.admin, 'PUT', path, { ...created, data: { v: '2' } });
    const stale = await getConfigMap(`${proxy.url}${path}`);
    assert.equal(stale.body.data?.v, '1', 'the premise: the cache is behind, and within the staleness bound');
    // A controller's read-modify-write from the stale read: the apiserver refuses it.
    const conflict = await request(`${proxy.url}${path}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...stale.body, data: { v: '3' } }),
    });
    const status = (await conflict.body.json()) as { reason?: string };
    assert.equal(conflict.statusCode, 409);
    assert.equal(status.reason, 'Conflict');
    const after = await getConfigMap(`${proxy.url}${path}`);
    assert.equal(after.status, 200);
    assert.deepEqual(after.body, current, "the next GET returns the apiserver's object");
    // The type was quiet or busy when the conflict came: it probed once, or passed the read at once
    // and a freshness proof (one probe) went on in the background.
    assert.ok((await proxyCounter(proxy.metrics, PROBES)) <= 1, 'one probe at most');
    // The watch comes back: the object's reads are the cache's again.
    link.setHeld(false);
    await eventually('reads of the object to come from the cache again', async () => {
      const before = proxy.forwarded.length;
      const read = await getConfigMap(`${proxy.url}${path}`);
      return read.body.data?.v === '2' && proxy.forwarded.length === before;
    });
  },
);

test(
  'consistency (default): while the upstream watch is cut, RV-unset reads pass through; after it returns they come from the cache',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const { proxy, link } = await proxyBehindLink(t);
    const collection = `/api/v1/namespaces/${ns}/configmaps`;
    link.setBlocked(true);
    link.cut();
    // Written while the cache cannot hear of it: every read must still see it.
    for (let i = 0; i < 20; i++) {
      const name = `during-${String(i)}`;
      await kube(shared.admin, 'POST', collection, { metadata: { name } });
      assert.equal(await getStatus(`${proxy.url}${collection}/${name}`), 200, `${name}: not answered from the cut-off cache`);
      const list = await getList(`${proxy.url}${collection}`);
      assert.equal(list.body.items.length, i + 1);
    }
    const passed = await proxyCounter(proxy.metrics, 'kube_cache_proxy_consistency_pass_through_total', { reason: 'not-watching' });
    assert.ok(passed >= 40, `passed through as not watching: ${String(passed)}`);
    link.setBlocked(false);
    await eventually('reads to come from the cache again', async () => {
      const before = proxy.forwarded.length;
      const list = await getList(`${proxy.url}${collection}`);
      return list.body.items.length === 20 && proxy.forwarded.length === before;
    });
  },
);

test('consistency (default): a watch that goes silent serves reads no longer than --max-staleness', { timeout: 60_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const boundMs = 2_000;
  const { proxy, link } = await proxyBehindLink(t, { maxStalenessMs: boundMs });
  const collection = `/api/v1/namespaces/${ns}/configmaps`;
  const created = await kube<ConfigMap>(shared.admin, 'POST', collection, { metadata: { name: 'before' } });
  await eventually(
    'the cache to hold it',
    async () => (await getStatus(`${proxy.url}${collection}/before?resourceVersion=${created.metadata.resourceVersion}`)) === 200,
  );
  const heldAt = Date.now();
  link.setHeld(true);
  await kube(shared.admin, 'POST', collection, { metadata: { name: 'after' } });
  // Reads of the new object: from the stale cache (404) only within the bound, then from the apiserver.
  let lastStaleAt = heldAt;
  let stale = 0;
  for (;;) {
    const status = await getStatus(`${proxy.url}${collection}/after`);
    if (status === 200) break;
    assert.equal(status, 404);
    stale++;
    lastStaleAt = Date.now();
    assert.ok(lastStaleAt - heldAt < boundMs + 5_000, 'the bound is enforced');
  }
  t.diagnostic(
    `${String(stale)} reads from the silent cache, the last ${String(lastStaleAt - heldAt)} ms after it went silent (bound ${String(boundMs)} ms)`,
  );
  assert.ok(lastStaleAt - heldAt <= boundMs + 250, 'no read from a cache staler than the bound (250 ms for the read itself)');
  assert.ok(stale > 0, 'the premise: the silent cache was read within the bound');
  link.setHeld(false);
  await eventually('reads to come from the cache again', async () => {
    const before = proxy.forwarded.length;
    return (await getStatus(`${proxy.url}${collection}/after`)) === 200 && proxy.forwarded.length === before;
  });
});

test(
  'consistency (strong): an RV-unset GET or LIST costs at most a probe (a consistent LIST of one key) and one GET or LIST upstream',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'one' } });
    const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS], readConsistency: 'strong' });
    await eventually(
      'the object to be cached',
      async () => (await getStatus(`${proxy.url}/api/v1/namespaces/${ns}/configmaps/one?resourceVersion=0`)) === 200,
    );
    for (let i = 0; i < 10; i++) {
      const gets = await apiserverRequests(shared.admin, 'GET', 'configmaps');
      const probes = await proxyCounter(proxy.metrics, PROBES);
      assert.equal(await getStatus(`${proxy.url}/api/v1/namespaces/${ns}/configmaps/one`), 200);
      const upstream = (await apiserverRequests(shared.admin, 'GET', 'configmaps')) - gets;
      const probed = (await proxyCounter(proxy.metrics, PROBES)) - probes;
      assert.ok(probed <= 1 && upstream <= 1, `GET ${String(i)}: ${String(probed)} probes, ${String(upstream)} upstream GETs`);
    }
    for (let i = 0; i < 10; i++) {
      const lists = await apiserverRequests(shared.admin, 'LIST', 'configmaps');
      const probes = await proxyCounter(proxy.metrics, PROBES);
      assert.equal(await getStatus(`${proxy.url}/api/v1/namespaces/${ns}/configmaps`), 200);
      // The apiserver counts the probe (a LIST of one key) among the LISTs.
      const probed = (await proxyCounter(proxy.metrics, PROBES)) - probes;
      const upstream = (await apiserverRequests(shared.admin, 'LIST', 'configmaps')) - lists - probed;
      assert.ok(probed <= 1 && upstream <= 1, `LIST ${String(i)}: ${String(probed)} probes, ${String(upstream)} upstream LISTs besides`);
    }
  },
);

test(
  "consistency (strong): a quiet type's LIST and WatchList are proven current and served from the cache, equal to the apiserver's",
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const template = { spec: { containers: [{ name: 'c', image: 'busybox' }] } };
    for (const name of ['a', 'b'])
      await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, { metadata: { name }, template });
    // PodTemplates, which other tests seldom write: quiet once the cache has them.
    const proxy = await startCachingProxy(t, shared.cp, { specs: [PODTEMPLATES], readConsistency: 'strong' });
    const list = `/api/v1/namespaces/${ns}/podtemplates`;
    await eventually('both objects cached', async () => {
      const res = await request(`${proxy.url}${list}?resourceVersion=0`);
      return res.statusCode === 200 && ((await res.body.json()) as { items: unknown[] }).items.length === 2;
    });
    // Another type's write moves the cluster's RV past the cache's: only a proof can show the cache current.
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'moves-the-rv' } });
    const fromCache = async (): Promise<{ served: boolean; items: unknown }> => {
      const before = proxy.forwarded.length;
      const res = await request(`${proxy.url}${list}`);
      const body = (await res.body.json()) as { items: unknown };
      assert.equal(res.statusCode, 200);
      return { served: proxy.forwarded.length === before, items: body.items };
    };
    let answer = await fromCache();
    await eventually('a strong LIST served from the proven cache', async () => {
      answer = await fromCache();
      return answer.served;
    });
    const direct = await kube(shared.admin, 'GET', list);
    assert.deepEqual(answer.items, (direct as unknown as { items: unknown }).items, "the cache's items are the apiserver's");
    // The write of the type itself, then at once a strong LIST: it sees the write (linearizable).
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/podtemplates`, { metadata: { name: 'c' }, template });
    const after = await fromCache();
    assert.equal((after.items as unknown[]).length, 3, 'a strong LIST after a write sees it, wherever it is served from');
    // An informer starting (a WatchList): its initial state comes from the cache, after a proof if
    // need be. It waits up to 2.5 s for the proof (about a second, more on a loaded machine), and is
    // passed through past that: the proof it started serves the next one.
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'moves-the-rv-again' } });
    const watchList = async (): Promise<{ fromCache: boolean; added: number }> => {
      const before = proxy.forwarded.length;
      const controller = new AbortController();
      const res = await request(
        `${proxy.url}${list}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`,
        { signal: controller.signal },
      );
      assert.equal(res.statusCode, 200);
      let text = '';
      try {
        for await (const chunk of res.body) {
          text += String(chunk);
          if (text.includes('k8s.io/initial-events-end')) break;
        }
      } finally {
        controller.abort();
      }
      return { fromCache: proxy.forwarded.length === before, added: text.split('\n').filter((line) => line.includes('"ADDED"')).length };
    };
    let started = await watchList();
    assert.equal(started.added, 3, 'its initial events: the three objects, wherever they come from');
    await eventually('a WatchList started from the cache', async () => {
      started = await watchList();
      return started.fromCache;
    });
    assert.equal(started.added, 3, 'its initial events from the cache: the three objects');
  },
);

test(
  'consistency (default): what a pod answers through its proxy subresource teaches read-your-writes nothing',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    // The "pod": a server on a host of the test's own that answers every request with a body claiming to be a
    // Pod of the namespace at the largest RV there is (uint64's). The apiserver's proxy passes its
    // answers on as they are.
    const claim = JSON.stringify({
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: { name: 'p', namespace: ns, resourceVersion: '18446744073709551615' },
    });
    const pod = await startNetnsHttpServer(
      t,
      `(req, res) => { req.resume(); res.writeHead(200, { 'content-type': 'application/json' }).end(${JSON.stringify(claim)}); }`,
    );
    const { port } = pod;
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'c', image: 'example.invalid/c', ports: [{ containerPort: port }] }] },
    });
    const ip = pod.address;
    await kube(shared.admin, 'PATCH', `/api/v1/namespaces/${ns}/pods/p/status`, { status: { podIP: ip, podIPs: [{ ip }] } });
    const proxy = await startCachingProxy(t, shared.cp, { specs: [PODS] });
    const list = `${proxy.url}/api/v1/namespaces/${ns}/pods`;
    const fromCache = async (): Promise<boolean> => {
      const before = proxy.forwarded.length;
      const res = await request(list);
      await res.body.dump();
      return res.statusCode === 200 && proxy.forwarded.length === before;
    };
    await eventually('an RV-unset LIST of pods from the cache', fromCache);
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
      const res = await request(`${proxy.url}/api/v1/namespaces/${ns}/pods/p:${String(port)}/proxy/claim`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(res.statusCode, 200, `${method}: the pod answered through the apiserver's proxy`);
      assert.equal(await res.body.text(), claim, `${method}: its own body`);
    }
    // Before, each such answer made every RV-unset read of pods wait 3 s for an RV no cache ever reaches, then pass through.
    assert.equal(await fromCache(), true, 'an RV-unset LIST of pods is still answered from the cache');
    const res = await request(`${list}/p`);
    await res.body.dump();
    assert.equal(res.statusCode, 200);
    for (const reason of ['own-write-pending', 'doubted', 'doubted-quiet']) {
      assert.equal(await proxyCounter(proxy.metrics, 'kube_cache_proxy_consistency_pass_through_total', { reason }), 0, reason);
    }
  },
);

/** An update of the ConfigMap `a` at `url` from a stale resourceVersion: the apiserver's 409, through the proxy. */
async function conflictOn(url: string): Promise<void> {
  const conflict = await request(url, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name: 'a', resourceVersion: '1' } }),
  });
  await conflict.body.dump();
  assert.equal(conflict.statusCode, 409);
}

test(
  'consistency (default): a doubted LIST of a namespace is its own probe: passed through at once, its answer (JSON or protobuf) settles the doubt, and no probe is sent',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS] });
    const collection = `/api/v1/namespaces/${ns}/configmaps`;
    const created = await kube<ConfigMap>(shared.admin, 'POST', collection, { metadata: { name: 'a' } });
    await eventually(
      'the object to be cached',
      async () => (await getStatus(`${proxy.url}${collection}/a?resourceVersion=${created.metadata.resourceVersion}`)) === 200,
    );
    for (const accept of ['application/json', 'application/vnd.kubernetes.protobuf']) {
      // A conflict: the object, and so the namespace's LIST, is doubted.
      await conflictOn(`${proxy.url}${collection}/a`);
      const forwarded = proxy.forwarded.length;
      assert.equal(await getStatus(`${proxy.url}${collection}`, { accept }), 200);
      assert.equal(proxy.forwarded.length, forwarded + 1, `${accept}: the doubted LIST went to the apiserver`);
      // The next change of the type carries the cache past the LIST's RV: the doubt is settled.
      await kube(shared.admin, 'POST', collection, { metadata: { generateName: 'b-' } });
      await eventually(`${accept}: the namespace's LIST from the cache again`, async () => {
        const before = proxy.forwarded.length;
        return (await getStatus(`${proxy.url}${collection}`, { accept })) === 200 && proxy.forwarded.length === before;
      });
    }
    assert.equal(await proxyCounter(proxy.metrics, PROBES), 0, 'no probe: each LIST answer settled its doubt');
  },
);

test(
  'consistency (default): a GET of an object doubted by a conflict is its own probe: passed through once, its answer (JSON or protobuf) settles the doubt, and the next GET is the cache’s',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS] });
    const object = `/api/v1/namespaces/${ns}/configmaps/a`;
    const created = await kube<ConfigMap>(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'a' } });
    await eventually(
      'the object to be cached',
      async () => (await getStatus(`${proxy.url}${object}?resourceVersion=${created.metadata.resourceVersion}`)) === 200,
    );
    for (const accept of ['application/json', 'application/vnd.kubernetes.protobuf']) {
      await conflictOn(`${proxy.url}${object}`);
      const forwarded = proxy.forwarded.length;
      assert.equal(await getStatus(`${proxy.url}${object}`, { accept }), 200);
      assert.equal(proxy.forwarded.length, forwarded + 1, `${accept}: the doubted GET went to the apiserver`);
      // No write since: the object's RV in that answer is one the cache already has.
      assert.equal(await getStatus(`${proxy.url}${object}`, { accept }), 200);
      assert.equal(proxy.forwarded.length, forwarded + 1, `${accept}: the next GET from the cache`);
    }
    assert.equal(await proxyCounter(proxy.metrics, PROBES), 0, 'no probe: each GET answer settled its doubt');
  },
);
