/**
 * Fuzz-style: malformed and hostile requests get from the proxy what they get from the real
 * kube-apiserver, and never take the proxy down. For every request, sent once to the proxy
 * (pods and configmaps cached, so the cache gets the first look at every read) and once straight
 * to the apiserver with the admin's token:
 * - the same status code;
 * - for a JSON answer, the same Content-Type and the same body byte for byte (a `kind: Status`);
 * and after each batch the proxy still answers GET /livez with 200.
 *
 * Every mismatch of a batch is collected first and asserted together, so one run lists them all.
 * The random batch is seeded (mulberry32): the seed is printed, and KCP_FUZZ_SEED=N replays it.
 */
import assert from 'node:assert/strict';
import { connect as netConnect } from 'node:net';
import type { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { Client, request } from 'undici';
import { startProxy } from '../../../src/proxy/proxy.ts';
import type { RunningProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

const b64 = (s: string): string => Buffer.from(s).toString('base64url');

/** The proxy as `kube-cache-proxy proxy --resources pods,configmaps` starts it, in-process. */
async function startCachingProxy(): Promise<RunningProxy & { readonly url: string }> {
  const options = parseProxyOptions(['--port', '0', '--resources', 'pods,configmaps', '--log-level', 'silent']);
  const proxy = await startProxy(options, await upstreamConfigFor(shared.cp));
  const url = proxy.url;
  assert.ok(url !== undefined, 'the proxy serves on TCP');
  await eventually('the caches to sync (/readyz 200)', async () => (await request(`${url}/readyz`)).statusCode === 200);
  return Object.assign(proxy, { url });
}

interface Probe {
  readonly method?: 'GET' | 'POST' | 'QUERY';
  /** Sent as is: undici's Client does not normalise `..`, `//` or percent-escapes. */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
}

interface Answer {
  readonly status: number;
  readonly contentType: string;
  /** The body of an error answer; a success's body (maybe an endless watch) is not read. */
  readonly body: string;
}

interface Mismatch {
  readonly request: string;
  readonly apiserver: string;
  readonly proxy: string;
}

interface Sides {
  readonly proxyUrl: string;
  /** A new connection to each server: an answer that closes its connection cannot touch the next probe. */
  readonly proxy: () => Client;
  readonly apiserver: () => Client;
  readonly token: string;
}

async function openSides(proxyUrl: string): Promise<Sides> {
  const ca = (await upstreamConfigFor(shared.cp)).tls.ca;
  return {
    proxyUrl,
    proxy: () => new Client(proxyUrl),
    // HTTP/1.1 both ways (the proxy serves no HTTP/2): the same framing reaches both servers.
    apiserver: () => new Client(shared.cp.server, { connect: { ca }, allowH2: false }),
    token: shared.cp.users.admin.token,
  };
}

/** Sends one probe on a connection of its own, closed (destroyed) once the answer is read. */
async function send(open: () => Client, probe: Probe, extraHeaders: Record<string, string>): Promise<Answer> {
  const client = open();
  try {
    return await sendOn(client, probe, extraHeaders);
  } catch (e) {
    return errorAnswer(e);
  } finally {
    await client.destroy();
  }
}

async function sendOn(client: Client, probe: Probe, extraHeaders: Record<string, string>): Promise<Answer> {
  const abort = new AbortController();
  const res = await client.request({
    method: probe.method ?? 'GET',
    path: probe.path,
    headers: { accept: 'application/json', ...probe.headers, ...extraHeaders },
    signal: abort.signal,
    ...(probe.body === undefined ? {} : { body: probe.body }),
  });
  const contentType = String(res.headers['content-type'] ?? '');
  if (res.statusCode < 300) {
    // A watch never ends: stop reading, whatever the answer (the abort surfaces as the body's error).
    res.body.on('error', () => undefined);
    abort.abort();
    return { status: res.statusCode, contentType, body: '' };
  }
  return { status: res.statusCode, contentType, body: await res.body.text() };
}

function describeAnswer(a: Answer): string {
  return `${String(a.status)} ${a.contentType} ${a.body.trimEnd()}`.trimEnd();
}

function describeProbe(p: Probe): string {
  const headers = Object.entries(p.headers ?? {}).map(([k, v]) => ` ${k}: ${v.length > 60 ? `<${String(v.length)} bytes>` : v}`);
  const path = p.path.length > 200 ? `${p.path.slice(0, 120)}…<${String(p.path.length)} chars>` : p.path;
  return `${p.method ?? 'GET'} ${path}${headers.join('')}${p.body === undefined ? '' : ` body ${JSON.stringify(p.body)}`}`;
}

/**
 * Sends each probe both ways and returns what differs. Two answers match when the status codes
 * are equal and, for a JSON answer from the apiserver, so are the Content-Type and the body
 * (none of the apiserver's answers here carry anything it varies between two identical requests:
 * no RV of the moment, no timestamp).
 */
async function compare(sides: Sides, probes: readonly Probe[]): Promise<Mismatch[]> {
  const mismatches: Mismatch[] = [];
  for (const probe of probes) {
    const [viaProxy, direct] = await Promise.all([
      send(sides.proxy, probe, {}),
      send(sides.apiserver, probe, { authorization: `Bearer ${sides.token}` }),
    ]);
    const json = direct.contentType.startsWith('application/json');
    const same =
      viaProxy.status === direct.status && (!json || (viaProxy.contentType === direct.contentType && viaProxy.body === direct.body));
    if (!same) mismatches.push({ request: describeProbe(probe), apiserver: describeAnswer(direct), proxy: describeAnswer(viaProxy) });
  }
  return mismatches;
}

/** A request the client could not complete (connection reset...): status 0, the error's message. */
function errorAnswer(e: unknown): Answer {
  return { status: 0, contentType: '', body: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
}

async function assertProxyAlive(sides: Sides, after: string): Promise<void> {
  const res = await request(`${sides.proxyUrl}/livez`);
  assert.equal(res.statusCode, 200, `GET /livez after ${after}`);
  assert.equal(await res.body.text(), 'ok');
}

interface Batch {
  readonly name: string;
  readonly probes: readonly Probe[];
}

/**
 * Sends each batch both ways and checks, after each, that the proxy still serves /livez (at
 * once: a proxy that went down fails the test there). The mismatches of all the batches are
 * printed and then asserted together, so that one run lists every one of them.
 */
async function assertSameAnswers(t: TestContext, sides: Sides, batches: readonly Batch[]): Promise<void> {
  const all: Mismatch[] = [];
  for (const batch of batches) {
    const mismatches = await compare(sides, batch.probes);
    await assertProxyAlive(sides, batch.name);
    for (const m of mismatches) t.diagnostic(`MISMATCH ${m.request}\n  apiserver: ${m.apiserver}\n  proxy:     ${m.proxy}`);
    t.diagnostic(`${batch.name}: ${String(batch.probes.length - mismatches.length)}/${String(batch.probes.length)} identical`);
    all.push(...mismatches);
  }
  assert.deepEqual(all, [], `the proxy answered ${String(all.length)} request(s) unlike the apiserver`);
}

/** A namespace with one pod and one configmap, and the proxy's cache holding both. */
async function populated(t: TestContext, proxyUrl: string): Promise<string> {
  const ns = await testNamespace(t, shared.admin);
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
    metadata: { name: 'p1', labels: { app: 'a' } },
    spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
  });
  await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm1', labels: { app: 'a' } } });
  for (const path of [`/api/v1/namespaces/${ns}/pods/p1`, `/api/v1/namespaces/${ns}/configmaps/cm1`]) {
    await eventually(
      `the proxy's cache to hold ${path}`,
      async () => (await request(`${proxyUrl}${path}?resourceVersion=0`)).statusCode === 200,
    );
  }
  return ns;
}

/** Query strings a LIST rejects (or reads oddly), from the apiserver's list-options validation. */
function badListQueries(): string[] {
  return [
    'limit=abc',
    'limit=-1',
    'limit=-1&resourceVersion=0',
    'limit=abc&resourceVersion=0',
    'timeoutSeconds=x',
    'timeoutSeconds=x&resourceVersion=0',
    'watch=maybe&timeoutSeconds=1',
    'watch=maybe&resourceVersion=abc',
    'resourceVersion=abc',
    'resourceVersion=-5',
    'resourceVersion=%20',
    'resourceVersion=0x10',
    'resourceVersionMatch=Bogus',
    'resourceVersionMatch=Bogus&resourceVersion=0',
    'resourceVersionMatch=Exact&resourceVersion=0',
    'resourceVersionMatch=NotOlderThan',
    'sendInitialEvents=true',
    'sendInitialEvents=true&resourceVersion=0',
    'labelSelector=a%20in%20(',
    'labelSelector=a%20in%20(&resourceVersion=0',
    'labelSelector=%3D%3D%3D',
    'labelSelector=a%3Db%3Dc&resourceVersion=0',
    'fieldSelector=spec.nosuch=x',
    'fieldSelector=spec.nosuch%3Dx',
    'fieldSelector=spec.nosuch%3Dx&resourceVersion=0',
    'fieldSelector=metadata.name%3D%3D%3Dx&resourceVersion=0',
    'continue=garbage',
    'continue=garbage&resourceVersion=0',
    `continue=${b64('{"v":"meta.k8s.io/v2","rv":5,"start":"a"}')}`,
    `continue=${b64('{"v":"meta.k8s.io/v1","rv":-1,"start":"a"}')}`,
    `continue=${b64('not json')}`,
    'continue=%ff%fe',
  ];
}

test('malformed requests: bad paths get the apiserver answer', { timeout: 120_000 }, async (t) => {
  const proxy = await startCachingProxy();
  try {
    const ns = await populated(t, proxy.url);
    const sides = await openSides(proxy.url);
    const longName = (n: number): string => 'a'.repeat(n);
    const probes: Probe[] = [
      '/api/v1/namespaces//pods',
      '/api/v1/namespaces//pods?resourceVersion=0',
      '//api/v1/pods',
      '/api//v1/pods?resourceVersion=0',
      `/api/v1/namespaces/${ns}//pods/p1`,
      '/apis/nosuchgroup/v1/x',
      '/apis/nosuchgroup/v1/namespaces/x/things/y?resourceVersion=0',
      '/api/v2/pods',
      '/api/v1/nosuchresources?resourceVersion=0',
      `/api/v1/namespaces/${ns}/pods/p1/extra/segments`,
      `/api/v1/namespaces/${ns}/pods/p1/extra/segments?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/configmaps/cm1/status?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/pods/%zz`,
      `/api/v1/namespaces/${ns}/pods/%`,
      `/api/v1/namespaces/${ns}/pods/%2`,
      `/api/v1/namespaces/${ns}/pods/%00?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/pods/a%2Fb?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/pods/%ff%fe?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/pods/%70%31?resourceVersion=0`,
      `/api/v1/namespaces/%zz/pods?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/pods/../configmaps?resourceVersion=0`,
      `/api/v1/namespaces/../namespaces/${ns}/pods`,
      `/api/v1/namespaces/${ns}/pods/..?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/pods/.?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/pods/%2e%2e?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/pods/${longName(254)}?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/pods/${longName(5_000)}`,
      `/api/v1/namespaces/${ns}/pods/${longName(10_000)}?resourceVersion=0`,
      `/api/v1/namespaces/${ns}/pods/${longName(20_000)}`,
      `/api/v1/namespaces/${longName(300)}/pods?resourceVersion=0`,
    ].map((path) => ({ path }));
    await assertSameAnswers(t, sides, [{ name: 'bad paths', probes }]);
  } finally {
    await proxy.stop(0);
  }
});

test('malformed requests: bad query values on LIST and GET get the apiserver answer', { timeout: 120_000 }, async (t) => {
  const proxy = await startCachingProxy();
  try {
    const ns = await populated(t, proxy.url);
    const sides = await openSides(proxy.url);
    const lists = [`/api/v1/namespaces/${ns}/pods`, `/api/v1/namespaces/${ns}/configmaps`, '/api/v1/pods'];
    const listProbes: Probe[] = lists.flatMap((base) => badListQueries().map((q) => ({ path: `${base}?${q}` })));

    // Invalid resourceVersions on a GET of one object (the cache's first look is RV=0 or N).
    const getProbes: Probe[] = [`/api/v1/namespaces/${ns}/pods/p1`, `/api/v1/namespaces/${ns}/configmaps/cm1`].flatMap((base) =>
      [
        'resourceVersion=abc',
        'resourceVersion=-5',
        'resourceVersion=1.5',
        'resourceVersion=%2B1',
        'resourceVersion=0x10',
        'resourceVersion=%20',
        'resourceVersion=99999999999999999999999',
        'resourceVersion=0&resourceVersion=abc',
        'resourceVersion=abc&resourceVersion=0',
        'resourceVersion=0&resourceVersionMatch=Bogus',
        'resourceVersion=0&limit=abc',
        'resourceVersion=0&timeoutSeconds=x',
        'resourceVersion=0&labelSelector=a%20in%20(',
        'resourceVersion=0&continue=garbage',
      ].map((q) => ({ path: `${base}?${q}` })),
    );
    await assertSameAnswers(t, sides, [
      { name: 'bad list queries', probes: listProbes },
      { name: 'invalid RVs on GET', probes: getProbes },
    ]);
  } finally {
    await proxy.stop(0);
  }
});

test(
  'malformed requests: huge headers, a body on a GET and Content-Types Fastify would refuse get the apiserver answer',
  { timeout: 120_000 },
  async (t) => {
    const proxy = await startCachingProxy();
    try {
      const ns = await populated(t, proxy.url);
      const sides = await openSides(proxy.url);
      const big = 'x'.repeat(20 * 1024);
      const probes: Probe[] = [
        { path: `/api/v1/namespaces/${ns}/pods?resourceVersion=0`, headers: { 'x-huge': big } },
        { path: `/api/v1/namespaces/${ns}/pods/p1`, headers: { 'x-huge': big } },
        { path: `/api/v1/namespaces/${ns}/configmaps?resourceVersion=0`, headers: { accept: `application/json;${big}` } },
        {
          path: `/api/v1/namespaces/${ns}/pods?resourceVersion=0`,
          headers: { 'content-type': 'application/json' },
          body: '{"kind":"Pod"}',
        },
        { path: `/api/v1/namespaces/${ns}/pods/p1?resourceVersion=0`, headers: { 'content-type': 'text/plain' }, body: 'not json at all' },
        { path: `/api/v1/namespaces/${ns}/configmaps/cm1`, body: big },
      ];
      // Fastify refuses these itself (a QUERY without a Content-Type, a Content-Type it cannot
      // parse) with a JSON body of its own: the apiserver's answer is wanted, a Status.
      const configmaps = `/api/v1/namespaces/${ns}/configmaps`;
      const contentTypes: Probe[] = [
        { method: 'QUERY', path: configmaps },
        { method: 'QUERY', path: configmaps, body: '{}' },
        { method: 'QUERY', path: '/version', body: '{}' },
        { method: 'QUERY', path: configmaps, headers: { 'content-type': 'application/json' }, body: '{}' },
        { method: 'POST', path: `${configmaps}?dryRun=All`, headers: { 'content-type': ';;;' }, body: '{}' },
        { method: 'POST', path: `${configmaps}?dryRun=All`, headers: { 'content-type': 'application/json; charset' }, body: '{}' },
        { method: 'POST', path: `${configmaps}/cm1`, headers: { 'content-type': '/' }, body: '{}' },
      ];
      await assertSameAnswers(t, sides, [
        { name: 'huge headers and GET bodies', probes },
        { name: 'Content-Types Fastify would refuse', probes: contentTypes },
      ]);
    } finally {
      await proxy.stop(0);
    }
  },
);

/** Writes `raw` on a fresh connection and returns the status code of the first answer line. */
function rawStatus(open: () => Socket, raw: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = open();
    let received = '';
    const done = (): void => {
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(received)?.[1];
      if (status === undefined) reject(new Error(`no HTTP status line in ${JSON.stringify(received.slice(0, 200))}`));
      else resolve(Number(status));
      socket.destroy();
    };
    // Not a synchronisation: a guard so that a server that never answers fails the test clearly.
    socket.setTimeout(15_000, () => {
      socket.destroy(new Error(`no answer within 15 s to ${JSON.stringify(raw.slice(0, 80))}`));
    });
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (/^HTTP\/1\.[01] \d{3}/.test(received)) done();
    });
    socket.on('end', done);
    socket.on('error', reject);
    socket.write(raw, 'latin1');
  });
}

test('malformed requests: malformed HTTP gets the apiserver status, and the proxy keeps serving', { timeout: 120_000 }, async (t) => {
  const proxy = await startCachingProxy();
  try {
    const ns = await testNamespace(t, shared.admin);
    const sides = await openSides(proxy.url);
    const proxyAddress = new URL(proxy.url);
    const apiAddress = new URL(shared.cp.server);
    const ca = (await upstreamConfigFor(shared.cp)).tls.ca;
    const toProxy = (): Socket => netConnect({ host: proxyAddress.hostname, port: Number(proxyAddress.port) });
    const toApiserver = (): Socket => tlsConnect({ host: apiAddress.hostname, port: Number(apiAddress.port), ca, servername: 'localhost' });
    // `head` is the Host line, and for the apiserver the admin's credentials (the proxy adds its
    // own), so that both judge the malformed request and not its missing authentication.
    const cases: readonly { name: string; raw: (head: { host: string; auth: string }) => string }[] = [
      { name: 'an invalid header name', raw: (h) => `GET /livez HTTP/1.1\r\n${h.host}${h.auth}Bad Header: x\r\n\r\n` },
      { name: 'a header line without a colon', raw: (h) => `GET /livez HTTP/1.1\r\n${h.host}${h.auth}NoColonHere\r\n\r\n` },
      { name: 'a control character in a header value', raw: (h) => `GET /livez HTTP/1.1\r\n${h.host}${h.auth}X-A: a\x01b\r\n\r\n` },
      { name: 'a space in the request target', raw: (h) => `GET /api/v1/pods x HTTP/1.1\r\n${h.host}${h.auth}\r\n` },
      { name: 'an unknown HTTP version', raw: (h) => `GET /livez HTTP/9.9\r\n${h.host}${h.auth}\r\n` },
      {
        name: 'a non-numeric Content-Length',
        raw: (h) => `POST /api/v1/namespaces/${ns}/configmaps HTTP/1.1\r\n${h.host}${h.auth}Content-Length: abc\r\n\r\n`,
      },
      {
        name: 'Content-Length and Transfer-Encoding together',
        raw: (h) =>
          `POST /api/v1/namespaces/${ns}/configmaps HTTP/1.1\r\n${h.host}${h.auth}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      },
      {
        name: 'a bad chunk size',
        raw: (h) => `POST /api/v1/namespaces/${ns}/configmaps HTTP/1.1\r\n${h.host}${h.auth}Transfer-Encoding: chunked\r\n\r\nzz\r\n`,
      },
      { name: 'a missing Host on HTTP/1.1', raw: (h) => `GET /livez HTTP/1.1\r\n${h.auth}\r\n` },
      { name: 'HTTP/2.0 in the request line', raw: (h) => `GET /livez HTTP/2.0\r\n${h.host}${h.auth}\r\n` },
      { name: 'two Host headers', raw: (h) => `GET /livez HTTP/1.1\r\n${h.host}Host: other\r\n${h.auth}\r\n` },
      { name: 'a missing Host on HTTP/1.2', raw: (h) => `GET /livez HTTP/1.2\r\n${h.auth}\r\n` },
      { name: 'HTTP/0.5 in the request line', raw: (h) => `GET /livez HTTP/0.5\r\n${h.host}${h.auth}\r\n` },
      { name: 'HTTP/3.1 in the request line', raw: (h) => `GET /livez HTTP/3.1\r\n${h.host}${h.auth}\r\n` },
      { name: 'HTTP/1.10 in the request line', raw: (h) => `GET /livez HTTP/1.10\r\n${h.host}${h.auth}\r\n` },
      {
        name: 'HTTP/2.0 with a Transfer-Encoding (the coding judged first)',
        raw: (h) => `POST /api/v1/namespaces/${ns}/configmaps HTTP/2.0\r\n${h.host}${h.auth}Transfer-Encoding: gzip\r\n\r\n`,
      },
      {
        name: 'an upgrade on HTTP/3.0',
        raw: (h) =>
          `GET /api/v1/namespaces/${ns}/pods/p/exec HTTP/3.0\r\n${h.host}${h.auth}Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
      },
      {
        name: 'an upgrade without a Host on HTTP/1.1',
        raw: (h) =>
          `GET /api/v1/namespaces/${ns}/pods/p/portforward HTTP/1.1\r\n${h.auth}Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
      },
      ...[
        ['chunked', 'chunked'],
        ['chunked', 'gzip'],
        ['gzip', 'chunked'],
      ].map(([first = '', second = '']) => ({
        name: `Transfer-Encoding: ${first} and ${second} on two header lines`,
        raw: (h: { host: string; auth: string }) =>
          `POST /api/v1/namespaces/${ns}/configmaps?dryRun=All HTTP/1.1\r\n${h.host}${h.auth}Content-Type: application/json\r\nTransfer-Encoding: ${first}\r\nTransfer-Encoding: ${second}\r\n\r\n23\r\n{"metadata":{"generateName":"te-"}}\r\n0\r\n\r\n`,
      })),
      {
        name: 'Transfer-Encoding: chunked twice with a Content-Length',
        raw: (h) =>
          `POST /api/v1/namespaces/${ns}/configmaps?dryRun=All HTTP/1.1\r\n${h.host}${h.auth}Transfer-Encoding: chunked\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      },
      ...['gzip', 'identity', 'gzip, chunked'].map((coding) => ({
        name: `Transfer-Encoding: ${coding}`,
        raw: (h: { host: string; auth: string }) =>
          `POST /api/v1/namespaces/${ns}/configmaps HTTP/1.1\r\n${h.host}${h.auth}Transfer-Encoding: ${coding}\r\n\r\n0\r\n\r\n`,
      })),
      {
        name: 'a chunk size that overflows',
        raw: (h) =>
          `POST /api/v1/namespaces/${ns}/configmaps HTTP/1.1\r\n${h.host}${h.auth}Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n`,
      },
      {
        name: 'a chunk without its CRLF',
        raw: (h) =>
          `POST /api/v1/namespaces/${ns}/configmaps HTTP/1.1\r\n${h.host}${h.auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n`,
      },
      { name: 'GET * (no such route)', raw: (h) => `GET * HTTP/1.1\r\n${h.host}${h.auth}\r\n` },
      {
        name: 'Transfer-Encoding: gzip with a Content-Length',
        raw: (h) =>
          `POST /api/v1/namespaces/${ns}/configmaps HTTP/1.1\r\n${h.host}${h.auth}Transfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}`,
      },
    ];
    const toProxyHead = { host: `Host: ${proxyAddress.host}\r\n`, auth: '' };
    const toApiserverHead = { host: `Host: ${apiAddress.host}\r\n`, auth: `Authorization: Bearer ${shared.cp.users.admin.token}\r\n` };
    const mismatches: Mismatch[] = [];
    for (const c of cases) {
      const [viaProxy, direct] = await Promise.all([
        rawStatus(toProxy, c.raw(toProxyHead)),
        rawStatus(toApiserver, c.raw(toApiserverHead)),
      ]);
      assert.ok(viaProxy >= 400 && viaProxy < 600, `${c.name}: the proxy answers an error`);
      if (viaProxy !== direct) mismatches.push({ request: `raw HTTP with ${c.name}`, apiserver: String(direct), proxy: String(viaProxy) });
      await assertProxyAlive(sides, c.name);
    }
    for (const m of mismatches) t.diagnostic(`MISMATCH ${m.request}: apiserver ${m.apiserver}, proxy ${m.proxy}`);
    assert.deepEqual(mismatches, [], `the proxy answered ${String(mismatches.length)} malformed request(s) unlike the apiserver`);
  } finally {
    await proxy.stop(0);
  }
});

/**
 * Writes `raw` on a fresh connection (then half-closes it, when asked) and returns every answer's
 * status code, in order, once the server closes it.
 */
function rawStatuses(open: () => Socket, raw: string, halfClose = false): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const socket = open();
    let received = '';
    // Not a synchronisation: a guard so that a server that never closes fails the test clearly.
    socket.setTimeout(15_000, () => {
      socket.destroy(new Error(`no close within 15 s after ${JSON.stringify(received.slice(0, 200))}`));
    });
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    socket.on('close', () => {
      resolve([...received.matchAll(/(?:^|\n|\r\n|})HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1])));
    });
    socket.on('error', reject);
    socket.write(raw, 'latin1');
    if (halfClose) socket.end();
  });
}

test(
  'malformed requests: CONNECT, OPTIONS *, Expect on a GET, and a request pipelined before garbage, get the apiserver answers',
  { timeout: 120_000 },
  async (t) => {
    const proxy = await startCachingProxy();
    try {
      const ns = await testNamespace(t, shared.admin);
      await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm1' } });
      const sides = await openSides(proxy.url);
      const proxyAddress = new URL(proxy.url);
      const apiAddress = new URL(shared.cp.server);
      const ca = (await upstreamConfigFor(shared.cp)).tls.ca;
      const toProxy = (): Socket => netConnect({ host: proxyAddress.hostname, port: Number(proxyAddress.port) });
      const toApiserver = (): Socket =>
        tlsConnect({ host: apiAddress.hostname, port: Number(apiAddress.port), ca, servername: 'localhost' });
      const cm = `/api/v1/namespaces/${ns}/configmaps/cm1`;
      // Each ends with the server closing: one CONNECT with Connection: close, or bytes no server can parse.
      const cases: readonly { name: string; raw: (head: string) => string }[] = [
        {
          name: 'CONNECT on an API path',
          raw: (h) => `CONNECT /api/v1/namespaces/${ns}/configmaps HTTP/1.1\r\n${h}Connection: close\r\n\r\n`,
        },
        { name: 'CONNECT /version', raw: (h) => `CONNECT /version HTTP/1.1\r\n${h}Connection: close\r\n\r\n` },
        { name: 'CONNECT /livez', raw: (h) => `CONNECT /livez HTTP/1.1\r\n${h}Connection: close\r\n\r\n` },
        { name: 'CONNECT to an authority', raw: (h) => `CONNECT 127.0.0.1:443 HTTP/1.1\r\n${h}Connection: close\r\n\r\n` },
        { name: 'OPTIONS *', raw: (h) => `OPTIONS * HTTP/1.1\r\n${h}Connection: close\r\n\r\n` },
        {
          name: 'a GET with Expect: 100-continue (no interim 100)',
          raw: (h) => `GET ${cm} HTTP/1.1\r\n${h}Expect: 100-continue\r\nConnection: close\r\n\r\n`,
        },
        { name: 'a passed-through GET pipelined before garbage', raw: (h) => `GET /version HTTP/1.1\r\n${h}\r\nGARBAGE\r\n\r\n` },
        { name: 'a cached GET pipelined before garbage', raw: (h) => `GET ${cm} HTTP/1.1\r\n${h}\r\nNOT HTTP AT ALL\r\n\r\n` },
        {
          name: 'HTTP/1.2, as Go serves any 1.x',
          raw: (h) => `GET ${cm} HTTP/1.2\r\n${h}Connection: close\r\n\r\n`,
        },
        {
          name: 'HTTP/1.9 twice on one connection, then HTTP/1.0',
          raw: (h) => `GET /version HTTP/1.9\r\n${h}\r\nGET ${cm} HTTP/1.9\r\n${h}\r\nGET /livez HTTP/1.0\r\n${h}\r\n`,
        },
        {
          name: 'two cached GETs pipelined before garbage',
          raw: (h) => `GET ${cm} HTTP/1.1\r\n${h}\r\nGET ${cm}?resourceVersion=0 HTTP/1.1\r\n${h}\r\nGET / HTTP/9.x\r\n\r\n`,
        },
      ];
      const toProxyHead = `Host: ${proxyAddress.host}\r\n`;
      const toApiserverHead = `Host: ${apiAddress.host}\r\nAuthorization: Bearer ${shared.cp.users.admin.token}\r\n`;
      const mismatches: Mismatch[] = [];
      for (const c of cases) {
        const [viaProxy, direct] = await Promise.all([
          rawStatuses(toProxy, c.raw(toProxyHead)),
          rawStatuses(toApiserver, c.raw(toApiserverHead)),
        ]);
        t.diagnostic(`${c.name}: apiserver ${direct.join(', ')}; proxy ${viaProxy.join(', ')}`);
        assert.ok(direct.length > 0, `${c.name}: the apiserver answered`);
        if (viaProxy.join() !== direct.join())
          mismatches.push({ request: c.name, apiserver: direct.join(', '), proxy: viaProxy.join(', ') });
        await assertProxyAlive(sides, c.name);
      }
      assert.deepEqual(mismatches, [], `the proxy answered ${String(mismatches.length)} request(s) unlike the apiserver`);
    } finally {
      await proxy.stop(0);
    }
  },
);

/**
 * The differences docs/differences.md lists, each as it stands: if
 * one changes (a Node upgrade, a fix), this fails and docs/differences.md is brought up to date with it.
 * Statuses in order over the whole connection; 'none' is no answer before the 15 s guard.
 */
const DOCUMENTED_DIFFERENCES: readonly {
  name: string;
  apiserver: string;
  proxy: string;
  raw: (head: string) => string;
  /** The client half-closes its connection after `raw`. */
  halfClose?: boolean;
  /** The apiserver's other answer, when it varies with timing (how soon Go notices the half-close). */
  apiserverOr?: string;
}[] = [
  // llhttp refuses methods it does not know; Go routes any token.
  { name: 'a lowercase method', apiserver: '405', proxy: '400', raw: (h) => `get /version HTTP/1.1\r\n${h}Connection: close\r\n\r\n` },
  {
    name: 'an unknown method token',
    apiserver: '405',
    proxy: '400',
    raw: (h) => `FETCH2 /version HTTP/1.1\r\n${h}Connection: close\r\n\r\n`,
  },
  // llhttp is stricter than Go about line endings, folding, raw bytes and repeated framing headers.
  {
    name: 'bare LF line endings',
    apiserver: '200',
    proxy: '400',
    raw: (h) => `GET /version HTTP/1.1\n${h.replaceAll('\r\n', '\n')}Connection: close\n\n`,
  },
  {
    name: 'an obs-fold header line',
    apiserver: '200',
    proxy: '400',
    raw: (h) => `GET /version HTTP/1.1\r\n${h}X-A: b\r\n c\r\nConnection: close\r\n\r\n`,
  },
  {
    name: 'a byte >= 0x80 in the path',
    apiserver: '404',
    proxy: '400',
    raw: (h) => `GET /version\xff HTTP/1.1\r\n${h}Connection: close\r\n\r\n`,
  },
  {
    name: 'Content-Length twice, equal',
    apiserver: '201',
    proxy: '400',
    raw: (h) =>
      `POST /api/v1/namespaces/default/configmaps?dryRun=All HTTP/1.1\r\n${h}Content-Type: application/json\r\nContent-Length: 35\r\nContent-Length: 35\r\nConnection: close\r\n\r\n{"metadata":{"generateName":"cl-"}}`,
  },
  // Both framings: Go drops the length and reads the chunks; llhttp refuses the pair (request smuggling).
  {
    name: 'Transfer-Encoding: chunked with a Content-Length',
    apiserver: '201',
    proxy: '400',
    raw: (h) =>
      `POST /api/v1/namespaces/default/configmaps?dryRun=All HTTP/1.1\r\n${h}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 35\r\nConnection: close\r\n\r\n23\r\n{"metadata":{"generateName":"te-"}}\r\n0\r\n\r\n`,
  },
  // llhttp is more lenient than Go about the request line's shape.
  {
    name: 'two spaces after the method',
    apiserver: '400',
    proxy: '200',
    raw: (h) => `GET  /version HTTP/1.1\r\n${h}Connection: close\r\n\r\n`,
  },
  {
    name: 'an empty line before the request',
    apiserver: '400',
    proxy: '200',
    raw: (h) => `\r\nGET /version HTTP/1.1\r\n${h}Connection: close\r\n\r\n`,
  },
  // llhttp reads an explicit HTTP/0.9 as a request line without a version (Go's 400).
  {
    name: 'HTTP/0.9 in the request line',
    apiserver: '505',
    proxy: '400',
    raw: (h) => `GET /version HTTP/0.9\r\n${h}Connection: close\r\n\r\n`,
  },
  // llhttp fails the connection at the early end; Go cancels the request (a write's 504), or never notices (a GET).
  {
    name: 'a write whose body is shorter than its Content-Length, then a half-close',
    apiserver: '504',
    apiserverOr: 'none',
    proxy: '400',
    halfClose: true,
    raw: (h) =>
      `POST /api/v1/namespaces/default/configmaps?dryRun=All HTTP/1.1\r\n${h}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"metadata"`,
  },
  {
    name: 'a GET whose body is shorter than its Content-Length, then a half-close',
    apiserver: '200',
    proxy: '400',
    halfClose: true,
    raw: (h) => `GET /version HTTP/1.1\r\n${h}Content-Length: 100\r\n\r\n{"metadata"`,
  },
  // llhttp wants // after a scheme; Go takes the rest as a path (or an opaque part) it does not route.
  { name: 'the target http:/x', apiserver: '404', proxy: '400', raw: (h) => `GET http:/x HTTP/1.1\r\n${h}Connection: close\r\n\r\n` },
  { name: 'the target foo:bar', apiserver: '404', proxy: '400', raw: (h) => `GET foo:bar HTTP/1.1\r\n${h}Connection: close\r\n\r\n` },
  // Go ignores Transfer-Encoding on HTTP/1.0 and reads by Content-Length; the proxy refuses what llhttp would read otherwise.
  {
    name: 'HTTP/1.0 with Transfer-Encoding: chunked and a Content-Length',
    apiserver: '201',
    proxy: '400',
    raw: (h) =>
      `POST /api/v1/namespaces/default/configmaps?dryRun=All HTTP/1.0\r\n${h}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 35\r\n\r\n{"metadata":{"generateName":"te-"}}`,
  },
  {
    name: 'HTTP/1.0 with Transfer-Encoding: chunked and chunks',
    apiserver: '200',
    proxy: '400',
    raw: (h) => `GET /version HTTP/1.0\r\n${h}Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
  },
  // Node limits a request to about a thousand header fields; Go only by bytes.
  {
    name: '2,000 header fields',
    apiserver: '200',
    proxy: '431',
    raw: (h) =>
      `GET /version HTTP/1.1\r\n${h}${Array.from({ length: 2000 }, (_, i) => `X-${String(i)}: v\r\n`).join('')}Connection: close\r\n\r\n`,
  },
];

test(
  'malformed requests: the documented differences from the apiserver are as docs/differences.md lists them',
  { timeout: 120_000 },
  async (t) => {
    const proxy = await startCachingProxy();
    try {
      const sides = await openSides(proxy.url);
      const proxyAddress = new URL(proxy.url);
      const apiAddress = new URL(shared.cp.server);
      const ca = (await upstreamConfigFor(shared.cp)).tls.ca;
      const toProxy = (): Socket => netConnect({ host: proxyAddress.hostname, port: Number(proxyAddress.port) });
      const toApiserver = (): Socket =>
        tlsConnect({ host: apiAddress.hostname, port: Number(apiAddress.port), ca, servername: 'localhost' });
      const toProxyHead = `Host: ${proxyAddress.host}\r\n`;
      const toApiserverHead = `Host: ${apiAddress.host}\r\nAuthorization: Bearer ${shared.cp.users.admin.token}\r\n`;
      const changed: string[] = [];
      for (const c of DOCUMENTED_DIFFERENCES) {
        const [viaProxy, direct] = await Promise.all([
          rawStatuses(toProxy, c.raw(toProxyHead), c.halfClose),
          rawStatuses(toApiserver, c.raw(toApiserverHead), c.halfClose),
        ]);
        const got = { apiserver: direct.join(', ') || 'none', proxy: viaProxy.join(', ') || 'none' };
        t.diagnostic(`${c.name}: apiserver ${got.apiserver}; proxy ${got.proxy}`);
        if ((got.apiserver !== c.apiserver && got.apiserver !== c.apiserverOr) || got.proxy !== c.proxy) {
          changed.push(`${c.name}: documented apiserver ${c.apiserver} / proxy ${c.proxy}, now ${got.apiserver} / ${got.proxy}`);
        }
        await assertProxyAlive(sides, c.name);
      }
      assert.deepEqual(changed, [], 'update docs/differences.md and this list');
    } finally {
      await proxy.stop(0);
    }
  },
);

/** mulberry32: a tiny seeded PRNG, so a failing random batch replays from its printed seed. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

/** Values per parameter: valid ones too, so that the invalid ones meet every reading path. */
const FUZZ_VALUES: Readonly<Record<string, readonly string[]>> = {
  limit: ['abc', '-1', '0', '1', '2', '500', '', '1.5', '99999999999999999999'],
  timeoutSeconds: ['x', '1', '-1', ''],
  watch: ['maybe', 'false', '0', 'true', '1'],
  resourceVersion: ['abc', '-5', '0', '1', '', '%2B1', '0x10'],
  resourceVersionMatch: ['Bogus', 'Exact', 'NotOlderThan', 'exact', ''],
  sendInitialEvents: ['true', 'false', 'x'],
  labelSelector: ['a%20in%20(', 'app%3Da', 'app%21%3Db', '%21app', '%3D%3D%3D', 'a%20notin%20(x)'],
  fieldSelector: ['spec.nosuch=x', 'spec.nosuch%3Dx', 'metadata.name%3Dp1', 'metadata.name%3Dcm1', 'spec.nodeName%3D', '%3D%3D'],
  continue: ['garbage', b64('{"v":"meta.k8s.io/v2","rv":5,"start":"a"}'), b64('{"v":"meta.k8s.io/v1","rv":1,"start":"p1\\u0000"}'), ''],
  allowWatchBookmarks: ['x', 'true'],
};

function randomProbes(random: () => number, ns: string, count: number): Probe[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const bases = [
    `/api/v1/namespaces/${ns}/pods`,
    `/api/v1/namespaces/${ns}/configmaps`,
    '/api/v1/pods',
    '/api/v1/configmaps',
    `/api/v1/namespaces/${ns}/pods/p1`,
    `/api/v1/namespaces/${ns}/configmaps/cm1`,
    `/api/v1/namespaces/${ns}/configmaps/missing`,
  ];
  const names = Object.keys(FUZZ_VALUES);
  const probes: Probe[] = [];
  for (let i = 0; i < count; i++) {
    const params: string[] = [];
    const n = 1 + Math.floor(random() * 4);
    for (let j = 0; j < n; j++) {
      const name = pick(names);
      params.push(`${name}=${pick(FUZZ_VALUES[name] ?? [''])}`);
    }
    probes.push({ path: `${pick(bases)}?${params.join('&')}` });
  }
  return probes;
}

test('malformed requests: a seeded random batch of query strings gets the apiserver answer', { timeout: 300_000 }, async (t) => {
  const seed = Number(process.env.KCP_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 32));
  assert.ok(Number.isInteger(seed), `KCP_FUZZ_SEED=${String(process.env.KCP_FUZZ_SEED)} is not an integer`);
  t.diagnostic(`seed ${String(seed)} (replay with KCP_FUZZ_SEED=${String(seed)})`);
  const proxy = await startCachingProxy();
  try {
    const ns = await populated(t, proxy.url);
    const sides = await openSides(proxy.url);
    const random = mulberry32(seed);
    const batches = [0, 1, 2, 3].map((i) => ({
      name: `random batch ${String(i)} (seed ${String(seed)})`,
      probes: randomProbes(random, ns, 50),
    }));
    await assertSameAnswers(t, sides, batches);
  } finally {
    await proxy.stop(0);
  }
});

/** One raw request of the random HTTP batch, and the docs/differences.md row it falls under, if any. */
interface RawProbe {
  readonly describe: string;
  readonly raw: (host: string, auth: string) => string;
  /** The documented difference this request is an instance of: its answers are not compared. */
  readonly documented: string | undefined;
}

/**
 * Request lines and framing from a small vocabulary, odd and plain mixed: methods, targets,
 * versions Go and llhttp read differently, zero to two Hosts, Content-Length, Transfer-Encoding
 * (one, two, with a length), Content-Types Fastify would judge. Every request ends with the
 * server closing (Connection: close, or HTTP/1.0).
 */
function randomRawProbes(random: () => number, ns: string, count: number): RawProbe[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const methods = ['GET', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'QUERY', 'OPTIONS', 'HEAD'];
  const targets = [
    '/version',
    '/livez',
    `/api/v1/namespaces/${ns}/configmaps?dryRun=All`,
    `/api/v1/namespaces/${ns}/configmaps/cm1?dryRun=All`,
    `/api/v1/namespaces/${ns}/pods?resourceVersion=0`,
    '*',
  ];
  const versions = [
    'HTTP/1.1',
    'HTTP/1.1',
    'HTTP/1.0',
    'HTTP/1.2',
    'HTTP/1.9',
    'HTTP/2.0',
    'HTTP/3.3',
    'HTTP/0.7',
    'HTTP/1.10',
    'HTTP/x.1',
  ];
  const body = '{"metadata":{"generateName":"fz-"}}';
  const framings = ['none', 'none', 'length', 'length', 'chunked', 'gzip', 'chunked twice', 'chunked and length'] as const;
  const contentTypes = [undefined, 'application/json', 'application/json', ';;;', 'text/plain'];
  const probes: RawProbe[] = [];
  for (let i = 0; i < count; i++) {
    const method = pick(methods);
    // A DELETE with a body takes its options (dryRun among them) from the body, not the query
    // (delete.go): never one of the objects the batch reads.
    const target = method === 'DELETE' ? `/api/v1/namespaces/${ns}/configmaps/fz-missing?dryRun=All` : pick(targets);
    const version = pick(versions);
    const hosts = pick([1, 1, 1, 1, 0, 2]);
    const framing = pick(framings);
    const contentType = pick(contentTypes);
    let fields = contentType === undefined ? '' : `Content-Type: ${contentType}\r\n`;
    let payload = '';
    const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    switch (framing) {
      case 'none':
        break;
      case 'length':
        fields += `Content-Length: ${String(body.length)}\r\n`;
        payload = body;
        break;
      case 'chunked':
        fields += 'Transfer-Encoding: chunked\r\n';
        payload = chunked;
        break;
      case 'gzip':
        fields += 'Transfer-Encoding: gzip\r\n';
        break;
      case 'chunked twice':
        fields += 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n';
        payload = chunked;
        break;
      case 'chunked and length':
        fields += `Transfer-Encoding: chunked\r\nContent-Length: ${String(body.length)}\r\n`;
        payload = chunked;
        break;
    }
    const http10 = version === 'HTTP/1.0';
    const http1x = /^HTTP\/1\.[1-9]$/.test(version);
    const documented =
      http10 && hosts < 2 && framing !== 'none' && framing !== 'length'
        ? 'HTTP/1.0 with a Transfer-Encoding'
        : framing === 'chunked and length' && http1x && hosts === 1
          ? 'Transfer-Encoding: chunked with a Content-Length'
          : hosts === 0 && http10
            ? 'a Host that is not loopback, or none'
            : undefined;
    probes.push({
      describe: `${method} ${target} ${version}, ${String(hosts)} Host, ${framing}, Content-Type ${contentType ?? 'none'}`,
      raw: (host, auth) =>
        `${method} ${target} ${version}\r\n${host.repeat(hosts)}${auth}${fields}${http10 ? '' : 'Connection: close\r\n'}\r\n${payload}`,
      documented,
    });
  }
  return probes;
}

test(
  "malformed requests: a seeded random batch of malformed HTTP gets the apiserver's statuses, outside the documented differences",
  { timeout: 300_000 },
  async (t) => {
    const seed = Number(process.env.KCP_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 32));
    assert.ok(Number.isInteger(seed), `KCP_FUZZ_SEED=${String(process.env.KCP_FUZZ_SEED)} is not an integer`);
    t.diagnostic(`seed ${String(seed)} (replay with KCP_FUZZ_SEED=${String(seed)})`);
    const proxy = await startCachingProxy();
    try {
      const ns = await populated(t, proxy.url);
      const sides = await openSides(proxy.url);
      const proxyAddress = new URL(proxy.url);
      const apiAddress = new URL(shared.cp.server);
      const ca = (await upstreamConfigFor(shared.cp)).tls.ca;
      const toProxy = (): Socket => netConnect({ host: proxyAddress.hostname, port: Number(proxyAddress.port) });
      const toApiserver = (): Socket =>
        tlsConnect({ host: apiAddress.hostname, port: Number(apiAddress.port), ca, servername: 'localhost' });
      const auth = `Authorization: Bearer ${shared.cp.users.admin.token}\r\n`;
      const probes = randomRawProbes(mulberry32(seed), ns, 120);
      const mismatches: Mismatch[] = [];
      const documented = new Map<string, number>();
      for (const probe of probes) {
        if (probe.documented !== undefined) {
          documented.set(probe.documented, (documented.get(probe.documented) ?? 0) + 1);
          continue;
        }
        const [viaProxy, direct] = await Promise.all([
          rawStatuses(toProxy, probe.raw(`Host: ${proxyAddress.host}\r\n`, '')),
          rawStatuses(toApiserver, probe.raw(`Host: ${apiAddress.host}\r\n`, auth)),
        ]);
        if (viaProxy.join() !== direct.join()) {
          mismatches.push({ request: probe.describe, apiserver: direct.join(', ') || 'none', proxy: viaProxy.join(', ') || 'none' });
        }
      }
      await assertProxyAlive(sides, 'the random HTTP batch');
      for (const m of mismatches) t.diagnostic(`MISMATCH ${m.request}: apiserver ${m.apiserver}, proxy ${m.proxy}`);
      t.diagnostic(
        `${String(probes.length)} requests; under the documented differences, not compared: ${JSON.stringify(Object.fromEntries(documented))}`,
      );
      assert.deepEqual(
        mismatches,
        [],
        `the proxy answered ${String(mismatches.length)} request(s) unlike the apiserver (seed ${String(seed)})`,
      );
    } finally {
      await proxy.stop(0);
    }
  },
);
