/**
 * The proxy's counters at one moment, read from its metrics registry: the status page's figures
 * are the ones /metrics serves, never a second count that could drift from them.
 */
import type { Registry } from 'prom-client';

/** Requests by where they were answered. */
export interface Served {
  readonly cache: number;
  readonly apiserver: number;
}

/** One type's counters (`resource` label: `resource[.group]`). */
export interface TypeTotals {
  /** Changes the watch cache received. */
  readonly events: number;
  /** get, list and watch requests of the type, by where they were answered. */
  readonly reads: Served;
  /** The reflector's relists (after a 410, a failed watch, ...). */
  readonly relists: number;
  /** Client watches open on the cache now. */
  readonly watchers: number;
  /** JSON bytes of the objects held. */
  readonly bytes: number;
  /** Reads passed to the apiserver, by reason (kube_cache_proxy_pass_through_total). */
  readonly passReasons: ReadonlyMap<string, number>;
}

export interface ProxyTotals {
  /** When they were read (the reporter's clock, ms). */
  readonly at: number;
  /** Every request, by where it was answered. */
  readonly requests: Served;
  /** get, list and watch requests: the reads a cache can answer. */
  readonly reads: Served;
  /** The proxy's own list and watch requests upstream: LIST pages, WATCHes (WatchList streams included) and consistency probes. */
  readonly upstream: number;
  readonly types: ReadonlyMap<string, TypeTotals>;
}

const READ_VERBS = new Set(['get', 'list', 'watch']);

type Labels = Partial<Record<string, string | number>>;

/** Every sample of a counter or gauge (none when it is not registered). */
async function samples(registry: Registry, name: string): Promise<readonly { labels: Labels; value: number }[]> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) return [];
  return (await metric.get()).values;
}

interface MutableType {
  events: number;
  readsCache: number;
  readsApiserver: number;
  relists: number;
  watchers: number;
  bytes: number;
  passReasons: Map<string, number>;
}

export async function readProxyTotals(registry: Registry, at: number): Promise<ProxyTotals> {
  const types = new Map<string, MutableType>();
  const typeOf = (labels: Labels): MutableType | undefined => {
    const name = labels['resource'];
    if (typeof name !== 'string' || name === '' || name === 'other') return undefined;
    let t = types.get(name);
    if (t === undefined) {
      t = { events: 0, readsCache: 0, readsApiserver: 0, relists: 0, watchers: 0, bytes: 0, passReasons: new Map() };
      types.set(name, t);
    }
    return t;
  };
  const requests = { cache: 0, apiserver: 0 };
  const reads = { cache: 0, apiserver: 0 };
  for (const { labels, value } of await samples(registry, 'kube_cache_proxy_requests_total')) {
    const fromCache = labels['served_from'] === 'cache';
    if (fromCache) requests.cache += value;
    else requests.apiserver += value;
    if (!READ_VERBS.has(String(labels['verb']))) continue;
    if (fromCache) reads.cache += value;
    else reads.apiserver += value;
    const t = typeOf(labels);
    if (t === undefined) continue;
    if (fromCache) t.readsCache += value;
    else t.readsApiserver += value;
  }
  const add = async (name: string, field: 'events' | 'relists' | 'watchers' | 'bytes'): Promise<void> => {
    for (const { labels, value } of await samples(registry, name)) {
      const t = typeOf(labels);
      if (t !== undefined) t[field] += value;
    }
  };
  await add('kube_cache_proxy_watch_cache_events_total', 'events');
  await add('kube_cache_proxy_reflector_relists_total', 'relists');
  await add('kube_cache_proxy_watchers', 'watchers');
  await add('kube_cache_proxy_informer_object_bytes', 'bytes');
  for (const { labels, value } of await samples(registry, 'kube_cache_proxy_pass_through_total')) {
    const t = typeOf(labels);
    const reason = String(labels['reason']);
    if (t !== undefined && value > 0) t.passReasons.set(reason, (t.passReasons.get(reason) ?? 0) + value);
  }
  let upstream = 0;
  for (const name of [
    'kube_cache_proxy_reflector_list_pages_total',
    'kube_cache_proxy_reflector_watches_total',
    'kube_cache_proxy_consistency_probes_total',
  ]) {
    for (const { value } of await samples(registry, name)) upstream += value;
  }
  const byType = new Map<string, TypeTotals>();
  for (const [name, t] of types) {
    byType.set(name, {
      events: t.events,
      reads: { cache: t.readsCache, apiserver: t.readsApiserver },
      relists: t.relists,
      watchers: t.watchers,
      bytes: t.bytes,
      passReasons: t.passReasons,
    });
  }
  return { at, requests, reads, upstream, types: byType };
}
