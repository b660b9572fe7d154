/**
 * Leader election metrics (client-go tools/leaderelection/metrics.go): what an elector reports,
 * behind a provider. The provider through prom-client is prometheus-metrics.ts; this file loads no
 * metrics library, so neither does an elector.
 *
 * No global provider (client-go's SetProvider): pass one per elector. Without one, nothing is
 * measured.
 */

/** metrics.go LeaderMetric; `name` is the elector's name (by default its lock's description). */
export interface LeaderMetric {
  /** This process now leads `name`. */
  on(name: string): void;
  /** This process does not lead `name` (also set when the elector is created). */
  off(name: string): void;
  /** A leader had to fall back from the optimistic update to GET + update. */
  slowpathExercised(name: string): void;
}

/** metrics.go MetricsProvider. */
export interface LeaderMetricsProvider {
  /** The metric an elector reports to. */
  newLeaderMetric(): LeaderMetric;
}

export const noopLeaderMetric: LeaderMetric = {
  on: () => undefined,
  off: () => undefined,
  slowpathExercised: () => undefined,
};
