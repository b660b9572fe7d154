/**
 * The reads the caches answer, wired: discovery, the registry of caches, their delegators, the
 * consistency policy and read-your-writes, the unsent-watch budget, the memory budget's shares.
 */
import { newCachedReads } from '../server/serving/cached-reads.ts';
import type { CachedReads } from '../server/serving/cached-reads.ts';
import { newCacheRegistry } from '../cache/cache-registry.ts';
import type { CacheRegistryLog } from '../cache/cache-registry.ts';
import { newConsistencyPolicy } from '../cache/consistency.ts';
import { newReadYourWrites } from '../cache/read-your-writes.ts';
import { delegatorFactory } from '../cache/delegator.ts';
import { resolveCachedResources } from '../cache/cached-resources.ts';
import type { CachedResourceSpec, ResolvedResources, ScopedResourceSpec } from '../cache/cached-resources.ts';
import { describeSelectors } from '../cache/selector-scope.ts';
import type { Faults } from '../cache/faults.ts';
import type { WatchCacheSource } from '../cache/cache-source.ts';
import { DEFAULT_CONSISTENCY_CHECK_PERIOD_MS } from '../cache/consistency-checker.ts';
import { realClock } from '../clock/clock.ts';
import type { MemoryBudget } from '../memory/memory-budget.ts';
import type { PiecePool } from '../cache/piece-writer.ts';
import { newUnsentBudget } from '../memory/unsent-budget.ts';
import type { SharedInformerFactory } from '../informer/factory.ts';
import { qualifiedResource } from '../kube/group-resource.ts';
import type { KnownTypes, ProxyMetrics } from '../server/http/metrics.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import { newDiscovery } from '../upstream/discovery.ts';
import type { Discovery } from '../upstream/discovery.ts';
import type { ResourceMap } from '../upstream/resource-map.ts';
import { CliError } from './cli-error.ts';
import { StateDir } from '../cache/state-dir.ts';
import type { ProxyOptions } from './options.ts';

/**
 * The caches, over discovery: the --resources types, resolved now (what cannot be cached is
 * reported as skipped), or, with none named, every cacheable type on its first read.
 */
export async function resolveCaches(
  options: ProxyOptions,
  client: UpstreamClient,
  factory: SharedInformerFactory,
  metrics: ProxyMetrics,
  held: {
    readonly memory: MemoryBudget;
    readonly pool: PiecePool;
    readonly faults: Faults;
    readonly log: CacheRegistryLog;
    readonly proxyVersion: string;
  },
): Promise<{ reads: CachedReads; cached: string[]; skipped: ResolvedResources['skipped'] }> {
  const discovery = newDiscovery(client, {
    log: (level, message) => {
      held.log(level, message);
    },
  });
  // Named types are resolved now, so discovery must answer; with none named the registry's
  // discovery loop reads it (and retries) while reads are passed through.
  if (options.resources.length > 0) {
    try {
      await discovery.refresh();
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      throw new CliError(
        `cannot read the apiserver's discovery to resolve --resources: ${detail}`,
        'Check that the apiserver is reachable with this kubeconfig.',
      );
    }
  }
  const named = options.resources.length === 0 ? undefined : resolveCachedResources(discovery, options.resources);
  const stateDir =
    options.stateDir === undefined ? undefined : await openStateDir(options.stateDir, client, held.proxyVersion, held.log, metrics);
  return {
    reads: newCachingReads({
      ...options,
      client,
      factory,
      discovery,
      specs: named?.specs,
      scoped: named?.scoped,
      metrics,
      ...held,
      ...(stateDir === undefined ? {} : { states: stateDir }),
    }),
    cached: [
      ...(named?.specs ?? []).map((s) => qualifiedResource(s.group, s.resource)),
      ...(named?.scoped ?? []).map(({ spec, scope }) => `${qualifiedResource(spec.group, spec.resource)}:${describeSelectors(scope)}`),
    ],
    skipped: named?.skipped ?? [],
  };
}

/**
 * The state directory, for this cluster: its identity is the kube-system namespace's UID (made
 * once with the cluster, never reused), read once here. Without it no state is saved or
 * restored: a state that cannot be told from another cluster's is never served.
 */
async function openStateDir(
  dir: string,
  client: UpstreamClient,
  proxyVersion: string,
  log: CacheRegistryLog,
  metrics: ProxyMetrics,
): Promise<StateDir | undefined> {
  let cluster: string | undefined;
  let problem = '';
  try {
    const res = await client.request({ method: 'GET', path: '/api/v1/namespaces/kube-system', headers: { accept: 'application/json' } });
    if (res.statusCode === 200) cluster = (JSON.parse(res.body.toString('utf8')) as { metadata?: { uid?: string } }).metadata?.uid;
    else problem = `GET /api/v1/namespaces/kube-system answered ${String(res.statusCode)}`;
  } catch (error) {
    problem = error instanceof Error ? error.message : String(error);
  }
  if (cluster === undefined || cluster === '') {
    log(
      'warn',
      `--state-dir: no state is saved or restored: the cluster's identity could not be read (${problem || 'no uid'}); grant the proxy get on the kube-system namespace`,
    );
    return undefined;
  }
  try {
    return new StateDir({
      dir,
      cluster,
      proxyVersion,
      log: (level, message, fields) => {
        log(level, message, fields);
      },
      onSave: (outcome) => {
        metrics.stateSaved(outcome);
      },
      onLoad: (result) => {
        metrics.stateLoaded(result);
      },
    });
  } catch (error) {
    throw new CliError(
      `--state-dir ${dir}: ${error instanceof Error ? error.message : String(error)}`,
      'Give a directory the proxy may create and write.',
    );
  }
}

export interface CachingReadsOptions extends Partial<
  Pick<ProxyOptions, 'readConsistency' | 'strongResources' | 'maxStalenessMs' | 'consistencyCheckPeriodMs' | 'stateSavePeriodMs'>
> {
  readonly client: UpstreamClient;
  readonly factory: SharedInformerFactory;
  readonly discovery: Discovery;
  /** The --resources types, resolved; undefined: every cacheable type, on its first read. */
  readonly specs?: readonly CachedResourceSpec[] | undefined;
  /** The --resources types named in a selector scope, resolved. */
  readonly scoped?: readonly ScopedResourceSpec[] | undefined;
  readonly namespace?: string | undefined;
  readonly metrics?: ProxyMetrics;
  readonly log?: CacheRegistryLog;
  /** How long reads wait for the cache to reach an RV (delegator.ts FRESHNESS_WAIT_MS); tests set it. */
  readonly freshnessWaitMs?: number;
  /** What the proxy may hold (memory-budget.ts); default: no limit, fixed bounds. */
  readonly memory?: MemoryBudget;
  /** Where listener and watcher failures are reported (cache/faults.ts); default: stderr, once each. */
  readonly faults?: Faults;
  /** The pieces LIST bodies are copied into (cache/piece-writer.ts); default: a pool of the reads' own. */
  readonly pool?: PiecePool;
  /** Where caches' states are kept across restarts; default: nowhere. */
  readonly states?: StateDir;
  /** Given the caches' registry once made (tests reach a cache through it to corrupt it). */
  readonly onSource?: (source: WatchCacheSource) => void;
}

/** The reads the caches answer: the registry of caches, their delegators and the consistency policy, wired. */
export function newCachingReads(options: CachingReadsOptions): CachedReads {
  const mode = options.readConsistency ?? 'bounded';
  const policy = newConsistencyPolicy({
    mode,
    strongTypes: options.strongResources ?? [],
    ...(options.maxStalenessMs === undefined ? {} : { maxStalenessMs: options.maxStalenessMs }),
  });
  // Read-your-writes is bounded mode's: strong reads never come from a cache that could miss a write.
  const writes = mode === 'bounded' ? newReadYourWrites() : undefined;
  const { metrics, memory } = options;
  const unsentBudget = newUnsentBudget(memory?.sizes.unsentWatchBytes);
  memory?.countUnsentOf(() => unsentBudget.total());
  const delegate = delegatorFactory({
    client: options.client,
    policy,
    writes: writes ?? newReadYourWrites(),
    ...(metrics === undefined ? {} : { metrics: (resource: string) => metrics.delegator(resource) }),
    ...(options.freshnessWaitMs === undefined ? {} : { freshnessWaitMs: options.freshnessWaitMs }),
    unsentBudget,
    ...(options.faults === undefined ? {} : { faults: options.faults }),
  });
  const source = newCacheRegistry({
    factory: options.factory,
    delegate,
    discovery: options.discovery,
    resources: options.specs,
    scoped: options.scoped,
    namespace: options.namespace,
    ...(options.log === undefined ? {} : { log: options.log }),
    ...(memory === undefined ? {} : { admitsNewCache: () => memory.admitsNewCache(), maxSnapshots: memory.sizes.snapshots }),
    ...(options.faults === undefined ? {} : { faults: options.faults }),
    ...(options.states === undefined ? {} : { stateDir: options.states }),
    ...(options.stateSavePeriodMs === undefined ? {} : { stateSavePeriodMs: options.stateSavePeriodMs }),
    consistencyChecks: {
      client: options.client,
      clock: realClock,
      periodMs: options.consistencyCheckPeriodMs ?? DEFAULT_CONSISTENCY_CHECK_PERIOD_MS,
      checked: (record, cache) => metrics?.consistencyCheck(qualifiedResource(cache.spec.group, cache.spec.resource), record.result),
      log: (level, message) => options.log?.(level, message),
    },
  });
  options.onSource?.(source);
  memory?.countObjectsOf(() => source.held());
  metrics?.knowTypes(knownTypes(options.discovery));
  return newCachedReads({
    source,
    writes,
    ...(memory === undefined ? {} : { memory }),
    ...(options.pool === undefined ? {} : { pool: options.pool }),
  });
}

/**
 * The metrics' known types: discovery's, by `resource[.group]` (every cache is made from
 * discovery). One name table per discovery map (each map is immutable, swapped in whole).
 */
function knownTypes(discovery: Discovery): KnownTypes {
  const tables = new WeakMap<ResourceMap, ReadonlyMap<string, string>>();
  return (typeName) => {
    const map = discovery.current();
    let names = tables.get(map);
    if (names === undefined) {
      names = new Map(
        map.all().map((info) => [qualifiedResource(info.group, info.resource), qualifiedResource(info.group, info.resource)]),
      );
      tables.set(map, names);
    }
    return names.get(typeName);
  };
}
