/**
 * A kubelet through a shared node proxy, against the real apiserver running kubeadm's
 * authorization (`--authorization-mode=Node,RBAC`, NodeRestriction): a client certificate of the
 * test CA for `system:node:<node>` in `system:nodes` lists and watches its own pods
 * (`fieldSelector=spec.nodeName=<node>`, the Node authorizer's rule, which only a
 * SubjectAccessReview that carries the selector can meet) and gets the apiserver's 200 and bytes,
 * in JSON and protobuf, from the proxy's cache; without the selector, or with another node's,
 * it gets the apiserver's 403 byte for byte. Every request is sent to both with the same
 * certificate.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { request } from 'undici';
import { signedCertificate } from '../../helpers/certificates.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import { listOf, unenvelope, watchFramesOf } from '../../helpers/protobuf-reader.ts';
import { clientFor, startSharedProxy } from '../../helpers/shared-proxy.ts';
import type { Client } from '../../helpers/shared-proxy.ts';

const shared = useSharedAdmin();

const JSON_ACCEPT = 'application/json';
/** What client-go's kubelet asks for (protobuf first, JSON as a fallback). */
const PROTOBUF_ACCEPT = 'application/vnd.kubernetes.protobuf,application/json';

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly nosniff: boolean;
  readonly body: Buffer;
}

/** GET `path` at `base` as `client`; a watch (timeoutSeconds set) is read to its end. */
async function get(base: string, client: Client, path: string, accept: string, userAgent?: string): Promise<Answer> {
  const headers = { accept, ...client.headers, ...(userAgent === undefined ? {} : { 'user-agent': userAgent }) };
  const res = await request(`${base}${path}`, { dispatcher: client.dispatcher, headers });
  const contentType = res.headers['content-type'];
  return {
    status: res.statusCode,
    contentType: Array.isArray(contentType) ? contentType.join(', ') : (contentType ?? ''),
    nosniff: res.headers['x-content-type-options'] === 'nosniff',
    body: Buffer.from(await res.body.arrayBuffer()),
  };
}

/** A JSON list's bytes but for its own metadata (each side's list has its own resourceVersion). */
function withoutListMeta(body: Buffer): string {
  return body.toString().replace(/^(\{"kind":"\w+","apiVersion":"[^"]+","metadata":\{"resourceVersion":")\d+"/, '$1"');
}

/** A protobuf list: its envelope's type and its items' bytes (its ListMeta is each side's own). */
function protobufItems(body: Buffer): { apiVersion: string; kind: string; items: string[] } {
  const { apiVersion, kind, raw } = unenvelope(body);
  return { apiVersion, kind, items: listOf(raw).items.map((item) => item.toString('hex')) };
}

function podManifest(name: string, nodeName: string): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app: 'web' } },
    spec: { nodeName, containers: [{ name: 'c', image: 'registry.invalid/none' }] },
  };
}

test(
  'node authorizer: a kubelet lists and watches its own pods through a shared proxy as from the apiserver, and is refused without its selector',
  { timeout: 180_000 },
  async (t) => {
    const { admin, cp } = shared;
    const run = randomBytes(3).toString('hex');
    const node = `kcp-node-${run}`;
    const other = `kcp-other-${run}`;
    const ns = await testNamespace(t, admin);
    for (const [name, on] of [
      ['p1', node],
      ['p2', node],
      ['q1', other],
    ] as const) {
      await kube(admin, 'POST', `/api/v1/namespaces/${ns}/pods`, podManifest(name, on));
    }
    // The node proxy's shape (deploy/node): its node's pods only.
    const proxy = await startSharedProxy(t, cp, ['--resources', `pods:spec.nodeName=${node}`]);
    const kubelet = clientFor(t, proxy.ca, {
      kind: 'certificate',
      certificate: signedCertificate(t, cp, { cn: `system:node:${node}`, groups: ['system:nodes'] }),
    });
    const adminClient = clientFor(t, proxy.ca, { kind: 'token', token: cp.users.admin.token });
    const metrics = async (): Promise<string> => {
      const res = await get(proxy.url, adminClient, '/metrics', 'text/plain');
      assert.equal(res.status, 200);
      return res.body.toString();
    };
    const served = (text: string, from: string): number =>
      metricSum(text, 'kube_cache_proxy_requests_total', { resource: 'pods', served_from: from });
    const protobufAnswers = (text: string): number =>
      metricSum(text, 'kube_cache_proxy_cache_answers_total', { resource: 'pods', content_type: 'application/vnd.kubernetes.protobuf' }) +
      metricSum(text, 'kube_cache_proxy_cache_answers_total', {
        resource: 'pods',
        content_type: 'application/vnd.kubernetes.protobuf;stream=watch',
      });

    const own = `fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`;
    const lists = [
      `/api/v1/pods?${own}`,
      `/api/v1/pods?${own}&resourceVersion=0&limit=500`,
      `/api/v1/namespaces/${ns}/pods?${own}`,
      `/api/v1/pods?${own}&labelSelector=app%3Dweb`,
    ];
    // Both caches in step first (the proxy's cache syncs as it starts; the pods were written before).
    await eventually('the proxy to list the node’s pods as the apiserver does', async () => {
      const [viaProxy, direct] = await Promise.all([
        get(proxy.url, kubelet, lists[0] ?? '', JSON_ACCEPT),
        get(cp.server, kubelet, lists[0] ?? '', JSON_ACCEPT),
      ]);
      return viaProxy.status === 200 && withoutListMeta(viaProxy.body) === withoutListMeta(direct.body);
    });

    const before = await metrics();
    let allowed = 0;
    for (const path of lists) {
      const [viaProxy, direct] = await Promise.all([
        get(proxy.url, kubelet, path, JSON_ACCEPT),
        get(cp.server, kubelet, path, JSON_ACCEPT),
      ]);
      assert.equal(direct.status, 200, `the apiserver lets the kubelet list ${path}`);
      assert.equal(viaProxy.status, 200, `${path}: ${viaProxy.body.toString().slice(0, 300)}`);
      assert.equal(viaProxy.contentType, direct.contentType);
      assert.equal(withoutListMeta(viaProxy.body), withoutListMeta(direct.body), `${path}: the apiserver's bytes`);
      const pbProxy = await get(proxy.url, kubelet, path, PROTOBUF_ACCEPT);
      const pbDirect = await get(cp.server, kubelet, path, PROTOBUF_ACCEPT);
      assert.equal(pbProxy.status, 200);
      assert.equal(pbProxy.contentType, pbDirect.contentType);
      assert.equal(pbProxy.contentType, 'application/vnd.kubernetes.protobuf');
      assert.deepEqual(
        protobufItems(pbProxy.body),
        protobufItems(pbDirect.body),
        `${path} in protobuf: the apiserver's items, byte for byte`,
      );
      allowed += 2;
    }
    const names = (
      JSON.parse((await get(cp.server, kubelet, lists[0] ?? '', JSON_ACCEPT)).body.toString()) as {
        items: { metadata: { name: string } }[];
      }
    ).items.map((p) => p.metadata.name);
    assert.deepEqual(names, ['p1', 'p2'], 'its own pods, not the other node’s');

    // Watches: the initial state (resourceVersion=0), in JSON and protobuf, byte for byte.
    const initial = `/api/v1/pods?watch=1&${own}&resourceVersion=0&timeoutSeconds=1`;
    for (const accept of [JSON_ACCEPT, PROTOBUF_ACCEPT]) {
      const [viaProxy, direct] = await Promise.all([get(proxy.url, kubelet, initial, accept), get(cp.server, kubelet, initial, accept)]);
      assert.equal(direct.status, 200);
      assert.equal(viaProxy.status, 200, viaProxy.body.toString().slice(0, 300));
      assert.equal(viaProxy.contentType, direct.contentType);
      assert.ok(viaProxy.body.equals(direct.body), `the watch's initial events in ${accept}, byte for byte`);
      allowed++;
    }
    assert.equal(watchFramesOf((await get(proxy.url, kubelet, initial, PROTOBUF_ACCEPT)).body).length, 2, 'p1 and p2 ADDED');
    allowed++;

    // And a change after a given resourceVersion: a pod bound to the node, as both watches see it.
    const { metadata } = await kube<{ metadata: { resourceVersion: string } }>(admin, 'GET', `/api/v1/namespaces/${ns}/pods`);
    const live = `/api/v1/pods?watch=1&${own}&resourceVersion=${metadata.resourceVersion}&timeoutSeconds=3&allowWatchBookmarks=true`;
    const watches = [JSON_ACCEPT, PROTOBUF_ACCEPT].flatMap((accept) => [
      get(proxy.url, kubelet, live, accept),
      get(cp.server, kubelet, live, accept),
    ]);
    // Once the proxy's watch is registered (a change before it would still be replayed from its RV).
    await eventually(
      'the watches to be open',
      async () => served(await metrics(), 'cache') - served(before, 'cache') >= allowed + 2,
      10_000,
    );
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/pods`, podManifest('p3', node));
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/pods`, podManifest('q2', other));
    const [jsonProxy, jsonDirect, pbProxy, pbDirect] = await Promise.all(watches);
    assert.ok(jsonProxy !== undefined && jsonDirect !== undefined && pbProxy !== undefined && pbDirect !== undefined);
    assert.equal(jsonDirect.status, 200);
    assert.equal(jsonProxy.status, 200);
    const events = (body: Buffer): string[] =>
      body
        .toString()
        .split('\n')
        .filter((line) => line !== '' && !line.startsWith('{"type":"BOOKMARK"'));
    assert.deepEqual(
      events(jsonDirect.body).map(
        (line) => (JSON.parse(line) as { type: string; object: { metadata: { name: string } } }).object.metadata.name,
      ),
      ['p3'],
    );
    assert.deepEqual(events(jsonProxy.body), events(jsonDirect.body), 'the live event in JSON, byte for byte');
    const frames = (body: Buffer): string[] =>
      watchFramesOf(body)
        .filter((f) => f.type !== 'BOOKMARK')
        .map((f) => `${f.type} ${f.object.toString('hex')}`);
    assert.equal(frames(pbDirect.body).length, 1);
    assert.deepEqual(frames(pbProxy.body), frames(pbDirect.body), 'the live event in protobuf, byte for byte');
    allowed += 2;

    const after = await metrics();
    assert.equal(served(after, 'cache') - served(before, 'cache'), allowed, "every one of the kubelet's reads came from the cache");
    assert.equal(served(after, 'apiserver') - served(before, 'apiserver'), 0, 'none went to the apiserver');
    // The reviews' answers are counted in the memory budget.
    assert.ok(metricSum(after, 'kube_cache_proxy_memory_used_bytes', { use: 'decision_caches' }) > 0);
    assert.ok(protobufAnswers(after) - protobufAnswers(before) >= 7, 'the protobuf reads were answered in protobuf from the cache');

    // Without its selector, with another node's, with the alias the Node authorizer does not read
    // (spec.host), or with a label selector only: the apiserver's 403, byte for byte.
    const refused = [
      '/api/v1/pods',
      '/api/v1/pods?watch=1&timeoutSeconds=1',
      `/api/v1/namespaces/${ns}/pods`,
      `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${other}`)}`,
      `/api/v1/pods?watch=1&timeoutSeconds=1&fieldSelector=${encodeURIComponent(`spec.nodeName=${other}`)}`,
      `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.host=${node}`)}`,
      `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName!=${other}`)}`,
      '/api/v1/pods?labelSelector=app%3Dweb',
      // The deprecated path form carries no selectors to the authorizer.
      `/api/v1/watch/pods?${own}&timeoutSeconds=1`,
    ];
    // In every encoding the apiserver writes its 403 in: JSON, protobuf (the kubelet's), JSON
    // indented for curl, and the raw indented JSON of an Accept it cannot answer.
    const encodings: readonly (readonly [string, string | undefined])[] = [
      [JSON_ACCEPT, undefined],
      [PROTOBUF_ACCEPT, undefined],
      [JSON_ACCEPT, 'curl/8.5.0'],
      ['text/html', undefined],
    ];
    for (const path of refused) {
      for (const [accept, userAgent] of encodings) {
        const [viaProxy, direct] = await Promise.all([
          get(proxy.url, kubelet, path, accept, userAgent),
          get(cp.server, kubelet, path, accept, userAgent),
        ]);
        assert.equal(direct.status, 403, `the apiserver refuses ${path}: ${direct.body.toString()}`);
        assert.deepEqual(
          [viaProxy.status, viaProxy.contentType, viaProxy.nosniff, viaProxy.body.toString('latin1')],
          [direct.status, direct.contentType, direct.nosniff, direct.body.toString('latin1')],
          `${path} (${accept}, ${userAgent ?? 'no user agent'}): the apiserver's 403`,
        );
      }
    }
    const final = await metrics();
    assert.equal(
      served(final, 'apiserver') - served(before, 'apiserver'),
      0,
      'the refusals were the proxy’s own, as the apiserver words them',
    );
  },
);
