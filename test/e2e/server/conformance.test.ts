/**
 * Conformance: the real kube-apiserver is the judge of the caching proxy. Each request is sent
 * to the apiserver and to the proxy (its caches synced and at least as fresh as the request's RV)
 * and the answers must carry the same status code, Content-Type, Retry-After and body, byte for
 * byte. Normalised is only what the apiserver itself varies between two caches at different RVs,
 * each with its reason where it is applied:
 * - the list's metadata.resourceVersion (each side answers at its own cache's RV);
 * - the `rv` inside a continue token (it is the RV of the side's own list);
 * - the "current: C" of a 504 ResourceVersionTooLarge message (each side's own current RV).
 *
 * Every mismatch of a test is collected and asserted together, so one run lists them all; where
 * the proxy's cache must answer a read itself, the test asserts it did (no pass-through).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import type { CachedResourceSpec } from '../../../src/cache/cached-resources.ts';
import type { ReadConsistency } from '../../../src/cache/consistency.ts';
import type { CachingProxy } from '../../helpers/caching-proxy.ts';
import { startCachingProxy as startInProcessProxy } from '../../helpers/caching-proxy.ts';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { CONFIGMAPS, PODS, crdSpec } from '../../helpers/resource-specs.ts';
import { eventually } from '../../helpers/eventually.ts';
import { forEachConcurrently, kube, testCrd } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

/** The apiserver keeps no watch cache of events: its event LISTs read etcd, which answers 410 for a compacted RV. */
const EVENTS: CachedResourceSpec = { group: '', version: 'v1', resource: 'events', kind: 'Event', namespaced: true, unstructured: false };

/** The ceiling on pages of one paged LIST: a proxy that never ends its continue chain fails instead of looping. */
const MAX_PAGES = 30;

// --- the proxy ------------------------------------------------------------------------------

type Proxy = CachingProxy;

interface ProxyOptions {
  readonly specs: readonly CachedResourceSpec[];
  /** `strong` unless a test needs RV-unset reads answered from the cache (bounded, the product's default). */
  readonly consistency?: ReadConsistency;
}

/** A caching proxy in-process (test/helpers/caching-proxy.ts) of the named `specs`. */
function startCachingProxy(t: TestContext, options: ProxyOptions): Promise<Proxy> {
  return startInProcessProxy(t, shared.cp, { specs: options.specs, readConsistency: options.consistency ?? 'strong' });
}

// --- answers --------------------------------------------------------------------------------

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly retryAfter: string;
  readonly body: string;
}

function header(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
}

/** Both sides get the same request headers: the admin client sends `accept: application/json`. */
async function fromProxy(proxy: Proxy, path: string): Promise<Answer> {
  const res = await request(`${proxy.url}${path}`, { headers: { accept: 'application/json' } });
  const body = await res.body.text();
  return { status: res.statusCode, contentType: header(res.headers['content-type']), retryAfter: header(res.headers['retry-after']), body };
}

async function fromApiserver(path: string): Promise<Answer> {
  const res = await shared.admin.request({ method: 'GET', path });
  return {
    status: res.statusCode,
    contentType: header(res.headers['content-type']),
    retryAfter: header(res.headers['retry-after']),
    body: res.body.toString('utf8'),
  };
}

interface ListMeta {
  readonly resourceVersion?: string;
  readonly continue?: string;
  readonly remainingItemCount?: number;
}

function listOf(answer: Answer): { readonly metadata: ListMeta; readonly items: readonly unknown[] } {
  const parsed = JSON.parse(answer.body) as { metadata?: ListMeta; items?: unknown[] };
  return { metadata: parsed.metadata ?? {}, items: parsed.items ?? [] };
}

function listResourceVersionOf(answer: Answer): bigint {
  if (answer.status !== 200) return -1n;
  return BigInt(listOf(answer).metadata.resourceVersion ?? '-1');
}

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64url');

interface ContinueToken {
  readonly v: string;
  readonly rv: number;
  readonly start: string;
}

/** A continue token: base64url of {"v","rv","start"} (storage/continue.go). */
function decodeToken(token: string): ContinueToken | undefined {
  try {
    return JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as ContinueToken;
  } catch {
    return undefined;
  }
}

// --- normalisations: only what two caches at different RVs legitimately vary ----------------

type Normalise = (body: string) => string;

/** A typed list (built-in types) opens with its metadata: kind, apiVersion, metadata.resourceVersion. */
const TYPED_LIST_RV = /^(\{"kind":"\w+List","apiVersion":"[^"]+","metadata":\{"resourceVersion":")\d+(")/;
/** An unstructured list (custom resources) has its keys sorted: its metadata closes the body. */
const UNSTRUCTURED_LIST_RV =
  /("kind":"\w+List","metadata":\{(?:"continue":"[\w-]*",)?(?:"remainingItemCount":\d+,)?"resourceVersion":")\d+("\}\}\n?)$/;

/** The list's metadata.resourceVersion: each side lists at its own cache's RV. */
const listRv: Normalise = (body) => body.replace(TYPED_LIST_RV, '$1<list RV>$2').replace(UNSTRUCTURED_LIST_RV, '$1<list RV>$2');

/** The token, decoded, with its rv (and nothing else) replaced: the rv is the side's own list RV. */
function tokenWithoutRv(token: string): string {
  const json = Buffer.from(token, 'base64url').toString('utf8');
  const normalised = json.replace(/^(\{"v":"[^"]*","rv":)-?\d+(,"start":)/, '$1"<own list RV>"$2');
  // A token that does not decode stays as sent: the comparison shows it.
  return normalised === json ? token : `<decoded ${normalised}>`;
}

const TYPED_LIST_CONTINUE = /^(\{"kind":"\w+List","apiVersion":"[^"]+","metadata":\{"resourceVersion":"[^"]*","continue":")([\w-]+)(")/;
const UNSTRUCTURED_LIST_CONTINUE = /("kind":"\w+List","metadata":\{"continue":")([\w-]+)("[^{}]*\}\}\n?)$/;
const STATUS_CONTINUE = /^(\{"kind":"Status","apiVersion":"v1","metadata":\{"continue":")([\w-]+)(")/;

/**
 * The `rv` of the list's (or 410 Status's) metadata.continue token: each side's own list RV;
 * its `v` and `start` must be equal.
 */
const continueRv: Normalise = (body) => {
  const replace = (_m: string, head: string, token: string, tail: string): string => `${head}${tokenWithoutRv(token)}${tail}`;
  return body.replace(TYPED_LIST_CONTINUE, replace).replace(UNSTRUCTURED_LIST_CONTINUE, replace).replace(STATUS_CONTINUE, replace);
};

/** The "current: C" of a 504 ResourceVersionTooLarge message: each side's own current RV. */
const tooLargeCurrentRv: Normalise = (body) =>
  body.replace(/^(\{"kind":"Status",.*"message":"Timeout: Too large resource version: \d+, current: )\d+(")/, '$1<current RV>$2');

// --- comparing --------------------------------------------------------------------------------

interface Mismatch {
  readonly request: string;
  readonly apiserver: string;
  readonly proxy: string;
}

/** The first index where `a` and `b` differ (their common length when one is a prefix of the other). */
function firstDifference(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** An answer for the report: the whole body when short, else the part around the first difference. */
function describe(answer: Answer, body: string, at: number): string {
  const head = `${answer.status} content-type=${JSON.stringify(answer.contentType)} retry-after=${JSON.stringify(answer.retryAfter)}`;
  if (body.length <= 700) return `${head} ${body.trimEnd()}`;
  const from = Math.max(0, at - 150);
  return `${head} (${body.length} chars, first difference at ${at}) …${body.slice(from, at + 250)}…`;
}

interface Comparison {
  /** Sends `path` to both and records a mismatch; resolves with the answers and whether the proxy passed it through. */
  same(proxy: Proxy, path: string, normalise?: readonly Normalise[]): Promise<{ theirs: Answer; mine: Answer; passedThrough: boolean }>;
  /** Records a mismatch between two answers already fetched (paging: the two sides' requests differ). */
  check(label: string, theirs: Answer, mine: Answer, normalise?: readonly Normalise[]): boolean;
  /** Records a mismatch found otherwise (e.g. a continue token's rv against its own list's RV). */
  record(mismatch: Mismatch): void;
  /** Records a request the proxy's cache should have answered but passed through. */
  notCached(request: string): void;
  /** Fails the test with every mismatch and every pass-through recorded. */
  assertNone(): void;
}

function newComparison(t: TestContext): Comparison {
  const mismatches: Mismatch[] = [];
  const passedThrough: string[] = [];
  const record = (mismatch: Mismatch): void => {
    t.diagnostic(`MISMATCH ${JSON.stringify(mismatch, null, 2)}`);
    mismatches.push(mismatch);
  };
  const check = (label: string, theirs: Answer, mine: Answer, normalise: readonly Normalise[] = []): boolean => {
    const norm = (body: string): string => normalise.reduce((b, f) => f(b), body);
    const a = norm(theirs.body);
    const b = norm(mine.body);
    if (theirs.status === mine.status && theirs.contentType === mine.contentType && theirs.retryAfter === mine.retryAfter && a === b) {
      return true;
    }
    const at = firstDifference(a, b);
    record({ request: label, apiserver: describe(theirs, a, at), proxy: describe(mine, b, at) });
    return false;
  };
  return {
    async same(proxy, path, normalise = []) {
      const before = proxy.forwarded.length;
      const [theirs, mine] = await Promise.all([fromApiserver(path), fromProxy(proxy, path)]);
      check(`GET ${path}`, theirs, mine, normalise);
      return { theirs, mine, passedThrough: proxy.forwarded.length > before };
    },
    check,
    record,
    notCached(request) {
      t.diagnostic(`PASSED THROUGH ${request}`);
      passedThrough.push(request);
    },
    assertNone() {
      assert.deepEqual(
        { mismatches, passedThrough },
        { mismatches: [], passedThrough: [] },
        `${mismatches.length} answer(s) of the proxy differ from the apiserver's; ${passedThrough.length} read(s) the cache should answer were passed through`,
      );
    },
  };
}

/**
 * Waits until both the proxy's cache and the apiserver's watch cache list `collection` at `rv`
 * or later (an RV=0 LIST answers at the cache's RV): both then hold every write up to `rv`.
 */
async function bothCachesAt(proxy: Proxy, collection: string, rv: bigint): Promise<void> {
  const path = `${collection}${collection.includes('?') ? '&' : '?'}resourceVersion=0`;
  await eventually(`the proxy's and the apiserver's caches of ${collection} at ${rv}`, async () => {
    const [theirs, mine] = await Promise.all([fromApiserver(path), fromProxy(proxy, path)]);
    return listResourceVersionOf(theirs) >= rv && listResourceVersionOf(mine) >= rv;
  });
}

const maxRv = (a: bigint, rv: string): bigint => (BigInt(rv) > a ? BigInt(rv) : a);

// --- 1. GET and LIST --------------------------------------------------------------------------

function podManifest(name: string, labels: Record<string, string>, nodeName?: string): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    // No scheduler, no kubelet: every pod stays Pending, bound only when created with a nodeName.
    spec: { containers: [{ name: 'c', image: 'example.invalid/none' }], ...(nodeName === undefined ? {} : { nodeName }) },
  };
}

const BAD_LABEL_SELECTORS: readonly string[] = [
  'a b',
  'a=b=c',
  'a in b',
  'a in (b',
  ',a',
  'a,',
  '!',
  '!app=web',
  '=b',
  'x>a',
  'x>',
  'a=-b',
  `a=${'v'.repeat(64)}`,
  'k'.repeat(64),
  'a/b/c',
  'Example.com/app',
  'é=1',
  'a=b\u0000c',
];

const SET_BASED_LABEL_SELECTORS: readonly string[] = [
  'app in (web,db)',
  'app notin (web)',
  '!tier',
  'tier',
  'app in (web),!env',
  'env notin (dev),tier',
  'app=web,tier!=back',
  'app in (web,db),tier in (front)',
  'app notin (db),!tier',
];

const BAD_FIELD_SELECTORS_CONFIGMAPS: readonly string[] = [
  'foo=bar',
  'a',
  'spec.nodeName=node-a',
  '=x',
  'metadata.name=a\\x',
  'metadata.labels.app=web',
  'metadata.name=cm-a,bogus',
];

const BAD_FIELD_SELECTORS_PODS: readonly string[] = [
  'foo=bar',
  'spec.bogus=1',
  'a',
  'status.phase',
  'metadata.name=p-1,bogus',
  'metadata.name=a\\',
  'status.phase~Pending',
];

const POD_FIELD_SELECTORS: readonly string[] = [
  'spec.nodeName=node-a',
  'spec.nodeName=node-b',
  'spec.nodeName=',
  'spec.nodeName!=',
  'spec.nodeName!=node-a',
  'spec.host=node-a',
  'status.phase=Pending',
  'status.phase!=Pending',
  'status.phase=Running',
  'spec.nodeName=node-a,status.phase=Pending',
  'metadata.name=p-1',
  'metadata.name!=p-1,spec.nodeName=',
];

test('conformance: GET and LIST of configmaps and pods at RV 0, unset and N, 404s and selectors', { timeout: 120_000 }, async (t) => {
  const ns1 = await testNamespace(t, shared.admin);
  const ns2 = await testNamespace(t, shared.admin);
  // A label of this test's own: all-namespace LISTs select it, since other suites write concurrently.
  const run = `run=${ns1}`;
  const data = { text: '<escaped & kept> ✓' };
  const configmaps: readonly [string, string, Record<string, string>][] = [
    [ns1, 'cm-a', { app: 'web', tier: 'front', env: 'prod' }],
    [ns1, 'cm-b', { app: 'db', tier: 'back' }],
    [ns1, 'cm-c', {}],
    [ns1, 'cm-d', { app: 'web', env: 'dev' }],
    [ns1, 'cm.e', { app: 'cache', tier: 'front' }],
    [ns2, 'cm-a', { app: 'web', tier: 'back' }],
    [ns2, 'cm-z', { app: 'db' }],
  ];
  const pods: readonly [string, string, Record<string, string>, string | undefined][] = [
    [ns1, 'p-1', { app: 'web', tier: 'front' }, 'node-a'],
    [ns1, 'p-2', { app: 'db', tier: 'back' }, 'node-b'],
    [ns1, 'p-3', { app: 'web' }, undefined],
    [ns1, 'p-4', {}, undefined],
    [ns2, 'p-1', { app: 'web', env: 'dev' }, 'node-a'],
    [ns2, 'p-5', { app: 'cache' }, undefined],
  ];
  let lastConfigMap = 0n;
  let lastPod = 0n;
  const rvOf = new Map<string, string>();
  await forEachConcurrently(configmaps, 8, async ([ns, name, labels]) => {
    const created = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      metadata: { name, labels: { ...labels, run: ns1 } },
      data,
    });
    rvOf.set(`configmaps/${ns}/${name}`, created.metadata.resourceVersion);
    lastConfigMap = maxRv(lastConfigMap, created.metadata.resourceVersion);
  });
  await forEachConcurrently(pods, 8, async ([ns, name, labels, nodeName]) => {
    const created = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, podManifest(name, { ...labels, run: ns1 }, nodeName));
    rvOf.set(`pods/${ns}/${name}`, created.metadata.resourceVersion);
    lastPod = maxRv(lastPod, created.metadata.resourceVersion);
  });

  const proxy = await startCachingProxy(t, { specs: [CONFIGMAPS, PODS] });
  await bothCachesAt(proxy, '/api/v1/configmaps', lastConfigMap);
  await bothCachesAt(proxy, '/api/v1/pods', lastPod);
  const cmp = newComparison(t);
  let cacheable = 0;
  /** `fromCache`: a read the proxy's synced cache must answer itself (RV=0, or RV=N once the cache is at N). */
  const compare = async (path: string, fromCache: boolean, normalise: readonly Normalise[] = []): Promise<void> => {
    const result = await cmp.same(proxy, path, normalise);
    if (fromCache) cacheable++;
    if (fromCache && result.passedThrough) cmp.notCached(`GET ${path}`);
  };
  const q = (s: string): string => encodeURIComponent(s);

  // GET of an object: RV unset (most recent), RV=0 (any), RV=<the object's own RV> (not older than).
  for (const [resource, ns, name] of [
    ['configmaps', ns1, 'cm-a'],
    ['configmaps', ns1, 'cm.e'],
    ['configmaps', ns2, 'cm-a'],
    ['pods', ns1, 'p-1'],
    ['pods', ns1, 'p-3'],
  ] as const) {
    const path = `/api/v1/namespaces/${ns}/${resource}/${name}`;
    const rv = rvOf.get(`${resource}/${ns}/${name}`) ?? '';
    await compare(path, false);
    await compare(`${path}?resourceVersion=0`, true);
    await compare(`${path}?resourceVersion=${rv}`, true);
  }

  // A missing object: the 404 Status (in a namespace that exists, and in one that does not).
  for (const resource of ['configmaps', 'pods']) {
    for (const ns of [ns1, 'no-such-namespace']) {
      const path = `/api/v1/namespaces/${ns}/${resource}/missing`;
      await compare(path, false);
      await compare(`${path}?resourceVersion=0`, true);
      await compare(`${path}?resourceVersion=${String(lastConfigMap)}`, true);
    }
  }

  // LIST of one namespace and of all namespaces (this test's objects), at RV 0, unset and N (NotOlderThan).
  for (const [resource, last] of [
    ['configmaps', lastConfigMap],
    ['pods', lastPod],
  ] as const) {
    for (const collection of [
      `/api/v1/namespaces/${ns1}/${resource}?`,
      `/api/v1/namespaces/${ns2}/${resource}?`,
      `/api/v1/${resource}?labelSelector=${q(run)}&`,
    ]) {
      // Each side lists at its own cache's RV: the list's metadata.resourceVersion is normalised.
      await compare(collection.slice(0, -1), false, [listRv]);
      await compare(`${collection}resourceVersion=0`, true, [listRv]);
      await compare(`${collection}resourceVersion=${String(last)}`, true, [listRv]);
      await compare(`${collection}resourceVersion=${String(last)}&resourceVersionMatch=NotOlderThan`, true, [listRv]);
    }
  }

  // Set-based and equality label selectors, in one namespace and across namespaces.
  for (const resource of ['configmaps', 'pods']) {
    for (const selector of SET_BASED_LABEL_SELECTORS) {
      // Each side lists at its own cache's RV: the list's metadata.resourceVersion is normalised.
      await compare(`/api/v1/namespaces/${ns1}/${resource}?labelSelector=${q(selector)}`, false, [listRv]);
      await compare(`/api/v1/namespaces/${ns1}/${resource}?labelSelector=${q(selector)}&resourceVersion=0`, true, [listRv]);
      await compare(`/api/v1/${resource}?labelSelector=${q(`${selector},${run}`)}&resourceVersion=0`, true, [listRv]);
    }
  }

  // Pods' own field selectors (spec.nodeName, status.phase, the spec.host alias), alone and with labels.
  for (const selector of POD_FIELD_SELECTORS) {
    // Each side lists at its own cache's RV: the list's metadata.resourceVersion is normalised.
    await compare(`/api/v1/namespaces/${ns1}/pods?fieldSelector=${q(selector)}`, false, [listRv]);
    await compare(`/api/v1/namespaces/${ns1}/pods?fieldSelector=${q(selector)}&resourceVersion=0`, true, [listRv]);
    await compare(`/api/v1/pods?fieldSelector=${q(selector)}&labelSelector=${q(run)}&resourceVersion=0`, true, [listRv]);
    await compare(
      `/api/v1/namespaces/${ns1}/pods?fieldSelector=${q(selector)}&labelSelector=${q('app in (web)')}&resourceVersion=${String(lastPod)}`,
      true,
      [listRv],
    );
  }
  await compare(`/api/v1/configmaps?fieldSelector=${q(`metadata.namespace=${ns2}`)}&labelSelector=${q(run)}&resourceVersion=0`, true, [
    listRv,
  ]);
  await compare(`/api/v1/namespaces/${ns1}/configmaps?fieldSelector=${q('metadata.name=cm.e')}&resourceVersion=0`, true, [listRv]);

  // Bad label and field selectors: 400 Status bodies, identical (no list RV to normalise: a Status).
  for (const resource of ['configmaps', 'pods']) {
    for (const selector of BAD_LABEL_SELECTORS) {
      await compare(`/api/v1/namespaces/${ns1}/${resource}?labelSelector=${q(selector)}&resourceVersion=0`, false);
      await compare(`/api/v1/${resource}?labelSelector=${q(selector)}`, false);
    }
  }
  for (const [resource, selectors] of [
    ['configmaps', BAD_FIELD_SELECTORS_CONFIGMAPS],
    ['pods', BAD_FIELD_SELECTORS_PODS],
  ] as const) {
    for (const selector of selectors) {
      await compare(`/api/v1/namespaces/${ns1}/${resource}?fieldSelector=${q(selector)}&resourceVersion=0`, false);
      await compare(`/api/v1/${resource}?fieldSelector=${q(selector)}`, false);
    }
  }

  t.diagnostic(`${cacheable} reads the cache must answer; ${proxy.forwarded.length} requests passed through in all`);
  cmp.assertNone();
});

// --- 2. paging ----------------------------------------------------------------------------------

interface Paging {
  readonly limit: number;
  /** Query parameters of every page (selectors: a continue must repeat them), e.g. `&labelSelector=a`. */
  readonly every?: string;
  /** Query parameters of the first page only (its resourceVersion), e.g. `&resourceVersion=5`. */
  readonly first?: string;
}

/** Pages through `collection`, following the continue tokens until the last page (or an error). */
async function pageThrough(fetch: (path: string) => Promise<Answer>, collection: string, paging: Paging): Promise<Answer[]> {
  const pages: Answer[] = [];
  let token = '';
  do {
    const next = token === '' ? (paging.first ?? '') : `&continue=${encodeURIComponent(token)}`;
    const page = await fetch(`${collection}?limit=${paging.limit}${paging.every ?? ''}${next}`);
    pages.push(page);
    if (page.status !== 200) break;
    token = listOf(page).metadata.continue ?? '';
  } while (token !== '' && pages.length < MAX_PAGES);
  return pages;
}

/**
 * Compares two sides' pages one by one, byte for byte but for each page's list RV and its token's
 * rv; and checks on each side that a paged list is one snapshot: every page at the first page's
 * RV, every token's rv that RV.
 */
function comparePages(cmp: Comparison, label: string, theirs: readonly Answer[], mine: readonly Answer[]): void {
  for (let i = 0; i < Math.max(theirs.length, mine.length); i++) {
    const a = theirs[i];
    const b = mine[i];
    if (a === undefined || b === undefined) {
      cmp.record({
        request: `${label}: page ${i + 1}`,
        apiserver: a === undefined ? `no page ${i + 1} (${theirs.length} pages)` : `page ${i + 1} exists`,
        proxy: b === undefined ? `no page ${i + 1} (${mine.length} pages)` : `page ${i + 1} exists`,
      });
      continue;
    }
    const ta = a.status === 200 ? listOf(a).metadata : {};
    const tb = b.status === 200 ? listOf(b).metadata : {};
    // Each side lists at its own RV, and its continue token carries that RV: both are normalised;
    // the items, remainingItemCount and the token's `v` and `start` are not.
    cmp.check(`${label}: page ${i + 1} (apiserver continue=${ta.continue ?? ''}, proxy continue=${tb.continue ?? ''})`, a, b, [
      listRv,
      continueRv,
    ]);
  }
  for (const [side, pages] of [
    ['apiserver', theirs],
    ['proxy', mine],
  ] as const) {
    const first = pages[0]?.status === 200 ? listOf(pages[0]).metadata.resourceVersion : undefined;
    pages.forEach((page, i) => {
      if (page.status !== 200) return;
      const meta = listOf(page).metadata;
      const tokenRv = meta.continue === undefined ? undefined : decodeToken(meta.continue)?.rv;
      const problems = [
        meta.resourceVersion === first ? '' : `page RV ${meta.resourceVersion ?? ''} != first page's ${first ?? ''}`,
        tokenRv === undefined || String(tokenRv) === meta.resourceVersion
          ? ''
          : `token rv ${tokenRv} != list RV ${meta.resourceVersion ?? ''}`,
      ].filter((p) => p !== '');
      if (problems.length > 0) {
        cmp.record({
          request: `${label}: page ${i + 1} is one snapshot`,
          apiserver: side === 'apiserver' ? problems.join('; ') : 'ok',
          proxy: side === 'proxy' ? problems.join('; ') : 'ok',
        });
      }
    });
  }
}

const itemCount = (pages: readonly Answer[]): number => pages.reduce((n, p) => n + (p.status === 200 ? listOf(p).items.length : 0), 0);

test('conformance: paging 1,000 configmaps with limit/continue, served from the cache', { timeout: 120_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const total = 1000;
  const names = Array.from({ length: total }, (_, i) => `cm-${String(i).padStart(4, '0')}`);
  let last = 0n;
  await forEachConcurrently(names, 32, async (name, i) => {
    const created = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      metadata: { name, labels: { parity: i % 2 === 0 ? 'even' : 'odd', third: String(i % 3) } },
      data: { i: String(i) },
    });
    last = maxRv(last, created.metadata.resourceVersion);
  });
  const collection = `/api/v1/namespaces/${ns}/configmaps`;
  // Strong: RV-unset pages come from the cache only when it is as fresh as etcd, which other
  // writers in the cluster decide; compared, not required to be cached.
  const strong = await startCachingProxy(t, { specs: [CONFIGMAPS] });
  // Bounded: RV-unset reads come from the cache while its watch is alive, so every page does.
  const bounded = await startCachingProxy(t, { specs: [CONFIGMAPS], consistency: 'bounded' });
  await bothCachesAt(strong, collection, last);
  await bothCachesAt(bounded, collection, last);

  const variants: readonly { readonly name: string; readonly every: string; readonly items: number }[] = [
    { name: 'all', every: '', items: total },
    { name: 'labelSelector=parity=even', every: `&labelSelector=${encodeURIComponent('parity=even')}`, items: 500 },
    { name: 'labelSelector=third in (0)', every: `&labelSelector=${encodeURIComponent('third in (0)')}`, items: 334 },
  ];
  const cmp = newComparison(t);
  for (const [proxyName, proxy] of [
    ['strong', strong],
    ['bounded', bounded],
  ] as const) {
    for (const variant of variants) {
      const label = `${proxyName} proxy, ${collection} limit=100 ${variant.name}`;
      const theirs = await pageThrough(fromApiserver, collection, { limit: 100, every: variant.every });
      // The premise, on the apiserver's side: the chain of pages holds every selected item once.
      assert.equal(itemCount(theirs), variant.items, `${label}: the apiserver's pages hold every item`);
      const before = proxy.forwarded.length;
      const mine = await pageThrough((path) => fromProxy(proxy, path), collection, { limit: 100, every: variant.every });
      const passed = proxy.forwarded.slice(before);
      comparePages(cmp, label, theirs, mine);
      t.diagnostic(`${label}: ${mine.length} pages, ${passed.length} passed through`);
      // Bounded: every page is the cache's to answer.
      if (proxyName === 'bounded') for (const path of passed) cmp.notCached(`${label}: ${path}`);
    }
    // The first page at RV=N (Exact: a snapshot at N) and RV=0 (the limit is ignored: one full list).
    const exact = await Promise.all([
      pageThrough(fromApiserver, collection, { limit: 100, first: `&resourceVersion=${String(last)}` }),
      pageThrough((path) => fromProxy(proxy, path), collection, { limit: 100, first: `&resourceVersion=${String(last)}` }),
    ]);
    comparePages(cmp, `${proxyName} proxy, ${collection} limit=100 resourceVersion=${String(last)}`, ...exact);
    const any = await Promise.all([
      pageThrough(fromApiserver, collection, { limit: 100, first: '&resourceVersion=0' }),
      pageThrough((path) => fromProxy(proxy, path), collection, { limit: 100, first: '&resourceVersion=0' }),
    ]);
    assert.equal(any[0].length, 1, 'RV=0 ignores the limit: one page');
    comparePages(cmp, `${proxyName} proxy, ${collection} limit=100 resourceVersion=0`, ...any);
  }
  cmp.assertNone();
});

// --- 3. an expired continue token -------------------------------------------------------------

/**
 * Compacts etcd at revision 2 (through its JSON gateway): revision 1 is gone, nothing else of
 * anyone's. A no-op once the apiserver's own compactor (every 5 min) has compacted further.
 */
async function compactRevision1(): Promise<void> {
  const res = await request(`${shared.cp.etcdUrl}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: '2' }) });
  const body = await res.body.text();
  assert.ok(res.statusCode === 200 || body.includes('compacted'), `etcd compaction: ${res.statusCode} ${body}`);
}

test('conformance: an expired continue token is a 410 Expired, as the apiserver words it', { timeout: 60_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  let last = 0n;
  for (const name of ['a', 'b', 'c']) {
    const created = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name } });
    last = maxRv(last, created.metadata.resourceVersion);
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/events`, {
      metadata: { name: `e-${name}` },
      involvedObject: { kind: 'ConfigMap', namespace: ns, name },
      reason: 'Test',
      message: 'conformance',
    });
  }
  await compactRevision1();
  const expired = b64(JSON.stringify({ v: 'meta.k8s.io/v1', rv: 1, start: 'b\u0000' }));
  const expiredAll = b64(JSON.stringify({ v: 'meta.k8s.io/v1', rv: 1, start: `${ns}/b\u0000` }));
  // The premise: the apiserver itself answers 410 for a token at a compacted RV (events: read from etcd).
  const direct = await fromApiserver(`/api/v1/namespaces/${ns}/events?limit=1&continue=${expired}`);
  assert.equal(direct.status, 410, `the apiserver's answer to an expired continue token: ${direct.body}`);
  assert.match(direct.body, /"reason":"Expired"/);

  const proxy = await startCachingProxy(t, { specs: [CONFIGMAPS, EVENTS] });
  await bothCachesAt(proxy, `/api/v1/namespaces/${ns}/configmaps`, last);
  const cmp = newComparison(t);
  for (const path of [
    `/api/v1/namespaces/${ns}/events?limit=1&continue=${expired}`,
    `/api/v1/namespaces/${ns}/events?continue=${expired}`,
    `/api/v1/events?limit=1&continue=${expiredAll}`,
    `/api/v1/namespaces/${ns}/events?limit=1&resourceVersion=1&resourceVersionMatch=Exact`,
    // The apiserver's watch cache of configmaps answers from its own snapshots (a 200 at RV 1 until
    // its compactor purges them, then 410): whichever it answers, the proxy must answer the same.
    `/api/v1/namespaces/${ns}/configmaps?limit=1&continue=${expired}`,
    `/api/v1/configmaps?limit=1&continue=${expiredAll}`,
  ]) {
    // The 410's metadata.continue is a fresh token whose rv is the side's own ("-1": list at the
    // latest RV): only that rv is normalised. A 200 list is at its own RV: normalised as well.
    const { theirs } = await cmp.same(proxy, path, [continueRv, listRv]);
    t.diagnostic(`the apiserver answered ${theirs.status} to GET ${path}`);
    if (theirs.status !== 410) continue;
    // Once the apiserver has said 410 for an RV, the cache answers it at that RV and below, the same bytes.
    const again = await cmp.same(proxy, path, [continueRv, listRv]);
    if (again.passedThrough) cmp.notCached(`GET ${path} (after the apiserver's 410)`);
    // In protobuf too (a client-go informer's relist), byte for byte.
    const protobuf = { accept: 'application/vnd.kubernetes.protobuf, application/json' };
    const [direct410, proxied410] = await Promise.all([
      shared.admin.request({ method: 'GET', path, headers: protobuf }),
      request(`${proxy.url}${path}`, { headers: protobuf }).then(async (res) => ({
        statusCode: res.statusCode,
        contentType: header(res.headers['content-type']),
        body: Buffer.from(await res.body.arrayBuffer()),
      })),
    ]);
    assert.equal(proxied410.statusCode, direct410.statusCode, path);
    assert.equal(proxied410.contentType, header(direct410.headers['content-type']), path);
    assert.ok(proxied410.body.equals(direct410.body), `${path}: the protobuf 410 differs`);
  }
  cmp.assertNone();
});

// --- 4. a resourceVersion not reached yet -----------------------------------------------------

test(
  'conformance: LIST and GET at a too-large RV are a 504 ResourceVersionTooLarge with Retry-After: 1',
  { timeout: 60_000 },
  async (t) => {
    const ns = await testNamespace(t, shared.admin);
    const created = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'one' } });
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, podManifest('p', {}));
    const proxy = await startCachingProxy(t, { specs: [CONFIGMAPS, PODS] });
    await bothCachesAt(proxy, `/api/v1/namespaces/${ns}/configmaps`, BigInt(created.metadata.resourceVersion));
    const tooLarge = String(BigInt(created.metadata.resourceVersion) + 1_000_000n);
    const cmp = newComparison(t);
    const paths = [
      `/api/v1/namespaces/${ns}/configmaps?resourceVersion=${tooLarge}`,
      `/api/v1/namespaces/${ns}/configmaps?resourceVersion=${tooLarge}&resourceVersionMatch=NotOlderThan`,
      `/api/v1/namespaces/${ns}/configmaps?resourceVersion=${tooLarge}&limit=10`,
      `/api/v1/namespaces/${ns}/configmaps?resourceVersion=${tooLarge}&resourceVersionMatch=Exact&limit=10`,
      `/api/v1/configmaps?resourceVersion=${tooLarge}`,
      `/api/v1/namespaces/${ns}/pods?resourceVersion=${tooLarge}&labelSelector=a%3Db`,
      `/api/v1/namespaces/${ns}/configmaps/one?resourceVersion=${tooLarge}`,
      `/api/v1/namespaces/${ns}/configmaps/missing?resourceVersion=${tooLarge}`,
      `/api/v1/namespaces/${ns}/pods/p?resourceVersion=${tooLarge}`,
    ];
    // The apiserver waits 3 s before its 504: all at once, so the test waits 3 s once.
    const started = Date.now();
    const answers = await Promise.all(
      paths.map((path) =>
        // The message carries each side's own current RV ("current: C"): only C is normalised.
        cmp.same(proxy, path, [tooLargeCurrentRv]),
      ),
    );
    t.diagnostic(`${paths.length} requests to each side in ${Date.now() - started} ms`);
    for (const [i, { theirs }] of answers.entries()) {
      // The premise, on the apiserver's side.
      assert.equal(theirs.status, 504, `${paths[i] ?? ''}: ${theirs.body}`);
      assert.equal(theirs.retryAfter, '1');
      assert.match(theirs.body, /"causes":\[\{"reason":"ResourceVersionTooLarge"/);
    }
    cmp.assertNone();
  },
);

// --- 5. invalid resourceVersionMatch combinations ------------------------------------------------

test('conformance: invalid resourceVersionMatch combinations are identical 422s', { timeout: 60_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  const created = await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'one' } });
  const rv = created.metadata.resourceVersion;
  const proxy = await startCachingProxy(t, { specs: [CONFIGMAPS, PODS] });
  await bothCachesAt(proxy, `/api/v1/namespaces/${ns}/configmaps`, BigInt(rv));
  const token = b64(JSON.stringify({ v: 'meta.k8s.io/v1', rv: Number(rv), start: 'one\u0000' }));
  const queries = [
    'resourceVersionMatch=Exact&resourceVersion=0',
    'resourceVersionMatch=Exact&resourceVersion=0&limit=5',
    'resourceVersionMatch=Exact',
    'resourceVersionMatch=Exact&limit=5',
    'resourceVersionMatch=NotOlderThan',
    'resourceVersionMatch=NotOlderThan&limit=5',
    `resourceVersionMatch=Bogus&resourceVersion=${rv}`,
    'resourceVersionMatch=Bogus',
    `resourceVersionMatch=exact&resourceVersion=${rv}`,
    `resourceVersionMatch=Exact&resourceVersion=${rv}&continue=${token}`,
    `resourceVersionMatch=NotOlderThan&resourceVersion=${rv}&continue=${token}`,
    `resourceVersionMatch=NotOlderThan&continue=${token}&limit=1`,
    'sendInitialEvents=true',
    'sendInitialEvents=false',
    'sendInitialEvents=true&resourceVersionMatch=NotOlderThan',
    `sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=${rv}`,
    'sendInitialEvents=false&resourceVersion=0&resourceVersionMatch=Exact',
  ];
  const cmp = newComparison(t);
  for (const collection of [`/api/v1/namespaces/${ns}/configmaps`, `/api/v1/namespaces/${ns}/pods`, '/api/v1/configmaps']) {
    for (const query of queries) {
      const { theirs } = await cmp.same(proxy, `${collection}?${query}`);
      // The premise, on the apiserver's side: a 422 Invalid.
      assert.equal(theirs.status, 422, `${collection}?${query}: ${theirs.body}`);
    }
  }
  cmp.assertNone();
});

// --- 6. custom resources ------------------------------------------------------------------------

test('conformance: custom resources listed and fetched through the cache equal the apiserver', { timeout: 120_000 }, async (t) => {
  const crd = await testCrd(t, shared.admin);
  const ns1 = await testNamespace(t, shared.admin);
  const ns2 = await testNamespace(t, shared.admin);
  const base = `/apis/${crd.group}/${crd.version}`;
  const objects: readonly [string, string, Record<string, string>][] = [
    [ns1, 'w-1', { app: 'web', tier: 'front' }],
    [ns1, 'w-2', { app: 'db' }],
    [ns1, 'w-3', {}],
    [ns1, 'w.4', { app: 'web', tier: 'back' }],
    [ns2, 'w-1', { app: 'web' }],
  ];
  let last = 0n;
  const rvOf = new Map<string, string>();
  await forEachConcurrently(objects, 5, async ([ns, name, labels]) => {
    const created = await kube(shared.admin, 'POST', `${base}/namespaces/${ns}/${crd.plural}`, {
      apiVersion: `${crd.group}/${crd.version}`,
      kind: crd.kind,
      metadata: { name, labels },
      // Keys out of order, escapes, unicode and numbers: the apiserver's bytes, not a re-serialization.
      spec: { zeta: 1, alpha: '<a & b>', nested: { b: [1.5, 2e21, true, null], a: 'é ✓' } },
    });
    rvOf.set(`${ns}/${name}`, created.metadata.resourceVersion);
    last = maxRv(last, created.metadata.resourceVersion);
  });
  // The CRD is established (testCrd waited until it is served): the proxy is told to cache it by
  // name, as `--resources` would (a custom resource: unstructured lists, keys sorted).
  const spec = crdSpec(crd);
  const strong = await startCachingProxy(t, { specs: [spec] });
  const bounded = await startCachingProxy(t, { specs: [spec], consistency: 'bounded' });
  await bothCachesAt(strong, `${base}/${crd.plural}`, last);
  await bothCachesAt(bounded, `${base}/${crd.plural}`, last);
  const q = (s: string): string => encodeURIComponent(s);

  const reads: readonly { readonly path: string; readonly rvSet: boolean }[] = [
    ...objects.flatMap(([ns, name]) => {
      const path = `${base}/namespaces/${ns}/${crd.plural}/${name}`;
      return [
        { path, rvSet: false },
        { path: `${path}?resourceVersion=0`, rvSet: true },
        { path: `${path}?resourceVersion=${rvOf.get(`${ns}/${name}`) ?? ''}`, rvSet: true },
      ];
    }),
    { path: `${base}/namespaces/${ns1}/${crd.plural}/missing`, rvSet: false },
    { path: `${base}/namespaces/${ns1}/${crd.plural}/missing?resourceVersion=0`, rvSet: true },
    ...[`${base}/namespaces/${ns1}/${crd.plural}`, `${base}/namespaces/${ns2}/${crd.plural}`, `${base}/${crd.plural}`].flatMap((c) => [
      { path: c, rvSet: false },
      { path: `${c}?resourceVersion=0`, rvSet: true },
      { path: `${c}?resourceVersion=${String(last)}`, rvSet: true },
      { path: `${c}?resourceVersion=${String(last)}&resourceVersionMatch=NotOlderThan`, rvSet: true },
      { path: `${c}?labelSelector=${q('app in (web),!tier')}&resourceVersion=0`, rvSet: true },
      { path: `${c}?labelSelector=${q('tier')}`, rvSet: false },
      { path: `${c}?fieldSelector=${q('metadata.name=w-1')}&resourceVersion=0`, rvSet: true },
    ]),
  ];
  const cmp = newComparison(t);
  for (const [proxyName, proxy] of [
    ['strong', strong],
    ['bounded', bounded],
  ] as const) {
    for (const { path, rvSet } of reads) {
      // Each side lists at its own cache's RV: the list's metadata.resourceVersion is normalised.
      const { passedThrough } = await cmp.same(proxy, path, [listRv]);
      // Strong RV-unset reads depend on the cache being as fresh as etcd (other writers decide);
      // bounded ones, and every read at an RV, are the cache's to answer.
      if (passedThrough && (rvSet || proxyName === 'bounded')) cmp.notCached(`${proxyName} proxy: GET ${path}`);
    }
    // Paging through custom resources: the same items, remainingItemCount and token starts.
    for (const collection of [`${base}/namespaces/${ns1}/${crd.plural}`, `${base}/${crd.plural}`]) {
      const theirs = await pageThrough(fromApiserver, collection, { limit: 2 });
      const before = proxy.forwarded.length;
      const mine = await pageThrough((path) => fromProxy(proxy, path), collection, { limit: 2 });
      comparePages(cmp, `${proxyName} proxy, ${collection} limit=2`, theirs, mine);
      if (proxyName === 'bounded') for (const path of proxy.forwarded.slice(before)) cmp.notCached(`${proxyName} proxy: GET ${path}`);
    }
  }
  cmp.assertNone();
});
