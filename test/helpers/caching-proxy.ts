/**
 * A caching proxy in-process for the e2e suites, wired as the proxy command wires it
 * (newCachingReads): the caches of the named types (all namespaces), resolved against
 * discovery, synced before it returns; every path it passes through to the apiserver is
 * recorded (its informers and probes are not).
 */
import type { CachedResourceSpec } from '../../src/cache/watch-cache.ts';
import type { CachingReadsOptions } from '../../src/cli/proxy-command.ts';
import { newCachingReads } from '../../src/cli/proxy-command.ts';
import { newSharedInformerFactory } from '../../src/informer/factory.ts';
import { newProxyServer } from '../../src/server/app.ts';
import type { CachedReads } from '../../src/server/cached-reads.ts';
import type { ProxyMetrics } from '../../src/server/metrics.ts';
import { newProxyMetrics } from '../../src/server/metrics.ts';
import type { UpstreamClient } from '../../src/upstream/client.ts';
import { newUpstreamClient } from '../../src/upstream/client.ts';
import type { UpstreamConfig } from '../../src/upstream/config.ts';
import { newDiscovery } from '../../src/upstream/discovery.ts';
import type { ControlPlaneState } from '../../src/cli/dev-cluster/control-plane.ts';
import { upstreamConfigFor } from './control-plane.ts';
import { eventually } from './eventually.ts';

export interface CachingProxy {
  readonly url: string;
  readonly reads: CachedReads;
  readonly metrics: ProxyMetrics;
  /** Paths the proxy passed through to the apiserver. */
  readonly forwarded: string[];
}

export type CachingProxyOptions = Pick<
  CachingReadsOptions,
  'readConsistency' | 'strongResources' | 'maxStalenessMs' | 'freshnessWaitMs'
> & {
  readonly specs: readonly CachedResourceSpec[];
  /** Where the informers list and watch (e.g. through a test TCP proxy); default: the apiserver, as everything else. */
  readonly informerUpstream?: UpstreamConfig;
};

export async function startCachingProxy(
  t: { after(fn: () => Promise<void>): void },
  cp: ControlPlaneState,
  options: CachingProxyOptions,
): Promise<CachingProxy> {
  const upstream = newUpstreamClient(await upstreamConfigFor(cp));
  const forwarded: string[] = [];
  const client: UpstreamClient = {
    ...upstream,
    forward(req) {
      forwarded.push(req.path);
      return upstream.forward(req);
    },
  };
  const { specs, informerUpstream, ...consistency } = options;
  const informerClient = informerUpstream === undefined ? client : newUpstreamClient(informerUpstream);
  const factory = newSharedInformerFactory({ client: informerClient });
  const discovery = newDiscovery(upstream);
  // A CRD created by the test is in discovery a moment after it is served.
  await eventually('discovery to describe the cached types', async () => {
    await discovery.refresh();
    return options.specs.every((s) => discovery.resolve(s.group, s.version, s.resource) !== undefined);
  });
  const metrics = newProxyMetrics();
  const reads = newCachingReads({ ...consistency, client: upstream, factory, discovery, specs, metrics });
  const app = newProxyServer({ client, cachedReads: reads, metrics });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  reads.start();
  t.after(async () => {
    await app.close();
    await reads.stop();
    await upstream.close();
    if (informerClient !== client) await informerClient.close();
  });
  await eventually('the caches to sync', () => reads.synced());
  return { url, reads, metrics, forwarded };
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
