/**
 * The operator's view stays true to the proxy: every metric and label that the alert rules
 * (deploy/monitoring/alerts.yaml), the Grafana dashboard (deploy/monitoring/dashboard.json) and
 * the metrics reference (docs/metrics.md) name is one a running proxy exports, and the reference
 * lists every metric of the proxy's own.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadAllYaml } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { parseProxyOptions } from '../../../src/cli/proxy-options.ts';
import { poolMetrics } from '../../../src/proxy/pool-member.ts';
import { startProxy } from '../../../src/proxy/proxy.ts';
import { upstreamConfigFor, useSharedAdmin } from '../../helpers/control-plane.ts';

const shared = useSharedAdmin();
const read = (path: string): string => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');

/** Labels Prometheus gives every target it scrapes (kubernetes_sd), besides the metric's own. */
const TARGET_LABELS = new Set(['namespace', 'pod', 'container', 'instance', 'job', 'node', 'service', 'endpoint']);
/** The metric names a query may use beside the proxy's: Prometheus's own. */
const PROMETHEUS_OWN = new Set(['up']);

/** Every series name the proxy exports, with its labels (a histogram's _bucket, _sum, _count too). */
function exported(registry: Registry): Map<string, Set<string>> {
  const names = new Map<string, Set<string>>();
  for (const metric of registry.getMetricsAsArray() as unknown as { name: string; labelNames: string[]; constructor: { name: string } }[]) {
    const labels = new Set(metric.labelNames);
    names.set(metric.name, labels);
    if (metric.constructor.name === 'Histogram') {
      names.set(`${metric.name}_bucket`, new Set([...labels, 'le']));
      names.set(`${metric.name}_sum`, labels);
      names.set(`${metric.name}_count`, labels);
    }
  }
  return names;
}

/** What a PromQL expression names that must exist: metrics and the labels of their selectors, and grouping labels. */
function problems(where: string, expr: string, names: Map<string, Set<string>>): string[] {
  const out: string[] = [];
  const used: Set<string>[] = [];
  // Metric names (the proxy's and prom-client's families, and Prometheus's own), with their selectors.
  for (const match of expr.matchAll(/\b((?:kube_cache_proxy|nodejs|process)_[a-z0-9_]+|up)\b(\{[^}]*\})?/g)) {
    const name = match[1] ?? '';
    if (PROMETHEUS_OWN.has(name)) continue;
    const labels = names.get(name);
    if (labels === undefined) {
      out.push(`${where}: ${name} is not exported`);
      continue;
    }
    used.push(labels);
    for (const selector of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) {
      const label = selector[1] ?? '';
      if (!labels.has(label) && !TARGET_LABELS.has(label)) out.push(`${where}: ${name} has no label ${label}`);
    }
  }
  for (const grouping of expr.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)) {
    for (const label of (grouping[1] ?? '').split(',').map((l) => l.trim())) {
      if (label !== '' && !TARGET_LABELS.has(label) && !used.some((labels) => labels.has(label))) {
        out.push(`${where}: no metric of the expression has the label ${label}`);
      }
    }
  }
  return out;
}

test('metrics reference, alert rules and dashboard: every metric and label they name is exported by a running proxy; the reference lists every metric', async (t) => {
  const options = parseProxyOptions(['--port', '0', '--shared', '--tls-generate', '--resources', 'configmaps', '--log-level', 'warn']);
  const proxy = await startProxy(options, await upstreamConfigFor(shared.cp));
  t.after(() => proxy.stop(1_000));
  // A chained proxy's fallback, registered only with --server.
  proxy.metrics.upstreamFallback(() => ({ target: 'upstream', fallbacks: 0 }));
  const names = exported(proxy.metrics.registry);
  // A pool member's, registered only with --pool.
  for (const [name, labels] of exported(((registry) => (poolMetrics(registry, 'p'), registry))(new Registry()))) names.set(name, labels);
  assert.ok(names.has('kube_cache_proxy_requests_total') && names.has('nodejs_eventloop_lag_p99_seconds'));

  const found: string[] = [];
  let queries = 0;
  // The alert rules.
  const [rule] = loadAllYaml(read('deploy/monitoring/alerts.yaml')) as {
    spec: { groups: { rules: { alert: string; expr: string }[] }[] };
  }[];
  for (const r of rule?.spec.groups.flatMap((g) => g.rules) ?? []) {
    queries++;
    found.push(...problems(`alerts.yaml ${r.alert}`, r.expr, names));
  }
  // The dashboard's panels and variables.
  const dashboard = JSON.parse(read('deploy/monitoring/dashboard.json')) as {
    panels: { title: string; targets: { expr: string }[] }[];
    templating: { list: { name: string; query?: string }[] };
  };
  for (const panel of dashboard.panels) {
    for (const target of panel.targets) {
      queries++;
      found.push(...problems(`dashboard.json "${panel.title}"`, target.expr, names));
    }
  }
  for (const variable of dashboard.templating.list) {
    if (variable.query?.startsWith('label_values(') === true)
      found.push(...problems(`dashboard.json $${variable.name}`, variable.query, names));
  }
  assert.ok(queries >= 15, `queries checked: ${String(queries)}`);

  // The reference: each row's metric exported with exactly the labels it lists; every metric of the proxy's own listed.
  const reference = read('docs/metrics.md');
  const rows = [...reference.matchAll(/^\| `(kube_cache_proxy_[a-z0-9_]+)` \| [a-z]+ \|([^|]*)\|/gm)];
  const listed = new Set<string>();
  for (const [, name = '', labelCell = ''] of rows) {
    listed.add(name);
    const labels = names.get(name);
    if (labels === undefined) {
      found.push(`metrics.md: ${name} is not exported`);
      continue;
    }
    const given = [...labelCell.matchAll(/`([a-z_]+)`/g)].map((m) => m[1] ?? '').sort();
    if (JSON.stringify(given) !== JSON.stringify([...labels].sort()))
      found.push(`metrics.md: ${name} lists ${given.join(',')}, exports ${[...labels].sort().join(',')}`);
  }
  for (const name of names.keys()) {
    const family = name.replace(/_(bucket|sum|count)$/, '');
    if (name.startsWith('kube_cache_proxy_') && !listed.has(name) && !listed.has(family)) found.push(`metrics.md: ${name} not listed`);
  }
  assert.deepEqual(found, []);
});
