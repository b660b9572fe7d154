/**
 * curl against a TLS proxy as an operator runs it (--tls-generate): `curl --http2` gets HTTP/2,
 * `curl --http1.1` HTTP/1.1, and both get the bytes the apiserver sends curl over HTTP/2 for
 * the same LIST and GET of pods (the LIST's resourceVersion aside: each side answers at its own).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { proxyCounter } from '../../helpers/caching-proxy.ts';
import { runCommand } from '../../helpers/cli.ts';
import { testNamespace, upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';
import { eventually } from '../../helpers/eventually.ts';
import { kube } from '../../helpers/kube.ts';

const shared = useSharedAdmin();

/** What curl printed: the body, then (-w) the HTTP version and status it got. */
interface CurlAnswer {
  readonly body: string;
  readonly httpVersion: string;
  readonly status: string;
}

const TRAILER = /\n(\S+) (\d{3})$/;

async function curl(protocol: '--http2' | '--http1.1', url: string, trust: readonly string[]): Promise<CurlAnswer> {
  const run = await runCommand('curl', ['-sS', protocol, ...trust, '-w', '\n%{http_version} %{http_code}', url]);
  assert.equal(run.code, 0, `curl ${protocol} ${url}: ${run.stderr}`);
  const match = TRAILER.exec(run.stdout) ?? assert.fail(`curl's -w line in ${run.stdout.slice(-200)}`);
  return { body: run.stdout.slice(0, match.index), httpVersion: match[1] ?? '', status: match[2] ?? '' };
}

/**
 * A LIST's own resourceVersion (the first in its body, before the items'), which each server
 * sets at the revision it answers at. curl's User-Agent gets indented JSON from both.
 */
const listRv = (body: string): string => body.replace(/"resourceVersion": "\d+"/, '"resourceVersion": ""');

test('curl --http2 -k to a TLS proxy gets HTTP/2, --http1.1 gets HTTP/1.1, both the apiserver’s bytes', { timeout: 60_000 }, async (t) => {
  const ns = await testNamespace(t, shared.admin);
  for (const name of ['a', 'b'])
    await kube(shared.admin, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name, labels: { app: 'curl' } },
      spec: { containers: [{ name: 'c', image: 'registry.invalid/none:1' }] },
    });
  const config = await upstreamConfigFor(shared.cp);
  const options = parseProxyOptions(['--port', '0', '--resources', 'pods', '--tls-generate', '--log-level', 'warn']);
  const proxy = await startProxy(options, config);
  t.after(() => proxy.stop(0));
  const base = proxy.url ?? assert.fail('the proxy serves on TCP');
  assert.match(base, /^https:/);
  const list = `/api/v1/namespaces/${ns}/pods`;
  const bothPods = /"name": "a"[\s\S]*"name": "b"/;
  await eventually('both pods in the proxy’s cache', async () => bothPods.test((await curl('--http2', `${base}${list}`, ['-k'])).body));
  const token = (await config.authorization()) ?? assert.fail('the admin has a token');
  const direct = ['--cacert', shared.cp.caFile, '-H', `Authorization: ${token}`];
  const fromCache = (): Promise<number> => proxyCounter(proxy.metrics, 'kube_cache_proxy_requests_total', { served_from: 'cache' });
  for (const path of [list, `${list}/a`]) {
    const apiserver = await curl('--http2', `${config.server.origin}${path}`, direct);
    assert.equal(apiserver.httpVersion, '2', 'the apiserver speaks HTTP/2 to curl');
    for (const [protocol, version] of [
      ['--http2', '2'],
      ['--http1.1', '1.1'],
    ] as const) {
      const before = await fromCache();
      const ours = await curl(protocol, `${base}${path}`, ['-k']);
      assert.equal(ours.httpVersion, version, `curl ${protocol} ${path}: the HTTP version`);
      assert.equal(ours.status, apiserver.status, `curl ${protocol} ${path}: the status`);
      const same = path === list ? listRv : (body: string): string => body;
      assert.equal(same(ours.body), same(apiserver.body), `curl ${protocol} ${path}: the body`);
      assert.equal(await fromCache(), before + 1, `curl ${protocol} ${path}: answered from the cache`);
      t.diagnostic(
        `curl ${protocol} ${path}: HTTP/${ours.httpVersion} ${ours.status}, ${String(ours.body.length)} bytes as the apiserver's`,
      );
    }
  }
});
