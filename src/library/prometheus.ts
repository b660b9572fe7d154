/**
 * `@kube-cache-proxy/client/prometheus`: the library's metrics through prom-client, with
 * Kubernetes' names (component-base's providers: informers, workqueue, leader election), for an application that serves Prometheus metrics. The optional entry point:
 * the others never load prom-client, and this one loads the application's own copy (a peer
 * dependency it installs), so that the metrics land in the registry the application serves.
 *
 * @example
 * ```ts
 * import { Registry } from 'prom-client';
 * import { newRateLimitingQueue, defaultControllerRateLimiter } from '@kube-cache-proxy/client/workqueue';
 * import { newPrometheusMetricsProvider } from '@kube-cache-proxy/client/prometheus';
 *
 * const registry = new Registry();
 * const queue = newRateLimitingQueue<string>(defaultControllerRateLimiter(), {
 *   name: 'pods',
 *   metricsProvider: newPrometheusMetricsProvider(registry),
 * });
 * ```
 *
 * @module @kube-cache-proxy/client/prometheus
 */
export { newPrometheusInformerMetricsProvider } from './informer-prometheus-metrics.ts';
export { newPrometheusMetricsProvider } from '../workqueue/prometheus-metrics.ts';
export { newPrometheusLeaderMetricsProvider } from '../leaderelection/prometheus-metrics.ts';
