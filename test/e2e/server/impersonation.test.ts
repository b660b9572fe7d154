/**
 * Impersonation through the sidecar, against the real apiserver with RBAC: a request carrying
 * Impersonate-* gets from the proxy what the apiserver gives the proxy's own identity sending the
 * same headers, for an identity that may impersonate (the request runs as the one impersonated)
 * and for one that may not (the apiserver's 403), and never an answer from the cache, which
 * would answer as the proxy. kubectl --as, kubectl auth whoami --as (a SelfSubjectReview) and raw
 * GET, LIST, WATCH and SelfSubjectReview requests are compared.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { Agent, request } from 'undici';
import { startProxy } from '../../../src/proxy/proxy.ts';
import type { RunningProxy } from '../../../src/proxy/proxy.ts';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { runCommand } from '../../helpers/cli.ts';
import type { CliRun } from '../../helpers/cli.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { grantInNamespace, kube, serviceAccountToken } from '../../helpers/kube.ts';
import { metricSum } from '../../helpers/metrics-text.ts';

const shared = useSharedAdmin();

interface Answer {
  readonly status: number;
  readonly body: string;
}

/**
 * A namespace with a ConfigMap; `alice` may read ConfigMaps there, `bob` may not. Two service
 * accounts, as a sidecar's pod would run as: both may read ConfigMaps there (what the cache
 * needs), and `impersonator` may also impersonate users and groups (a ClusterRole).
 */
async function fixture(t: TestContext): Promise<{ ns: string; impersonator: string; plain: string; run: string }> {
  const { admin } = shared;
  const ns = await testNamespace(t, admin);
  await kube(admin, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'cm' }, data: { k: 'v' } });
  const read = [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }];
  await grantInNamespace(admin, ns, 'reader', read, { kind: 'User', name: 'alice' });
  const impersonator = await serviceAccountToken(admin, ns, 'impersonator');
  const plain = await serviceAccountToken(admin, ns, 'plain');
  await grantInNamespace(admin, ns, 'sidecar', read, { kind: 'ServiceAccount', name: 'impersonator', namespace: ns });
  await grantInNamespace(admin, ns, 'sidecar-plain', read, { kind: 'ServiceAccount', name: 'plain', namespace: ns });
  const run = randomBytes(3).toString('hex');
  const name = `kcp-impersonate-${run}`;
  const rbac = '/apis/rbac.authorization.k8s.io/v1';
  await kube(admin, 'POST', `${rbac}/clusterroles`, {
    metadata: { name },
    rules: [{ apiGroups: [''], resources: ['users', 'groups'], verbs: ['impersonate'] }],
  });
  await kube(admin, 'POST', `${rbac}/clusterrolebindings`, {
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ kind: 'ServiceAccount', name: 'impersonator', namespace: ns }],
  });
  t.after(async () => {
    await admin.request({ method: 'DELETE', path: `${rbac}/clusterrolebindings/${name}` });
    await admin.request({ method: 'DELETE', path: `${rbac}/clusterroles/${name}` });
  });
  // The apiserver's authorizer reads RBAC from its informers: wait until the grants are in force.
  await eventually('the RBAC grants to be in force', async () => {
    const asAlice = await direct(impersonator, `/api/v1/namespaces/${ns}/configmaps/cm`, { 'impersonate-user': 'alice' });
    const asPlain = await direct(plain, `/api/v1/namespaces/${ns}/configmaps/cm`);
    return asAlice.status === 200 && asPlain.status === 200;
  });
  return { ns, impersonator, plain, run };
}

/** A sidecar (`proxy --namespace NS --resources configmaps`, in-process) acting as the service account of `token`. */
async function sidecar(t: TestContext, ns: string, token: string): Promise<RunningProxy & { readonly url: string }> {
  const options = parseProxyOptions(['--port', '0', '--namespace', ns, '--resources', 'configmaps', '--log-level', 'silent']);
  const upstream = { ...(await upstreamConfigFor(shared.cp)), authorization: () => Promise.resolve(`Bearer ${token}`) };
  const proxy = await startProxy(options, upstream);
  t.after(() => proxy.stop(0));
  const url = proxy.url;
  assert.ok(url !== undefined, 'the proxy serves on TCP');
  await eventually('the cache to sync (/readyz 200)', async () => (await request(`${url}/readyz`)).statusCode === 200);
  return Object.assign(proxy, { url });
}

async function send(
  base: string,
  path: string,
  headers: Record<string, string | string[]>,
  method: 'GET' | 'POST' = 'GET',
  body?: unknown,
): Promise<Answer> {
  const res = await request(`${base}${path}`, {
    method,
    headers: { accept: 'application/json', ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.statusCode, body: await res.body.text() };
}

let apiserverCa: Buffer | undefined;

/** The same request straight to the apiserver, as `token`. */
async function direct(
  token: string,
  path: string,
  headers: Record<string, string | string[]> = {},
  method: 'GET' | 'POST' = 'GET',
  body?: unknown,
): Promise<Answer> {
  apiserverCa ??= (await upstreamConfigFor(shared.cp)).tls.ca;
  const dispatcher = new Agent({ connect: { ca: apiserverCa } });
  try {
    const res = await request(`${shared.cp.server}${path}`, {
      method,
      dispatcher,
      headers: {
        accept: 'application/json',
        authorization: `Bearer ${token}`,
        ...headers,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.statusCode, body: await res.body.text() };
  } finally {
    await dispatcher.close();
  }
}

/** A SelfSubjectReview's creationTimestamp is the second it was made: two requests may straddle one. */
function withoutTimestamps(text: string): string {
  return text.replace(/("creationTimestamp": ?)"[^"]*"/g, '$1"<time>"');
}

/** What must be equal of two answers: a LIST's items (its own resourceVersion is each side's), else the bytes. */
function comparable(path: string, answer: Answer): string {
  if (answer.status !== 200 || path.includes('watch=1')) return withoutTimestamps(answer.body);
  const parsed = JSON.parse(answer.body) as { kind?: string; items?: unknown[] };
  return parsed.items === undefined ? answer.body : JSON.stringify({ kind: parsed.kind, items: parsed.items });
}

/** kubectl's log lines (`E1126 14:32:00.056495   18358 memcache.go:381] ...`) without their time and pid. */
function withoutKlogPrefixes(text: string): string {
  return text.replace(/^([EIW])\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ /gm, '$1 ');
}

async function served(proxy: RunningProxy, from: 'cache' | 'apiserver'): Promise<number> {
  const text = await proxy.metrics.registry.metrics();
  return ['get', 'list', 'watch'].reduce(
    (n, verb) => n + metricSum(text, 'kube_cache_proxy_requests_total', { verb, served_from: from }),
    0,
  );
}

/** kubectl through the sidecar (no credentials) and straight at the apiserver as `token`, each with a cache dir of its own. */
function kubectls(
  t: TestContext,
  proxyUrl: string,
  token: string,
): { viaProxy: (args: string[]) => Promise<CliRun>; direct: (args: string[]) => Promise<CliRun> } {
  const dir = mkdtempSync(join(tmpdir(), 'kcp-kubectl-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const empty = join(dir, 'empty-kubeconfig');
  writeFileSync(empty, '');
  let runs = 0;
  const cacheDir = (): string => join(dir, `cache-${String(runs++)}`);
  const bin = shared.cp.binaries.kubectl;
  return {
    viaProxy: (args) => runCommand(bin, ['--kubeconfig', empty, '--server', proxyUrl, '--cache-dir', cacheDir(), ...args]),
    direct: (args) => runCommand(bin, ['--kubeconfig', shared.cp.kubeconfig, '--token', token, '--cache-dir', cacheDir(), ...args]),
  };
}

test(
  'impersonation through the sidecar: each request gets what the apiserver gives the proxy identity with the same Impersonate-* headers, never the cache',
  { timeout: 180_000 },
  async (t) => {
    const f = await fixture(t);
    const cm = `/api/v1/namespaces/${f.ns}/configmaps/cm`;
    const list = `/api/v1/namespaces/${f.ns}/configmaps`;
    const watch = `${list}?watch=1&resourceVersion=0&timeoutSeconds=1`;
    const review = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
    const as = {
      alice: { 'impersonate-user': 'alice' },
      bob: { 'impersonate-user': 'bob' },
      'alice in a group': { 'impersonate-user': 'alice', 'impersonate-group': ['kcp-team', 'system:authenticated'] },
      'alice with extra': { 'impersonate-user': 'alice', 'impersonate-extra-scopes': 'view' },
      'a group alone': { 'impersonate-group': 'kcp-team' },
    } satisfies Record<string, Record<string, string | string[]>>;
    for (const [identity, token] of [
      ['may impersonate', f.impersonator],
      ['may not impersonate', f.plain],
    ] as const) {
      const proxy = await sidecar(t, f.ns, token);
      // The cache answers a read without Impersonate-* (the proxy's own identity may read).
      const plainRead = await send(proxy.url, cm, {});
      assert.equal(plainRead.status, 200, plainRead.body);
      const fromCache = await served(proxy, 'cache');
      assert.ok(fromCache >= 1, 'a read without Impersonate-* came from the cache');
      const fromApiserver = await served(proxy, 'apiserver');

      const mismatches: string[] = [];
      const statuses: number[] = [];
      let reads = 0;
      for (const [who, headers] of Object.entries(as)) {
        const cases: { path: string; method: 'GET' | 'POST'; body?: unknown; read: boolean }[] = [
          { path: cm, method: 'GET', read: true },
          { path: list, method: 'GET', read: true },
          { path: watch, method: 'GET', read: true },
          { path: review, method: 'POST', body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }, read: false },
        ];
        for (const c of cases) {
          const [viaProxy, viaApiserver] = await Promise.all([
            send(proxy.url, c.path, headers, c.method, c.body),
            direct(token, c.path, headers, c.method, c.body),
          ]);
          statuses.push(viaApiserver.status);
          if (c.read) reads++;
          if (viaProxy.status !== viaApiserver.status || comparable(c.path, viaProxy) !== comparable(c.path, viaApiserver)) {
            mismatches.push(
              `${identity}, as ${who}: ${c.method} ${c.path}\n  proxy:     ${String(viaProxy.status)} ${viaProxy.body.slice(0, 300)}\n  apiserver: ${String(viaApiserver.status)} ${viaApiserver.body.slice(0, 300)}`,
            );
          }
        }
      }
      assert.deepEqual(mismatches, []);
      if (identity === 'may impersonate') {
        // Granted: alice reads (200), bob is refused as bob (403), a group alone is the apiserver's 400.
        assert.ok(statuses.includes(200) && statuses.includes(403) && statuses.includes(400), JSON.stringify(statuses));
      } else {
        // Refused: every impersonation is the apiserver's 403 for the proxy's identity (a group alone: its 400 first).
        assert.deepEqual(new Set(statuses), new Set([403, 400]), JSON.stringify(statuses));
      }
      assert.equal(await served(proxy, 'cache'), fromCache, 'no read with Impersonate-* was answered from the cache');
      assert.equal(await served(proxy, 'apiserver'), fromApiserver + reads, 'every read with Impersonate-* went to the apiserver');

      // kubectl --as and kubectl auth whoami --as (a SelfSubjectReview), through the sidecar and straight at the apiserver.
      const kubectl = kubectls(t, proxy.url, token);
      for (const args of [
        ['--as', 'alice', 'get', 'configmaps', '-n', f.ns, '-o', 'name'],
        ['--as', 'bob', 'get', 'configmaps', '-n', f.ns, '-o', 'name'],
        ['--as', 'alice', 'get', 'configmap', 'cm', '-n', f.ns, '-o', 'jsonpath={.data.k}'],
        ['--as', 'alice', '--as-group', 'kcp-team', 'auth', 'whoami', '-o', 'json'],
        ['--as', 'bob', 'auth', 'whoami', '-o', 'json'],
      ]) {
        const [viaProxy, viaApiserver] = await Promise.all([kubectl.viaProxy(args), kubectl.direct(args)]);
        assert.deepEqual(
          { code: viaProxy.code, stdout: withoutTimestamps(viaProxy.stdout), stderr: withoutKlogPrefixes(viaProxy.stderr) },
          { code: viaApiserver.code, stdout: withoutTimestamps(viaApiserver.stdout), stderr: withoutKlogPrefixes(viaApiserver.stderr) },
          `${identity}: kubectl ${args.join(' ')}`,
        );
        t.diagnostic(
          `${identity}: kubectl ${args.join(' ')}: exit ${String(viaProxy.code)} ${(viaProxy.stdout + viaProxy.stderr).trim().slice(0, 160)}`,
        );
      }
      const whoami = await kubectl.viaProxy(['--as', 'alice', 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
      const reviewed = await send(proxy.url, review, as.alice, 'POST', {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'SelfSubjectReview',
      });
      if (identity === 'may impersonate') {
        assert.equal(whoami.stdout, 'alice', whoami.stderr);
        assert.equal(reviewed.status, 201, reviewed.body);
      } else {
        assert.equal(whoami.code, 1, whoami.stdout);
        assert.equal(reviewed.status, 403);
        // The proxy's identity is refused (constrained impersonation names the verb on the resource).
        assert.match(reviewed.body, /User \\"system:serviceaccount:[^"\\]+:plain\\" cannot impersonate/);
      }
    }
  },
);
