/**
 * A caching proxy in-process for the e2e suites, wired as the proxy command wires it
 * (newCachingReads): the caches of the named types (all namespaces), resolved against
 * discovery, synced before it returns; every path it passes through to the apiserver is
 * recorded (its informers and probes are not).
 *
 * With `chained` (or KCP_TEST_CHAIN=1 for a whole suite, test/e2e/chain/), the proxy's upstream is
 * another such proxy in front of the apiserver: its informers, probes and pass-throughs all go
 * through the first (a sidecar in front of a node proxy), and the suite's assertions hold of the chain.
 *
 * With KCP_TEST_HTTP2=1 (test/e2e/http2/), the proxy serves HTTPS, its url is https, and the test
 * process's requests to it go over HTTP/2 (test/helpers/http2.ts).
 */
import type { CachedResourceSpec, ScopedResourceSpec } from '../../src/cache/cached-resources.ts';
import type { CachingReadsOptions } from '../../src/proxy/caching-reads.ts';
import { newCachingReads } from '../../src/proxy/caching-reads.ts';
import { newSharedInformerFactory } from '../../src/informer/factory.ts';
import { newProxyServer } from '../../src/server/http/app.ts';
import type { CachedReads } from '../../src/server/serving/cached-reads.ts';
import type { ProxyMetrics } from '../../src/server/http/metrics.ts';
import { newProxyMetrics } from '../../src/server/http/metrics.ts';
import type { UpstreamClient } from '../../src/upstream/client.ts';
import { newUpstreamClient } from '../../src/upstream/client.ts';
import type { UpstreamConfig } from '../../src/upstream/config.ts';
import { newDiscovery } from '../../src/upstream/discovery.ts';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';
import { upstreamConfigFor } from './control-plane.ts';
import { eventually } from './eventually.ts';
import { listenForSuite, suiteServingTls } from './http2.ts';

export interface CachingProxy {
  readonly url: string;
  readonly reads: CachedReads;
  readonly metrics: ProxyMetrics;
  /** Paths the proxy passed through to the apiserver. */
  readonly forwarded: string[];
  /** The proxy this one is in front of, when chained. */
  readonly inner: CachingProxy | undefined;
}

export type CachingProxyOptions = Pick<
  CachingReadsOptions,
  'readConsistency' | 'strongResources' | 'maxStalenessMs' | 'freshnessWaitMs' | 'consistencyCheckPeriodMs' | 'namespace' | 'onSource'
> & {
  readonly specs: readonly CachedResourceSpec[];
  /** Types cached in a selector scope (`--resources pods:spec.nodeName=n1`), besides `specs`. */
  readonly scoped?: readonly ScopedResourceSpec[];
  /** Where the informers list and watch (e.g. through a test TCP proxy); default: the apiserver, as everything else. */
  readonly informerUpstream?: UpstreamConfig;
  /** In front of another caching proxy (of the same types) instead of the apiserver; default: KCP_TEST_CHAIN=1. */
  readonly chained?: boolean;
  /**
   * In front of this proxy, which the test started (with options of its own), instead of the
   * apiserver; the test stops it after this one.
   */
  readonly over?: CachingProxy;
  /** Gzip cached answers to this test's loopback clients too (`--compress-loopback`); default: never on loopback. */
  readonly compressLoopback?: boolean;
};

/** The suite runs through a chain of two proxies (test/e2e/chain/). */
export const CHAIN_ENV = 'KCP_TEST_CHAIN';

/** An upstream config for a proxy at `url` (plain HTTP on loopback, no credentials: it acts as itself). */
export function proxyUpstreamConfig(url: string): UpstreamConfig {
  return {
    server: new URL(url),
    tls: { rejectUnauthorized: true },
    authorization: () => Promise.resolve(undefined),
    source: `the proxy at ${url}`,
  };
}

export async function startCachingProxy(
  t: { after(fn: () => Promise<void>): void },
  cp: ControlPlaneState,
  options: CachingProxyOptions,
): Promise<CachingProxy> {
  const chained = options.chained ?? process.env[CHAIN_ENV] === '1';
  // The inner proxy is stopped after this one: until then this one's watches on it stay open,
  // and a server waits for its open responses to end before it closes.
  const innerTeardown: (() => Promise<void>)[] = [];
  const inner = chained
    ? await startCachingProxy({ after: (fn) => innerTeardown.push(fn) }, cp, { ...options, chained: false })
    : undefined;
  const upstreamProxy = options.over ?? inner;
  const upstream = newUpstreamClient(upstreamProxy === undefined ? await upstreamConfigFor(cp) : proxyUpstreamConfig(upstreamProxy.url));
  const forwarded: string[] = [];
  const client: UpstreamClient = {
    ...upstream,
    forward(req) {
      forwarded.push(req.path);
      return upstream.forward(req);
    },
  };
  const { specs, scoped, informerUpstream, compressLoopback, ...rest } = options;
  const consistency = { ...rest, chained: undefined, over: undefined };
  const informerClient = informerUpstream === undefined ? client : newUpstreamClient(informerUpstream);
  const factory = newSharedInformerFactory({ client: informerClient });
  const discovery = newDiscovery(upstream);
  // A CRD created by the test is in discovery a moment after it is served.
  await eventually('discovery to describe the cached types', async () => {
    await discovery.refresh();
    return [...options.specs, ...(scoped ?? []).map((s) => s.spec)].every(
      (s) => discovery.resolve(s.group, s.version, s.resource) !== undefined,
    );
  });
  const metrics = newProxyMetrics();
  const reads = newCachingReads({ ...consistency, client: upstream, factory, discovery, specs, scoped, metrics });
  const tls = suiteServingTls(cp);
  const app = newProxyServer({ client, cachedReads: reads, metrics, compressLoopback, tls });
  const url = await listenForSuite(app, tls);
  reads.start();
  t.after(async () => {
    await app.close();
    await reads.stop();
    await upstream.close();
    if (informerClient !== client) await informerClient.close();
    for (const fn of innerTeardown) await fn();
  });
  await eventually('the caches to sync', () => reads.synced());
  return { url, reads, metrics, forwarded, inner: upstreamProxy };
}

/** A metric's value from a proxy's registry, summed over the series whose labels include `labels`. */
export async function proxyCounter(metrics: ProxyMetrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = await metrics.registry.getSingleMetric(name)?.get();
  let total = 0;
  for (const value of metric?.values ?? []) {
    if (Object.entries(labels).every(([k, v]) => value.labels[k] === v)) total += value.value;
  }
  return total;
}
