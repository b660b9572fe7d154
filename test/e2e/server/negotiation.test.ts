/**
 * Content negotiation against the real apiserver: for the Accept headers real clients send, the
 * proxy answers from the cache exactly when the apiserver would answer plain JSON or a JSON
 * Table (a type with a ported printer), with the same
 * bytes (indented for curl and `?pretty=`), and leaves the rest to the apiserver. The one
 * deliberate difference, protobuf-first clients that also accept JSON, gets JSON from the cache
 * (negotiation.ts says why); the test checks that such an answer is JSON of the same object.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { startCachingProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { kube } from '../../helpers/kube.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';

const shared = useSharedAdmin();

/** Accept headers as the clients send them. */
const CLIENTS: readonly { name: string; accept: string | undefined; cached: 'same' | 'json-for-protobuf' | 'table' | 'apiserver' }[] = [
  {
    name: 'kubectl get (Table)',
    accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
    cached: 'table',
  },
  { name: 'kubectl get -o json', accept: 'application/json', cached: 'same' },
  { name: 'client-go typed, JSON', accept: 'application/json, */*', cached: 'same' },
  { name: 'client-go typed, protobuf', accept: 'application/vnd.kubernetes.protobuf, */*', cached: 'json-for-protobuf' },
  { name: 'client-go dynamic', accept: 'application/json', cached: 'same' },
  {
    name: 'client-go metadata',
    accept:
      'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
    cached: 'apiserver',
  },
  {
    name: 'client-go metadata, JSON only',
    accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
    cached: 'apiserver',
  },
  { name: 'client-node', accept: 'application/json', cached: 'same' },
  { name: 'curl', accept: '*/*', cached: 'same' },
  { name: 'no Accept', accept: undefined, cached: 'same' },
  { name: 'a browser', accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8', cached: 'same' },
  { name: 'YAML', accept: 'application/yaml', cached: 'apiserver' },
  { name: 'protobuf only', accept: 'application/vnd.kubernetes.protobuf', cached: 'apiserver' },
  { name: 'nothing servable', accept: 'text/plain', cached: 'apiserver' },
];

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

/** The list's own resourceVersion differs between the cache and the apiserver; nothing else may. */
function withoutListRv(body: string): string {
  return body.replace(/("kind": ?"ConfigMapList",\s*"apiVersion": ?"v1",\s*"metadata": ?\{\s*"resourceVersion": ?")\d+"/, '$1"');
}

test(
  'negotiation: each client gets from the proxy what the apiserver sends it; the cache answers exactly the plain-JSON ones',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    for (const name of ['a', 'b'])
      await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name }, data: { k: '<v & w>' } });
    const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS] });
    const viaProxy = async (path: string, headers: Record<string, string>): Promise<Answer> => {
      const res = await request(`${proxy.url}${path}`, { headers });
      return { status: res.statusCode, contentType: String(res.headers['content-type']), body: await res.body.text() };
    };
    const direct = async (path: string, headers: Record<string, string>): Promise<Answer> => {
      const res = await shared.admin.request({ method: 'GET', path, headers: { accept: '', ...headers } });
      return { status: res.statusCode, contentType: String(res.headers['content-type']), body: res.body.toString('latin1') };
    };
    const paths = [
      `/api/v1/namespaces/${ns}/configmaps/a`,
      `/api/v1/namespaces/${ns}/configmaps`,
      `/api/v1/namespaces/${ns}/configmaps/missing`,
    ];
    for (const client of CLIENTS) {
      for (const path of paths) {
        const headers: Record<string, string> = {
          'user-agent': 'kube-cache-proxy-test/1.0',
          ...(client.accept === undefined ? {} : { accept: client.accept }),
        };
        const before = proxy.forwarded.length;
        const [p, a] = await Promise.all([viaProxy(path, headers), direct(path, headers)]);
        const forwarded = proxy.forwarded.length > before;
        const what = `${client.name}: GET ${path}`;
        assert.equal(p.status, a.status, what);
        if (client.cached === 'apiserver') {
          assert.equal(forwarded, true, `${what}: passed through`);
          assert.equal(p.contentType, a.contentType, what);
          continue;
        }
        assert.equal(forwarded, false, `${what}: from the cache`);
        assert.equal(p.contentType, 'application/json', what);
        if (client.cached === 'table') {
          // The cells (ages) are compared with the clock's tick allowed for in tables.test.ts.
          assert.equal(a.contentType, 'application/json', what);
          assert.match(p.body, p.status === 200 ? /^\{"kind":"Table","apiVersion":"meta\.k8s\.io\/v1"/ : /^\{"kind":"Status"/, what);
          continue;
        }
        if (client.cached === 'same') {
          assert.equal(a.contentType, 'application/json', what);
          assert.equal(withoutListRv(p.body), withoutListRv(a.body), what);
        } else {
          assert.equal(a.contentType, 'application/vnd.kubernetes.protobuf', `${what}: the apiserver answers protobuf`);
          const object = JSON.parse(p.body) as { kind: string; metadata?: { name?: string } };
          assert.match(object.kind, /^(ConfigMap|ConfigMapList|Status)$/, what);
        }
      }
    }
  },
);

test(
  'negotiation: curl and ?pretty= get the apiserver’s indented bytes from the cache, for GET, LIST and errors',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    for (const name of ['a', 'b'])
      await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
        metadata: { name, labels: { x: 'y' } },
        data: { k: '<v & w>', e: '' },
      });
    const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS] });
    const cases: readonly { ua: string; query: string; accept?: string }[] = [
      { ua: 'curl/8.5.0', query: '' },
      { ua: 'Wget/1.21.4', query: '' },
      { ua: 'Mozilla/5.0 (X11; Linux x86_64)', query: '' },
      { ua: 'curl/8.5.0', query: 'pretty=false' },
      { ua: 'curl/8.5.0', query: 'pretty=nope' },
      { ua: 'kube-cache-proxy-test/1.0', query: 'pretty=true' },
      { ua: 'kube-cache-proxy-test/1.0', query: 'pretty=1' },
      { ua: 'kube-cache-proxy-test/1.0', query: '', accept: 'application/json;pretty=1' },
    ];
    for (const c of cases) {
      for (const base of [
        `/api/v1/namespaces/${ns}/configmaps/a`,
        `/api/v1/namespaces/${ns}/configmaps`,
        `/api/v1/namespaces/${ns}/configmaps/missing`,
        `/api/v1/namespaces/${ns}/configmaps?limit=1`,
      ]) {
        const path = c.query === '' ? base : `${base}${base.includes('?') ? '&' : '?'}${c.query}`;
        const headers: Record<string, string> = { 'user-agent': c.ua, ...(c.accept === undefined ? {} : { accept: c.accept }) };
        const before = proxy.forwarded.length;
        const p = await request(`${proxy.url}${path}`, { headers });
        const pBody = await p.body.text();
        const a = await shared.admin.request({ method: 'GET', path, headers: { accept: c.accept ?? '*/*', ...headers } });
        const what = `${c.ua} ${c.accept ?? ''} GET ${path}`;
        assert.equal(proxy.forwarded.length, before, `${what}: from the cache`);
        assert.equal(p.statusCode, a.statusCode, what);
        // A continue token embeds the list's RV: the cache's and the apiserver's differ there too.
        const norm = (s: string): string => withoutListRv(s).replace(/("continue": ?")[^"]+"/, '$1"');
        assert.equal(norm(pBody), norm(a.body.toString()), what);
      }
    }
  },
);
