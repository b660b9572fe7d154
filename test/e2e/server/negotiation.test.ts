/**
 * Content negotiation against the real apiserver: for the Accept headers real clients send, the
 * proxy answers from the cache exactly when the apiserver would answer plain JSON, protobuf, a
 * JSON Table (a type with a ported printer) or PartialObjectMetadata, with the same bytes
 * (indented for curl and `?pretty=`; a list's own resourceVersion aside), and leaves the rest to
 * the apiserver.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { startCachingProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { http2Get, overHttp2 } from '../../helpers/http2.ts';
import type { WholeAnswer } from '../../helpers/http2.ts';
import { kube } from '../../helpers/kube.ts';
import { notPeriodicBookmark, readWatchEvents } from '../../helpers/watch-lines.ts';
import { CONFIGMAPS } from '../../helpers/resource-specs.ts';
import { listOf, unenvelope } from '../../helpers/protobuf-reader.ts';

const shared = useSharedAdmin();

/** Accept headers as the clients send them. */
/** `listOnly`: the list kind asked for, so a GET is the apiserver's (406, or its own 404 wording). */
const CLIENTS: readonly {
  name: string;
  accept: string | undefined;
  cached: 'same' | 'protobuf' | 'table' | 'apiserver';
  listOnly?: boolean;
}[] = [
  {
    name: 'kubectl get (Table)',
    accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
    cached: 'table',
  },
  { name: 'kubectl get -o json', accept: 'application/json', cached: 'same' },
  { name: 'client-go typed, JSON', accept: 'application/json, */*', cached: 'same' },
  { name: 'client-go typed, protobuf', accept: 'application/vnd.kubernetes.protobuf, */*', cached: 'protobuf' },
  { name: 'client-go dynamic', accept: 'application/json', cached: 'same' },
  {
    name: 'client-go metadata',
    accept:
      'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
    cached: 'protobuf',
    listOnly: true,
  },
  {
    name: 'client-go metadata, JSON only',
    accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
    cached: 'same',
    listOnly: true,
  },
  { name: 'client-node', accept: 'application/json', cached: 'same' },
  { name: 'curl', accept: '*/*', cached: 'same' },
  { name: 'no Accept', accept: undefined, cached: 'same' },
  { name: 'a browser', accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8', cached: 'same' },
  { name: 'YAML', accept: 'application/yaml', cached: 'apiserver' },
  { name: 'protobuf only', accept: 'application/vnd.kubernetes.protobuf', cached: 'protobuf' },
  { name: 'nothing servable', accept: 'text/plain', cached: 'apiserver' },
];

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

/** A protobuf answer, a list's own resourceVersion left out (and the lengths it changes): its kind, and each item's bytes. */
function withoutProtobufListRv(latin1: string): string {
  const body = Buffer.from(latin1, 'latin1');
  const object = unenvelope(body);
  if (!object.kind.endsWith('List')) return body.toString('hex');
  const list = listOf(object.raw);
  return JSON.stringify({
    ...object,
    raw: undefined,
    items: list.items.map((i) => i.toString('hex')),
    continue: list.continue,
    remaining: String(list.remainingItemCount),
  });
}

/** The list's own resourceVersion differs between the cache and the apiserver; nothing else may. */
function withoutListRv(body: string): string {
  return body.replace(
    /("kind": ?"(?:ConfigMapList|PartialObjectMetadataList)",\s*"apiVersion": ?"[^"]+",\s*"metadata": ?\{\s*"resourceVersion": ?")\d+"/,
    '$1"',
  );
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
      return {
        status: res.statusCode,
        contentType: String(res.headers['content-type']),
        body: Buffer.from(await res.body.arrayBuffer()).toString('latin1'),
      };
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
        const isList = !path.includes('/configmaps/');
        // A Table's 404 is negotiated without the conversion: the apiserver words it.
        const tableError = client.cached === 'table' && path.endsWith('/missing');
        if (client.cached === 'apiserver' || (client.listOnly === true && !isList) || tableError) {
          assert.equal(forwarded, true, `${what}: passed through`);
          assert.equal(p.contentType, a.contentType, what);
          continue;
        }
        assert.equal(forwarded, false, `${what}: from the cache`);
        if (client.cached === 'protobuf') {
          assert.equal(p.contentType, 'application/vnd.kubernetes.protobuf', what);
          assert.equal(a.contentType, p.contentType, what);
          assert.equal(withoutProtobufListRv(p.body), withoutProtobufListRv(a.body), what);
          continue;
        }
        assert.equal(p.contentType, 'application/json', what);
        if (client.cached === 'table') {
          // The cells (ages) are compared with the clock's tick allowed for in tables.test.ts.
          assert.equal(a.contentType, 'application/json', what);
          assert.match(p.body, p.status === 200 ? /^\{"kind":"Table","apiVersion":"meta\.k8s\.io\/v1"/ : /^\{"kind":"Status"/, what);
          continue;
        }
        assert.equal(a.contentType, 'application/json', what);
        assert.equal(withoutListRv(p.body), withoutListRv(a.body), what);
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

/** client-go's metadata client configured for JSON (its protobuf form: test/e2e/protobuf/serving.test.ts); a JSON clause ahead of the plain one. */
const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const METADATA_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

/**
 * A watch's events with the initial-events-end bookmark's resourceVersion checked and then left
 * out: it is the RV the server's cache had reached when the bookmark was sent, at least that of
 * every initial event, and other tests' writes move it between the proxy's watch and the
 * apiserver's, opened one after the other.
 */
function endBookmarkAtAnyRv(events: readonly { type: string; object: unknown }[]): { type: string; object: unknown }[] {
  let highest = 0;
  return events.map((event) => {
    const metadata = (event.object as { metadata?: { resourceVersion?: string } }).metadata;
    const rv = Number(metadata?.resourceVersion ?? NaN);
    if (event.type !== 'BOOKMARK') {
      highest = Math.max(highest, rv);
      return event;
    }
    assert.ok(rv >= highest, `the end bookmark's RV ${String(rv)} is below an initial event's ${String(highest)}`);
    return { ...event, object: { ...(event.object as object), metadata: { ...metadata, resourceVersion: 'after the initial events' } } };
  });
}

test(
  'negotiation: client-go’s metadata client in JSON lists and watches from the cache, PartialObjectMetadata as the apiserver’s',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    for (const name of ['a', 'b']) {
      await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
        metadata: { name, labels: { app: 'x' }, annotations: { note: '<&>' } },
      });
    }
    const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS] });
    const base = `/api/v1/namespaces/${ns}/configmaps`;
    const before = proxy.forwarded.length;
    // LIST: the JSON PartialObjectMetadataList, each item's metadata as stored.
    const listed = (await (await request(`${proxy.url}${base}`, { headers: { accept: METADATA_LIST_ACCEPT } })).body.json()) as {
      kind: string;
      metadata: { resourceVersion: string };
      items: { kind: string; apiVersion: string; metadata: unknown }[];
    };
    const full = JSON.parse((await shared.admin.request({ method: 'GET', path: base })).body.toString()) as {
      items: { metadata: unknown }[];
    };
    assert.equal(listed.kind, 'PartialObjectMetadataList');
    assert.deepEqual(
      listed.items,
      full.items.map((i) => ({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: i.metadata })),
    );
    // WATCH from the list's RV, and a WatchList with its end bookmark, side by side with the apiserver's.
    for (const query of [
      `watch=true&allowWatchBookmarks=true&resourceVersion=${listed.metadata.resourceVersion}`,
      'watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
    ]) {
      const abort = new AbortController();
      t.after(() => {
        abort.abort();
      });
      const viaProxy = await request(`${proxy.url}${base}?${query}`, { headers: { accept: METADATA_ACCEPT }, signal: abort.signal });
      const direct = await shared.admin.stream({
        method: 'GET',
        path: `${base}?${query}`,
        headers: { accept: METADATA_ACCEPT },
        signal: abort.signal,
      });
      assert.equal(viaProxy.headers['content-type'], 'application/json');
      const initial = query.includes('sendInitialEvents') ? 3 : 0; // a, b, the end bookmark
      const ours = readWatchEvents<{ type: string; object: unknown }>(viaProxy.body, initial + 3, notPeriodicBookmark);
      const theirs = readWatchEvents<{ type: string; object: unknown }>(direct.body, initial + 3, notPeriodicBookmark);
      const made = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `c-${String(initial)}` } });
      await kube(shared.admin, 'PATCH', `${base}/${made.metadata.name}`, { metadata: { labels: { changed: 'yes' } } });
      await kube(shared.admin, 'DELETE', `${base}/${made.metadata.name}`);
      const [a, b] = await Promise.all([ours, theirs]);
      abort.abort();
      assert.deepEqual(endBookmarkAtAnyRv(a), endBookmarkAtAnyRv(b), query);
      assert.ok(a.every((e) => (e.object as { kind: string }).kind === 'PartialObjectMetadata'));
    }
    // A relist after the changes (what the informer does after a 410 or a restart): the same items as the apiserver's.
    const relisted = (await (await request(`${proxy.url}${base}`, { headers: { accept: METADATA_LIST_ACCEPT } })).body.json()) as {
      items: unknown[];
    };
    const jsonOnly = METADATA_LIST_ACCEPT;
    const theirs = JSON.parse(
      (await shared.admin.request({ method: 'GET', path: base, headers: { accept: jsonOnly } })).body.toString(),
    ) as { items: unknown[] };
    assert.deepEqual(relisted.items, theirs.items, 'the relist');
    assert.equal(proxy.forwarded.length, before, 'all from the cache');
  },
);

/**
 * A GET with its header fields as given. Over h2 (test/e2e/http2/) by node:http2: undici's h2
 * client joins repeated fields into one, and sends no header block past 64 KiB.
 */
async function getAsGiven(url: string, headers: Record<string, string | string[]> = {}): Promise<WholeAnswer> {
  if (overHttp2()) return http2Get(url, headers);
  const res = await request(url, { headers });
  return { statusCode: res.statusCode, headers: res.headers, body: await res.body.text() };
}

test('negotiation: of two Accept fields only the first counts, as Go’s Header.Get reads it', { timeout: 60_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS] });
  const path = `/api/v1/namespaces/${ns}/configmaps`;
  // text/html first: the apiserver answers 406 (checked with two curl -H); the cache must not answer JSON.
  const before = proxy.forwarded.length;
  await getAsGiven(`${proxy.url}${path}`, { accept: ['text/html', 'application/json'] });
  assert.equal(proxy.forwarded.length, before + 1, 'passed through, not answered from the cache');
  // The same two fields the other way round: JSON first, from the cache.
  const cached = await getAsGiven(`${proxy.url}${path}`, { accept: ['application/json', 'text/html'] });
  assert.equal(cached.statusCode, 200);
  assert.equal(proxy.forwarded.length, before + 1, 'from the cache');
});

test(
  'negotiation: worst-case Accept headers of 1 MiB get the apiserver’s answer, and the proxy serves on meanwhile',
  { timeout: 120_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'a' } });
    const proxy = await startCachingProxy(t, shared.cp, { specs: [CONFIGMAPS] });
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    // Over h2, a field's HPACK string is at most 64 KiB on both sides of the proxy's nghttp2
    // (a longer one closes the connection: docs/differences.md); over HTTP/1.1, the apiserver's 1 MiB.
    const size = overHttp2() ? 60_000 : 2 ** 20 - 1024;
    const headers: Record<string, string> = {
      // Insertion sort moved each clause to the front: 4.6 s for 480 KB, ~30 s for 1 MiB.
      'clauses in rising q': Array.from({ length: 70_000 }, (_, i) => `application/json;q=0.${String(i).padStart(6, '0')}`)
        .join(',')
        .slice(0, size)
        .replace(/,[^,]*$/, ''),
      // Backtracking regexes: a space run inside a clause, a q of digits.
      'spaces inside a clause': `application/json${' '.repeat(size)}x`,
      'a q of digits': `application/json;q=${'1'.repeat(size)}x`,
    };
    for (const [name, accept] of Object.entries(headers)) {
      const theirs = await shared.admin.request({ method: 'GET', path, headers: { accept } });
      const res = await getAsGiven(`${proxy.url}${path}`, { accept });
      const { body } = res;
      assert.equal(res.statusCode, theirs.statusCode, `${name}: the apiserver's status`);
      assert.equal(res.headers['content-type'], theirs.headers['content-type'], `${name}: its content type`);
      assert.equal(withoutListRv(body), withoutListRv(theirs.body.toString()), `${name}: its body`);
      const plain = await getAsGiven(`${proxy.url}${path}`);
      assert.equal(plain.statusCode, 200, `${name}: the next read served`);
      t.diagnostic(`${name}: ${String(res.statusCode)} as the apiserver`);
    }
  },
);
