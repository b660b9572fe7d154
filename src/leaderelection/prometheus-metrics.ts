/**
 * A LeaderMetricsProvider (metrics.ts) that exports leader election metrics through prom-client
 * with the names and help texts of Kubernetes' own
 * (k8s.io/component-base/metrics/prometheus/clientgo/leaderelection/metrics.go), so dashboards
 * written for kube-controller-manager work unchanged. Imported by the proxy and by the library's
 * optional prometheus entry point only: an elector never loads prom-client.
 */
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { LeaderMetric, LeaderMetricsProvider } from './metrics.ts';

const LABELS = ['name'] as const;
type Label = (typeof LABELS)[number];

/**
 * Registers `leader_election_master_status` (a gauge per lease name: 1 while this process leads,
 * 0 otherwise) and `leader_election_slowpath_total` in `registry`; a second provider on the same
 * registry reuses them.
 */
export function newPrometheusLeaderMetricsProvider(registry: Registry): LeaderMetricsProvider {
  const status =
    existing(registry, 'leader_election_master_status', Gauge) ??
    new Gauge<Label>({
      name: 'leader_election_master_status',
      help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
      labelNames: LABELS,
      registers: [registry],
    });
  const slowpath =
    existing(registry, 'leader_election_slowpath_total', Counter) ??
    new Counter<Label>({
      name: 'leader_election_slowpath_total',
      help: "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
      labelNames: LABELS,
      registers: [registry],
    });
  const metric: LeaderMetric = {
    on: (name) => {
      status.labels(name).set(1);
    },
    off: (name) => {
      status.labels(name).set(0);
    },
    slowpathExercised: (name) => {
      slowpath.labels(name).inc();
    },
  };
  return { newLeaderMetric: () => metric };
}

/** The metric `name` already in `registry`, if it is of the wanted kind. */
function existing<M>(registry: Registry, name: string, kind: abstract new (...args: never[]) => M): M | undefined {
  const metric: unknown = registry.getSingleMetric(name);
  if (metric === undefined) return undefined;
  if (!(metric instanceof kind)) throw new Error(`metric ${name} is already registered with another type`);
  return metric;
}
