/**
 * Shared mode against the real apiserver with RBAC: one proxy (`proxy --shared`, a process of its
 * own) serves many clients, each as itself. For a matrix of identities (an admin, a user with a
 * namespaced Role, service accounts allowed only `get` or only cluster-wide list/watch of pods, a
 * user with nothing, a client certificate, no credentials, a bad token) x namespaces x verbs (get,
 * list, watch, and list and watch across all namespaces) x types, the proxy's status and body are
 * the apiserver's, and every read it allowed came from its cache. What goes upstream goes as the
 * client; a revoked token is refused within the token cache's TTL; no credential reaches a log
 * line or a metric.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect as tlsConnect } from 'node:tls';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { request } from 'undici';
import { testNamespace, useSharedAdmin } from '../../helpers/control-plane.ts';
import { signedCertificate } from '../../helpers/certificates.ts';
import { eventually } from '../../helpers/eventually.ts';
import { forEachConcurrently, grantInNamespace, kube, serviceAccountToken } from '../../helpers/kube.ts';
import { clientFor, startSharedProxy } from '../../helpers/shared-proxy.ts';
import { metricSum } from '../../helpers/metrics-text.ts';
import type { Client, Credentials, SharedProxy } from '../../helpers/shared-proxy.ts';

const shared = useSharedAdmin();

/** How long a token's review is kept by the proxy under test (--authentication-token-webhook-cache-ttl). */
const TOKEN_TTL_MS = 2_000;

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

/** GET `path` at `base` as `client`; a watch (timeoutSeconds set) is read to its end. */
async function get(base: string, client: Client, path: string, method: 'GET' | 'POST' = 'GET', body?: unknown): Promise<Answer> {
  const res = await request(`${base}${path}`, {
    method,
    dispatcher: client.dispatcher,
    headers: { accept: 'application/json', ...client.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const contentType = res.headers['content-type'];
  return {
    status: res.statusCode,
    contentType: Array.isArray(contentType) ? contentType.join(', ') : (contentType ?? ''),
    body: await res.body.text(),
  };
}

/** What must be equal of two 200 answers: a GET's bytes, a LIST's items, a watch's events. */
function comparable(path: string, answer: Answer): string {
  if (answer.status !== 200) return answer.body;
  if (path.includes('watch=1')) {
    // The events, each object's bytes as sent: the same objects, in the same order.
    return answer.body;
  }
  const parsed = JSON.parse(answer.body) as { kind: string; items?: unknown[] };
  // A LIST's metadata.resourceVersion is each side's own current RV.
  return parsed.items === undefined ? answer.body : JSON.stringify({ kind: parsed.kind, items: parsed.items });
}

interface Fixture {
  readonly proxy: SharedProxy;
  readonly ns1: string;
  readonly ns2: string;
  readonly run: string;
  readonly credentials: Readonly<Record<string, Credentials>>;
  /** The tokens the matrix used: none may appear in a log line or a metric. */
  readonly tokens: readonly string[];
}

/**
 * The identities and their RBAC, objects of each type in two namespaces (labelled with the run,
 * so that lists across namespaces see only these), and a shared proxy started after them.
 */
async function fixture(t: TestContext): Promise<Fixture> {
  const { admin, cp } = shared;
  const ns1 = await testNamespace(t, admin);
  const ns2 = await testNamespace(t, admin);
  const run = randomBytes(3).toString('hex');
  const labels = { 'kcp-run': run };
  for (const ns of [ns1, ns2]) {
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm', labels }, data: { k: 'v' } });
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/secrets`, { metadata: { name: 's', labels }, stringData: { k: 'v' } });
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: 'p', labels },
      spec: { containers: [{ name: 'c', image: 'registry.invalid/none' }] },
    });
  }
  const rbac = '/apis/rbac.authorization.k8s.io/v1';
  // alice: configmaps in ns1 (a Role).
  await grantInNamespace(admin, ns1, 'reader', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }], {
    kind: 'User',
    name: 'alice',
  });
  // carol (a client certificate, in group kcp-readers-RUN): configmaps, pods and secrets in ns2.
  const group = `kcp-readers-${run}`;
  await grantInNamespace(
    admin,
    ns2,
    'reader',
    [{ apiGroups: [''], resources: ['configmaps', 'pods', 'secrets'], verbs: ['get', 'list', 'watch'] }],
    { kind: 'Group', name: group },
  );
  // getter (a service account): only `get`, of every type, everywhere. lister: list and watch pods everywhere.
  const getter = await serviceAccountToken(admin, ns1, 'getter');
  const lister = await serviceAccountToken(admin, ns2, 'lister');
  const clusterRoles = {
    [`kcp-get-${run}`]: { verbs: ['get'], resources: ['configmaps', 'pods', 'secrets'], subject: { ns: ns1, name: 'getter' } },
    [`kcp-list-pods-${run}`]: { verbs: ['list', 'watch'], resources: ['pods'], subject: { ns: ns2, name: 'lister' } },
  };
  for (const [name, role] of Object.entries(clusterRoles)) {
    await kube(admin, 'POST', `${rbac}/clusterroles`, {
      metadata: { name },
      rules: [{ apiGroups: [''], resources: role.resources, verbs: role.verbs }],
    });
    await kube(admin, 'POST', `${rbac}/clusterrolebindings`, {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name: role.subject.name, namespace: role.subject.ns }],
    });
    t.after(async () => {
      await admin.request({ method: 'DELETE', path: `${rbac}/clusterrolebindings/${name}` });
      await admin.request({ method: 'DELETE', path: `${rbac}/clusterroles/${name}` });
    });
  }
  const credentials: Record<string, Credentials> = {
    admin: { kind: 'token', token: cp.users.admin.token },
    alice: { kind: 'token', token: cp.users.alice.token },
    bob: { kind: 'token', token: cp.users.bob.token },
    getter: { kind: 'token', token: getter },
    lister: { kind: 'token', token: lister },
    carol: { kind: 'certificate', certificate: signedCertificate(t, cp, { cn: 'carol', groups: [group] }) },
    anonymous: { kind: 'anonymous' },
    'a bad token': { kind: 'token', token: `bad-${randomBytes(8).toString('hex')}` },
  };
  const proxy = await startSharedProxy(t, cp, [
    '--resources',
    'configmaps,pods,secrets',
    '--log-level',
    'debug',
    '--authentication-token-webhook-cache-ttl',
    `${String(TOKEN_TTL_MS)}ms`,
    // The matrix's anonymous reads, each refused by the apiserver, come from one address within a
    // second or two: past the default bucket (20) they would be the proxy's 429, not the
    // apiserver's answer this test compares (the limit's own test: unit/server/http/fairness.test.ts).
    '--anonymous-refusals-burst-per-address',
    '1000',
  ]);
  // The apiserver's authorizer reads RBAC from its informers: wait until the grants are in force.
  const check = async (who: string, path: string): Promise<boolean> => {
    const c = credentials[who];
    assert.ok(c !== undefined);
    return (await get(cp.server, clientFor(t, proxy.ca, c), path)).status === 200;
  };
  await eventually(
    'the RBAC grants to be in force',
    async () =>
      (await check('alice', `/api/v1/namespaces/${ns1}/configmaps`)) &&
      (await check('carol', `/api/v1/namespaces/${ns2}/pods`)) &&
      (await check('getter', `/api/v1/namespaces/${ns2}/secrets/s`)) &&
      (await check('lister', '/api/v1/pods?limit=1')),
  );
  const tokens = Object.values(credentials).flatMap((c) => (c.kind === 'token' ? [c.token] : []));
  return { proxy, ns1, ns2, run, credentials, tokens };
}

test(
  'shared mode: identities x namespaces x verbs x types, the proxy answers as the apiserver; allowed reads come from its cache',
  { timeout: 240_000 },
  async (t) => {
    const { cp } = shared;
    const f = await fixture(t);
    const selector = `labelSelector=kcp-run%3D${f.run}`;
    const types = [
      { resource: 'configmaps', name: 'cm' },
      { resource: 'pods', name: 'p' },
      { resource: 'secrets', name: 's' },
    ];
    const paths: string[] = [];
    for (const { resource, name } of types) {
      for (const ns of [f.ns1, f.ns2]) {
        const base = `/api/v1/namespaces/${ns}/${resource}`;
        paths.push(`${base}/${name}`, base, `${base}?watch=1&resourceVersion=0&timeoutSeconds=1`);
      }
      paths.push(`/api/v1/${resource}?${selector}`, `/api/v1/${resource}?watch=1&resourceVersion=0&timeoutSeconds=1&${selector}`);
    }
    const cells = Object.entries(f.credentials).flatMap(([who, credentials]) => paths.map((path) => ({ who, credentials, path })));
    const mismatches: string[] = [];
    const statuses = new Map<number, number>();
    let servedOk = 0;
    let anonymous = 0;
    await forEachConcurrently(cells, 8, async ({ who, credentials, path }) => {
      const client = clientFor(t, f.proxy.ca, credentials);
      const [fromApiserver, fromProxy] = await Promise.all([get(cp.server, client, path), get(f.proxy.url, client, path)]);
      statuses.set(fromApiserver.status, (statuses.get(fromApiserver.status) ?? 0) + 1);
      if (fromApiserver.status === 200) servedOk++;
      if (who === 'anonymous') anonymous++;
      const cell = `${who} GET ${path}`;
      if (fromProxy.status !== fromApiserver.status || fromProxy.contentType !== fromApiserver.contentType) {
        mismatches.push(
          `${cell}: proxy ${String(fromProxy.status)} ${fromProxy.contentType}, apiserver ${String(fromApiserver.status)} ${fromApiserver.contentType}: ${fromProxy.body.slice(0, 300)}`,
        );
        return;
      }
      if (comparable(path, fromProxy) !== comparable(path, fromApiserver)) {
        mismatches.push(
          `${cell}: bodies differ\n  proxy:     ${fromProxy.body.slice(0, 400)}\n  apiserver: ${fromApiserver.body.slice(0, 400)}`,
        );
      }
    });
    t.diagnostic(`${String(cells.length)} cells; apiserver statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    assert.deepEqual(mismatches, []);
    // The matrix has every kind of answer: reads allowed, denied (403), unauthenticated (401).
    assert.ok(
      (statuses.get(200) ?? 0) >= 40 && (statuses.get(403) ?? 0) >= 40 && (statuses.get(401) ?? 0) === paths.length,
      JSON.stringify([...statuses]),
    );

    const admin = clientFor(t, f.proxy.ca, f.credentials['admin'] ?? { kind: 'anonymous' });
    const metrics = await get(f.proxy.url, admin, '/metrics');
    assert.equal(metrics.status, 200);
    // Every allowed read came from the cache; only the anonymous client's went upstream (the
    // apiserver decides what an anonymous client may see), and nothing else did.
    const served = (from: string): number =>
      ['get', 'list', 'watch'].reduce(
        (n, verb) => n + metricSum(metrics.body, 'kube_cache_proxy_requests_total', { verb, served_from: from }),
        0,
      );
    assert.equal(served('cache'), servedOk, 'allowed reads served from the cache');
    assert.equal(served('apiserver'), anonymous, "reads passed through: the anonymous client's only");

    // The proxy's own /metrics is the apiserver's non-resource rule: bob may not read it.
    const bob = clientFor(t, f.proxy.ca, f.credentials['bob'] ?? { kind: 'anonymous' });
    const [bobProxy, bobApiserver] = await Promise.all([get(f.proxy.url, bob, '/metrics'), get(cp.server, bob, '/metrics')]);
    assert.deepEqual([bobProxy.status, bobProxy.body], [bobApiserver.status, bobApiserver.body]);

    // Writes go upstream as the client: refused as alice and as carol (by certificate) in the
    // apiserver's words, with their names; allowed as the admin.
    for (const who of ['alice', 'carol', 'admin']) {
      const client = clientFor(t, f.proxy.ca, f.credentials[who] ?? { kind: 'anonymous' });
      const ns = who === 'alice' ? f.ns1 : f.ns2;
      const path = `/api/v1/namespaces/${ns}/configmaps`;
      const body = { metadata: { name: `w-${who}` } };
      const viaProxy = await get(f.proxy.url, client, path, 'POST', body);
      if (who === 'admin') {
        assert.equal(viaProxy.status, 201, viaProxy.body);
        continue;
      }
      const direct = await get(cp.server, client, path, 'POST', body);
      assert.equal(viaProxy.status, 403, viaProxy.body);
      assert.match(viaProxy.body, new RegExp(`User \\\\"${who}\\\\" cannot create resource \\\\"configmaps\\\\"`));
      assert.deepEqual([viaProxy.status, viaProxy.body], [direct.status, direct.body]);
    }

    // No credential in any log line (the proxy logs every request at debug) or metric.
    const output = f.proxy.cli.output();
    assert.match(output, / url="\/api\/v1\/namespaces\//, 'requests were logged at debug');
    const adminMetrics = (await get(f.proxy.url, admin, '/metrics')).body;
    for (const token of f.tokens) {
      assert.ok(!output.includes(token), 'a token appears in the log');
      assert.ok(!adminMetrics.includes(token), 'a token appears in the metrics');
    }
  },
);

test(
  'shared mode: a token whose ServiceAccount is deleted is refused by the proxy no later than its token cache TTL',
  { timeout: 120_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm' } });
    const token = await serviceAccountToken(admin, ns, 'doomed');
    await grantInNamespace(admin, ns, 'reader', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }], {
      kind: 'ServiceAccount',
      name: 'doomed',
      namespace: ns,
    });
    const proxy = await startSharedProxy(t, cp, [
      '--resources',
      'configmaps',
      '--authentication-token-webhook-cache-ttl',
      `${String(TOKEN_TTL_MS)}ms`,
    ]);
    const client = clientFor(t, proxy.ca, { kind: 'token', token });
    const path = `/api/v1/namespaces/${ns}/configmaps/cm`;
    // At the apiserver first: a denial the proxy saw before would be kept 30 s, as the webhook authorizer keeps it.
    await eventually('the grant to be in force', async () => (await get(cp.server, client, path)).status === 200);
    assert.equal((await get(proxy.url, client, path)).status, 200);
    await kube(admin, 'DELETE', `/api/v1/namespaces/${ns}/serviceaccounts/doomed`);
    // The apiserver keeps its own token decisions for 10 s (pkg/kubeapiserver/authenticator
    // config.go): the proxy's TTL counts from when the apiserver itself refuses the token.
    let apiserverRefused: number | undefined;
    let proxyRefused: number | undefined;
    await eventually(
      'the apiserver and then the proxy to refuse the revoked token',
      async () => {
        if (apiserverRefused === undefined && (await get(cp.server, client, path)).status === 401) apiserverRefused = performance.now();
        if (proxyRefused === undefined) {
          const res = await get(proxy.url, client, path);
          if (res.status === 401) proxyRefused = performance.now();
          else assert.equal(res.status, 200, res.body);
        }
        return apiserverRefused !== undefined && proxyRefused !== undefined;
      },
      60_000,
    );
    const lag = (proxyRefused ?? 0) - (apiserverRefused ?? 0);
    assert.ok(
      lag <= TOKEN_TTL_MS + 1_000,
      `the proxy refused it ${String(Math.round(lag))} ms after the apiserver (TTL ${String(TOKEN_TTL_MS)} ms)`,
    );
    assert.ok(!proxy.cli.output().includes(token), 'the token appears in the log');
  },
);

test('shared mode: the differences from the apiserver that docs/differences.md lists are as it says', { timeout: 60_000 }, async (t) => {
  const { cp } = shared;
  const proxy = await startSharedProxy(t, cp, ['--resources', 'configmaps']);
  const at = async (base: string, credentials: Credentials, path: string, headers: Record<string, string> = {}): Promise<Answer> => {
    const client = clientFor(t, proxy.ca, credentials);
    return get(base, { ...client, headers: { ...client.headers, ...headers } }, path);
  };
  const both = async (credentials: Credentials, path: string, headers: Record<string, string> = {}): Promise<[number, number]> => [
    (await at(proxy.url, credentials, path, headers)).status,
    (await at(cp.server, credentials, path, headers)).status,
  ];
  // Its own health is open to all, a bad token included (the apiserver's 401 first authenticates).
  assert.deepEqual(await both({ kind: 'token', token: 'not-a-token' }, '/readyz'), [200, 401]);
  // Its own /metrics needs an authenticated client: anonymous gets the 401 (the apiserver, which
  // lets anonymous requests in here, answers with its 403).
  assert.deepEqual(await both({ kind: 'anonymous' }, '/metrics'), [401, 403]);
  // A client known by its certificate cannot impersonate through the proxy (it is itself impersonated upstream).
  const carol: Credentials = { kind: 'certificate', certificate: signedCertificate(t, cp, { cn: 'carol' }) };
  const impersonating = await at(proxy.url, carol, '/api/v1/namespaces/default/configmaps', { 'impersonate-user': 'bob' });
  assert.equal(impersonating.status, 403);
  assert.match(impersonating.body, /impersonation through kube-cache-proxy needs a bearer token/);
  // A refusal the proxy writes (401, 403) to a client asking for YAML is in JSON (the same Status).
  const bob: Credentials = { kind: 'token', token: cp.users.bob.token };
  const yaml = { accept: 'application/yaml' };
  const [viaProxy, direct] = await Promise.all([
    at(proxy.url, bob, '/api/v1/namespaces/default/configmaps', yaml),
    at(cp.server, bob, '/api/v1/namespaces/default/configmaps', yaml),
  ]);
  assert.deepEqual(
    [viaProxy.status, viaProxy.contentType, direct.status, direct.contentType],
    [403, 'application/json', 403, 'application/yaml'],
  );
  assert.equal(
    (JSON.parse(viaProxy.body) as { message: string }).message,
    /^message: '(.*)'$/ms.exec(direct.body)?.[1]?.replace(/\n {2}/g, ' '),
  );
});

test(
  "shared mode: a token client's Impersonate-* go upstream with its token, never to the cache: the apiserver grants or refuses them as for the client",
  { timeout: 60_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm' } });
    await grantInNamespace(admin, ns, 'reader', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }], {
      kind: 'User',
      name: 'alice',
    });
    const proxy = await startSharedProxy(t, cp, ['--resources', 'configmaps']);
    const alice = clientFor(t, proxy.ca, { kind: 'token', token: cp.users.alice.token });
    await eventually(
      'the grant to be in force',
      async () => (await get(cp.server, alice, `/api/v1/namespaces/${ns}/configmaps`)).status === 200,
    );
    const at = (base: string, who: 'admin' | 'alice', path: string, headers: Record<string, string>): Promise<Answer> => {
      const client = clientFor(t, proxy.ca, { kind: 'token', token: cp.users[who].token });
      return get(base, { ...client, headers: { ...client.headers, ...headers } }, path);
    };
    const metricsOf = async (): Promise<string> => (await at(proxy.url, 'admin', '/metrics', {})).body;
    const before = metricSum(await metricsOf(), 'kube_cache_proxy_requests_total', { served_from: 'cache' });
    const cells = [
      // The admin may impersonate: as alice the read is alice's (allowed), as bob it is bob's 403.
      { who: 'admin', as: 'alice', path: `/api/v1/namespaces/${ns}/configmaps/cm`, status: 200 },
      { who: 'admin', as: 'bob', path: `/api/v1/namespaces/${ns}/configmaps`, status: 403 },
      // alice may not impersonate: the apiserver's 403 names her, though she may read the object.
      { who: 'alice', as: 'bob', path: `/api/v1/namespaces/${ns}/configmaps/cm`, status: 403 },
    ] as const;
    for (const cell of cells) {
      const headers = { 'impersonate-user': cell.as };
      const [viaProxy, direct] = await Promise.all([
        at(proxy.url, cell.who, cell.path, headers),
        at(cp.server, cell.who, cell.path, headers),
      ]);
      assert.equal(viaProxy.status, cell.status, `${cell.who} as ${cell.as}: ${viaProxy.body}`);
      assert.deepEqual([viaProxy.status, comparable(cell.path, viaProxy)], [direct.status, comparable(cell.path, direct)]);
    }
    assert.match(
      (await at(proxy.url, 'alice', `/api/v1/namespaces/${ns}/configmaps/cm`, { 'impersonate-user': 'bob' })).body,
      /User \\"alice\\" cannot impersonate/,
    );
    assert.equal(
      metricSum(await metricsOf(), 'kube_cache_proxy_requests_total', { served_from: 'cache' }),
      before,
      'no read with Impersonate-* was answered from the cache',
    );
  },
);

/** An HTTP/1.1 Upgrade request over TLS, as kubectl exec's WebSocket executor sends it; the answer's status line and body. */
function upgradeRequest(base: string, ca: string, token: string, path: string): Promise<{ status: string; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      { host: url.hostname, port: Number(url.port), ca, servername: url.hostname === '127.0.0.1' ? undefined : url.hostname },
      () => {
        socket.write(
          [
            `GET ${path} HTTP/1.1`,
            `Host: ${url.host}`,
            `Authorization: Bearer ${token}`,
            'Connection: Upgrade',
            'Upgrade: websocket',
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
            'Sec-WebSocket-Version: 13',
            'Sec-WebSocket-Protocol: v5.channel.k8s.io',
            '',
            '',
          ].join('\r\n'),
        );
      },
    );
    let received = '';
    const finish = (): void => {
      const [head = '', body = ''] = received.split('\r\n\r\n', 2);
      resolve({ status: head.split('\r\n', 1)[0] ?? '', body });
      socket.destroy();
    };
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString();
      // A refusal has a Content-Length (the connection may stay open): done once the body is in.
      const headEnd = received.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(received.slice(0, headEnd))?.[1];
      if (headEnd >= 0 && length !== undefined && Buffer.byteLength(received.slice(headEnd + 4)) >= Number(length)) finish();
    });
    socket.on('error', reject);
    socket.on('close', finish);
    socket.setTimeout(20_000, () => socket.destroy(new Error('no answer to the upgrade')));
  });
}

test(
  'shared mode: an upgrade (exec over WebSocket) goes upstream as the client: its refusal names the client',
  { timeout: 60_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    await kube(admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
    const proxy = await startSharedProxy(t, cp, ['--resources', 'configmaps']);
    const path = `/api/v1/namespaces/${ns}/pods/p/exec?command=true&stdout=true`;
    const viaProxy = await upgradeRequest(proxy.url, proxy.ca, cp.users.bob.token, path);
    const direct = await upgradeRequest(cp.server, proxy.ca, cp.users.bob.token, path);
    assert.match(viaProxy.status, /^HTTP\/1\.1 403 /);
    assert.match(viaProxy.body, /User \\"bob\\" cannot (get|create) resource \\"pods\/exec\\"/);
    assert.deepEqual([viaProxy.status, viaProxy.body.trim()], [direct.status, direct.body.trim()]);
  },
);

test(
  "shared mode: /namespaces/{ns}/namespaces is the apiserver's 404, never every Namespace from the cache",
  { timeout: 60_000 },
  async (t) => {
    const { admin, cp } = shared;
    const ns = await testNamespace(t, admin);
    // alice may read Namespaces in her namespace (as the built-in view, edit and admin roles allow).
    await grantInNamespace(admin, ns, 'ns-reader', [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] }], {
      kind: 'User',
      name: 'alice',
    });
    const proxy = await startSharedProxy(t, cp, ['--resources', 'namespaces']);
    const alice = clientFor(t, proxy.ca, { kind: 'token', token: cp.users.alice.token });
    await eventually('the grant to be in force', async () => (await get(cp.server, alice, `/api/v1/namespaces/${ns}`)).status === 200);
    for (const path of [
      `/api/v1/namespaces/${ns}`,
      `/api/v1/namespaces/${ns}/namespaces`,
      `/api/v1/namespaces/${ns}/namespaces/kube-system`,
      `/api/v1/namespaces/${ns}/namespaces?watch=1&timeoutSeconds=1`,
    ]) {
      const [fromApiserver, fromProxy] = await Promise.all([get(cp.server, alice, path), get(proxy.url, alice, path)]);
      assert.equal(fromProxy.status, fromApiserver.status, path);
      if (fromApiserver.status !== 200) assert.equal(fromProxy.body, fromApiserver.body, path);
      else assert.equal(JSON.stringify(JSON.parse(fromProxy.body)), JSON.stringify(JSON.parse(fromApiserver.body)), path);
    }
    assert.equal((await get(proxy.url, alice, `/api/v1/namespaces/${ns}/namespaces`)).status, 404);
  },
);
