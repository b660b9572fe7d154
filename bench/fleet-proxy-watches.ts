/**
 * The upstream watches a proxy holds, per type of FLEET_RESOURCES, by its own /metrics: its
 * informers' watches open now (kube_cache_proxy_reflector_watching, 0 or 1 per informer, whose
 * series is named after its scope: `pods where spec.nodeName=…`), plus every client watch it
 * passed to its upstream (kube_cache_proxy_requests_total{verb="watch",served_from="apiserver"}),
 * open or not: an upper bound. Unlike the apiserver's apiserver_longrunning_requests, it is this
 * proxy's alone, whoever else watches the apiserver. The consistency probes are left out: each is
 * a WatchList the apiserver answers at once with its end.
 */
import { request } from 'undici';
import { metricSum, metricSumWhere } from '../test/helpers/metrics-text.ts';
import { FLEET_RESOURCES } from './fleet-apiserver.ts';

/** FLEET_RESOURCES as the proxy's metrics name them (group-qualified). */
const QUALIFIED: Readonly<Record<(typeof FLEET_RESOURCES)[number], string>> = {
  pods: 'pods',
  services: 'services',
  endpointslices: 'endpointslices.discovery.k8s.io',
  nodes: 'nodes',
  namespaces: 'namespaces',
};

/** The proxy at `url`'s upstream watches per type of FLEET_RESOURCES (as the apiserver names them). */
export async function proxyUpstreamWatches(url: string): Promise<Record<string, number>> {
  const res = await request(`${url}/metrics`);
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${url}/metrics: ${String(res.statusCode)} ${text.slice(0, 200)}`);
  const watches: Record<string, number> = {};
  for (const resource of FLEET_RESOURCES) {
    const type = QUALIFIED[resource];
    const informers = metricSumWhere(
      text,
      'kube_cache_proxy_reflector_watching',
      (labels) => labels['resource'] === type || labels['resource']?.startsWith(`${type} `) === true,
    );
    const passed = metricSum(text, 'kube_cache_proxy_requests_total', { verb: 'watch', resource: type, served_from: 'apiserver' });
    watches[resource] = informers + passed;
  }
  return watches;
}
