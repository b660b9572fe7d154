/**
 * The proxy's own metrics (prom-client), served at the proxy's /metrics beside the informers'
 * and workqueues' metrics registered on the same registry. They answer the questions an
 * operator asks of a cache: how much of the read load it took off the apiserver
 * (served_from="cache" against "apiserver"), and what the consistency probes cost.
 */
import { Counter, Registry } from 'prom-client';

export type ServedFrom = 'cache' | 'apiserver';

export interface ProxyMetrics {
  readonly registry: Registry;
  /** One request answered; `resource` is '' for non-resource paths. */
  served(verb: string, resource: string, from: ServedFrom): void;
  /** One consistency probe sent upstream for `resource`. */
  probe(resource: string): void;
}

export function newProxyMetrics(registry: Registry = new Registry()): ProxyMetrics {
  const requests = new Counter({
    name: 'kube_cache_proxy_requests_total',
    help: 'Requests answered by the proxy, by verb, resource and whether the cache or the apiserver answered.',
    labelNames: ['verb', 'resource', 'served_from'] as const,
    registers: [registry],
  });
  const probes = new Counter({
    name: 'kube_cache_proxy_consistency_probes_total',
    help: 'Consistency probes (LIST with limit=1) sent to the apiserver for RV-unset reads, by resource.',
    labelNames: ['resource'] as const,
    registers: [registry],
  });
  return {
    registry,
    served(verb, resource, from) {
      requests.inc({ verb, resource, served_from: from });
    },
    probe(resource) {
      probes.inc({ resource });
    },
  };
}

/** No metrics (tests and embedders that do not scrape). */
export const noopProxyMetrics: Omit<ProxyMetrics, 'registry'> = {
  served: () => undefined,
  probe: () => undefined,
};
